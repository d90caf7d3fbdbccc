import Crypto
import Foundation
import HummingbirdBcrypt
import Locking
import NIOPosix
import PartitionSync
import SyncProtocol

/// bcrypt work on the thread pool: at most ``concurrency`` hashes or verifications at once,
/// at most ``queueLimit`` more waiting (beyond that `rate_limited`), so a burst of
/// registrations or logins cannot occupy every core. Counts the work it does, in bcrypt
/// rounds, so tests can compare the cost of code paths without a clock.
package final class PasswordHasher: Sendable {
    /// The cost of new hashes.
    package let cost: UInt8
    /// bcrypt runs at once.
    package let concurrency: Int
    /// Requests that may wait for a slot.
    package let queueLimit: Int
    /// A hash of a random password at ``cost``: verified against when an email is unknown, so
    /// an unknown email takes the same work as a known one with a wrong password.
    let dummyHash: String

    private struct State {
        var running = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
        var rounds: Int = 0
    }
    private let state = Locked(State())

    package init(cost: UInt8, concurrency: Int, queueLimit: Int) {
        self.cost = cost
        self.concurrency = max(1, concurrency)
        self.queueLimit = max(0, queueLimit)
        dummyHash = Bcrypt.hash(UUID().uuidString, cost: cost)
    }

    /// bcrypt rounds (2^cost per hash or verification) done so far.
    package var rounds: Int { state.withLock { $0.rounds } }

    /// A new bcrypt hash of the password.
    func hash(_ password: String) async throws -> String {
        let cost = self.cost
        let prepared = Self.prepared(password)
        return try await withSlot(rounds: 1 << Int(cost)) {
            try await NIOThreadPool.singleton.runIfActive { Bcrypt.hash(prepared, cost: cost) }
        }
    }

    /// Whether the password matches `hash`; with no hash (an unknown account), the same work
    /// against ``dummyHash`` and `false`.
    func verify(_ password: String, against hash: String?) async throws -> Bool {
        let target = hash ?? dummyHash
        let prepared = Self.prepared(password)
        let matches = try await withSlot(rounds: 1 << Int(Self.cost(of: target) ?? cost)) {
            try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(prepared, hash: target) }
        }
        return hash != nil && matches
    }

    /// What bcrypt hashes: the password's SHA-256 in base64 (44 bytes). bcrypt reads at most
    /// 72 bytes and stops at a NUL; hashing first lets any password of up to 1,024 characters
    /// count in full.
    static func prepared(_ password: String) -> String {
        Data(SHA256.hash(data: Data(password.utf8))).base64EncodedString()
    }

    /// The cost field of a bcrypt hash (`$2b$12$…`).
    static func cost(of hash: String) -> UInt8? {
        let fields = hash.split(separator: "$")
        return fields.count >= 3 ? UInt8(fields[1]) : nil
    }

    /// Requests waiting for a slot.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Runs `work` in a slot, counting `rounds`; `rate_limited` when the queue is full.
    func withSlot<T: Sendable>(rounds: Int, _ work: () async throws -> T) async throws -> T {
        let admitted: Bool? = state.withLock { state in
            if state.running < concurrency {
                state.running += 1
                return true
            }
            return state.waiting.count < queueLimit ? false : nil
        }
        guard let admitted else {
            throw RateLimited("the server is busy checking passwords; try again shortly", retryAfter: 1)
        }
        if !admitted {
            // A finishing run hands its slot over directly, so `running` stays counted.
            await withCheckedContinuation { continuation in
                let handedOver = state.withLock { state -> Bool in
                    if state.running < concurrency {
                        state.running += 1
                        return true
                    }
                    state.waiting.append(continuation)
                    return false
                }
                if handedOver { continuation.resume() }
            }
        }
        defer {
            let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.rounds += rounds
                if state.waiting.isEmpty {
                    state.running -= 1
                    return nil
                }
                return state.waiting.removeFirst()
            }
            next?.resume()
        }
        return try await work()
    }
}
