import Locking
import PartitionSync

/// What `/ready` reports besides a live database: the change listener is listening. (The
/// server accepts requests only after the migrations ran.)
final class Readiness: Sendable {
    private let listeningNow = Locked(false)

    func listening(_ value: Bool) { listeningNow.withLock { $0 = value } }

    var isReady: Bool { listeningNow.withLock { $0 } }
}
