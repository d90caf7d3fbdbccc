import Foundation
import SyncProtocol

/// What an opaque ``Cursor`` stands for: a place in one partition's commit-ordered history
/// of one database.
///
/// - `epoch` names the database (a restored or recreated database has another one, or
///   fewer versions than the cursor claims, and gets a reset).
/// - `version` is the partition version delivered completely, or, with `after`, the version
///   delivered up to and including the object `after` (pages split a commit between them).
/// - `tombstoneFloor` is set while a snapshot is in progress: tombstones at or below it are
///   not sent, because the client never held those objects.
/// - `timeline` is the PostgreSQL timeline the commit at `version` was written on (0 before
///   partitions kept theirs, or at version 0): after a failover that lost commits, a cursor
///   from them is told apart from one of the new primary's history (``PartitionHistory``).
package struct CursorPosition: Sendable, Hashable {
    package var epoch: UUID
    package var version: Int64
    package var timeline: Int32
    package var after: ObjectKey?
    package var tombstoneFloor: Int64?

    static let prefix = "c1."

    /// The opaque text form: `c1.` and base64url of a small JSON object.
    package var cursor: Cursor {
        var fields: [String: JSONValue] = ["e": .string(epoch.uuidString.lowercased()), "v": .int(version)]
        if let after {
            fields["c"] = .string(after.collection)
            fields["i"] = .string(after.id)
        }
        if let tombstoneFloor { fields["f"] = .int(tombstoneFloor) }
        if timeline != 0 { fields["t"] = .int(Int64(timeline)) }
        // base64url without padding, translated byte by byte (a cursor is made for every
        // upload and every delivered commit).
        var text = Array(Self.prefix.utf8)
        for byte in Data(JSONValue.object(fields).jsonBytes).base64EncodedString().utf8 {
            switch byte {
            case UInt8(ascii: "+"): text.append(UInt8(ascii: "-"))
            case UInt8(ascii: "/"): text.append(UInt8(ascii: "_"))
            case UInt8(ascii: "="): break
            default: text.append(byte)
            }
        }
        return Cursor(rawValue: String(decoding: text, as: UTF8.self))
    }

    /// Reads a cursor back; `nil` for anything this server did not hand out.
    package init?(_ cursor: Cursor) {
        let text = cursor.rawValue
        guard text.hasPrefix(Self.prefix), text.utf8.count <= 2048 else { return nil }
        var base64: [UInt8] = text.utf8.dropFirst(Self.prefix.utf8.count).map { byte in
            switch byte {
            case UInt8(ascii: "-"): UInt8(ascii: "+")
            case UInt8(ascii: "_"): UInt8(ascii: "/")
            default: byte
            }
        }
        while base64.count % 4 != 0 { base64.append(UInt8(ascii: "=")) }
        guard let data = Data(base64Encoded: Data(base64)),
            let json = try? JSONParser(maximumDepth: 2).parse(Array(data)),
            let epochText = json["e"]?.stringValue, let epoch = UUID(uuidString: epochText),
            let version = json["v"]?.intValue, version >= 0
        else { return nil }
        self.epoch = epoch
        self.version = version
        switch (json["c"]?.stringValue, json["i"]?.stringValue) {
        case (let collection?, let id?):
            guard let key = try? ObjectKey(collection: collection, id: id) else { return nil }
            after = key
        case (nil, nil):
            after = nil
        default:
            return nil
        }
        if let floor = json["f"] {
            guard let value = floor.intValue else { return nil }
            tombstoneFloor = value
        } else {
            tombstoneFloor = nil
        }
        if let timeline = json["t"] {
            guard let value = timeline.intValue, let narrow = Int32(exactly: value), narrow > 0 else { return nil }
            self.timeline = narrow
        } else {
            self.timeline = 0
        }
    }

    package init(epoch: UUID, version: Int64, timeline: Int32 = 0, after: ObjectKey? = nil, tombstoneFloor: Int64? = nil) {
        self.epoch = epoch
        self.version = version
        self.timeline = timeline
        self.after = after
        self.tombstoneFloor = tombstoneFloor
    }
}
