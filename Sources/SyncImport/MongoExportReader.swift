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
    /// Maps the documents it can straight to their bodies (``SourceDocument/mapped``).
    private let directMapper: DirectMapper?
    /// The forms of Extended JSON seen so far.
    public private(set) var forms: ExtendedJSONForms = []

    /// - Parameters:
    ///   - maximumDepth: the deepest nesting of the JSON text (Extended JSON's type wrappers
    ///     count: the specification asks for at least 200).
    ///   - directMapper: maps the documents it can straight to their bodies
    ///     (``SourceDocument/mapped``, their ``SourceDocument/document`` holding only the kept
    ///     fields); `nil` (the default): every document is read whole.
    public init(
        path: String, decoder: ExtendedJSONDecoder = ExtendedJSONDecoder(), maximumDepth: Int = 256, directMapper: DirectMapper? = nil
    ) throws(ImportError) {
        self.file = path
        self.directMapper = directMapper
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

    private func parse(_ frame: JSONDocumentSplitter.Frame) throws(ImportError) -> JSONValue {
        do {
            return try parser.parse(frame.bytes)
        } catch {
            throw ImportError(
                error.reason == .tooDeep ? .tooDeep : .malformedJSON,
                "not valid JSON: \(error.reason.rawValue) at byte \(error.offset) of the document")
        }
    }

    private mutating func document(_ frame: JSONDocumentSplitter.Frame) throws(ImportError) -> SourceDocument {
        do throws(ImportError) {
            var json = try parse(frame)
            if let directMapper {
                if let mapped = directMapper.map(consume json, decoder: decoder) {
                    self.forms.formUnion(mapped.forms)
                    return SourceDocument(
                        document: mapped.document, mapped: mapped.body, file: file, number: frame.number, byteOffset: frame.byteOffset,
                        line: frame.line)
                }
                // The mapper took the parsed object (to change it in place): parsed again for
                // the way through the BSON document, which few documents take.
                json = try parse(frame)
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
