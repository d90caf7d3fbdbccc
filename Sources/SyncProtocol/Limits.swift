/// Size limits of the engine. Exceeding one is a ``SyncError``, never a crash.
public struct Limits: Sendable, Hashable {
    /// The largest object body, in bytes of compact JSON. Default 1 MiB.
    public var maximumBodyBytes: Int
    /// The deepest nesting of arrays and objects in a body (the body itself is depth 1). Default 32.
    public var maximumDepth: Int
    /// The most operations in one upload. Default 1,000.
    public var maximumOperations: Int

    public init(maximumBodyBytes: Int = 1 << 20, maximumDepth: Int = 32, maximumOperations: Int = 1_000) {
        self.maximumBodyBytes = maximumBodyBytes
        self.maximumDepth = maximumDepth
        self.maximumOperations = maximumOperations
    }

    /// Checks a body against the limits and returns its compact JSON encoding (one pass that
    /// encodes, measures the nesting and looks for U+0000).
    public func encode(body: [String: JSONValue], of key: ObjectKey) throws(SyncError) -> [UInt8] {
        var writer = JSONWriter()
        writer.write(.object(body), depth: 0)
        guard writer.depth <= maximumDepth else {
            throw SyncError(.jsonTooDeep, "\(key) nests \(writer.depth) levels deep; the limit is \(maximumDepth)")
        }
        // PostgreSQL text and jsonb cannot hold U+0000.
        guard !writer.sawNUL else {
            throw SyncError(.invalidOperation, "\(key): strings and field names may not contain U+0000")
        }
        guard writer.output.count <= maximumBodyBytes else {
            throw SyncError(
                .payloadTooLarge, "\(key) would be \(writer.output.count) bytes; the limit is \(maximumBodyBytes)")
        }
        // The fields the server acts on must be well formed (docs/PROTOCOL.md, "Blobs", "Expiry").
        if writer.sawBlobField { _ = try BlobReference.references(in: .object(body)) }
        if body[ObjectExpiry.field] != nil { _ = try ObjectExpiry.date(of: body) }
        return writer.output
    }

    /// Checks the number of operations in an upload.
    public func check(operationCount: Int) throws(SyncError) {
        guard operationCount <= maximumOperations else {
            throw SyncError(
                .tooManyOperations, "an upload holds at most \(maximumOperations) operations, got \(operationCount)")
        }
    }

}
