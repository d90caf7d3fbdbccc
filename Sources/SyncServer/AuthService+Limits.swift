import Foundation
import PostgresNIO
import SyncProtocol

/// The limits on registrations and failed logins, counted in `psync_login_failures` in fixed
/// windows shared by every instance (docs/PROTOCOL.md, "Limits"). Emails are public, so no
/// count a stranger can raise locks an account's owner out: failures are limited per account
/// and address, per address, and per account only with a short backoff.
extension AuthService {
    /// The counter scopes, by subject.
    enum LimitScope: String {
        /// Failed logins of one account from one address: `<email key> <address>`.
        case accountAddress = "account-address"
        /// Failed logins from one address, whatever the account.
        case address
        /// Failed logins of one account from anywhere.
        case account
        /// Registrations from one address.
        case registration
    }

    /// The subject of an account-and-address counter; an email holds no whitespace.
    static func pairSubject(emailKey: String, address: String) -> String { "\(emailKey) \(address)" }

    func checkLoginLimits(emailKey: String, address: String) async throws {
        let window = Self.seconds(configuration.failureWindow)
        let backoff = Self.seconds(configuration.accountBackoff)
        let pair = Self.pairSubject(emailKey: emailKey, address: address)
        let rows = try await client.query(
            """
            SELECT scope, failures,
                   EXTRACT(EPOCH FROM window_start + make_interval(secs => \(window)) - now())::float8,
                   coalesce(EXTRACT(EPOCH FROM last_failure_at + make_interval(secs => \(backoff)) - now()), 0)::float8
            FROM psync_login_failures
            WHERE ((scope = \(LimitScope.accountAddress.rawValue) AND subject = \(pair))
                OR (scope = \(LimitScope.address.rawValue) AND subject = \(address))
                OR (scope = \(LimitScope.account.rawValue) AND subject = \(emailKey)))
              AND window_start > now() - make_interval(secs => \(window))
            """, logger: logger)
        for try await (scope, failures, windowLeft, backoffLeft) in rows.decode((String, Int, Double, Double).self) {
            switch LimitScope(rawValue: scope) {
            case .accountAddress where failures >= configuration.failuresPerAccountAddress:
                throw RateLimited("too many failed logins for this account from this address; try again later", retryAfter: Int(windowLeft.rounded(.up)))
            case .address where failures >= configuration.failuresPerAddress:
                throw RateLimited("too many failed logins from this address; try again later", retryAfter: Int(windowLeft.rounded(.up)))
            case .account where failures >= configuration.failuresPerAccount && backoffLeft > 0:
                throw RateLimited("too many failed logins for this account; slow down", retryAfter: Int(backoffLeft.rounded(.up)))
            default:
                continue
            }
        }
    }

    func recordLoginFailure(emailKey: String, address: String) async throws {
        let window = Self.seconds(configuration.failureWindow)
        let pair = Self.pairSubject(emailKey: emailKey, address: address)
        try await client.query(
            """
            INSERT INTO psync_login_failures AS f (scope, subject, window_start, failures, last_failure_at)
            VALUES (\(LimitScope.accountAddress.rawValue), \(pair), now(), 1, now()),
                   (\(LimitScope.address.rawValue), \(address), now(), 1, now()),
                   (\(LimitScope.account.rawValue), \(emailKey), now(), 1, now())
            ON CONFLICT (scope, subject) DO UPDATE SET
                failures = CASE WHEN f.window_start <= now() - make_interval(secs => \(window)) THEN 1 ELSE f.failures + 1 END,
                window_start = CASE WHEN f.window_start <= now() - make_interval(secs => \(window)) THEN now() ELSE f.window_start END,
                last_failure_at = now()
            """, logger: logger)
    }

    /// A successful login clears its account-and-address counter, not the others: the owner's
    /// success says nothing about strangers' attempts.
    func clearLoginFailures(emailKey: String, address: String) async throws {
        let pair = Self.pairSubject(emailKey: emailKey, address: address)
        try await client.query(
            "DELETE FROM psync_login_failures WHERE scope = \(LimitScope.accountAddress.rawValue) AND subject = \(pair)",
            logger: logger)
    }

    /// Counts a registration from `address`; `rate_limited` over the limit of its window.
    func countRegistration(address: String) async throws {
        let window = Self.seconds(configuration.registrationWindow)
        let rows = try await client.query(
            """
            INSERT INTO psync_login_failures AS f (scope, subject, window_start, failures)
            VALUES (\(LimitScope.registration.rawValue), \(address), now(), 1)
            ON CONFLICT (scope, subject) DO UPDATE SET
                failures = CASE WHEN f.window_start <= now() - make_interval(secs => \(window)) THEN 1 ELSE f.failures + 1 END,
                window_start = CASE WHEN f.window_start <= now() - make_interval(secs => \(window)) THEN now() ELSE f.window_start END
            RETURNING failures, EXTRACT(EPOCH FROM window_start + make_interval(secs => \(window)) - now())::float8
            """, logger: logger)
        for try await (count, windowLeft) in rows.decode((Int, Double).self) where count > configuration.registrationsPerAddress {
            throw RateLimited("too many registrations from this address; try again later", retryAfter: Int(windowLeft.rounded(.up)))
        }
    }
}

extension AuthService {
    /// A duration in seconds, fractions included, for `make_interval`.
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
