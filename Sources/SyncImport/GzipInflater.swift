import CompressNIO
import NIOCore

/// Decompresses gzip data fed a chunk at a time (RFC 1952), through zlib (CompressNIO).
/// Reads files of several gzip members one after another (as `cat a.gz b.gz` makes them),
/// checks each member's CRC and length (zlib does), and refuses data that ends inside a member.
struct GzipInflater {
    private let decompressor: ZlibDecompressor
    private var window: ByteBuffer
    private let allocator = ByteBufferAllocator()

    init() throws(ImportError) {
        do {
            decompressor = try ZlibDecompressor(algorithm: .gzip)
        } catch {
            throw ImportError(.gzip, "cannot start gzip decompression: \(error)")
        }
        window = allocator.buffer(capacity: 1 << 16)
    }

    /// The bytes `compressed` decompresses to (given what came before it).
    mutating func inflate(_ compressed: [UInt8]) throws(ImportError) -> [UInt8] {
        var input = allocator.buffer(capacity: max(compressed.count, 16))
        input.writeBytes(compressed)
        var output: [UInt8] = []
        while input.readableBytes > 0 {
            window.clear()
            do {
                try decompressor.inflate(from: &input, to: &window)
                // A normal return with input left means the member ended (zlib stops at its
                // end): the rest is the next member.
                if input.readableBytes > 0 {
                    output.append(contentsOf: window.readableBytesView)
                    try decompressor.reset()
                    continue
                }
            } catch let error as CompressNIOError where error == .bufferOverflow || error == .inputBufferOverflow {
                // The window is full (take it and go on), or all the input is taken.
            } catch {
                throw ImportError(.gzip, "the gzip data is corrupt (\(error))")
            }
            output.append(contentsOf: window.readableBytesView)
        }
        return output
    }

    /// Declares the end of the compressed data: refuses data that ends inside a member.
    mutating func finish() throws(ImportError) {
        var empty = allocator.buffer(capacity: 16)
        window.clear()
        do {
            // At the end of a member zlib answers "stream end" however often it is asked; inside
            // one, with no input, it answers "buffer error".
            try decompressor.inflate(from: &empty, to: &window)
        } catch let error as CompressNIOError where error == .inputBufferOverflow {
            throw ImportError(.truncated, "the gzip data ends before its end (the file is cut short)")
        } catch {
            throw ImportError(.gzip, "the gzip data is corrupt (\(error))")
        }
    }
}
