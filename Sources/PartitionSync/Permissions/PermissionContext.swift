import Logging
import SyncProtocol

/// What a permission rule can read: committed objects and accounts (``ObjectReading``).
///
/// Every object a rule reads through it is recorded: the server checks a decision again
/// when a partition it read an object in changes, or when an object it found absent is
/// created, without the rule declaring its inputs.
public struct PermissionContext: ObjectReading, Sendable {
    let source: any ObjectSource
    public let logger: Logger
    let recorder: PermissionInputRecorder?

    /// A context reading from `source`: the engine's committed objects, or in an application's
    /// tests the test kit's `InMemoryObjects`.
    public init(source: any ObjectSource, logger: Logger = Logger(label: "psync.rules")) {
        self.init(source: source, logger: logger, recorder: nil)
    }

    private init(source: any ObjectSource, logger: Logger, recorder: PermissionInputRecorder?) {
        self.source = source
        self.logger = logger
        self.recorder = recorder
    }

    /// A context that records what is read through it into `recorder`.
    func recording(into recorder: PermissionInputRecorder) -> PermissionContext {
        PermissionContext(source: source, logger: logger, recorder: recorder)
    }

    /// The live object under `key` with its version, or `nil` when it does not exist or is deleted.
    public func object(_ key: ObjectKey) async throws -> SyncObject? {
        try await read([key]).first?.object
    }

    public func bodies(of keys: [ObjectKey]) async throws -> [ObjectKey: [String: JSONValue]] {
        var bodies: [ObjectKey: [String: JSONValue]] = [:]
        for (_, object) in try await read(keys) { bodies[object.key] = object.body }
        return bodies
    }

    /// The live objects among `keys`, recorded.
    private func read(_ keys: [ObjectKey]) async throws -> [(partition: Partition, object: SyncObject)] {
        let live = try await source.liveObjects(keys)
        recorder?.read(keys, found: live.map { ($0.partition, $0.object.key, $0.object.version) })
        return live
    }

    public func email(ofUser userID: String) async throws -> String? {
        try await source.email(ofUser: userID)
    }

    public func userID(ofEmail email: String) async throws -> String? {
        try await source.userID(ofEmail: email)
    }
}
