import Foundation
import Logging
import PartitionSync
import PostgresNIO
import SyncProtocol
import SyncStorage

/// Accounts and credentials: registration and login with bcrypt password hashes, short-lived
/// JWT access tokens, rotating refresh tokens stored hashed, and API keys for back-end
/// services. Registrations are limited per client address and failed logins per account and
/// address, per address, and per account (docs/PROTOCOL.md, "Limits"), across instances.
package final class AuthService: Sendable {
    /// What a successful registration, login or refresh returns.
    package struct Tokens: Sendable, Hashable {
        package var userID: String
        package var accessToken: String
        package var refreshToken: String
        /// Seconds until the access token expires.
        package var expiresIn: Int
        /// Whether the account's email is verified; only a registration says.
        package var emailVerified: Bool?

        package var json: JSONValue {
            var fields: [String: JSONValue] = [
                "userId": .string(userID), "accessToken": .string(accessToken), "refreshToken": .string(refreshToken),
                "expiresIn": .int(Int64(expiresIn)),
            ]
            if let emailVerified { fields["emailVerified"] = .bool(emailVerified) }
            return .object(fields)
        }
    }

    let store: ObjectStore
    let configuration: AuthConfiguration
    let issuer: TokenIssuer
    /// All bcrypt work of this instance goes through it.
    package let hasher: PasswordHasher
    let logger: Logger
    /// This instance's copy of the revoked credentials.
    let revocations: RevocationList
    /// The OpenID Connect providers whose tokens are accepted, by issuer.
    let identityProviders: [String: IdentityProvider]
    var client: PostgresClient { store.client }

    package convenience init(store: ObjectStore, configuration: AuthConfiguration, issuer: TokenIssuer, logger: Logger) {
        self.init(store: store, configuration: configuration, issuer: issuer, revocations: RevocationList(), logger: logger)
    }

    init(store: ObjectStore, configuration: AuthConfiguration, issuer: TokenIssuer, revocations: RevocationList, logger: Logger) {
        self.store = store
        self.configuration = configuration
        self.issuer = issuer
        self.hasher = PasswordHasher(
            cost: configuration.bcryptCost, concurrency: configuration.passwordHashConcurrency,
            queueLimit: configuration.passwordHashQueue)
        self.revocations = revocations
        self.logger = logger
        self.identityProviders = Dictionary(
            configuration.identityProviders.map { ($0.issuer, IdentityProvider(configuration: $0, time: issuer.time, logger: logger)) },
            uniquingKeysWith: { first, _ in first })
    }

    // MARK: Accounts

    /// Creates an account; `email_taken` when the email (case-insensitively) has one, and
    /// `rate_limited` after too many registrations from the client's address. The `user
    /// registered` event commits with the account, for the application's triggers. When email
    /// verification is required, the email is unverified until its code is entered, and the
    /// first code is mailed now (a mail that fails is logged; the user asks for another).
    package func register(email: String, password: String, address: String) async throws -> Tokens {
        let email = email.trimmingCharacters(in: .whitespaces)
        try Self.checkEmail(email)
        try checkPassword(password)
        try await countRegistration(address: address)
        let hash = try await hasher.hash(password)
        let userID = UUID().uuidString.lowercased()
        let required = configuration.emailVerification.required
        let created = try await AccountStore(store: store).create(
            userID: userID, email: email, passwordHash: hash, verified: !required,
            unverifiedHold: required ? configuration.emailVerification.codeLifetime : nil, revocationLifetime: revocationLifetime)
        guard created else { throw SyncError(.emailTaken, "an account with this email exists") }
        logger.info("user registered", metadata: ["userId": "\(userID)"])
        var tokens = try await issueTokens(userID: userID, family: UUID())
        tokens.emailVerified = !required
        if required {
            do {
                try await sendVerificationCode(userID: userID)
            } catch {
                logger.warning("no verification code was sent at registration", metadata: ["userId": "\(userID)", "error": "\(error)"])
            }
        }
        return tokens
    }

    /// Checks credentials; `invalid_credentials` for a wrong email or password, `rate_limited`
    /// after too many failures (docs/PROTOCOL.md, "Limits").
    package func login(email: String, password: String, address: String) async throws -> Tokens {
        // What cannot be an account's email (control characters, which PostgreSQL's text
        // could not even hold) is refused before any lookup.
        try Self.checkEmail(email.trimmingCharacters(in: .whitespaces))
        let emailKey = email.trimmingCharacters(in: .whitespaces).lowercased()
        try await checkLoginLimits(emailKey: emailKey, address: address)
        let stored = try await AccountStore(store: store).credentials(emailKey: emailKey)
        // An unknown email is verified against a dummy hash of the same cost: both failures
        // take the same work, so the answer's timing does not tell which emails have accounts.
        let matches = try await hasher.verify(password, against: stored?.passwordHash)
        guard let stored, matches else {
            try await recordLoginFailure(emailKey: emailKey, address: address)
            logger.notice("failed login", metadata: ["address": "\(address)"])
            throw SyncError(.invalidCredentials, "wrong email or password")
        }
        try await clearLoginFailures(emailKey: emailKey, address: address)
        return try await issueTokens(userID: stored.userID, family: UUID())
    }

    /// Deletes an account and its refresh tokens; the `user deleted` event commits with it.
    package func deleteAccount(userID: String) async throws {
        let deleted = try await AccountStore(store: store).delete(userID: userID, revocationLifetime: revocationLifetime)
        guard deleted else { throw SyncError(.unauthenticated, "the account does not exist") }
        revocations.add([.user(userID)], expires: issuer.time.now() + revocationLifetime.timeInterval)
        logger.info("user deleted", metadata: ["userId": "\(userID)"])
    }

    /// Ends every login of a user (an admin's decision): their refresh tokens stop working and
    /// their sessions, on every instance, close with `session_revoked`; signing in again works.
    /// How many logins were ended.
    package func revokeSessions(userID: String) async throws -> Int {
        let revoked = try await RefreshTokenStore(store: store).revokeAll(of: userID, revocationLifetime: revocationLifetime)
        if !revoked.isEmpty { revocations.add(revoked, expires: issuer.time.now() + revocationLifetime.timeInterval) }
        logger.info("sessions revoked", metadata: ["userId": "\(userID)", "logins": "\(revoked.count)"])
        return revoked.count
    }

    // MARK: Bearer credentials

    /// What an `Authorization: Bearer` credential grants: an access token of this server or
    /// of a configured identity provider (whose subject's account is made on first sight), or
    /// an API key (`psk_…`, which does not expire). A revoked one (a deleted user, a logged-out login, a
    /// revoked key) is `unauthenticated`.
    package func authenticate(bearer credential: String) async throws -> Credential {
        let granted: Credential
        if credential.hasPrefix(APIKeys.prefix) {
            let name = try await APIKeys(client: client, logger: logger).verify(credential)
            granted = Credential(principal: .service(name), expires: nil, revokedBy: [.key(digest: SecretHash.digest(credential))])
        } else if !identityProviders.isEmpty, let claimed = IdentityProvider.claimedIssuer(of: credential) {
            // RS256 and ES256 are only ever a provider's: the server signs its own with HS256.
            guard let provider = identityProviders[claimed] else {
                throw SyncError(.unauthenticated, "the access token is from an issuer this server does not trust")
            }
            let identity = try await provider.verify(credential)
            let userID = try await AccountStore(store: store).externalAccount(
                issuer: claimed, subject: identity.subject, verifiedEmail: identity.verifiedEmail, revocationLifetime: revocationLifetime)
            granted = Credential(principal: .user(userID), expires: identity.expires, revokedBy: [.user(userID)])
        } else {
            let (userID, expires, session) = try await issuer.verify(credential)
            var revokedBy: [Revocation] = [.user(userID)]
            if let session { revokedBy.append(.family(session)) }
            granted = Credential(principal: .user(userID), expires: expires, revokedBy: revokedBy)
        }
        guard !revocations.revokes(granted.revokedBy) else { throw SyncError(.unauthenticated, "the credential was revoked") }
        return granted
    }

    /// How long a revocation of access tokens is kept: until every token it covers has
    /// expired, with a minute for clocks that differ between instances.
    var revocationLifetime: Duration { configuration.accessTokenLifetime + .seconds(60) }

    // MARK: Input

    package static func checkEmail(_ email: String) throws(SyncError) {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasPrefix("."), !parts[1].hasSuffix("."),
            email.utf8.count <= 254,
            !email.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control }),
            // Nothing that could end an SMTP path (`<…>`) or start a comment or list in a header.
            !email.contains(where: { "<>()[],;:\\\"".contains($0) })
        else {
            throw SyncError(.badRequest, "an email address is name@domain")
        }
    }

    func checkPassword(_ password: String) throws(SyncError) {
        guard password.count >= configuration.minimumPasswordLength else {
            throw SyncError(.badRequest, "a password has at least \(configuration.minimumPasswordLength) characters")
        }
        guard password.count <= 1_024 else {
            throw SyncError(.badRequest, "a password has at most 1,024 characters")
        }
    }
}
