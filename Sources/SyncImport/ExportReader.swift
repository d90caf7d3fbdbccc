/// A reader of either kind of export file, by its name.
public struct ExportReader {
    public let file: ExportFile
    private var export: MongoExportReader?
    private var dump: MongoDumpReader?

    /// The reader for `file` (``ExportFile/Kind/dumpMetadata`` holds no documents: refused).
    /// With `directMapper`, a mongoexport file's documents are mapped straight to their bodies
    /// where they can be (``MongoExportReader/init(path:decoder:maximumDepth:directMapper:)``).
    public init(_ file: ExportFile, directMapper: DirectMapper? = nil) throws(ImportError) {
        self.file = file
        switch file.kind {
        case .mongoexport: export = try MongoExportReader(path: file.path, directMapper: directMapper)
        case .mongodump: dump = try MongoDumpReader(path: file.path)
        case .dumpMetadata:
            throw ImportError(.io, "is a mongodump metadata file, which holds no documents (see DumpMetadata)", file: file.path)
        }
    }

    /// The form of Extended JSON seen so far; `nil` for a mongodump file.
    public var format: ExtendedJSONFormat? { export?.format }

    public mutating func next() throws(ImportError) -> SourceDocument? {
        if export != nil { return try export!.next() }
        return try dump!.next()
    }
}
