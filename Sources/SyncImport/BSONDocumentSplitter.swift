/// Cuts the bytes of a mongodump `.bson` file (BSON documents one after another, each starting
/// with its int32 little-endian length) into its documents, a chunk at a time, in memory
/// bounded by the largest document. Pure: the caller feeds the bytes.
public struct BSONDocumentSplitter: Sendable {
    public struct Frame: Sendable, Hashable {
        /// The whole document, its length prefix included.
        public var bytes: [UInt8]
        /// From 1.
        public var number: Int
        public var byteOffset: Int64
    }

    /// The largest document accepted: MongoDB's 16 MiB, and the 16 KiB it allows its own
    /// documents above it.
    public var maximumDocumentBytes: Int

    private var buffer: [UInt8] = []
    private var position = 0
    private var bufferOffset: Int64 = 0
    private var count = 0
    private var inputEnded = false

    public init(maximumDocumentBytes: Int = 16 << 20 + 16 << 10) {
        self.maximumDocumentBytes = maximumDocumentBytes
    }

    /// The bytes held: the open document and at most about one chunk more.
    public var bufferedByteCount: Int { buffer.count }

    public mutating func append(_ bytes: some Sequence<UInt8>) {
        if position > 0, position >= buffer.count / 2 || position > 1 << 20 {
            buffer.removeFirst(position)
            bufferOffset += Int64(position)
            position = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole document; `nil` when more bytes are needed, or after ``endInput()`` when
    /// they are done. A length prefix below 5
    /// or past the maximum is refused (``ImportError/Kind/invalidLength``), and stays refused:
    /// nothing after it can be framed.
    public mutating func next() throws(ImportError) -> Frame? {
        let available = buffer.count - position
        guard available >= 4 else {
            if inputEnded { try checkEnd() }
            return nil
        }
        var length: Int32 = 0
        for offset in 0..<4 { length |= Int32(buffer[position + offset]) << (8 * offset) }
        guard length >= 5, Int(length) <= maximumDocumentBytes else {
            throw ImportError(
                .invalidLength,
                "the length prefix \(length) is impossible for a BSON document (5 to \(maximumDocumentBytes) bytes): the file is not mongodump's, or is damaged",
                documentNumber: count + 1, byteOffset: bufferOffset + Int64(position))
        }
        guard available >= Int(length) else {
            if inputEnded { try checkEnd() }
            return nil
        }
        count += 1
        let frame = Frame(
            bytes: Array(buffer[position..<position + Int(length)]), number: count,
            byteOffset: bufferOffset + Int64(position))
        position += Int(length)
        return frame
    }

    /// Declares the end of the bytes: ``next()`` then returns the documents left and refuses
    /// a document cut short.
    public mutating func endInput() {
        inputEnded = true
    }

    private func checkEnd() throws(ImportError) {
        let available = buffer.count - position
        guard available > 0 else { return }
        let offset = bufferOffset + Int64(position)
        if available < 4 {
            throw ImportError(
                .truncated, "the file ends \(available) bytes into the document, inside its length prefix (the file is cut short)",
                documentNumber: count + 1, byteOffset: offset)
        }
        var length: Int32 = 0
        for index in 0..<4 { length |= Int32(buffer[position + index]) << (8 * index) }
        throw ImportError(
            .truncated, "the file ends inside the document: its length prefix says \(length) bytes, \(available) remain (the file is cut short)",
            documentNumber: count + 1, byteOffset: offset)
    }
}
