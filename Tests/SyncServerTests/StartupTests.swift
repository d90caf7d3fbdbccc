import Foundation
import PartitionSync
import SyncStorage
import SyncTesting
import Testing

/// How `psync serve` starts, and fails to.
@Suite("Server start", .timeLimit(.minutes(30)))
struct StartupTests {
    @Test("a second server on a port in use exits non-zero, and its first line says the port is in use")
    func portInUse() async throws {
        try await TestDatabase.with { db in
            let first = try ServerProcess(database: db.url)
            try await first.start()
            defer { Task { [first] in await first.stop() } }

            let process = Process()
            process.executableURL = URL(fileURLWithPath: ServerProcess.executable)
            process.arguments = ["serve", "--port", "\(first.port)", "--database-url", db.url.urlString]
            var environment = ProcessInfo.processInfo.environment
            environment["PSYNC_JWT_SECRET"] = TestServer.jwtSecret
            environment["LOG_LEVEL"] = "info"
            process.environment = environment
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let deadline = ContinuousClock.now + .seconds(60)
            while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
            if process.isRunning { process.terminate() }
            #expect(!process.isRunning, "the second server is still running")
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(process.terminationStatus != 0)
            let firstLine = text.split(separator: "\n").first.map(String.init) ?? ""
            #expect(firstLine.contains("\(first.port)") && firstLine.contains("in use"), "first line: \(firstLine)\n\(text.prefix(3000))")
        }
    }
}
