/// A BSON ObjectId: 12 bytes (a 4-byte timestamp, 5 random bytes, a 3-byte counter).
public struct ObjectID: Hashable, Sendable, CustomStringConvertible {
    /// The 12 bytes, in BSON (big-endian) order.
    public let bytes: [UInt8]

    /// `bytes` must hold exactly 12 bytes.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 12 else { return nil }
        self.bytes = Array(bytes)
    }

    /// From 24 hexadecimal digits, either case.
    public init?(hex: String) {
        guard let bytes = HexText.bytes(hex), bytes.count == 12 else { return nil }
        self.bytes = bytes
    }

    /// 24 lowercase hexadecimal digits: `5f1b2c3d4e5f60718293a4b5`.
    public var hex: String { HexText.string(bytes) }

    /// The seconds since the epoch in the first four bytes.
    public var timestamp: UInt32 {
        bytes[0..<4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    public var description: String { hex }
}
