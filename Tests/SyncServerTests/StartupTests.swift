import Foundation
import PartitionSync
import ServiceLifecycle
import SyncServer
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

    @Test("an application with a rule for a key no partition can have, or a bad index, does not start, and says which")
    func badApplication() async throws {
        var badKind = TestServer.defaultPermissions
        badKind.register(OwnerRule(), for: PartitionKind("Rooms"))
        let cases: [(SyncApplication, SyncError.Code, String)] = [
            (SyncApplication(permissions: badKind), .invalidPartition, "Rooms"),
            (SyncApplication(permissions: TestServer.defaultPermissions, indexes: [.field(collection: "User", path: "user name")]), .invalidPath, "User at user name"),
        ]
        try await TestDatabase.with { db in
            for (application, code, named) in cases {
                let logger = TestPostgres.makeLogger("psync.test.server")
                let server = SyncServer(configuration: TestServer.defaultConfiguration, database: db.url, application: application, logger: logger)
                let group = ServiceGroup(services: [server], gracefulShutdownSignals: [], logger: logger)
                do {
                    try await group.run()
                    Issue.record("a server of a bad application ran and stopped without an error")
                } catch let error as SyncError {
                    #expect(error.code == code)
                    #expect(error.message.contains(named), "\(error.message)")
                }
            }
        }
    }

    /// The store that creates the application's indexes is the one the server serves with: its
    /// searches read an element index's entries only for the indexes it created. The server
    /// prepared its database with a store of its own, and every member search of its triggers
    /// scanned the whole collection (`psync-bench ingest --conversations 1000`: the unread
    /// trigger ~93 events/s, each search 5–18 ms over 10,000 users).
    @Test("the server's searches read the element indexes it created")
    func elementIndexesServed() async throws {
        let index = ObjectIndex.arrayElements(collection: "Note", path: "tags", field: "id")
        let application = SyncApplication(permissions: TestServer.defaultPermissions, indexes: [index])
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, application: application) { server in
                #expect(server.server.elementIndexNames == [index.name])
            }
        }
    }
}
