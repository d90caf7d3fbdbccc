import Foundation
import Logging
import PostgresNIO
import SyncProtocol
import SyncStorage

/// Accounts and credentials: registration and login with bcrypt password hashes, short-lived
/// JWT access tokens, rotating refresh tokens stored hashed, and API keys for back-end
/// services. Registrations are limited per client address and failed logins per account and
/// address, per address, and per account (docs/PROTOCOL.md, "Limits"), across instances.
public final class AuthService: Sendable {
    /// What a successful registration, login or refresh returns.
    public struct Tokens: Sendable, Hashable {
        public var userID: String
        public var accessToken: String
        public var refreshToken: String
        /// Seconds until the access token expires.
        public var expiresIn: Int

        public var json: JSONValue {
            [
                "userId": .string(userID), "accessToken": .string(accessToken), "refreshToken": .string(refreshToken),
                "expiresIn": .int(Int64(expiresIn)),
            ]
        }
    }

    let store: ObjectStore
    let configuration: AuthConfiguration
    let issuer: TokenIssuer
    /// All bcrypt work of this instance goes through it.
    public let hasher: PasswordHasher
    let logger: Logger
    /// This instance's copy of the revoked credentials.
    let revocations: RevocationList
    var client: PostgresClient { store.client }

    public convenience init(store: ObjectStore, configuration: AuthConfiguration, issuer: TokenIssuer, logger: Logger) {
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
    }

    // MARK: Accounts

    /// Creates an account; `email_taken` when the email (case-insensitively) has one, and
    /// `rate_limited` after too many registrations from the client's address. The `user
    /// registered` event commits with the account, for the application's triggers.
    public func register(email: String, password: String, address: String) async throws -> Tokens {
        let email = email.trimmingCharacters(in: .whitespaces)
        try Self.checkEmail(email)
        try checkPassword(password)
        try await countRegistration(address: address)
        let hash = try await hasher.hash(password)
        let userID = UUID().uuidString.lowercased()
        let logger = self.logger
        let created = try await store.withWriteTransaction(author: "system:auth") { transaction in
            let rows = try await transaction.connection.query(
                """
                INSERT INTO psync_users (id, email, email_key, password_hash)
                VALUES (\(userID), \(email), \(email.lowercased()), \(hash))
                ON CONFLICT (email_key) DO NOTHING
                RETURNING id
                """, logger: logger)
            var inserted = false
            for try await _ in rows { inserted = true }
            if inserted {
                transaction.recordUserEvent(.user, .registered, userID: userID, details: ["email": .string(email)])
            }
            return inserted
        }
        guard created else { throw SyncError(.emailTaken, "an account with this email exists") }
        logger.info("user registered", metadata: ["userId": "\(userID)"])
        return try await issueTokens(userID: userID, family: UUID())
    }

    /// Checks credentials; `invalid_credentials` for a wrong email or password, `rate_limited`
    /// after too many failures (docs/PROTOCOL.md, "Limits").
    public func login(email: String, password: String, address: String) async throws -> Tokens {
        // What cannot be an account's email (control characters, which PostgreSQL's text
        // could not even hold) is refused before any lookup.
        try Self.checkEmail(email.trimmingCharacters(in: .whitespaces))
        let emailKey = email.trimmingCharacters(in: .whitespaces).lowercased()
        try await checkLoginLimits(emailKey: emailKey, address: address)
        var stored: (id: String, hash: String)?
        let rows = try await client.query(
            "SELECT id, password_hash FROM psync_users WHERE email_key = \(emailKey)", logger: logger)
        for try await (id, hash) in rows.decode((String, String).self) { stored = (id, hash) }
        // An unknown email is verified against a dummy hash of the same cost: both failures
        // take the same work, so the answer's timing does not tell which emails have accounts.
        let matches = try await hasher.verify(password, against: stored?.hash)
        guard let stored, matches else {
            try await recordLoginFailure(emailKey: emailKey, address: address)
            logger.notice("failed login", metadata: ["address": "\(address)"])
            throw SyncError(.invalidCredentials, "wrong email or password")
        }
        try await clearLoginFailures(emailKey: emailKey, address: address)
        return try await issueTokens(userID: stored.id, family: UUID())
    }

    /// Deletes an account and its refresh tokens; the `user deleted` event commits with it.
    public func deleteAccount(userID: String) async throws {
        let logger = self.logger
        let deleted = try await store.withWriteTransaction(author: "system:auth") { transaction in
            var email: String?
            for try await value in try await transaction.connection.query(
                "DELETE FROM psync_users WHERE id = \(userID) RETURNING email", logger: logger
            ).decode(String.self) { email = value }
            guard let email else { return false }
            transaction.recordUserEvent(.user, .deleted, userID: userID, details: ["email": .string(email)])
            // Its access tokens stop working and its sessions close, on every instance.
            try await RevocationLedger.record([.user(userID)], for: revocationLifetime, on: transaction.connection, logger: logger)
            return true
        }
        guard deleted else { throw SyncError(.unauthenticated, "the account does not exist") }
        revocations.add([.user(userID)], expires: Date() + revocationLifetime.timeInterval)
        logger.info("user deleted", metadata: ["userId": "\(userID)"])
    }

    // MARK: Bearer credentials

    /// What an `Authorization: Bearer` credential grants: an access token, or an API key
    /// (`psk_…`, which does not expire). A revoked one (a deleted user, a logged-out login, a
    /// revoked key) is `unauthenticated`.
    public func authenticate(bearer credential: String) async throws -> Credential {
        let granted: Credential
        if credential.hasPrefix(APIKeys.prefix) {
            let name = try await APIKeys(client: client, logger: logger).verify(credential)
            granted = Credential(principal: .service(name), expires: nil, revokedBy: [.key(digest: SecretHash.digest(credential))])
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

    static func checkEmail(_ email: String) throws(SyncError) {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasPrefix("."), !parts[1].hasSuffix("."),
            email.utf8.count <= 254,
            !email.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control })
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
