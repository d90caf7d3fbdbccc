import Foundation
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

@Suite("Encoded change batches")
struct EncodedChangesTests {
    /// Bodies whose text has what a naive splice would get wrong: spaces, quotes, escapes and
    /// structure characters inside strings, nesting, numbers of every kind, non-ASCII text.
    static let bodies: [String: JSONValue] = [
        "plain": ["text": "hello world", "n": 1],
        "tricky": [
            "text": "a \"quoted\" {brace} [bracket] , : \\ back\\slash\n\ttab",
            "spaces": "   leading and trailing   ",
            "unicode": "héllo 🌍 \u{0001}",
            "nested": ["list": [1, 2.5, -3, 1e20, true, false, .null, ["deep": [:]]], "empty": []],
            "big": .int(Int64.max), "small": .int(Int64.min), "zero": 0.0,
        ],
        "empty": [:],
        // An id that must be escaped in the message.
        #"odd "id" \ é"#: ["text": "x"],
    ]

    @Test("the wire text of an encoded page decodes to the same message as the decoded page, snapshot and catch-up alike")
    func sameMessage() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("room=encoded")
            for (id, body) in Self.bodies.sorted(by: { $0.key < $1.key }) {
                try await store.apply([.put(key("Doc", id), body: body.objectValue!)], in: room)
            }
            try await store.apply([.put(key("Doc", "gone"), body: ["x": 1])], in: room)
            let middle = try await store.changes(in: room, after: nil).cursor
            try await store.apply([.delete(key("Doc", "gone")), .set(key("Doc", "plain"), path: path("n"), value: 2)], in: room)
            // A snapshot in pages of 2, and a catch-up that includes a tombstone.
            var cursor: Cursor?
            var pages = 0
            repeat {
                let decoded = try await store.changes(in: room, after: cursor, limit: 2)
                let encoded = try await store.encodedChanges(in: room, from: position(cursor), limit: 2)
                try expectSame(encoded.batch, decoded)
                #expect(encoded.end.cursor == decoded.cursor, "the typed end is the wire cursor's place")
                // The same page written out by the database whole.
                let whole = try await store.encodedPage(in: room, from: position(cursor), limit: 2)
                #expect(whole.batch.objectCount == decoded.objects.count)
                #expect(whole.end == encoded.end)
                try expectSame(whole.batch, decoded)
                cursor = decoded.cursor
                pages += 1
                if decoded.upToDate { break }
            } while true
            #expect(pages == 2)  // three live objects; the snapshot leaves out the tombstone
            let catchUp = try await store.changes(in: room, after: middle)
            #expect(catchUp.objects.contains { $0.isDeleted })
            try expectSame(try await store.encodedChanges(in: room, from: position(middle)).batch, catchUp)
            try expectSame(try await store.encodedPage(in: room, from: position(middle)).batch, catchUp)
            // An empty catch-up, and a partition never written.
            let head = catchUp.cursor
            try expectSame(try await store.encodedPage(in: room, from: position(head)).batch, try await store.changes(in: room, after: head))
            let nothing = partition("room=nothing")
            try expectSame(try await store.encodedPage(in: nothing, from: nil).batch, try await store.changes(in: nothing, after: nil))
        }
    }

    /// Where a cursor this database handed out stands.
    func position(_ cursor: Cursor?) -> CursorPosition? { cursor.flatMap(CursorPosition.init) }

    @Test("a subset of an encoded page, not reset, is the message of that subset")
    func subset() throws {
        let objects = Self.bodies.sorted(by: { $0.key < $1.key }).enumerated().map { offset, entry in
            SyncObject(key: key("Doc", entry.key), version: Int64(offset + 1), body: entry.value.objectValue)
        } + [SyncObject(key: key("Doc", "tombstone"), version: 9, body: nil)]
        let cursor = Cursor(rawValue: "c\"1")
        let encoded = EncodedChangeBatch(
            partition: partition("room=x"),
            objects: objects.map { object in
                let text = object.body.map { JSONValue.object($0).jsonString }
                // The database's text form has spaces after ':' and ','.
                let spaced = text.map { $0.replacingOccurrences(of: "\":", with: "\": ") }
                guard let spaced else { return EncodedChangeBatch.Object(key: object.key, version: object.version, bodyText: nil) }
                return Array(spaced.utf8).withUnsafeBytes { EncodedChangeBatch.Object(key: object.key, version: object.version, bodyText: $0) }
            },
            cursor: cursor, upToDate: true, reset: true, version: 9)
        let selected = Array(encoded.objects.suffix(2))
        let message = try ServerMessage(json: try JSONParser().parse(encoded.message(objects: selected, reset: false)))
        let expected = ChangeBatch(
            partition: partition("room=x"), objects: Array(objects.suffix(2)), cursor: cursor, upToDate: true, reset: false, version: 9)
        #expect(message == .changes(expected))
    }

    private func expectSame(_ encoded: EncodedChangeBatch, _ decoded: ChangeBatch) throws {
        let text = encoded.message()
        #expect(!text.contains("\": "), "whitespace outside strings is removed")
        let message = try ServerMessage(json: try JSONParser().parse(text))
        #expect(message == .changes(decoded))
    }
}
