import PartitionSync
import SyncProtocol

/// An object an import creates: its key, its partition and its body (`_id` and `partition`
/// set as the engine sets them, or left out for the engine to set). What
/// ``ObjectStore/importObjects(_:author:validate:commit:provisionalBlobs:)`` takes, without an
/// ``Upload`` and a list of operations around each document. A class: an import's batch is
/// handed from the window to its writer, and a copy of a struct retained each of its four
/// references every time.
package final class NewObject: Sendable {
    package let key: ObjectKey
    package let partition: Partition
    package let body: [String: JSONValue]

    package init(key: ObjectKey, partition: Partition, body: [String: JSONValue]) {
        self.key = key
        self.partition = partition
        self.body = body
    }

    /// The upload of one `put` that writes this object the careful way (reading its key).
    func upload(by author: String) -> Upload {
        Upload(partition: partition, operations: [.put(key, body: body)], principal: author)
    }
}
