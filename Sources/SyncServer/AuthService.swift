import Crypto
import Foundation
import HummingbirdBcrypt
import Logging
import NIOPosix
import PostgresNIO
import SyncProtocol
import SyncStorage

/// Accounts and credentials: registration and login with bcrypt password hashes, short-lived
/// JWT access tokens, rotating refresh tokens stored hashed, and API keys for back-end
/// services. Failed logins are limited per account and per client address, across instances.
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
        self.revocations = revocations
        self.logger = logger
    }

    // MARK: Accounts

    /// Creates an account; `email_taken` when the email (case-insensitively) has one. The
    /// `user registered` event commits with the account, for the application's triggers.
    public func register(email: String, password: String) async throws -> Tokens {
        let email = email.trimmingCharacters(in: .whitespaces)
        try Self.checkEmail(email)
        try checkPassword(password)
        let hash = try await hashPassword(password)
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
    /// after too many failures for the account or the address.
    public func login(email: String, password: String, address: String) async throws -> Tokens {
        // What cannot be an account's email (control characters, which PostgreSQL's text
        // could not even hold) is refused before any lookup.
        try Self.checkEmail(email.trimmingCharacters(in: .whitespaces))
        let emailKey = email.trimmingCharacters(in: .whitespaces).lowercased()
        try await checkRateLimit(emailKey: emailKey, address: address)
        var stored: (id: String, hash: String)?
        let rows = try await client.query(
            "SELECT id, password_hash FROM psync_users WHERE email_key = \(emailKey)", logger: logger)
        for try await (id, hash) in rows.decode((String, String).self) { stored = (id, hash) }
        // Verify against a dummy hash for an unknown email, so both failures take as long.
        let hash = stored?.hash ?? Self.dummyHash
        let prepared = Self.prepared(password)
        let matches = try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(prepared, hash: hash) }
        guard let stored, matches else {
            try await recordFailure(emailKey: emailKey, address: address)
            logger.notice("failed login", metadata: ["address": "\(address)"])
            throw SyncError(.invalidCredentials, "wrong email or password")
        }
        try await client.query(
            "DELETE FROM psync_login_failures WHERE scope = 'account' AND subject = \(emailKey)", logger: logger)
        return try await issueTokens(userID: stored.id, family: UUID())
    }

    /// Exchanges a refresh token for new tokens; the old one stops working. Presenting a
    /// token that was already used revokes its whole family.
    public func refresh(_ refreshToken: String) async throws -> Tokens {
        let digest = SecretHash.digest(refreshToken)
        let (userID, family): (String?, UUID?) = try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE psync_refresh_tokens SET revoked_at = now()
                WHERE token_hash = \(digest) AND revoked_at IS NULL AND expires_at > now()
                RETURNING user_id, family
                """, logger: logger)
            for try await (userID, family) in rows.decode((String, UUID).self) { return (userID, family) }
            // Unknown, expired or already used: if it was used, its family is compromised.
            try await connection.query(
                """
                UPDATE psync_refresh_tokens SET revoked_at = now()
                WHERE family = (SELECT family FROM psync_refresh_tokens WHERE token_hash = \(digest))
                  AND revoked_at IS NULL
                """, logger: logger)
            return (nil, nil)
        }
        guard let userID, let family else {
            throw SyncError(.unauthenticated, "the refresh token is not valid")
        }
        return try await issueTokens(userID: userID, family: family)
    }

    /// Revokes a refresh token and every token rotated from the same login, and the access
    /// tokens issued with them (their `sid`), on every instance.
    public func logout(_ refreshToken: String) async throws {
        let digest = SecretHash.digest(refreshToken)
        let logger = self.logger
        let revoked = try await client.withTransaction(logger: logger) { connection in
            var families: Set<UUID> = []
            for try await family in try await connection.query(
                """
                UPDATE psync_refresh_tokens SET revoked_at = now()
                WHERE family = (SELECT family FROM psync_refresh_tokens WHERE token_hash = \(digest))
                  AND revoked_at IS NULL
                RETURNING family
                """, logger: logger
            ).decode(UUID.self) { families.insert(family) }
            let revoked = families.map { Revocation.family($0.uuidString) }
            try await RevocationLedger.record(revoked, for: revocationLifetime, on: connection, logger: logger)
            return revoked
        }
        revocations.add(revoked, expires: Date() + revocationLifetime.timeInterval)
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

    // MARK: Helpers

    private func issueTokens(userID: String, family: UUID) async throws -> Tokens {
        let refreshToken = SecretHash.makeSecret(prefix: "psr_")
        let seconds = Double(configuration.refreshTokenLifetime.components.seconds)
        try await client.query(
            """
            INSERT INTO psync_refresh_tokens (token_hash, user_id, family, expires_at)
            VALUES (\(SecretHash.digest(refreshToken)), \(userID), \(family), now() + make_interval(secs => \(seconds)))
            """, logger: logger)
        let (accessToken, expiresIn) = try await issuer.issue(userID: userID, session: family)
        return Tokens(userID: userID, accessToken: accessToken, refreshToken: refreshToken, expiresIn: expiresIn)
    }

    private func hashPassword(_ password: String) async throws -> String {
        let cost = configuration.bcryptCost
        let prepared = Self.prepared(password)
        return try await NIOThreadPool.singleton.runIfActive { Bcrypt.hash(prepared, cost: cost) }
    }

    /// What bcrypt hashes: the password's SHA-256 in base64 (44 bytes). bcrypt reads at most
    /// 72 bytes and stops at a NUL; hashing first lets any password of up to 1,024 characters
    /// count in full.
    static func prepared(_ password: String) -> String {
        Data(SHA256.hash(data: Data(password.utf8))).base64EncodedString()
    }

    private func checkRateLimit(emailKey: String, address: String) async throws {
        let window = Double(configuration.failureWindow.components.seconds)
        let rows = try await client.query(
            """
            SELECT scope, failures FROM psync_login_failures
            WHERE ((scope = 'account' AND subject = \(emailKey)) OR (scope = 'address' AND subject = \(address)))
              AND window_start > now() - make_interval(secs => \(window))
            """, logger: logger)
        for try await (scope, failures) in rows.decode((String, Int).self) {
            let limit = scope == "account" ? configuration.failuresPerAccount : configuration.failuresPerAddress
            if failures >= limit {
                throw SyncError(.rateLimited, "too many failed logins; try again later")
            }
        }
    }

    private func recordFailure(emailKey: String, address: String) async throws {
        let window = Double(configuration.failureWindow.components.seconds)
        try await client.query(
            """
            INSERT INTO psync_login_failures AS f (scope, subject, window_start, failures)
            VALUES ('account', \(emailKey), now(), 1), ('address', \(address), now(), 1)
            ON CONFLICT (scope, subject) DO UPDATE SET
                failures = CASE WHEN f.window_start <= now() - make_interval(secs => \(window)) THEN 1 ELSE f.failures + 1 END,
                window_start = CASE WHEN f.window_start <= now() - make_interval(secs => \(window)) THEN now() ELSE f.window_start END
            """, logger: logger)
    }

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

    /// A bcrypt hash of a random password, verified against when the email is unknown.
    static let dummyHash = Bcrypt.hash(UUID().uuidString, cost: 4)
}
