import Foundation
import SyncImport
import SyncProtocol
import SyncTesting

/// The committed fixtures (written by scripts/generate_import_vectors.py and
/// scripts/generate_rchat_export.py) and scratch files.
enum Fixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func path(_ relative: String) -> String {
        directory.appendingPathComponent(relative).path
    }

    static func bytes(_ relative: String) throws -> [UInt8] {
        Array(try Data(contentsOf: directory.appendingPathComponent(relative)))
    }

    /// A fresh scratch directory.
    static func scratch() throws -> String {
        try TestScratch.folder("sync-import-tests").path
    }

    /// Writes `bytes` to a scratch file named `name` and returns its path.
    static func write(_ bytes: [UInt8], named name: String) throws -> String {
        let path = (try scratch() as NSString).appendingPathComponent(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Every document of an export file.
    static func readAll(_ path: String) throws -> [SourceDocument] {
        var reader = try ExportReader(ExportFile(path: path)!)
        var documents: [SourceDocument] = []
        while let document = try reader.next() { documents.append(document) }
        return documents
    }

    /// The first error reading every document of `path` gives.
    static func firstError(reading path: String) -> ImportError? {
        do {
            _ = try readAll(path)
            return nil
        } catch let error as ImportError {
            return error
        } catch {
            return ImportError(.io, "unexpected error \(error)")
        }
    }
}

/// Bytes from hexadecimal text with spaces (test vectors).
func hex(_ text: String) -> [UInt8] {
    let digits = text.filter { !$0.isWhitespace }
    var bytes: [UInt8] = []
    var index = digits.startIndex
    while index < digits.endIndex {
        let next = digits.index(index, offsetBy: 2)
        bytes.append(UInt8(digits[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

/// A BSON document around the given element bytes (type, name, value), its length computed.
func bsonDocument(_ elements: [UInt8]) -> [UInt8] {
    let length = UInt32(elements.count + 5)
    return [UInt8(length & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 24)] + elements + [0]
}

/// An int32 in little-endian bytes.
func int32LE(_ value: Int32) -> [UInt8] {
    let bits = UInt32(bitPattern: value)
    return (0..<4).map { UInt8(truncatingIfNeeded: bits >> (8 * $0)) }
}

/// A BSON string value: length, UTF-8, NUL.
func bsonString(_ text: String) -> [UInt8] {
    int32LE(Int32(text.utf8.count + 1)) + Array(text.utf8) + [0]
}

/// An element: type byte, name, NUL, value bytes.
func element(_ type: UInt8, _ name: String, _ value: [UInt8]) -> [UInt8] {
    [type] + Array(name.utf8) + [0] + value
}
