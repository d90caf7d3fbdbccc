#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What an encoded body may hold that a trigger of `psync_objects` tracks: a blob reference
/// (an `"@blob"` key anywhere) or an expiry time (`"@expiresAt"`). Stored beside the body
/// (`psync_objects.marks`, migration 0017), so the triggers' conditions read two bits instead
/// of searching the old and the new body of every write.
///
/// Found on the body's JSON text: a name in quotes anywhere, as a key or a value, marks the
/// body (a value only makes a trigger look and find nothing). A body with a `\u` escape is
/// unknown (`nil`): an escaped name is one the text search cannot see, and PostgreSQL then
/// searches the stored body as it did before the marks.
package struct BodyMarks: Equatable, Sendable {
    package var rawValue: Int16

    package static let blob = BodyMarks(rawValue: 1)
    package static let expiry = BodyMarks(rawValue: 2)
    package static let nothing = BodyMarks(rawValue: 0)

    package init(rawValue: Int16) {
        self.rawValue = rawValue
    }

    private static let blobName = Array(#""@blob""#.utf8)
    private static let expiryName = Array(#""@expiresAt""#.utf8)

    /// The marks of a body's JSON text; `nil` when the text cannot say (it has a `\u` escape).
    package static func of(_ text: [UInt8]) -> BodyMarks? {
        text.withUnsafeBufferPointer { bytes -> BodyMarks? in
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return nothing }
            if contains(UInt8(ascii: "\\"), followedBy: UInt8(ascii: "u"), in: base, count: bytes.count) { return nil }
            var marks = BodyMarks.nothing
            // Every "@ in the text: the names start there.
            var index = 0
            while index < bytes.count, let found = memchr(base + index, Int32(UInt8(ascii: "@")), bytes.count - index) {
                let at = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                index = at + 1
                guard at > 0, bytes[at - 1] == UInt8(ascii: "\"") else { continue }
                if matches(blobName, in: bytes, at: at - 1) { marks.rawValue |= blob.rawValue }
                if matches(expiryName, in: bytes, at: at - 1) { marks.rawValue |= expiry.rawValue }
            }
            return marks
        }
    }

    private static func matches(_ name: [UInt8], in bytes: UnsafeBufferPointer<UInt8>, at start: Int) -> Bool {
        guard start + name.count <= bytes.count else { return false }
        for offset in name.indices where bytes[start + offset] != name[offset] { return false }
        return true
    }

    private static func contains(_ first: UInt8, followedBy second: UInt8, in base: UnsafePointer<UInt8>, count: Int) -> Bool {
        var index = 0
        while index < count, let found = memchr(base + index, Int32(first), count - index) {
            let at = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            if at + 1 < count, base[at + 1] == second { return true }
            // A backslash escapes the byte after it (`\\u` is a backslash, then `u`).
            index = at + 2
        }
        return false
    }
}
