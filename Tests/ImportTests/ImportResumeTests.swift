import Foundation
import PostgresNIO
import Synchronization
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A real `psync import` process killed with SIGKILL in the middle of an export, then run
/// again: every document is stored once (one object each, and the objects the killed run
/// committed never written again: their row versions are kept), and a third run finds
/// everything stored.
@Suite("Import killed and resumed", .timeLimit(.minutes(30)))
struct ImportResumeTests {
    static let count = 3_000

    /// ChatMessage documents in relaxed Extended JSON, one per line, over 10 rooms.
    static func export(seed: UInt64) throws -> String {
        var random = SeededGenerator(seed: seed)
        let folder = try TestScratch.folder("import-resume")
        let path = folder.appendingPathComponent("ChatMessage.json").path
        var text = ""
        for number in 0..<count {
            let room = Int.random(in: 0..<10, using: &random)
            let line: JSONValue = [
                "_id": ["$oid": .string(String(format: "%024x", number))], "partition": .string("conversation=room-\(room)"),
                "author": "ann@example.com", "text": .string("message \(number) \(UInt32.random(in: 0...UInt32.max, using: &random))"),
                "location": [], "timestamp": ["$date": .string("2024-05-01T10:00:00.000Z")],
            ]
            text += line.jsonString + "\n"
        }
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Starts `psync import` on `path`, its output into `log`.
    static func start(_ database: DatabaseURL, _ path: String, log: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: BuiltExecutable.path("psync"))
        process.arguments = ["import", "--database-url", database.urlString, "--batch-documents", "20", "--progress-interval", "0", path]
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    static func waitForExit(_ process: Process, timeout: Duration = .seconds(120)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else { throw TestTimeout(what: "psync import to exit") }
            try await Task.sleep(for: .milliseconds(20))
        }
        return process.terminationStatus
    }

    /// The stored messages, each with the transaction that wrote its row (`xmin`): a row
    /// written again would have another.
    static func stored(_ db: TestDatabase) async throws -> [String: String] {
        var result: [String: String] = [:]
        for try await (id, writer) in try await db.client.query(
            "SELECT id, xmin::text FROM psync_objects WHERE collection = 'ChatMessage'"
        ).decode((String, String).self) { result[id] = writer }
        return result
    }

    @Test("killed midway and run again, the import stores every document once")
    func killedAndResumed() async throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("ImportResumeTests seed \(seed)")
        try await TestDatabase.with(exclusive: true, timeLimit: .seconds(400)) { db in
            let path = try Self.export(seed: seed)
            let log = TestScratch.file("psync-import", suffix: ".log")
            let doomed = try Self.start(db.url, path, log: log)
            // Killed once it said three batches were written.
            let deadline = ContinuousClock.now + .seconds(120)
            while (try? String(contentsOfFile: log, encoding: .utf8))?.components(separatedBy: "progress:").count ?? 0 < 4 {
                guard doomed.isRunning, ContinuousClock.now < deadline else {
                    Issue.record("the import ended or stalled before it could be killed: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
                    return
                }
                try await Task.sleep(for: .milliseconds(5))
            }
            kill(doomed.processIdentifier, SIGKILL)
            _ = try await Self.waitForExit(doomed)
            let partial = try await Self.stored(db)
            #expect(partial.count > 0 && partial.count < Self.count, "killed midway: \(partial.count) of \(Self.count) stored")

            let resumed = try Self.start(db.url, path, log: log + ".2")
            let status = try await Self.waitForExit(resumed)
            let output = (try? String(contentsOfFile: log + ".2", encoding: .utf8)) ?? ""
            #expect(status == 0, "\(output)")
            #expect(output.contains("\(Self.count - partial.count) imported, \(partial.count) unchanged"), "\(output)")
            let final = try await Self.stored(db)
            #expect(final.count == Self.count)
            #expect(partial.allSatisfy { final[$0.key] == $0.value }, "each document stored once: the killed run's rows are not written again")

            let third = try Self.start(db.url, path, log: log + ".3")
            #expect(try await Self.waitForExit(third) == 0)
            let thirdOutput = (try? String(contentsOfFile: log + ".3", encoding: .utf8)) ?? ""
            #expect(thirdOutput.contains("0 imported, \(Self.count) unchanged"), "\(thirdOutput)")
            #expect(try await Self.stored(db) == final)
        }
    }
}
