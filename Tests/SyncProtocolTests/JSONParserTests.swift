import SyncProtocol
import Testing

@Suite("JSON parser and serializer")
struct JSONParserTests {
    let parser = JSONParser()

    @Test("scalars keep their kind: integers exact, other numbers double")
    func scalars() throws {
        #expect(try parser.parse("null") == .null)
        #expect(try parser.parse("true") == .bool(true))
        #expect(try parser.parse(" false ") == .bool(false))
        #expect(try parser.parse("42") == .int(42))
        #expect(try parser.parse("-0") == .int(0))
        #expect(try parser.parse("9223372036854775807") == .int(.max))
        #expect(try parser.parse("-9223372036854775808") == .int(.min))
        #expect(try parser.parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try parser.parse("1.5") == .double(1.5))
        #expect(try parser.parse("1.0") == .double(1))
        #expect(try parser.parse("1e3") == .double(1000))
        #expect(try parser.parse("-2.5E-3") == .double(-0.0025))
        #expect(try parser.parse(#""a\"b\\c\/d\n\u00e9\ud83d\ude00""#) == .string("a\"b\\c/d\né😀"))
    }

    @Test("containers and nesting")
    func containers() throws {
        let value = try parser.parse(#"{"a": [1, {"b": null}], "c": {}, "d": []}"#)
        #expect(value == ["a": [1, ["b": nil]], "c": [:], "d": []])
        #expect(value.depth == 3)
        #expect(try parser.parse(#"{"k": 1, "k": 2}"#) == ["k": 2])
    }

    @Test(
        "malformed input is refused with a reason",
        arguments: [
            ("", JSONParseError.Reason.unexpectedEnd),
            ("{", .unexpectedEnd),
            ("[1,]", .unexpectedCharacter),
            ("{\"a\" 1}", .unexpectedCharacter),
            ("{a: 1}", .unexpectedCharacter),
            ("01", .trailingCharacters),
            ("1 2", .trailingCharacters),
            ("-", .unexpectedEnd),
            ("1.", .invalidNumber),
            ("1e", .invalidNumber),
            (".5", .unexpectedCharacter),
            ("1e400", .numberOutOfRange),
            ("\"abc", .unexpectedEnd),
            ("\"a\u{01}b\"", .invalidString),
            (#""\x""#, .invalidEscape),
            (#""\ud800""#, .invalidEscape),
            (#""\udc00""#, .invalidEscape),
            (#""\u12G4""#, .invalidEscape),
            ("tru", .unexpectedEnd),
            ("nul!", .unexpectedCharacter),
            ("NaN", .unexpectedCharacter),
        ])
    func malformed(text: String, reason: JSONParseError.Reason) {
        #expect(throws: JSONParseError.self) { try parser.parse(text) }
        do {
            _ = try parser.parse(text)
        } catch {
            #expect(error.reason == reason, "\(text)")
        }
    }

    @Test("invalid UTF-8 is refused, not repaired")
    func invalidUTF8() {
        let bytes: [UInt8] = [0x22, 0x61, 0xC3, 0x28, 0x22]
        #expect(throws: JSONParseError(reason: .invalidUTF8, offset: 1)) { try parser.parse(bytes) }
        let overlong: [UInt8] = [0x22, 0xC0, 0xAF, 0x22]
        #expect(throws: JSONParseError.self) { try parser.parse(overlong) }
    }

    @Test("nesting beyond the limit is refused without exhausting the stack")
    func depthLimit() throws {
        let limited = JSONParser(maximumDepth: 5)
        #expect(try limited.parse("[[[[[1]]]]]") == [[[[[1]]]]])
        #expect(throws: JSONParseError.self) { try limited.parse("[[[[[[1]]]]]]") }
        let hostile = String(repeating: "[", count: 1_000_000)
        #expect(throws: JSONParseError.self) { try JSONParser().parse(hostile) }
    }

    @Test("serialization is compact, sorted and round-trips")
    func roundTrip() throws {
        let value: JSONValue = ["b": [1, 2.5, "x\n\"y\"\u{01}"], "a": nil, "c": ["z": true, "y": false], "d": 3.0]
        let text = value.jsonString
        #expect(text == #"{"a":null,"b":[1,2.5,"x\n\"y\"\u0001"],"c":{"y":false,"z":true},"d":3.0}"#)
        #expect(try parser.parse(text) == value)
        for double in [0.1, 1e-7, 123456789.125, 1e300, -5.0, 1e16] {
            #expect(try parser.parse(JSONValue.double(double).jsonString).doubleValue == double)
        }
    }

    @Test("equivalence compares numbers by value and objects regardless of order")
    func equivalence() {
        #expect(JSONValue.int(1).isEquivalent(to: .double(1.0)))
        #expect(!JSONValue.int(1).isEquivalent(to: .string("1")))
        #expect(JSONValue.object(["a": 1, "b": [2]]).isEquivalent(to: ["b": [2.0], "a": 1.0]))
        #expect(JSONValue.object(["id": "c-1", "n": 2]).contains(fieldsOf: ["id": "c-1"]))
        #expect(!JSONValue.object(["id": "c-1"]).contains(fieldsOf: ["id": "c-1", "n": 2]))
    }

    @Test("compacting JSON text drops the whitespace between tokens and keeps every byte of its strings")
    func compactText() throws {
        let cases: [(String, String)] = [
            (#"{"a": 1, "b": [1, 2, {"c": null}]}"#, #"{"a":1,"b":[1,2,{"c":null}]}"#),
            (#" {"text": "a  b, c: d", "q": "say \"hi\" ", "e": "\\"} "#, #"{"text":"a  b, c: d","q":"say \"hi\" ","e":"\\"}"#),
            ("{\n\t\"é\": \"ü ü\"\r\n}", #"{"é":"ü ü"}"#),
            ("", ""),
            ("   ", ""),
        ]
        for (input, expected) in cases {
            var output: [UInt8] = Array("prefix:".utf8)
            var text = input
            text.withUTF8 { JSONText.appendCompact(UnsafeRawBufferPointer($0), to: &output) }
            #expect(String(decoding: output, as: UTF8.self) == "prefix:" + expected, "\(input)")
            if !expected.isEmpty {
                #expect(try JSONParser().parse(expected) == JSONParser().parse(input))
            }
        }
    }
    @Test("integers are written as their exact decimal digits", arguments: [
        0, 7, 9, 10, -1, -9, -10, 42, 1_000_000, -1_000_000, Int64(Int32.max) + 1, Int64.max, Int64.min, Int64.min + 1,
    ] as [Int64])
    func integers(_ value: Int64) {
        var output: [UInt8] = []
        JSONText.appendInteger(value, to: &output)
        #expect(String(decoding: output, as: UTF8.self) == String(value))
        #expect(JSONValue.int(value).jsonString == String(value))
    }

    @Test("strings from raw UTF-8 are quoted with exactly the escapes JSON needs")
    func rawStrings() throws {
        let cases: [(String, String)] = [
            ("plain", #""plain""#),
            (#"say "hi" \ now"#, #""say \"hi\" \\ now""#),
            ("tab\tnew\nline\r\u{0001}\u{0000}", #""tab\tnew\nline\r\u0001\u0000""#),
            ("é 🌍", "\"é 🌍\""),
            ("", #""""#),
        ]
        for (input, expected) in cases {
            var output: [UInt8] = []
            var text = input
            let sawNUL = text.withUTF8 { JSONText.appendString(utf8: UnsafeRawBufferPointer($0), to: &output) }
            #expect(String(decoding: output, as: UTF8.self) == expected, "\(input)")
            #expect(sawNUL == input.unicodeScalars.contains("\u{0000}"))
            #expect(try JSONParser().parse(expected) == .string(input))
        }
    }

    @Test("objects nested in objects and arrays keep their own fields, and a repeated key its last value")
    func nestedObjectsAndRepeatedKeys() throws {
        let parsed = try parser.parse(#"{"a": {"b": 1, "c": {"d": [{"e": 1, "e": 2}, {}, {"f": {"g": null}}]}, "b": 3}, "h": 4, "a2": {}, "h": 5}"#)
        let expected: JSONValue = [
            "a": ["c": ["d": [["e": 2], [:], ["f": ["g": nil]]]], "b": 3],
            "h": 5,
            "a2": [:],
        ]
        #expect(parsed == expected)
        // After a refused document, the next one parses from nothing held over.
        #expect(throws: JSONParseError.self) { try parser.parse(#"{"x": {"y": 1, "z": ]}"#) }
        #expect(try parser.parse(#"{"k": {"v": 1}}"#) == ["k": ["v": 1]])
    }
}
