import SyncImport
import SyncProtocol
import Testing

/// Cutting exports into documents a chunk at a time: any chunking gives the same documents.
@Suite("Splitting files into documents")
struct SplitterTests {
    static func frames(_ text: String, chunk: Int = .max, maximum: Int = 64 << 20) throws -> [JSONDocumentSplitter.Frame] {
        var splitter = JSONDocumentSplitter(maximumDocumentBytes: maximum)
        var frames: [JSONDocumentSplitter.Frame] = []
        let bytes = Array(text.utf8)
        var start = 0
        while start < bytes.count {
            splitter.append(bytes[start..<min(start + chunk, bytes.count)])
            start += chunk
            while let frame = try splitter.next() { frames.append(frame) }
        }
        splitter.endInput()
        while let frame = try splitter.next() { frames.append(frame) }
        return frames
    }

    static let lines = """
        {"_id":1,"s":"braces { [ in \\" strings ] }","t":"\\\\"}
        {"_id":2,"a":[{"b":{}},[]]}

        {"_id":3}
        """

    @Test("one document per line, in chunks of any size", arguments: [1, 2, 3, 7, 64, .max])
    func lines(chunk: Int) throws {
        let frames = try Self.frames(Self.lines, chunk: chunk)
        #expect(frames.map(\.number) == [1, 2, 3])
        #expect(frames.map(\.line) == [1, 2, 4])
        #expect(frames.map { String(decoding: $0.bytes, as: UTF8.self) } == Self.lines.split(separator: "\n").map(String.init))
        #expect(frames[1].byteOffset == Int64(Array(Self.lines.utf8).firstIndex(of: UInt8(ascii: "\n"))! + 1))
        for frame in frames { #expect(throws: Never.self) { try JSONParser().parse(frame.bytes) } }
    }

    @Test("pretty-printed documents, a byte order mark, an array", arguments: [1, 5, .max])
    func layouts(chunk: Int) throws {
        let pretty = "\u{FEFF}{\n  \"a\": {\n    \"b\": 1\n  }\n}\n{\n  \"c\": [\n    2\n  ]\n}\n"
        #expect(try Self.frames(pretty, chunk: chunk).map(\.line) == [1, 6])
        let array = "[\n{\"a\":1},\n  {\"b\":\"]\"} ,{}\n]\n"
        let frames = try Self.frames(array, chunk: chunk)
        #expect(frames.map { String(decoding: $0.bytes, as: UTF8.self) } == [#"{"a":1}"#, #"{"b":"]"}"#, "{}"])
        #expect(try Self.frames("[]", chunk: chunk).isEmpty)
        #expect(try Self.frames(" [ ] \n", chunk: chunk).isEmpty)
        #expect(try Self.frames("", chunk: chunk).isEmpty)
        #expect(try Self.frames("\n\n", chunk: chunk).isEmpty)
    }

    @Test("structure errors are refused with the document's number and line", arguments: [
        ("{}\n{} x", ImportError.Kind.malformedJSON, 3),
        ("[{} {}]", .malformedJSON, 2),
        ("[{},]", .malformedJSON, 2),
        ("[] {}", .malformedJSON, 1),
        ("[1]", .malformedJSON, 1),
        ("1", .malformedJSON, 1),
        ("{}\n{\"a\": [1, 2}", .truncated, 2),
        ("{\"a\": \"}", .truncated, 1),
        ("[{}", .truncated, nil),
        ("[{},", .truncated, nil),
    ] as [(String, ImportError.Kind, Int?)])
    func structure(text: String, kind: ImportError.Kind, document: Int?) {
        for chunk in [1, Int.max] {
            #expect {
                _ = try Self.frames(text, chunk: chunk)
            } throws: { error in
                guard let error = error as? ImportError else { return false }
                return error.kind == kind && error.documentNumber == document
            }
        }
    }

    @Test("a document that never closes is refused past the size limit, not buffered forever")
    func runaway() {
        #expect {
            _ = try Self.frames("{\"a\": \"" + String(repeating: "x", count: 5000), chunk: 100, maximum: 1000)
        } throws: { error in
            (error as? ImportError)?.kind == .malformedJSON
        }
    }

    @Test("memory stays bounded by a chunk and a document, however long the file")
    func bounded() throws {
        var json = JSONDocumentSplitter()
        var bson = BSONDocumentSplitter()
        let line = Array(#"{"_id":"0123456789","text":"some text to make the line longer"}"#.utf8) + [0x0A]
        let document = bsonDocument(element(0x02, "text", bsonString(String(repeating: "y", count: 100))))
        var largest = (json: 0, bson: 0)
        var counts = (json: 0, bson: 0)
        for _ in 0..<400 {
            json.append(Array(repeating: line, count: 50).joined())
            while try json.next() != nil { counts.json += 1 }
            bson.append(Array(repeating: document, count: 50).joined())
            while try bson.next() != nil { counts.bson += 1 }
            largest = (max(largest.json, json.bufferedByteCount), max(largest.bson, bson.bufferedByteCount))
        }
        #expect(counts.json == 20_000 && counts.bson == 20_000)
        #expect(largest.json <= 2 * 50 * line.count)
        #expect(largest.bson <= 2 * 50 * document.count)
    }

    static let documents = (1...4).map { number in
        bsonDocument(element(0x10, "n", int32LE(Int32(number))) + element(0x02, "s", bsonString(String(repeating: "z", count: number))))
    }

    static func bsonFrames(_ bytes: [UInt8], chunk: Int) throws -> [BSONDocumentSplitter.Frame] {
        var splitter = BSONDocumentSplitter()
        var frames: [BSONDocumentSplitter.Frame] = []
        var start = 0
        while start < bytes.count {
            splitter.append(bytes[start..<min(start + chunk, bytes.count)])
            start += chunk
            while let frame = try splitter.next() { frames.append(frame) }
        }
        splitter.endInput()
        while let frame = try splitter.next() { frames.append(frame) }
        return frames
    }

    @Test("BSON documents one after another, in chunks of any size", arguments: [1, 3, 4, 5, 17, .max])
    func bson(chunk: Int) throws {
        let frames = try Self.bsonFrames(Self.documents.flatMap { $0 }, chunk: chunk)
        #expect(frames.map(\.bytes) == Self.documents)
        #expect(frames.map(\.number) == [1, 2, 3, 4])
        #expect(frames.map(\.byteOffset) == [0, 21, 43, 66])
        #expect(try Self.bsonFrames([], chunk: chunk).isEmpty)
    }

    @Test("an impossible length prefix, or bytes cut short, are refused with the document's number", arguments: [
        (int32LE(4), ImportError.Kind.invalidLength),
        (int32LE(0), .invalidLength),
        (int32LE(-1), .invalidLength),
        (int32LE(16 << 20 + 16 << 10 + 1), .invalidLength),
        ([0x20, 0], .truncated),
        (int32LE(100) + [0x0A, 0x61, 0], .truncated),
    ] as [([UInt8], ImportError.Kind)])
    func bsonErrors(tail: [UInt8], kind: ImportError.Kind) {
        let bytes = Self.documents[0] + Self.documents[1] + tail
        #expect {
            _ = try Self.bsonFrames(bytes, chunk: 7)
        } throws: { error in
            guard let error = error as? ImportError else { return false }
            return error.kind == kind && error.documentNumber == 3 && error.byteOffset == 43
        }
    }
}
