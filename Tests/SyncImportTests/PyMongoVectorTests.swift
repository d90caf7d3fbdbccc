import Foundation
import SyncImport
import SyncProtocol
import Testing

/// The vectors PyMongo wrote (scripts/generate_import_vectors.py): every BSON type, in BSON,
/// canonical and relaxed Extended JSON, gzip'd and not, each with the body or the refusal the
/// type table (docs/MIGRATING.md) makes of it under the default policy.
@Suite("PyMongo's vectors")
struct PyMongoVectorTests {
    struct Expectation {
        var name: String
        var body: JSONValue?
        var refusal: (kind: String, path: String)?
    }

    static let expectations: [Expectation] = {
        let text = try! String(contentsOfFile: Fixtures.path("pymongo/vectors.expected.json"), encoding: .utf8)
        return text.split(separator: "\n").map { line in
            let fields = try! JSONParser().parse(String(line)).objectValue!
            if let kind = fields["refuse"]?.stringValue {
                return Expectation(name: fields["name"]!.stringValue!, body: nil, refusal: (kind, fields["path"]!.stringValue!))
            }
            return Expectation(name: fields["name"]!.stringValue!, body: fields["body"]!, refusal: nil)
        }
    }()

    static let files = [
        "vectors.bson", "vectors.bson.gz", "vectors.canonical.json", "vectors.canonical-array.json",
        "vectors.relaxed.json", "vectors.relaxed.json.gz",
    ]

    @Test("every vector decodes to its expected body, or is refused naming its field", arguments: files)
    func vectors(file: String) throws {
        let documents = try Fixtures.readAll(Fixtures.path("pymongo/" + file))
        #expect(documents.count == Self.expectations.count)
        let mapper = JSONMapper()
        for (document, expectation) in zip(documents, Self.expectations) {
            if case .string(let name)? = document.id { #expect(name == expectation.name) }
            do {
                let body = try document.body(collection: "Vectors", mapper: mapper)
                #expect(expectation.refusal == nil, "\(expectation.name) should be refused")
                #expect(JSONValue.object(body) == expectation.body, "\(expectation.name)")
            } catch {
                guard let refusal = expectation.refusal else {
                    Issue.record("\(expectation.name) refused: \(error)")
                    continue
                }
                #expect(error.kind.rawValue == refusal.kind, "\(expectation.name): \(error)")
                #expect(error.path?.description == refusal.path, "\(expectation.name): \(error)")
                #expect(error.file == Fixtures.path("pymongo/" + file))
                #expect(error.documentNumber == document.number)
                #expect(error.documentID == document.id?.displayText)
            }
        }
    }

    @Test("the three forms decode to the same documents, value for value")
    func formsAgree() throws {
        let bson = try Fixtures.readAll(Fixtures.path("pymongo/vectors.bson"))
        for file in ["vectors.canonical.json", "vectors.relaxed.json"] {
            let json = try Fixtures.readAll(Fixtures.path("pymongo/" + file))
            for (fromBSON, fromJSON) in zip(bson, json) {
                var expected = fromBSON.document.canonicalExtendedJSON
                // Relaxed Extended JSON writes Int64 values that fit 32 bits as plain numbers,
                // read back as Int32: the one difference the specification allows.
                if file.contains("relaxed") { expected = Self.relaxingSmallInt64(expected) }
                #expect(fromJSON.document.canonicalExtendedJSON == expected, "\(file) document \(fromJSON.number)")
            }
        }
    }

    static func relaxingSmallInt64(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let fields):
            if fields.count == 1, let text = fields["$numberLong"]?.stringValue, let number = Int64(text),
                Int32(exactly: number) != nil
            {
                return ["$numberInt": .string(text)]
            }
            if fields.count == 1, fields["$date"] != nil { return value }
            return .object(fields.mapValues(relaxingSmallInt64))
        case .array(let elements):
            return .array(elements.map(relaxingSmallInt64))
        default:
            return value
        }
    }

    @Test("the form of Extended JSON is detected", arguments: [
        ("vectors.canonical.json", ExtendedJSONFormat.canonical),
        ("vectors.canonical-array.json", .canonical),
        ("vectors.relaxed.json", .relaxed),
        ("vectors.relaxed.json.gz", .relaxed),
    ])
    func detection(file: String, format: ExtendedJSONFormat) throws {
        var reader = try MongoExportReader(path: Fixtures.path("pymongo/" + file))
        while try reader.next() != nil {}
        #expect(reader.format == format)
        #expect(reader.layout == (file.contains("array") ? .array : .documents))
        #expect(reader.isGzip == file.hasSuffix(".gz"))
    }
}
