import NIOCore

/// Where the bytes of blobs are kept; their names, sizes, owners and references are in
/// PostgreSQL whatever the content store (``BlobStore``). The default keeps them in
/// PostgreSQL too (``PostgresBlobContent``); another store (a directory, an S3-compatible
/// bucket) implements these four calls.
package protocol BlobContentStore: Sendable {
    /// Starts storing the bytes of one upload, as they arrive. Bytes of an upload that is
    /// never finished or never published are removed by ``removeAbandoned(idleFor:)``.
    func beginUpload(by principal: String) async throws -> any BlobContentUpload
    /// The bytes of `range` of what `location` holds, read in pieces as the consumer asks
    /// for them: never the whole blob in memory.
    func read(_ location: String, range: Range<Int64>) -> BlobContentReader
    /// Removes what `locations` hold (their blobs were deleted). Removing what is gone already
    /// is no error.
    func remove(_ locations: [String]) async throws
    /// Removes the bytes of uploads that were not published and saw no new bytes for `age`;
    /// returns how many.
    func removeAbandoned(idleFor age: Duration) async throws -> Int
}

/// The bytes of one upload as they are stored (``BlobContentStore/beginUpload(by:)``).
package protocol BlobContentUpload: Sendable {
    /// Where the bytes are, once published: ``BlobStore`` records it with the blob.
    var location: String { get }
    /// Stores the next bytes.
    func append(_ bytes: ByteBuffer) async throws
    /// Stores what is buffered; the upload is complete.
    func finish() async throws
    /// The bytes were published as a blob (``BlobStore/publish(_:location:length:contentType:uploader:quota:)``):
    /// the store forgets the upload (its bytes stay, under ``location``).
    func published() async throws
}

/// The pieces of a blob's bytes, in order (``BlobContentStore/read(_:range:)``).
package struct BlobContentReader: AsyncSequence, Sendable {
    package typealias Element = ByteBuffer
    /// Reads the piece after the ones read (`nil`: no more).
    let next: @Sendable (_ index: Int) async throws -> ByteBuffer?

    package init(next: @escaping @Sendable (_ index: Int) async throws -> ByteBuffer?) {
        self.next = next
    }

    package struct AsyncIterator: AsyncIteratorProtocol {
        let next: @Sendable (Int) async throws -> ByteBuffer?
        var index = 0

        package mutating func next() async throws -> ByteBuffer? {
            let piece = try await next(index)
            index += 1
            return piece
        }
    }

    package func makeAsyncIterator() -> AsyncIterator { AsyncIterator(next: next) }
}
