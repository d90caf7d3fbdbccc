/// What cuts a file's bytes into documents as they arrive: a chunk at a time in, a frame (one
/// document's bytes) at a time out.
public protocol DocumentSplitter {
    associatedtype Frame
    mutating func append(_ bytes: some Sequence<UInt8>)
    /// The next whole document, `nil` until more bytes come (or after the last).
    mutating func next() throws(ImportError) -> Frame?
    /// No more bytes will come: what is left must be whole.
    mutating func endInput()
}

extension BSONDocumentSplitter: DocumentSplitter {}
extension JSONDocumentSplitter: DocumentSplitter {}

/// A file read a chunk at a time into a splitter: the readers' one loop.
struct FramedInput<Splitter: DocumentSplitter> {
    let file: String
    let input: FileInput
    var splitter: Splitter
    private var inputEnded = false

    init(file: String, input: FileInput, splitter: Splitter) {
        self.file = file
        self.input = input
        self.splitter = splitter
    }

    /// The next document's frame, reading more of the file as needed; `nil` after the last.
    mutating func next() throws(ImportError) -> Splitter.Frame? {
        while true {
            let frame: Splitter.Frame?
            do {
                frame = try splitter.next()
            } catch {
                throw error.located(file: file)
            }
            if let frame { return frame }
            if inputEnded { return nil }
            if let bytes = try input.read() {
                splitter.append(bytes)
            } else {
                inputEnded = true
                splitter.endInput()
            }
        }
    }
}
