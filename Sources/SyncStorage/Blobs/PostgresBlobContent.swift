import Locking
import Logging
import NIOCore
import PostgresNIO
import SyncProtocol

/// The default ``BlobContentStore``: bytes in PostgreSQL, in `psync_blob_chunks` rows of
/// ``chunkSize`` bytes (migration 0010), so a blob of any size is written a chunk at a time and
/// read ``chunksPerRead`` chunks at a time, and a range reads only its chunks. The location of a blob is its upload's id.
package struct PostgresBlobContent: BlobContentStore {
    let client: PostgresClient
    let logger: Logger
    /// Bytes per chunk. Default 256 KiB.
    package let chunkSize: Int
    /// Chunks read per query while a blob is downloaded (what a download holds in memory at
    /// most). Default 4: 1 MiB.
    package let chunksPerRead: Int

    package init(client: PostgresClient, chunkSize: Int = 256 << 10, chunksPerRead: Int = 4, logger: Logger) {
        precondition(chunkSize > 0 && chunksPerRead > 0)
        self.client = client
        self.chunkSize = chunkSize
        self.chunksPerRead = chunksPerRead
        self.logger = logger
    }

    package func beginUpload(by principal: String) async throws -> any BlobContentUpload {
        let rows = try await client.fetch(
            "INSERT INTO psync_blob_uploads (principal) VALUES (\(principal)) RETURNING id", logger: logger)
        for try await id in rows.decode(Int64.self) {
            return Upload(id: id, content: self)
        }
        throw SyncError(.internal, "no upload id")
    }

    package func read(_ location: String, range: Range<Int64>) -> BlobContentReader {
        let (client, logger, chunkSize) = (self.client, self.logger, Int64(self.chunkSize))
        let chunksPerRead = Int64(self.chunksPerRead)
        let upload = Int64(location) ?? -1
        let first = range.lowerBound / chunkSize
        return BlobContentReader { index in
            // The piece `index` is what `range` holds of the chunks `from..<to`: one query
            // for `chunksPerRead` chunks, so a download holds at most that many at a time.
            let from = first + Int64(index) * chunksPerRead
            let start = max(range.lowerBound, from * chunkSize)
            let end = min(range.upperBound, (from + chunksPerRead) * chunkSize)
            guard start < end else { return nil }
            let to = (end - 1) / chunkSize + 1
            let rows = try await client.fetch(
                """
                SELECT seq, data FROM psync_blob_chunks
                WHERE upload = \(upload) AND seq >= \(Int32(from)) AND seq < \(Int32(to))
                ORDER BY seq
                """, logger: logger)
            var piece = ByteBuffer()
            piece.reserveCapacity(Int(end - start))
            var expected = Int32(from)
            for try await (seq, chunk) in rows.decode((Int32, ByteBuffer).self) {
                guard seq == expected else { break }
                expected += 1
                let chunkStart = Int64(seq) * chunkSize
                let lower = Int(max(start, chunkStart) - chunkStart)
                let upper = Int(min(end, chunkStart + Int64(chunk.readableBytes)) - chunkStart)
                guard lower < upper, var slice = chunk.getSlice(at: chunk.readerIndex + lower, length: upper - lower) else { break }
                piece.writeBuffer(&slice)
            }
            guard piece.readableBytes == Int(end - start) else {
                throw SyncError(.internal, "a chunk of blob content \(location) is missing")
            }
            return piece
        }
    }

    package func remove(_ locations: [String]) async throws {
        let ids = locations.compactMap { Int64($0) }
        guard !ids.isEmpty else { return }
        try await client.fetch(
            """
            WITH chunks AS (DELETE FROM psync_blob_chunks WHERE upload = ANY(\(ids)::bigint[]))
            DELETE FROM psync_blob_uploads WHERE id = ANY(\(ids)::bigint[])
            """, logger: logger)
    }

    package func removeAbandoned(idleFor age: Duration) async throws -> Int {
        let seconds = Double(age.components.seconds) + Double(age.components.attoseconds) / 1e18
        let rows = try await client.fetch(
            """
            WITH gone AS (
                DELETE FROM psync_blob_uploads u
                WHERE u.started_at <= now() - make_interval(secs => \(seconds))
                RETURNING u.id, EXISTS (SELECT 1 FROM psync_blobs b WHERE b.location = u.id::text) AS published
            ), chunks AS (
                DELETE FROM psync_blob_chunks c USING gone WHERE c.upload = gone.id AND NOT gone.published
            )
            SELECT count(*) FILTER (WHERE NOT published) FROM gone
            """, logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }

    /// One upload: bytes gathered into chunks, each chunk one INSERT.
    final class Upload: BlobContentUpload, Sendable {
        let id: Int64
        let content: PostgresBlobContent
        private let state = Locked((buffer: ByteBuffer(), next: Int32(0)))

        init(id: Int64, content: PostgresBlobContent) {
            self.id = id
            self.content = content
        }

        var location: String { String(id) }

        func append(_ bytes: ByteBuffer) async throws {
            var bytes = bytes
            while bytes.readableBytes > 0 {
                let chunk: (ByteBuffer, Int32)? = state.withLock { state in
                    let room = content.chunkSize - state.buffer.readableBytes
                    var piece = bytes.readSlice(length: min(room, bytes.readableBytes))!
                    state.buffer.writeBuffer(&piece)
                    guard state.buffer.readableBytes == content.chunkSize else { return nil }
                    let full = state.buffer
                    state.buffer = ByteBuffer()
                    state.next += 1
                    return (full, state.next - 1)
                }
                if let (full, seq) = chunk { try await write(full, seq) }
            }
        }

        func finish() async throws {
            let rest: (ByteBuffer, Int32)? = state.withLock { state in
                guard state.buffer.readableBytes > 0 else { return nil }
                defer {
                    state.buffer = ByteBuffer()
                    state.next += 1
                }
                return (state.buffer, state.next)
            }
            if let (rest, seq) = rest { try await write(rest, seq) }
        }

        func published() async throws {
            try await content.client.fetch("DELETE FROM psync_blob_uploads WHERE id = \(id)", logger: content.logger)
        }

        private func write(_ chunk: ByteBuffer, _ seq: Int32) async throws {
            // Touching the upload keeps it from being taken for abandoned while bytes still come.
            try await content.client.fetch(
                """
                WITH touched AS (UPDATE psync_blob_uploads SET started_at = now() WHERE id = \(id))
                INSERT INTO psync_blob_chunks (upload, seq, data) VALUES (\(id), \(seq), \(chunk))
                """, logger: content.logger)
        }
    }
}
