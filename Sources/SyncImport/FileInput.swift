import Foundation

/// The bytes of a file, a chunk at a time, decompressed when the file is gzip (told by its
/// first two bytes, whatever its name): the thin I/O layer under the readers.
final class FileInput {
    let path: String
    private let handle: FileHandle
    private var inflater: GzipInflater?
    private var started = false
    private var ended = false
    let chunkSize: Int

    /// Whether the file is gzip-compressed (known after the first ``read()``).
    private(set) var isGzip = false

    init(path: String, chunkSize: Int = 1 << 16) throws(ImportError) {
        self.path = path
        self.chunkSize = chunkSize
        guard let handle = FileHandle(forReadingAtPath: path) else {
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            throw ImportError(.io, exists ? (isDirectory.boolValue ? "is a directory" : "cannot be opened for reading") : "no such file", file: path)
        }
        self.handle = handle
    }

    deinit {
        try? handle.close()
    }

    /// The next decompressed bytes (possibly none, when a compressed chunk gave none yet);
    /// `nil` at the end of the file.
    func read() throws(ImportError) -> [UInt8]? {
        guard !ended else { return nil }
        let chunk: [UInt8]
        do {
            chunk = Array(try handle.read(upToCount: chunkSize) ?? Data())
        } catch {
            throw ImportError(.io, "cannot be read: \(error.localizedDescription)", file: path)
        }
        if !started {
            started = true
            if chunk.count >= 2, chunk[0] == 0x1F, chunk[1] == 0x8B {
                isGzip = true
                inflater = try located { () throws(ImportError) in try GzipInflater() }
            }
        }
        if chunk.isEmpty {
            ended = true
            if inflater != nil { try located { () throws(ImportError) in try inflater!.finish() } }
            return nil
        }
        guard inflater != nil else { return chunk }
        return try located { () throws(ImportError) in try inflater!.inflate(chunk) }
    }

    private func located<T>(_ body: () throws(ImportError) -> T) throws(ImportError) -> T {
        do {
            return try body()
        } catch {
            throw error.located(file: path)
        }
    }
}
