import SyncProtocol

/// Reads the documents of a `mongoexport` file one at a time: Extended JSON v2, relaxed or
/// canonical (detected, see ``format``), one document per line or one `--jsonArray` array,
/// gzip-compressed or not. Memory stays bounded by the largest document whatever the size of
/// the file.
///
/// After an error in one document (``ImportError/Kind/malformedJSON``,
/// ``ImportError/Kind/invalidExtendedJSON``) the reader is at the next one, so a caller may
/// skip it; an error of the file's structure (`truncated`, `gzip`, `io`) ends the reading.
public struct MongoExportReader {
    public let file: String
    private var frames: FramedInput<JSONDocumentSplitter>
    private let parser: JSONParser
    private let decoder: ExtendedJSONDecoder
    /// The forms of Extended JSON seen so far.
    public private(set) var forms: ExtendedJSONForms = []

    /// - Parameters:
    ///   - maximumDepth: the deepest nesting of the JSON text (Extended JSON's type wrappers
    ///     count: the specification asks for at least 200).
    public init(path: String, decoder: ExtendedJSONDecoder = ExtendedJSONDecoder(), maximumDepth: Int = 256)
        throws(ImportError)
    {
        self.file = path
        self.frames = FramedInput(file: path, input: try FileInput(path: path), splitter: JSONDocumentSplitter())
        self.decoder = decoder
        self.parser = JSONParser(maximumDepth: maximumDepth)
    }

    /// The form of Extended JSON of the documents read so far.
    public var format: ExtendedJSONFormat { forms.format }

    /// One document per line (or pretty-printed), or one array; known after the first document.
    public var layout: JSONDocumentSplitter.Layout? { frames.splitter.layout }

    /// Whether the file is gzip-compressed (known after the first document).
    public var isGzip: Bool { frames.input.isGzip }

    /// The next document, `nil` after the last.
    public mutating func next() throws(ImportError) -> SourceDocument? {
        guard let frame = try frames.next() else { return nil }
        return try document(frame)
    }

    private mutating func document(_ frame: JSONDocumentSplitter.Frame) throws(ImportError) -> SourceDocument {
        do throws(ImportError) {
            let json: JSONValue
            do {
                json = try parser.parse(frame.bytes)
            } catch {
                throw ImportError(
                    error.reason == .tooDeep ? .tooDeep : .malformedJSON,
                    "not valid JSON: \(error.reason.rawValue) at byte \(error.offset) of the document")
            }
            let (document, forms) = try decoder.decode(json)
            self.forms.formUnion(forms)
            return SourceDocument(
                document: document, file: file, number: frame.number, byteOffset: frame.byteOffset, line: frame.line)
        } catch {
            var id: String?
            if case .object(let fields)? = try? parser.parse(frame.bytes), let raw = fields["_id"] {
                id = (try? decoder.decodeValue(raw))?.displayText
            }
            throw error.located(
                file: file, documentNumber: frame.number, documentID: id, byteOffset: frame.byteOffset, line: frame.line)
        }
    }
}
