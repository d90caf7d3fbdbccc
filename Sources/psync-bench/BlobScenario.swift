import Foundation
import Locking
import Logging
import NIOCore
import PostgresNIO
import SyncProtocol
import SyncStorage
import SyncTesting

/// Blobs through the server: uploads (`PUT /v1/blobs/{digest}`, digest checked, stored in
/// chunks) and downloads (`GET`, permission checked, streamed a chunk at a time) by several
/// clients at once, in MB/s, against the floor: the same bytes written and read as chunks by
/// postgres-nio directly, with the same concurrency. Also the server's memory while the
/// downloads run (it must not hold a blob per download).
struct BlobScenario {
    struct Parameters {
        var blobBytes = 16 << 20
        var blobs = 8
        var clients = 8
        var downloadsPerClient = 4
        static let quick = Parameters(blobBytes: 1 << 20, blobs: 4, clients: 4, downloadsPerClient: 2)
    }

    let parameters: Parameters

    init(_ parameters: Parameters) {
        self.parameters = parameters
    }

    func run(in environment: BenchEnvironment) async throws -> JSONValue {
        let p = parameters
        progress("blobs: \(p.blobs) blobs of \(p.blobBytes >> 10) KiB uploaded by \(p.clients) clients, then \(p.clients) × \(p.downloadsPerClient) downloads")
        let user = try await environment.registerUsers("blobs", count: 1)[0]
        let http = environment.server.http
        var generator = SeededGenerator(seed: 20_261_125)
        let payloads = (0..<p.blobs).map { _ in Data((0..<p.blobBytes).map { _ in UInt8.random(in: 0...255, using: &generator) }) }

        // Uploads, `clients` at a time.
        let uploadStarted = ContinuousClock.now
        let references = try await withThrowingTaskGroup(of: (Int, BlobReference).self) { group in
            var next = 0
            var references: [BlobReference?] = Array(repeating: nil, count: p.blobs)
            func add() {
                let index = next
                next += 1
                group.addTask { (index, try await http.uploadBlob(payloads[index], contentType: "image/jpeg", token: user.token)) }
            }
            for _ in 0..<min(p.clients, p.blobs) { add() }
            while let (index, reference) = try await group.next() {
                references[index] = reference
                if next < p.blobs { add() }
            }
            return references.map { $0! }
        }
        let uploadSeconds = uploadStarted.duration(to: .now).seconds
        let uploaded = Double(p.blobs * p.blobBytes)

        // One message references the first blob; the clients download it.
        let conversation = "blobs"
        try await environment.createConversation(conversation, name: "Blobs", members: [user])
        _ = try await environment.store.upload(Upload(
            partition: try Partition(key: "conversation", value: conversation),
            operations: [.put(try ObjectKey(collection: "ChatMessage", id: "photo"), body: [
                "conversationID": .string(conversation), "author": .string(user.email), "text": "photo",
                "timestamp": .string(JSONValue.iso8601(Date())), "location": [],
                "image": ["_id": "p", "date": .string(JSONValue.iso8601(Date())), "picture": references[0].json],
            ])],
            principal: user.id))
        let digest = references[0].digest
        let partition = try Partition(key: "conversation", value: conversation)
        guard try await http.getBlob(digest, in: partition, token: user.token).data == payloads[0] else {
            throw BenchError("blobs: the downloaded bytes differ from the uploaded ones")
        }
        let rssBefore = environment.serverRSS()
        let peak = Locked(rssBefore)
        let sampling = Task {
            while !Task.isCancelled {
                let now = environment.serverRSS()
                peak.withLock { $0 = max($0, now) }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        let downloadStarted = ContinuousClock.now
        // curl, when the machine has it, as the load generator: URLSession on Linux (libcurl
        // behind Foundation's buffering) cannot take more than about 80 MB/s here, far below
        // what the server sends.
        let curl = FileManager.default.isExecutableFile(atPath: "/usr/bin/curl") ? "/usr/bin/curl" : nil
        let url = environment.server.baseURL + TestHTTPClient.blobPath(digest, in: partition)
        let downloaded = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<p.clients {
                group.addTask {
                    if let curl {
                        return try await Self.download(url, times: p.downloadsPerClient, expecting: p.blobBytes, token: user.token, curl: curl)
                    }
                    var bytes = 0
                    for _ in 0..<p.downloadsPerClient {
                        let response = try await http.getBlob(digest, in: partition, token: user.token)
                        guard response.status == 200, response.data.count == p.blobBytes else {
                            throw BenchError("blobs: a download answered \(response.status) with \(response.data.count) bytes")
                        }
                        bytes += response.data.count
                    }
                    return bytes
                }
            }
            return try await group.reduce(0, +)
        }
        let downloadSeconds = downloadStarted.duration(to: .now).seconds
        sampling.cancel()

        // The floor: the same bytes in chunks of the same size, straight through postgres-nio.
        let location = try await environment.blobLocation(of: digest)
        let floor = BlobFloor(client: environment.client, logger: environment.logger, chunkBytes: 256 << 10)
        let floorWrite = try await floor.write(payloads, concurrency: p.clients)
        let floorRead = try await floor.read(upload: location, times: p.clients * p.downloadsPerClient, concurrency: p.clients)

        let uploadRate = uploaded / uploadSeconds / 1e6
        let downloadRate = Double(downloaded) / downloadSeconds / 1e6
        return [
            "scenario": "blobs",
            "blobBytes": .int(Int64(p.blobBytes)), "blobs": .int(Int64(p.blobs)), "clients": .int(Int64(p.clients)),
            "upload": ["MBps": .double(rounded(uploadRate)), "seconds": .double(rounded(uploadSeconds))],
            "download": [
                "MBps": .double(rounded(downloadRate)), "seconds": .double(rounded(downloadSeconds)),
                "downloads": .int(Int64(p.clients * p.downloadsPerClient)),
                "client": .string(curl == nil ? "URLSession" : "curl (one process per client, one connection for its downloads)"),
            ],
            "serverRSSMB": [
                "beforeDownloads": megabytes(rssBefore), "peak": megabytes(peak.withLock { $0 }),
                "increase": megabytes(peak.withLock { $0 } - rssBefore),
            ],
            "floor": [
                "what": "the same bytes as 256 KiB bytea chunks: one INSERT per chunk, and one SELECT of every chunk of a blob in order, with the same concurrency",
                "writeMBps": .double(rounded(floorWrite / 1e6)), "readMBps": .double(rounded(floorRead / 1e6)),
            ],
            "uploadRatio": ratio(uploadRate, floorWrite / 1e6),
            "downloadRatio": ratio(downloadRate, floorRead / 1e6),
            "target": "no target yet; memory not proportional to downloads",
        ]
    }

    /// Downloads `url` `times` over one connection with a curl process; the bytes received.
    static func download(_ url: String, times: Int, expecting length: Int, token: String, curl: String) async throws -> Int {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: curl)
        process.arguments = ["-s", "-H", "Authorization: Bearer \(token)", "-w", "%{http_code} %{size_download}\\n"]
            + Array(repeating: ["-o", "/dev/null", url], count: times).flatMap { $0 }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = await Task.detached { output.fileHandleForReading.readDataToEndOfFile() }.value
        process.waitUntilExit()
        let answers = String(decoding: data, as: UTF8.self).split(separator: "\n")
        guard process.terminationStatus == 0, answers.count == times, answers.allSatisfy({ $0 == "200 \(length)" }) else {
            throw BenchError("blobs: curl answered \(answers.prefix(3)) (exit \(process.terminationStatus))")
        }
        return times * length
    }
}

/// Raw PostgreSQL throughput for blob bytes (``BlobScenario``'s floor).
struct BlobFloor {
    let client: PostgresClient
    let logger: Logger
    let chunkBytes: Int

    /// Writes every payload as chunks into a table like `psync_blob_chunks`: bytes per second.
    func write(_ payloads: [Data], concurrency: Int) async throws -> Double {
        try await client.query(
            """
            CREATE TABLE IF NOT EXISTS bench_floor_chunks (
                upload bigint NOT NULL, seq integer NOT NULL, data bytea NOT NULL, PRIMARY KEY (upload, seq))
            """, logger: logger)
        try await client.query("ALTER TABLE bench_floor_chunks ALTER COLUMN data SET STORAGE EXTERNAL", logger: logger)
        let started = ContinuousClock.now
        let (client, logger, chunkBytes) = (self.client, self.logger, self.chunkBytes)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    for index in stride(from: worker, to: payloads.count, by: concurrency) {
                        let payload = payloads[index]
                        for (seq, start) in stride(from: 0, to: payload.count, by: chunkBytes).enumerated() {
                            let chunk = ByteBuffer(bytes: payload[start..<min(start + chunkBytes, payload.count)])
                            try await client.query(
                                "INSERT INTO bench_floor_chunks (upload, seq, data) VALUES (\(Int64(index)), \(Int32(seq)), \(chunk))",
                                logger: logger)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        return Double(payloads.reduce(0) { $0 + $1.count }) / started.duration(to: .now).seconds
    }

    /// Reads every chunk of the blob at `upload` in order, `times` times, `concurrency` at a
    /// time: bytes per second.
    func read(upload: Int64, times: Int, concurrency: Int) async throws -> Double {
        let started = ContinuousClock.now
        let (client, logger) = (self.client, self.logger)
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    var bytes = 0
                    for _ in stride(from: worker, to: times, by: concurrency) {
                        let rows = try await client.query(
                            "SELECT data FROM psync_blob_chunks WHERE upload = \(upload) ORDER BY seq", logger: logger)
                        for try await chunk in rows.decode(ByteBuffer.self) { bytes += chunk.readableBytes }
                    }
                    return bytes
                }
            }
            return try await group.reduce(0, +)
        }
        return Double(total) / started.duration(to: .now).seconds
    }
}

extension BenchEnvironment {
    /// Where the default content store keeps a blob (its upload's id).
    func blobLocation(of digest: BlobDigest) async throws -> Int64 {
        let rows = try await client.query("SELECT location FROM psync_blobs WHERE digest = \(digest.rawValue)", logger: logger)
        for try await location in rows.decode(String.self) {
            if let id = Int64(location) { return id }
        }
        throw BenchError("blobs: \(digest) is not stored")
    }
}
