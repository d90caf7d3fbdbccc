import SyncProtocol

/// A document as a reader found it in an export, and where.
public struct SourceDocument: Sendable, Hashable {
    public var document: BSONDocument
    /// The file it was read from.
    public var file: String
    /// Its number in the file, from 1.
    public var number: Int
    /// The offset of its first byte in the (decompressed) file.
    public var byteOffset: Int64
    /// The line it starts on, in a JSON export.
    public var line: Int?

    public init(document: BSONDocument, file: String, number: Int, byteOffset: Int64, line: Int? = nil) {
        self.document = document
        self.file = file
        self.number = number
        self.byteOffset = byteOffset
        self.line = line
    }

    /// The document's `_id`.
    public var id: BSONValue? { document["_id"] }

    /// The JSON body `mapper` makes of it; an error names this document's file, number and `_id`.
    public func body(collection: String, mapper: JSONMapper) throws(ImportError) -> [String: JSONValue] {
        do {
            return try mapper.map(document, collection: collection)
        } catch {
            throw error.located(
                file: file, documentNumber: number, documentID: id?.displayText, byteOffset: byteOffset, line: line)
        }
    }
}
