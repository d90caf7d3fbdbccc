import SyncProtocol

/// A write the server refused (``SyncClient/refusedWrites``): its request id, partition and
/// error. Its description is the line a command-line tool prints for it.
public struct RefusedWrite: Sendable, CustomStringConvertible {
    public let requestId: String
    public let partition: Partition
    public let error: SyncError

    public var description: String {
        "Refused by the server (\(partition): \(error.code): \(error.message)); nothing of it was kept."
    }
}
