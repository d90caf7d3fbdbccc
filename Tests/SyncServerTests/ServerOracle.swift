import Locking
import PartitionSync
import SyncProtocol
import SyncTesting

/// An up-to-date copy of a partition a subscriber held: its objects' versions and bodies.
struct OracleObservation: Sendable {
    var subscriber: Int
    var partition: Partition
    var version: Int64
    var objects: [ObjectKey: SyncObject]
}

/// Every state of every object anyone saw, by version: what clients received, and at the
/// end the database's rows (tombstones included). An object's state at version v is the
/// newest state known at or below v; the writers never revive a deleted key, so the
/// database's tombstone of a deleted object is always known.
final class ServerOracle: Sendable {
    private struct State {
        /// partition → object → version → body (`nil`: deleted).
        var states: [Partition: [ObjectKey: [Int64: [String: JSONValue]?]]] = [:]
        var violations: [String] = []
    }

    private let state = Locked(State())

    /// Records the states of a batch; the same object at the same version with another body
    /// is a violation at once.
    func learn(_ objects: [SyncObject], in partition: Partition, from source: String) {
        state.withLock { state in
            for object in objects {
                if let known = state.states[partition]?[object.key]?[object.version], known != object.body {
                    state.violations.append("\(source): \(object.key) at version \(object.version) arrived as \(String(describing: object.body)), elsewhere as \(String(describing: known))")
                }
                state.states[partition, default: [:]][object.key, default: [:]][object.version] = object.body
            }
        }
    }

    /// The violations among the observations, and those found while learning.
    func check(_ observations: [OracleObservation]) -> [String] {
        state.withLock { state in
            var violations = state.violations
            for observation in observations {
                let known = state.states[observation.partition] ?? [:]
                for (key, object) in observation.objects where object.version > observation.version {
                    violations.append("subscriber \(observation.subscriber): \(observation.partition) at \(observation.version) holds \(key) at the later version \(object.version)")
                }
                for (key, versions) in known {
                    let expected = versions.filter { $0.key <= observation.version }.max { $0.key < $1.key }
                    let held = observation.objects[key]
                    switch (expected, held) {
                    case (nil, nil): continue
                    case (let expected?, nil):
                        if expected.value != nil {
                            violations.append("subscriber \(observation.subscriber): \(observation.partition) at \(observation.version) lacks \(key) (live at version \(expected.key))")
                        }
                    case (let expected?, let held?):
                        if expected.key != held.version || expected.value != held.body {
                            violations.append("subscriber \(observation.subscriber): \(observation.partition) at \(observation.version) holds \(key) at version \(held.version), the oracle has version \(expected.key)\(expected.value == nil ? " (deleted)" : "")")
                        }
                    case (nil, let held?):
                        violations.append("subscriber \(observation.subscriber): \(observation.partition) at \(observation.version) holds \(key) at version \(held.version), unknown to the oracle")
                    }
                }
            }
            return violations
        }
    }
}
