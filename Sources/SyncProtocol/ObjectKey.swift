/// The identity of an object: its collection and its id, unique across all partitions.
public struct ObjectKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Matches `[A-Za-z][A-Za-z0-9_]{0,63}`.
    public let collection: String
    /// 1–256 characters, no control characters.
    public let id: String

    /// Validates both parts, throwing `invalid_collection` or `invalid_object_id`.
    public init(collection: String, id: String) throws(SyncError) {
        guard Self.isValidCollection(collection) else {
            throw SyncError(
                .invalidCollection,
                "a collection name matches [A-Za-z][A-Za-z0-9_]{0,63}, got \(Partition.quoted(collection))")
        }
        if !Partition.isPlainASCII(id, maximumCount: 256) {
            let scalars = id.unicodeScalars
            guard !scalars.isEmpty, scalars.count <= 256 else {
                throw SyncError(.invalidObjectID, "an object id has 1 to 256 characters")
            }
            guard !scalars.contains(where: Partition.isControl) else {
                throw SyncError(.invalidObjectID, "an object id holds no control characters")
            }
        }
        self.collection = collection
        self.id = id
    }

    /// For values already validated (read back from storage).
    public init(uncheckedCollection collection: String, id: String) {
        self.collection = collection
        self.id = id
    }

    public var description: String { "\(collection)/\(id)" }

    /// Orders by collection, then id, comparing UTF-8 bytes (PostgreSQL's `COLLATE "C"`).
    public static func < (lhs: ObjectKey, rhs: ObjectKey) -> Bool {
        if lhs.collection != rhs.collection {
            return lhs.collection.utf8Precedes(rhs.collection)
        }
        return lhs.id.utf8Precedes(rhs.id)
    }

    static func isValidCollection(_ name: String) -> Bool {
        let bytes = name.utf8
        guard let first = bytes.first, bytes.count <= 64, isLetter(first) else { return false }
        return bytes.dropFirst().allSatisfy {
            isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_")
        }
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }
}
