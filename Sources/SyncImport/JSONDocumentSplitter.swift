/// Cuts the text of a mongoexport file into its documents without parsing them, a chunk at a
/// time, so that a file of any size is read in memory bounded by its largest document. Pure:
/// the caller feeds the bytes.
///
/// Reads both layouts of mongoexport: one document after another (one per line by default,
/// or pretty-printed over several with `--pretty`), and one JSON array of documents
/// (`--jsonArray`), told apart by the first character. A UTF-8 byte order mark is skipped.
public struct JSONDocumentSplitter: Sendable {
    /// One document's text and where it starts.
    public struct Frame: Sendable, Hashable {
        public var bytes: [UInt8]
        /// From 1.
        public var number: Int
        /// Of the document's `{` in the whole text.
        public var byteOffset: Int64
        /// Of the document's `{`, from 1.
        public var line: Int
    }

    public enum Layout: String, Sendable, Hashable {
        /// Documents one after another (mongoexport's default: one per line).
        case documents
        /// One JSON array of documents (`mongoexport --jsonArray`).
        case array
    }

    /// The largest document text accepted, in bytes. Default 64 MiB (a 16 MiB BSON document
    /// written as canonical Extended JSON stays below it).
    public var maximumDocumentBytes: Int
    /// Known once the first character is read.
    public private(set) var layout: Layout?

    private enum Phase: Sendable {
        case start
        case betweenDocuments
        case arrayFirst
        case arrayAfterElement
        case arrayNextElement
        case afterArray
        case inDocument
    }

    private var buffer: [UInt8] = []
    /// Where unread text starts in `buffer`.
    private var position = 0
    /// The offset in the whole text of `buffer[0]`.
    private var bufferOffset: Int64 = 0
    private var line = 1
    private var phase = Phase.start
    private var sawBOMCheck = false
    private var inputEnded = false
    private var count = 0
    // The document being scanned.
    private var documentStart = 0
    private var documentLine = 1
    private var depth = 0
    private var inString = false
    private var escaped = false

    public init(maximumDocumentBytes: Int = 64 << 20) {
        self.maximumDocumentBytes = maximumDocumentBytes
    }

    /// More of the text.
    /// The bytes held: the open document and at most about one chunk more.
    public var bufferedByteCount: Int { buffer.count }

    public mutating func append(_ bytes: some Sequence<UInt8>) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// The next whole document; `nil` when more text is needed, or after ``endInput()`` when
    /// the text is done.
    public mutating func next() throws(ImportError) -> Frame? {
        if !sawBOMCheck {
            if buffer.count - position < 3, !inputEnded { return nil }
            if buffer.count - position >= 3, buffer[position] == 0xEF, buffer[position + 1] == 0xBB,
                buffer[position + 2] == 0xBF
            {
                position += 3
            }
            sawBOMCheck = true
        }
        while position < buffer.count {
            let byte = buffer[position]
            switch phase {
            case .inDocument:
                if let frame = try scanDocument() { return frame }
            case .start, .betweenDocuments, .arrayFirst, .arrayAfterElement, .arrayNextElement, .afterArray:
                if isWhitespace(byte) {
                    if byte == 0x0A { line += 1 }
                    position += 1
                    continue
                }
                try structural(byte)
            }
        }
        if inputEnded { try checkEnd() }
        return nil
    }

    /// Declares the end of the text: ``next()`` then returns the documents left, and refuses a
    /// document or array left open.
    public mutating func endInput() {
        inputEnded = true
    }

    private func checkEnd() throws(ImportError) {
        switch phase {
        case .inDocument:
            throw ImportError(
                .truncated, "the file ends inside the document (cut short, or a missing \"}\")",
                documentNumber: count + 1, byteOffset: bufferOffset + Int64(documentStart), line: documentLine)
        case .arrayFirst, .arrayAfterElement, .arrayNextElement:
            throw ImportError(.truncated, "the file ends before the array of documents is closed with \"]\" (cut short?)", line: line)
        case .start, .betweenDocuments, .afterArray:
            return
        }
    }

    private func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private func unexpected(_ byte: UInt8, _ expected: String) -> ImportError {
        let shown = byte >= 0x20 && byte < 0x7F ? "\"\(Character(Unicode.Scalar(byte)))\"" : "byte 0x\(HexText.string([byte]))"
        return ImportError(
            .malformedJSON, "expected \(expected) but found \(shown)",
            documentNumber: count + 1, byteOffset: bufferOffset + Int64(position), line: line)
    }

    /// A character between documents.
    private mutating func structural(_ byte: UInt8) throws(ImportError) {
        switch (phase, byte) {
        case (.start, UInt8(ascii: "[")):
            layout = .array
            phase = .arrayFirst
            position += 1
        case (.start, UInt8(ascii: "{")):
            layout = .documents
            beginDocument()
        case (.start, _):
            throw unexpected(byte, "a document (\"{\") or an array of documents (\"[\")")
        case (.betweenDocuments, UInt8(ascii: "{")), (.arrayFirst, UInt8(ascii: "{")), (.arrayNextElement, UInt8(ascii: "{")):
            beginDocument()
        case (.betweenDocuments, _):
            throw unexpected(byte, "a document (\"{\")")
        case (.arrayFirst, UInt8(ascii: "]")), (.arrayAfterElement, UInt8(ascii: "]")):
            phase = .afterArray
            position += 1
        case (.arrayFirst, _):
            throw unexpected(byte, "a document (\"{\") or \"]\"")
        case (.arrayAfterElement, UInt8(ascii: ",")):
            phase = .arrayNextElement
            position += 1
        case (.arrayAfterElement, _):
            throw unexpected(byte, "\",\" or \"]\" after a document")
        case (.arrayNextElement, _):
            throw unexpected(byte, "a document (\"{\")")
        case (.afterArray, _):
            throw unexpected(byte, "nothing after the array of documents")
        case (.inDocument, _):
            preconditionFailure("scanned by scanDocument")
        }
    }

    private mutating func beginDocument() {
        phase = .inDocument
        documentStart = position
        documentLine = line
        depth = 0
        inString = false
        escaped = false
    }

    /// Scans the open document from `position`; the frame when it closes.
    private mutating func scanDocument() throws(ImportError) -> Frame? {
        var index = position
        let end = buffer.count
        while index < end {
            let byte = buffer[index]
            index += 1
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                } else if byte == 0x0A {
                    line += 1
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth == 0 {
                    position = index
                    count += 1
                    phase = layout == .array ? .arrayAfterElement : .betweenDocuments
                    return Frame(
                        bytes: Array(buffer[documentStart..<index]), number: count,
                        byteOffset: bufferOffset + Int64(documentStart), line: documentLine)
                }
            case 0x0A:
                line += 1
            default:
                break
            }
        }
        position = index
        if position - documentStart > maximumDocumentBytes {
            throw ImportError(
                .malformedJSON,
                "the document runs past \(maximumDocumentBytes) bytes without closing (a missing \"}\"?)",
                documentNumber: count + 1, byteOffset: bufferOffset + Int64(documentStart), line: documentLine)
        }
        return nil
    }

    /// Drops the text already returned, keeping the open document.
    private mutating func compact() {
        let keep = phase == .inDocument ? documentStart : position
        guard keep > 0, keep >= buffer.count / 2 || keep > 1 << 20 else { return }
        buffer.removeFirst(keep)
        bufferOffset += Int64(keep)
        position -= keep
        if phase == .inDocument { documentStart -= keep }
    }
}
