import Foundation
import PartitionSync
import SyncClient
import Synchronization
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Two clients writing the same partition concurrently, going offline and online at random:
/// at the end both copies equal the database.
@Suite("Client convergence", .timeLimit(.minutes(30)))
struct ConvergenceTests {
    /// A client whose connection loop can be stopped and started.
    final class Connection: @unchecked Sendable {
        // Touched only by the test's single driving task.
        let client: SyncClient
        var task: Task<Void, Never>?
        init(_ client: SyncClient) { self.client = client }
        func start() { if task == nil { task = Task { await client.run() } } }
        func stop() async {
            task?.cancel()
            await task?.value
            task = nil
        }
    }

    static func randomOperation(_ random: inout SeededGenerator) -> SyncOperation {
        let object = try! ObjectKey(collection: "Doc", id: "d\(Int.random(in: 0..<6, using: &random))")
        switch Int.random(in: 0..<8, using: &random) {
        case 0, 1: return .put(object, body: ["name": .string("n\(Int.random(in: 0..<50, using: &random))"), "tags": []])
        case 2: return .increment(object, path: try! Path(parsing: "n"), by: 1)
        case 3: return .set(object, path: try! Path(parsing: "meta.x"), value: .int(Int64.random(in: 0..<9, using: &random)))
        case 4: return .arrayAppend(object, path: try! Path(parsing: "tags"), value: .int(Int64.random(in: 0..<3, using: &random)))
        case 5: return .unset(object, path: try! Path(parsing: "meta"))
        case 6: return .delete(object)
        default: return .arrayRemove(object, path: try! Path(parsing: "tags"), match: .int(Int64.random(in: 0..<3, using: &random)))
        }
    }

    @Test("seeded concurrent writes, disconnects and reconnects: both clients converge to the database")
    func converge() async throws {
        let seed = ProcessInfo.processInfo.environment["PSYNC_SEED"].flatMap(UInt64.init) ?? 20_261_122
        let harness = ClientHarness()
        defer { harness.cleanUp() }
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: SharedRules.permissions) { server in
                let room = partition("shared=room")
                var connections: [Connection] = []
                for (index, email) in ["ann@example.com", "bob@example.com"].enumerated() {
                    let client = try harness.client(server.baseURL, store: "client\(index)")
                    try await client.register(email: email, password: "correct horse")
                    _ = try await client.open(room)
                    let connection = Connection(client)
                    connection.start()
                    connections.append(connection)
                }
                var random = SeededGenerator(seed: seed)
                var refusedLocally = 0
                for step in 0..<160 {
                    let connection = connections[Int.random(in: 0..<2, using: &random)]
                    switch Int.random(in: 0..<10, using: &random) {
                    case 0:
                        await connection.stop()
                    case 1:
                        connection.start()
                    default:
                        let operations = (0..<Int.random(in: 1...3, using: &random)).map { _ in Self.randomOperation(&random) }
                        do {
                            try await connection.client.write(operations, in: room)
                        } catch {
                            refusedLocally += 1  // e.g. a field operation on an object this copy does not have
                        }
                    }
                    if step % 20 == 0 { try await Task.sleep(for: .milliseconds(30)) }
                }
                for connection in connections { connection.start() }
                for connection in connections {
                    #expect(await connection.client.waitUntilUploaded(timeout: .seconds(30)))
                }
                let database = try await db.store().snapshot(of: room).compactMapValues(\.body)
                for (index, connection) in connections.enumerated() {
                    let deadline = ContinuousClock.now + .seconds(20)
                    var copy: [ObjectKey: [String: JSONValue]] = [:]
                    repeat {
                        copy = Dictionary(uniqueKeysWithValues: try await connection.client.objects(in: room).compactMap { object in
                            object.body.map { (object.key, $0) }
                        })
                        if copy == database { break }
                        try await Task.sleep(for: .milliseconds(50))
                    } while ContinuousClock.now < deadline
                    #expect(copy == database, "client \(index) differs from the database")
                }
                print("convergence: seed \(seed), \(refusedLocally) writes refused locally, \(database.count) objects at the end")
                for connection in connections { await connection.stop() }
            }
        }
    }
}
