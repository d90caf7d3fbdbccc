import Testing

@testable import SyncServer

/// The `Range` header of a blob download as a value (RFC 9110, section 14), without a server:
/// which bytes are sent, when the whole blob is, and when the answer is 416.
@Suite("Blob range")
struct BlobRangeTests {
    @Test("no header, another unit, several ranges or a spec that cannot be read: the whole blob", arguments: [
        nil, "", "items=0-10", "bytes 0-10", "bytes=0-1,4-5", "bytes=0-1, -5", "bytes=", "bytes=-", "bytes=a-b", "bytes=1-2-3",
        "bytes=+1-2", "bytes=0x1-2", "bytes=1.5-2", "bytes=-+5", "bytes=１-２",
    ] as [String?])
    func ignored(header: String?) {
        #expect(BlobRange(header: header, length: 1_000) == .whole)
    }

    @Test("a closed range includes its last byte: 0-0 is one byte, 0-499 five hundred")
    func closedRangeIsInclusive() {
        #expect(BlobRange(header: "bytes=0-0", length: 1_000) == .part(0..<1))
        #expect(BlobRange(header: "bytes=0-499", length: 1_000) == .part(0..<500))
        #expect(BlobRange(header: "bytes=500-999", length: 1_000) == .part(500..<1_000))
        #expect(BlobRange(header: "bytes= 10-19 ", length: 1_000) == .part(10..<20))
    }

    @Test("an open range runs to the end of the blob", arguments: [
        (0, 0..<1_000), (999, 999..<1_000), (500, 500..<1_000),
    ] as [(Int64, Range<Int64>)])
    func openRange(first: Int64, expected: Range<Int64>) {
        #expect(BlobRange(header: "bytes=\(first)-", length: 1_000) == .part(expected))
    }

    @Test("a last byte past the end, however large, is the blob's last byte", arguments: [
        "bytes=100-1000", "bytes=100-5000", "bytes=100-9223372036854775807", "bytes=100-99999999999999999999999",
    ])
    func lastBeyondEndIsClamped(header: String) {
        #expect(BlobRange(header: header, length: 1_000) == .part(100..<1_000))
    }

    @Test("a suffix range is the last n bytes, all of them when n exceeds the length")
    func suffixRange() {
        #expect(BlobRange(header: "bytes=-1", length: 1_000) == .part(999..<1_000))
        #expect(BlobRange(header: "bytes=-300", length: 1_000) == .part(700..<1_000))
        #expect(BlobRange(header: "bytes=-1000", length: 1_000) == .part(0..<1_000))
        #expect(BlobRange(header: "bytes=-1001", length: 1_000) == .part(0..<1_000))
    }

    @Test("a first byte at or past the end is unsatisfiable, the last byte itself is not", arguments: [
        ("bytes=999-999", BlobRange.part(999..<1_000)), ("bytes=1000-", .unsatisfiable), ("bytes=1000-2000", .unsatisfiable),
        ("bytes=1001-", .unsatisfiable), ("bytes=99999999999999999999-", .unsatisfiable),
    ])
    func firstByteAtTheEnd(header: String, expected: BlobRange) {
        #expect(BlobRange(header: header, length: 1_000) == expected)
    }

    @Test("nothing of an empty blob can be asked for, and a suffix of zero bytes never can", arguments: [
        ("bytes=0-", 0), ("bytes=0-0", 0), ("bytes=-5", 0), ("bytes=-0", 0), ("bytes=-0", 1_000),
    ] as [(String, Int64)])
    func unsatisfiable(header: String, length: Int64) {
        #expect(BlobRange(header: header, length: length) == .unsatisfiable)
    }

    @Test("a range whose last byte comes before its first is ignored, not answered 416")
    func reversedRangeIsIgnored() {
        #expect(BlobRange(header: "bytes=500-100", length: 1_000) == .whole)
        #expect(BlobRange(header: "bytes=1-0", length: 1_000) == .whole)
    }
}
