import NIOCore
import PartitionSync
import SyncProtocol

extension EncodedChangeBatch {
    /// The `changes` message (``messageBytes(objects:reset:)``) written straight into one
    /// buffer, the form sessions queue and every session of a feed shares.
    func messageBuffer(objects selected: [Object]? = nil, reset: Bool? = nil) -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: messageSize(objects: selected))
        writeMessage(objects: selected, reset: reset) { buffer.writeBytes($0) }
        return buffer
    }
}
