import Foundation
import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Downloads are streamed a chunk at a time: twenty clients reading a 20 MiB blob at once,
/// slowly, do not make the server hold the blob twenty times (it would, were the bytes
/// queued faster than the connections take them).
@Suite("Blob download memory", .timeLimit(.minutes(30)))
struct BlobDownloadMemoryTests {
    /// This process's resident memory, in bytes (the server runs in it; the clients are curl processes).
    static func residentBytes() -> Int { ProcessStatus.bytes("VmRSS") ?? 0 }

    @Test("20 clients download a 20 MiB blob at once: the server's memory stays bounded")
    func twentyDownloads() async throws {
        try await TestDatabase.with(exclusive: true) { db in
            try await TestServer.with(database: db.url, permissions: TestRules.permissions) { server in
                let (alice, bob, _) = try await BlobTests.room(server, db)
                let blob = BlobTests.bytes(20 << 20)
                let reference = try await server.http.uploadBlob(blob, token: alice.accessToken)
                _ = try await db.store().upload(Upload(
                    partition: partition("room=r1"), operations: [.put(key("Message", "m1"), body: ["photo": reference.json])],
                    principal: alice.userID))
                let baseline = Self.residentBytes()
                let url = server.baseURL + TestHTTPClient.blobPath(reference.digest, in: partition("room=r1"))
                let downloads = (0..<20).map { _ in
                    let process = Process()
                    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
                    // Slow readers: 2 s each, so all twenty are served at once.
                    process.arguments = [
                        "-s", "-o", "/dev/null", "--limit-rate", "10M", "-w", "%{http_code} %{size_download}",
                        "-H", "Authorization: Bearer \(bob.accessToken)", url,
                    ]
                    let output = Pipe()
                    process.standardOutput = output
                    return (process, output)
                }
                for (process, _) in downloads { try process.run() }
                var peak = baseline
                while downloads.contains(where: { $0.0.isRunning }) {
                    peak = max(peak, Self.residentBytes())
                    try await Task.sleep(for: .milliseconds(20))
                }
                for (process, output) in downloads {
                    let answer = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                    #expect(process.terminationStatus == 0)
                    #expect(answer == "200 \(20 << 20)")
                }
                let growth = peak - baseline
                print("blob download memory: baseline \(baseline >> 20) MiB, peak \(peak >> 20) MiB, growth \(growth >> 20) MiB for 20 × 20 MiB")
                // Holding the blob once per download would be 400 MiB.
                #expect(growth < 100 << 20)
            }
        }
    }
}
