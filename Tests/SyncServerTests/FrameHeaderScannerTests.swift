import PartitionSync

@testable import SyncServer
import SyncTesting
import Testing

/// The frame-header scanner that holds unauthenticated connections to small frames.
@Suite("Frame header scanner")
struct FrameHeaderScannerTests {
    /// A client frame's bytes: header (masked) and payload.
    static func frame(length: Int, opcode: UInt8 = 0x1) -> [UInt8] {
        var bytes: [UInt8] = [0x80 | opcode]
        switch length {
        case ..<126: bytes.append(0x80 | UInt8(length))
        case ..<65_536: bytes += [0x80 | 126, UInt8(length >> 8), UInt8(length & 0xFF)]
        default: bytes += [0x80 | 127] + (0..<8).reversed().map { UInt8((UInt64(length) >> (8 * UInt64($0))) & 0xFF) }
        }
        bytes += [1, 2, 3, 4]
        return bytes + [UInt8](repeating: 0x61, count: length)
    }

    @Test("frames within the limit pass, however the bytes are split; the first longer one is refused from its header", arguments: [0, 1, 125, 126, 65_535, 65_536, 70_000])
    func limits(length: Int) {
        let seed = UInt64(20261125 + length)
        print("frame header scanner seed: \(seed)")
        var random = SeededGenerator(seed: seed)
        // A stream of small frames, then one of `length`, cut at random places.
        let stream = Self.frame(length: 5) + Self.frame(length: 0, opcode: 0x9) + Self.frame(length: 125) + Self.frame(length: length) + Self.frame(length: 3)
        let limit = 8_192
        var scanner = FrameHeaderScanner(limit: limit)
        var offset = 0
        var refused: FrameHeaderScanner.Action?
        while offset < stream.count {
            let cut = min(stream.count, offset + Int.random(in: 1...300, using: &random))
            let action = scanner.scan(stream[offset..<cut])
            if action != .pass {
                refused = action
                // Refused at the header: before the long frame's payload was all seen.
                #expect(cut < stream.count - 3 - 6)
                break
            }
            offset = cut
        }
        #expect(refused == (length > limit ? .refuse(length: UInt64(length)) : nil))
    }

    @Test("a 64-bit length is read whole; a header split byte by byte is read as one")
    func longHeader() {
        var scanner = FrameHeaderScanner(limit: 1 << 20)
        let header = Array(Self.frame(length: 16 << 20).prefix(14))
        for byte in header.dropLast() { #expect(scanner.scan([byte]) == .pass) }
        #expect(scanner.scan([header.last!]) == .refuse(length: 16 << 20))
    }
}
