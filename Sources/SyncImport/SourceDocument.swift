import SyncProtocol

/// A document as a reader found it in an export, and where.
public struct SourceDocument: Sendable, Hashable {
    /// The document; with ``mapped``, only the fields ``DirectMapper/keptFields`` names.
    public var document: BSONDocument
    /// The body a ``DirectMapper`` made straight from the text, when it did.
    public var mapped: MappedBody?
    /// The file it was read from.
    public var file: String
    /// Its number in the file, from 1.
    public var number: Int
    /// The offset of its first byte in the (decompressed) file.
    public var byteOffset: Int64
    /// The line it starts on, in a JSON export.
    public var line: Int?

    public init(document: BSONDocument, mapped: MappedBody? = nil, file: String, number: Int, byteOffset: Int64, line: Int? = nil) {
        self.document = document
        self.mapped = mapped
        self.file = file
        self.number = number
        self.byteOffset = byteOffset
        self.line = line
    }

    /// The document's `_id`.
    public var id: BSONValue? { document["_id"] }

    /// The JSON body `mapper` makes of it; an error names this document's file, number and `_id`.
    public func body(collection: String, mapper: JSONMapper) throws(ImportError) -> [String: JSONValue] {
        if let mapped { return mapped.body }
        do {
            return try mapper.map(document, collection: collection)
        } catch {
            throw error.located(
                file: file, documentNumber: number, documentID: id?.displayText, byteOffset: byteOffset, line: line)
        }
    }

    /// ``body(collection:mapper:)``, leaving this document without its ``mapped`` body, so the
    /// caller holds the only reference to it and changes it in place (a body shared with the
    /// document was copied whole by the first change).
    public mutating func takeBody(collection: String, mapper: JSONMapper) throws(ImportError) -> [String: JSONValue] {
        if let body = mapped?.body {
            mapped = nil
            return body
        }
        return try body(collection: collection, mapper: mapper)
    }

    /// The values the import converted in this document (``ConversionTally``).
    public var conversions: ConversionTally {
        if let mapped { return mapped.conversions }
        var tally = ConversionTally()
        tally.count(document)
        return tally
    }
}
