import Foundation
import Logging
import SyncProtocol
import SyncStorage

/// Imported accounts (docs/MIGRATING.md, "Users"): `psync import` gives each a one-time
/// token, which its owner spends to set a password; until then the account cannot sign in.
extension AuthService {
    /// Sets the password of the imported account whose token `token` is, spending the token,
    /// and signs in. `invalid_token` for a token that is unknown, used or expired (the same
    /// answer for each). When the server does not verify emails, the email counts as verified
    /// from then on, as at a registration; when it does, the token proves nothing about the
    /// mailbox (the operator delivered it by a way the server does not know) and the owner
    /// verifies the email with a code as any user.
    package func setPassword(token: String, password: String) async throws -> Tokens {
        guard token.utf8.count <= 256 else { throw SyncError(.invalidToken, "this password-set token is unknown, used or expired") }
        try checkPassword(password)
        let tokens = PasswordTokenStore(store: store)
        let refusal = SyncError(.invalidToken, "this password-set token is unknown, used or expired")
        // A guess costs a look-up, not a password hash.
        guard try await tokens.isLive(token: token) else { throw refusal }
        let hash = try await hasher.hash(password)
        let verifies = !configuration.emailVerification.required
        guard let userID = try await tokens.setPassword(token: token, passwordHash: hash, verifies: verifies) else { throw refusal }
        logger.info("imported account's password set", metadata: ["userId": "\(userID)"])
        return try await issueTokens(userID: userID, family: UUID())
    }
}
