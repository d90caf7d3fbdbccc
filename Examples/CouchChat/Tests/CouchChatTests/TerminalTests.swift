import CouchChat
import Foundation
import PartitionSync
import SyncTesting
import Testing

/// The `couchchat` terminal client as a person runs it, each command a process of its own
/// (issue 34, finding 4): it reports every refusal with its code and exits non-zero, takes a
/// room's title where it takes its id, and says so when a room is unknown.
@Suite("couchchat, the terminal client", .timeLimit(.minutes(30)))
struct TerminalTests {
    /// Runs `couchchat` with a home of its own; its exit status and everything it printed.
    static func couchchat(_ arguments: [String], server: String, home: String) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: BuiltExecutable.path("couchchat"))
        process.arguments = arguments + ["--server", server, "--home", home, "--wait", "5"]
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("COUCHCHAT_") }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = await Task.detached { pipe.fileHandleForReading.readDataToEndOfFile() }.value
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test("send and read by a room's title; a refused message and an unknown room exit non-zero with their codes")
    func truthfulClient() async throws {
        let root = NSTemporaryDirectory() + "couchchat-terminal-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        try await TestDatabase.with { db in
            try await TestServer.with(database: db, application: .couchChat) { server in
                let base = server.baseURL
                let ann: @Sendable ([String]) async throws -> (status: Int32, output: String) = { arguments in
                    try await Self.couchchat(arguments, server: base, home: root + "/ann")
                }
                #expect(try await ann(["register", "--email", "ann@example.com", "--password", "correct horse battery"]).status == 0)
                let created = try await ann(["create", "Pictures"])
                #expect(created.status == 0 && created.output.contains("Created Pictures"), "\(created.output)")
                #expect(try await TestTriggers.eventually { try await ann(["rooms"]).output.contains("Pictures") })

                let sent = try await ann(["send", "Pictures", "hello by title"])
                #expect(sent.status == 0, "\(sent.output)")
                #expect(sent.output.contains("Sent to Pictures."))
                let read = try await ann(["read", "pictures"])
                #expect(read.status == 0 && read.output.contains("ann@example.com: hello by title"), "\(read.output)")

                // Over the declared bound: refused by the server, said so, exit 1, nothing kept.
                let long = String(repeating: "x", count: CouchChatSchemas.maximumMarkdownLength + 1)
                let refused = try await ann(["send", "Pictures", long])
                #expect(refused.status == 1, "\(refused.output)")
                #expect(refused.output.contains("validation_failed"))
                #expect(!refused.output.contains("Sent"))
                #expect(try await ann(["read", "Pictures"]).output.contains("Pictures: 1 message(s)"))

                let unknown = try await ann(["read", "Nowhere"])
                #expect(unknown.status != 0)
                #expect(unknown.output.contains("not_found") && unknown.output.contains("Nowhere"), "\(unknown.output)")
            }
        }
    }
}
