import Foundation

/// A file of an export, and what its name says it holds: `User.json` (mongoexport),
/// `User.bson` (mongodump), `User.metadata.json` (mongodump's collection metadata), each
/// possibly with `.gz`.
public struct ExportFile: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        case mongoexport
        case mongodump
        case dumpMetadata
    }

    public var path: String
    public var kind: Kind
    /// The collection, from the file's name.
    public var collection: String

    /// What the name of the file at `path` says; `nil` for another name.
    public init?(path: String) {
        var name = (path as NSString).lastPathComponent
        if name.hasSuffix(".gz") { name.removeLast(3) }
        let kind: Kind
        if name.hasSuffix(".metadata.json") {
            kind = .dumpMetadata
            name.removeLast(".metadata.json".count)
        } else if name.hasSuffix(".bson") {
            kind = .mongodump
            name.removeLast(".bson".count)
        } else if name.hasSuffix(".json") {
            kind = .mongoexport
            name.removeLast(".json".count)
        } else {
            return nil
        }
        guard !name.isEmpty else { return nil }
        self.path = path
        self.kind = kind
        self.collection = name
    }

    /// The export files in `directory` (not its subdirectories), by name.
    public static func files(in directory: String) throws(ImportError) -> [ExportFile] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw ImportError(.io, "cannot list the directory: \(error.localizedDescription)", file: directory)
        }
        return names.sorted().compactMap { ExportFile(path: (directory as NSString).appendingPathComponent($0)) }
    }
}
