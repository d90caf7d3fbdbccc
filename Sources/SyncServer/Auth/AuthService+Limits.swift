import Foundation
import PartitionSync
import PostgresNIO
import SyncProtocol
import SyncStorage

/// The limits on registrations and failed logins, counted in `psync_login_failures` in fixed
/// windows shared by every instance (docs/PROTOCOL.md, "Limits"). Emails are public, so no
/// count a stranger can raise locks an account's owner out: failures are limited per account
/// and address, per address, and per account only with a short backoff.
extension AuthService {
    func checkLoginLimits(emailKey: String, address: String) async throws {
        let counts = try await LoginLimitStore(store: store).loginFailures(
            emailKey: emailKey, address: address, window: configuration.failureWindow, backoff: configuration.accountBackoff)
        for count in counts {
            switch count.scope {
            case .accountAddress where count.failures >= configuration.failuresPerAccountAddress:
                throw RateLimited("too many failed logins for this account from this address; try again later", retryAfter: Int(count.windowLeft.rounded(.up)))
            case .address where count.failures >= configuration.failuresPerAddress:
                throw RateLimited("too many failed logins from this address; try again later", retryAfter: Int(count.windowLeft.rounded(.up)))
            case .account where count.failures >= configuration.failuresPerAccount && count.backoffLeft > 0:
                throw RateLimited("too many failed logins for this account; slow down", retryAfter: Int(count.backoffLeft.rounded(.up)))
            default:
                continue
            }
        }
    }

    func recordLoginFailure(emailKey: String, address: String) async throws {
        try await LoginLimitStore(store: store).recordLoginFailure(emailKey: emailKey, address: address, window: configuration.failureWindow)
    }

    /// A successful login clears its account-and-address counter, not the others: the owner's
    /// success says nothing about strangers' attempts.
    func clearLoginFailures(emailKey: String, address: String) async throws {
        try await LoginLimitStore(store: store).clearLoginFailures(emailKey: emailKey, address: address)
    }

    /// Counts a registration from `address`; `rate_limited` over the limit of its window.
    func countRegistration(address: String) async throws {
        let (count, windowLeft) = try await LoginLimitStore(store: store).countRegistration(address: address, window: configuration.registrationWindow)
        if count > configuration.registrationsPerAddress {
            throw RateLimited("too many registrations from this address; try again later", retryAfter: Int(windowLeft.rounded(.up)))
        }
    }
}
