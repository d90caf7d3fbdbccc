/// How a driver laid out a UUID in binary subtype 3 (the legacy UUID subtype): drivers wrote
/// the bytes in different orders before subtype 4 fixed it, and the bytes do not say which.
public enum LegacyUUIDByteOrder: Sendable, Hashable {
    /// RFC 4122 order, as the Python driver (`PYTHON_LEGACY`) and the C driver wrote it.
    case standard
    /// The Java driver's `JAVA_LEGACY`: each 8-byte half reversed.
    case javaLegacy
    /// The C# driver's `CSHARP_LEGACY`: the first three groups (4, 2, 2 bytes) reversed.
    case csharpLegacy

    /// The 16 bytes in RFC 4122 order.
    func standardBytes(_ bytes: [UInt8]) -> [UInt8] {
        switch self {
        case .standard:
            return bytes
        case .javaLegacy:
            return Array(bytes[0..<8].reversed()) + Array(bytes[8..<16].reversed())
        case .csharpLegacy:
            return Array(bytes[0..<4].reversed()) + Array(bytes[4..<6].reversed()) + Array(bytes[6..<8].reversed())
                + Array(bytes[8..<16])
        }
    }
}
