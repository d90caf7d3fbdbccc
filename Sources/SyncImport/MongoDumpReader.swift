/// Reads the documents of a `mongodump` collection file (`<collection>.bson`, or `.bson.gz`
/// from `mongodump --gzip`) one at a time, in memory bounded by the largest document.
///
/// A document whose bytes are malformed (``ImportError/Kind/malformedBSON``) is refused and the
/// reader is at the next one; a wrong length prefix (`invalidLength`), a file cut short
/// (`truncated`), bad gzip or a read error end the reading.
public struct MongoDumpReader {
    public let file: String
    private var frames: FramedInput<BSONDocumentSplitter>
    private let decoder: BSONDecoder

    public init(path: String, decoder: BSONDecoder = BSONDecoder()) throws(ImportError) {
        self.file = path
        self.frames = FramedInput(file: path, input: try FileInput(path: path), splitter: BSONDocumentSplitter())
        self.decoder = decoder
    }

    /// Whether the file is gzip-compressed (known after the first document).
    public var isGzip: Bool { frames.input.isGzip }

    /// The next document, `nil` after the last.
    public mutating func next() throws(ImportError) -> SourceDocument? {
        guard let frame = try frames.next() else { return nil }
        do {
            let document = try decoder.decode(frame.bytes)
            return SourceDocument(document: document, file: file, number: frame.number, byteOffset: frame.byteOffset)
        } catch {
            throw error.located(file: file, documentNumber: frame.number, byteOffset: frame.byteOffset)
        }
    }
}
