import Foundation
import SyncProtocol
import SyncStorage
import Testing

/// The opaque cursor's text and what it stands for, without a database: every position reads
/// back as itself, and nothing this server did not hand out reads as a position.
@Suite("Cursor position")
struct CursorPositionTests {
    static let epoch = UUID(uuidString: "6BE1C0DE-0000-4000-8000-00000000F00D")!

    /// A cursor of this server's form holding any JSON text.
    static func cursor(json: String) -> Cursor {
        let base64 = Data(json.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return Cursor(rawValue: "c1." + base64)
    }

    /// A cursor this server hands out, to alter.
    static let valid = CursorPosition(epoch: epoch, version: 1).cursor.rawValue

    static let positions: [CursorPosition] = [
        CursorPosition(epoch: epoch, version: 0),
        CursorPosition(epoch: epoch, version: 42, after: key("ChatMessage", "m-0001")),
        CursorPosition(epoch: epoch, version: 7, tombstoneFloor: 0),
        CursorPosition(epoch: epoch, version: 9, after: key("User", "ä/ß=?>~\"\\ 😀"), tombstoneFloor: 9),
        CursorPosition(epoch: epoch, version: 12, timeline: 3),
        CursorPosition(epoch: epoch, version: 12, timeline: .max, after: key("ChatMessage", "m-0002"), tombstoneFloor: 4),
        CursorPosition(
            epoch: UUID(uuidString: "00000000-0000-0000-0000-000000000000")!, version: .max,
            after: key("A", String(repeating: "z", count: 256)), tombstoneFloor: .max),
    ]

    @Test("every position reads back as itself, the largest version and longest id included", arguments: positions)
    func roundTrip(position: CursorPosition) {
        #expect(CursorPosition(position.cursor) == position)
    }

    @Test("the text is c1. and unpadded base64url, safe in a URL query without escaping")
    func textForm() {
        // An id whose JSON encodes to base64 with '+', '/' and '=' before translation.
        let position = CursorPosition(epoch: Self.epoch, version: 1, after: key("C", "???>>>?"))
        let text = position.cursor.rawValue
        #expect(text.hasPrefix("c1."))
        #expect(text.dropFirst(3).allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        #expect(text.contains("-") || text.contains("_"))
        #expect(CursorPosition(position.cursor) == position)
    }

    @Test("what this server did not hand out is no position", arguments: [
        Cursor(rawValue: ""), Cursor(rawValue: "c1."), Cursor(rawValue: "c2." + valid.dropFirst(3)), Cursor(rawValue: "C1." + valid.dropFirst(3)),
        Cursor(rawValue: valid + "!"), Cursor(rawValue: String(valid.dropLast(5))),
        Cursor(rawValue: "c1.!!!!"), Cursor(rawValue: "c1.a"), Cursor(rawValue: "42"),
        cursor(json: "[1]"), cursor(json: "not json"), cursor(json: #"{"v":1}"#),
        cursor(json: #"{"e":"not-a-uuid","v":1}"#), cursor(json: #"{"e":"6be1c0de-0000-4000-8000-00000000f00d"}"#),
        cursor(json: #"{"e":"6be1c0de-0000-4000-8000-00000000f00d","v":-1}"#),
        cursor(json: #"{"e":"6be1c0de-0000-4000-8000-00000000f00d","v":1.5}"#),
        cursor(json: #"{"e":"6be1c0de-0000-4000-8000-00000000f00d","v":"1"}"#),
        cursor(json: #"{"e":"6be1c0de-0000-4000-8000-00000000f00d","v":1,"c":"User"}"#),
        cursor(json: #"{"e":"6be1c0de-0000-4000-8000-00000000f00d","v":1,"t":0}"#),
        cursor(json: #"{"e":"6be1c0de-0000-4000-8000-00000000f00d","v":1,"t":-2}"#),
        cursor(json: #"{"e":"6be1c0de-0000-4000-8000-00000000f00d","v":1,"t":4294967296}"#),
        cursor(json: #"{"e":"6be1c0de-0000-4000-8000-00000000f00d","v":1,"t":"2"}"#),
        cursor(json: #"{"e":"6be1c0de-0000-4000-8000-00000000f00d","v":1,"i":"u-1"}"#),
        cursor(json: #"{"e":"6be1c0de-0000-4000-8000-00000000f00d","v":1,"c":"1User","i":"u-1"}"#),
        cursor(json: #"{"e":"6be1c0de-0000-4000-8000-00000000f00d","v":1,"c":"User","i":""}"#),
        cursor(json: #"{"e":"6be1c0de-0000-4000-8000-00000000f00d","v":1,"f":"0"}"#),
        cursor(json: #"{"e":"6be1c0de-0000-4000-8000-00000000f00d","v":1,"x":[[1]]}"#),
    ])
    func refused(cursor: Cursor) {
        #expect(CursorPosition(cursor) == nil)
    }

    @Test("a cursor is read up to 2048 bytes of text and refused beyond")
    func lengthLimit() throws {
        /// The shortest padded cursor at least `length` bytes long.
        func padded(toAtLeast length: Int) -> Cursor {
            var padding = ""
            while true {
                let cursor = Self.cursor(json: #"{"e":"6be1c0de-0000-4000-8000-00000000f00d","v":3,"pad":"\#(padding)"}"#)
                if cursor.rawValue.utf8.count >= length { return cursor }
                padding += "x"
            }
        }
        let within = padded(toAtLeast: 2_047)
        let beyond = padded(toAtLeast: 2_049)
        #expect(within.rawValue.utf8.count <= 2_048)
        #expect(beyond.rawValue.utf8.count == 2_049)
        #expect(CursorPosition(within)?.version == 3)
        #expect(CursorPosition(beyond) == nil)
    }
}
