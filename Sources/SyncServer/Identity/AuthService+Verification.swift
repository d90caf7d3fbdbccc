import Foundation
import Logging
import SyncProtocol
import SyncStorage

/// Email verification (docs/SECURITY.md, "Identity"): a code mailed to the account's email,
/// entered by its owner, binds the email to the account for rules, invitations and triggers.
extension AuthService {
    /// What `GET /v1/auth/me` answers.
    package struct Account: Sendable, Hashable {
        package var userID: String
        package var email: String?
        package var emailVerified: Bool

        package var json: JSONValue {
            var fields: [String: JSONValue] = ["userId": .string(userID), "emailVerified": .bool(emailVerified)]
            if let email { fields["email"] = .string(email) }
            return .object(fields)
        }
    }

    var verification: EmailVerificationConfiguration { configuration.emailVerification }

    /// The signed-in user's account.
    package func account(of userID: String) async throws -> Account {
        guard let found = try await AccountStore(store: store).account(of: userID) else {
            throw SyncError(.unauthenticated, "the account does not exist")
        }
        return Account(userID: userID, email: found.email, emailVerified: found.verified)
    }

    /// Mails a new code to the account's email, replacing the one before. `rate_limited` when
    /// one was sent less than ``EmailVerificationConfiguration/resendInterval`` ago,
    /// `unavailable` when the mail server would not take it. Whether a code was sent: `false`
    /// when the email is verified already.
    @discardableResult
    package func sendVerificationCode(userID: String) async throws -> Bool {
        guard let account = try await AccountStore(store: store).account(of: userID), let email = account.email else {
            throw SyncError(.badRequest, "the account has no email to verify")
        }
        if account.verified { return false }
        let code = VerificationCode.make()
        let replaced = try await EmailCodeStore(store: store).replace(
            userID: userID, code: code, lifetime: verification.codeLifetime, resendInterval: verification.resendInterval)
        guard replaced else {
            throw SyncError(
                .rateLimited, "a code was sent less than \(verification.resendInterval.components.seconds) seconds ago; check your mail")
        }
        let hours = verification.codeLifetime.components.seconds / 3600
        let lifetime = hours >= 1 ? "\(hours) hour\(hours == 1 ? "" : "s")" : "\(verification.codeLifetime.components.seconds / 60) minutes"
        let mail = Mail(
            to: email, subject: "Your \(verification.serviceName) verification code",
            body: """
                Your verification code is \(VerificationCode.display(code)).

                Enter it in the app to confirm that this address is yours. It works for \(lifetime).
                If you did not make an account with this address, ignore this mail.
                """)
        do {
            try await (verification.mailer ?? LogMailer(logger: logger)).send(mail)
        } catch {
            logger.error("the verification mail was not sent", metadata: ["userId": "\(userID)", "error": "\(error)"])
            try? await EmailCodeStore(store: store).forget(userID: userID)
            throw SyncError(.unavailable, "the verification mail could not be sent; try again later")
        }
        return true
    }

    /// Checks a code the user typed: the account's email is verified (its `verified` event
    /// commits with it), or `invalid_code` with the guesses the live code still takes.
    package func verifyEmail(userID: String, code typed: String) async throws -> Account {
        guard let code = VerificationCode.normalized(typed) else {
            throw SyncError(.invalidCode, "a code is eight letters and digits, like K7QM-4XPA", details: nil)
        }
        switch try await EmailCodeStore(store: store).check(userID: userID, code: code, maximumAttempts: verification.maximumAttempts) {
        case .verified, .alreadyVerified:
            logger.info("email verified", metadata: ["userId": "\(userID)"])
            return try await account(of: userID)
        case .wrong(let left):
            throw SyncError(
                .invalidCode, left > 0 ? "that is not the code; \(left) more tries" : "that is not the code; ask for a new one",
                details: ["attemptsLeft": .int(Int64(left))])
        case .noLiveCode:
            throw SyncError(.invalidCode, "no code is waiting (it expired, or too many were wrong); ask for a new one",
                details: ["attemptsLeft": 0])
        }
    }
}
