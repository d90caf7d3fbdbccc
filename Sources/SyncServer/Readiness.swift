import Synchronization

/// What `/ready` reports: the database is migrated and the change listener is listening.
final class Readiness: Sendable {
    private let flags = Mutex((migrated: false, listening: false))

    func migrated(_ value: Bool) { flags.withLock { $0.migrated = value } }
    func listening(_ value: Bool) { flags.withLock { $0.listening = value } }

    var isReady: Bool { flags.withLock { $0.migrated && $0.listening } }
    var isListening: Bool { flags.withLock { $0.listening } }
}
