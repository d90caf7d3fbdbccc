import Foundation
import Logging
import PostgresNIO

/// Counters of registrations and failed logins in `psync_login_failures`, in fixed windows
/// shared by every instance. The limits themselves are the server's (`AuthService`).
package struct LoginLimitStore: Sendable {
    let client: PostgresClient
    let logger: Logger

    package init(store: ObjectStore) {
        self.client = store.client
        self.logger = store.logger
    }

    /// The counter scopes, by subject.
    package enum Scope: String, Sendable, CaseIterable {
        /// Failed logins of one account from one address: `<email key> <address>`.
        case accountAddress = "account-address"
        /// Failed logins from one address, whatever the account.
        case address
        /// Failed logins of one account from anywhere.
        case account
        /// Registrations from one address.
        case registration
    }

    /// A counter in its current window.
    package struct Count: Sendable, Hashable {
        package var scope: Scope
        package var failures: Int
        /// Seconds until the window ends.
        package var windowLeft: Double
        /// Seconds until `backoff` has passed since the last failure (0 when it has).
        package var backoffLeft: Double
    }

    /// The subject of an account-and-address counter; an email holds no whitespace.
    static func pairSubject(emailKey: String, address: String) -> String { "\(emailKey) \(address)" }

    /// The failed-login counters of an account, an address and the pair, in windows of `window`.
    package func loginFailures(emailKey: String, address: String, window: Duration, backoff: Duration) async throws -> [Count] {
        let pair = Self.pairSubject(emailKey: emailKey, address: address)
        let rows = try await client.fetch(
            """
            SELECT scope, failures,
                   EXTRACT(EPOCH FROM window_start + make_interval(secs => \(window.intervalSeconds)) - now())::float8,
                   coalesce(EXTRACT(EPOCH FROM last_failure_at + make_interval(secs => \(backoff.intervalSeconds)) - now()), 0)::float8
            FROM psync_login_failures
            WHERE ((scope = \(Scope.accountAddress.rawValue) AND subject = \(pair))
                OR (scope = \(Scope.address.rawValue) AND subject = \(address))
                OR (scope = \(Scope.account.rawValue) AND subject = \(emailKey)))
              AND window_start > now() - make_interval(secs => \(window.intervalSeconds))
            """, logger: logger)
        var counts: [Count] = []
        for try await (scope, failures, windowLeft, backoffLeft) in rows.decode((String, Int, Double, Double).self) {
            guard let scope = Scope(rawValue: scope) else { continue }
            counts.append(Count(scope: scope, failures: failures, windowLeft: windowLeft, backoffLeft: backoffLeft))
        }
        return counts
    }

    /// Counts a failed login of the account, the address and the pair.
    package func recordLoginFailure(emailKey: String, address: String, window: Duration) async throws {
        let seconds = window.intervalSeconds
        let pair = Self.pairSubject(emailKey: emailKey, address: address)
        try await client.fetch(
            """
            INSERT INTO psync_login_failures AS f (scope, subject, window_start, failures, last_failure_at)
            VALUES (\(Scope.accountAddress.rawValue), \(pair), now(), 1, now()),
                   (\(Scope.address.rawValue), \(address), now(), 1, now()),
                   (\(Scope.account.rawValue), \(emailKey), now(), 1, now())
            ON CONFLICT (scope, subject) DO UPDATE SET
                failures = CASE WHEN f.window_start <= now() - make_interval(secs => \(seconds)) THEN 1 ELSE f.failures + 1 END,
                window_start = CASE WHEN f.window_start <= now() - make_interval(secs => \(seconds)) THEN now() ELSE f.window_start END,
                last_failure_at = now()
            """, logger: logger)
    }

    /// Clears the account-and-address counter (a successful login), not the others.
    package func clearLoginFailures(emailKey: String, address: String) async throws {
        let pair = Self.pairSubject(emailKey: emailKey, address: address)
        try await client.fetch(
            "DELETE FROM psync_login_failures WHERE scope = \(Scope.accountAddress.rawValue) AND subject = \(pair)", logger: logger)
    }

    /// Counts a registration from `address`; the registrations in the window so far and the
    /// seconds until it ends.
    package func countRegistration(address: String, window: Duration) async throws -> (count: Int, windowLeft: Double) {
        let seconds = window.intervalSeconds
        let rows = try await client.fetch(
            """
            INSERT INTO psync_login_failures AS f (scope, subject, window_start, failures)
            VALUES (\(Scope.registration.rawValue), \(address), now(), 1)
            ON CONFLICT (scope, subject) DO UPDATE SET
                failures = CASE WHEN f.window_start <= now() - make_interval(secs => \(seconds)) THEN 1 ELSE f.failures + 1 END,
                window_start = CASE WHEN f.window_start <= now() - make_interval(secs => \(seconds)) THEN now() ELSE f.window_start END
            RETURNING failures, EXTRACT(EPOCH FROM window_start + make_interval(secs => \(seconds)) - now())::float8
            """, logger: logger)
        for try await (count, windowLeft) in rows.decode((Int, Double).self) { return (count, windowLeft) }
        return (0, 0)
    }
}
