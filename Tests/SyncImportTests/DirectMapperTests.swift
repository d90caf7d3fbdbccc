import Foundation
import SyncImport
import SyncProtocol
import Testing

/// ``DirectMapper``: the body, conversions and forms it gives are those of the way through the
/// ``BSONDocument`` (``ExtendedJSONDecoder`` then ``JSONMapper``), and what it cannot map it
/// leaves to that way.
@Suite("Mapping Extended JSON straight to the body")
struct DirectMapperTests {
    static let mapper = DirectMapper(keptFields: DocumentPlacement().fieldsRead)
    static let decoder = ExtendedJSONDecoder()

    /// The body, conversions and forms of the way through the ``BSONDocument``.
    static func reference(_ json: JSONValue) throws -> (body: [String: JSONValue], conversions: ConversionTally, forms: ExtendedJSONForms) {
        let (document, forms) = try decoder.decode(json)
        var tally = ConversionTally()
        tally.count(document)
        return (try JSONMapper().map(document, collection: "C"), tally, forms)
    }

    static func parse(_ text: String) throws -> JSONValue {
        try JSONParser(maximumDepth: 256).parse(text)
    }

    @Test("documents of plain values and type wrappers map as through the BSON document", arguments: [
        #"{"_id": {"$oid": "5F1B2C3D4E5F60718293A4B5"}, "partition": "conversation=c-1", "text": "héllo", "n": 3, "big": 9007199254740993, "x": 1.5}"#,
        #"{"_id": "m-1", "partition": "p=1", "at": {"$date": "2024-05-01T10:00:00Z"}, "location": []}"#,
        #"{"_id": {"$numberLong": "42"}, "at": {"$date": {"$numberLong": "1714557600123"}}, "old": {"$date": {"$numberLong": "-62135596800000"}}}"#,
        #"{"_id": {"$numberInt": "7"}, "d": {"$numberDouble": "1.25"}, "e": {"$numberDecimal": "-1.50E-10"}, "l": {"$numberLong": "-9223372036854775808"}}"#,
        #"{"_id": 1, "nested": {"a": [{"$oid": "5f1b2c3d4e5f60718293a4b5"}, {"b": {"$date": "1970-01-01T00:00:00.001Z"}}], "c": null, "t": true}}"#,
        #"{"_id": 2, "ref": {"$ref": "User", "$id": {"$oid": "5f1b2c3d4e5f60718293a4b5"}}, "arr": [[1, 2], [{"$numberLong": "3"}]]}"#,
        #"{"_id": 3, "partition": {"$oid": "5f1b2c3d4e5f60718293a4b5"}, "_partition": ["a"], "empty": {}}"#,
    ])
    func sameAsThroughBSON(text: String) throws {
        let json = try Self.parse(text)
        let mapped = try #require(Self.mapper.map(json, decoder: Self.decoder))
        let reference = try Self.reference(json)
        #expect(mapped.body.body == reference.body)
        #expect(mapped.body.conversions == reference.conversions)
        #expect(mapped.forms == reference.forms)
    }

    @Test("the kept fields are decoded whole, as the decoder decodes them; the others left out")
    func keptFields() throws {
        let json = try Self.parse(
            #"{"_id": {"$oid": "5f1b2c3d4e5f60718293a4b5"}, "partition": {"k": "v"}, "_partition": "user=1", "text": "t", "room": "r=1"}"#)
        let mapped = try #require(DirectMapper(keptFields: DocumentPlacement(partitionField: "room").fieldsRead).map(json, decoder: Self.decoder))
        let (whole, _) = try Self.decoder.decode(json)
        #expect(mapped.document.fields.map(\.name).sorted() == ["_id", "_partition", "partition", "room"])
        for field in mapped.document.fields { #expect(field.value == whole[field.name]) }
        #expect(mapped.document["text"] == nil)
    }

    @Test("what needs the policy, a refusal or a check is left to the way through the BSON document", arguments: [
        #"{"_id": 1, "b": {"$binary": {"base64": "AAEC", "subType": "00"}}}"#,
        #"{"_id": 1, "u": {"$uuid": "00112233-4455-6677-8899-aabbccddeeff"}}"#,
        #"{"_id": 1, "a": [{"d": {"$numberDouble": "NaN"}}]}"#,
        #"{"_id": 1, "d": {"$numberDouble": "-Infinity"}}"#,
        #"{"_id": 1, "far": {"$date": {"$numberLong": "253402300800000"}}}"#,
        #"{"_id": 1, "r": {"$regularExpression": {"pattern": "a", "options": "i"}}}"#,
        #"{"_id": 1, "t": {"$timestamp": {"t": 1, "i": 2}}}"#,
        #"{"_id": 1, "m": {"$minKey": 1}}"#,
        #"{"_id": 1, "s": {"$symbol": "sym"}}"#,
        #"{"_id": 1, "c": {"$code": "x()"}}"#,
        #"{"_id": 1, "n": "a\u0000b"}"#,
        #"{"_id": 1, "o": {"a\u0000": 1}}"#,
        #"{"_id": {"$oid": "not hex"}}"#,
        #"{"_id": 1, "l": {"$numberLong": "12", "extra": 1}}"#,
        #"[1, 2]"#,
    ])
    func leftToTheOtherWay(text: String) throws {
        #expect(Self.mapper.map(try Self.parse(text), decoder: Self.decoder) == nil)
    }

    @Test("a reader with a direct mapper gives every fixture document the body, conversions and format of one without", arguments: [
        "pymongo/vectors.relaxed.json", "pymongo/vectors.canonical.json", "pymongo/vectors.canonical-array.json",
        "rchat/mongoexport-relaxed/ChatMessage.json", "rchat/mongoexport-canonical/User.json",
    ])
    func readerAgrees(file: String) throws {
        var plain = try MongoExportReader(path: Fixtures.path(file))
        var direct = try MongoExportReader(path: Fixtures.path(file), directMapper: Self.mapper)
        var mappedCount = 0
        while true {
            let expected = Self.next(&plain)
            let got = Self.next(&direct)
            guard case .success(let document?) = expected else {
                #expect(String(describing: got) == String(describing: expected))
                break
            }
            let other = try #require(try got.get())
            if other.mapped != nil { mappedCount += 1 }
            #expect(other.number == document.number && other.byteOffset == document.byteOffset && other.line == document.line)
            #expect(other.id == document.id)
            #expect(other.conversions == document.conversions)
            let mapper = JSONMapper(policy: ImportPolicy())
            #expect(
                (try? other.body(collection: "C", mapper: mapper)) == (try? document.body(collection: "C", mapper: mapper)))
            for name in Self.mapper.keptFields { #expect(other.document[name] == document.document[name]) }
        }
        #expect(direct.format == plain.format)
        #expect(mappedCount > 0)
    }

    static func next(_ reader: inout MongoExportReader) -> Result<SourceDocument?, ImportError> {
        do throws(ImportError) {
            return .success(try reader.next())
        } catch {
            return .failure(error)
        }
    }
}
