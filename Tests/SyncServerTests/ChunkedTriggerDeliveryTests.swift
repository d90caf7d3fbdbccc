import Foundation
import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// A trigger that changes more records than one chunk of a many-partition apply holds (the
/// storage side is `ChunkedApplyTests`): its transaction lets go of each chunk once written, and
/// its commit names those partitions without their changes. Live subscribers of any of them,
/// on the instance that ran the trigger and on another, still receive every change, each once.
@Suite("Deliveries of a chunked trigger write", .timeLimit(.minutes(30)))
struct ChunkedTriggerDeliveryTests {
    /// More records than the 128 objects a many-partition apply takes in one chunk, each in a
    /// partition of its own.
    static let tallies = (0..<150).map { String(format: "t%03d", $0) }
    static let watched = ["t000", "t077", "t149"]
    static let room = partition("room=r")

    static func tally(_ id: String) -> (partition: Partition, key: ObjectKey) {
        (partition("tally=\(id)"), key("Tally", id))
    }

    /// Every Note written to a room raises every tally by one, in one many-partition apply.
    static let countNotes = Trigger(name: "count-notes", collections: ["Note"]) { event, context in
        guard event.operation == .insert else { return }
        var operations: [Partition: [SyncOperation]] = [:]
        for id in tallies {
            let (partition, key) = tally(id)
            operations[partition] = [.increment(key, path: try! Path(parsing: "count"), by: 1)]
        }
        _ = try await context.apply(operations)
    }

    static var application: SyncApplication {
        var permissions = Permissions()
        let signedIn: ClosureRule.Decision = { principal, _, _ in principal.userID != nil }
        permissions.register(ClosureRule(read: signedIn, write: signedIn), for: PartitionKind("room"))
        permissions.register(ClosureRule(read: signedIn, write: { _, _, _ in false }), for: PartitionKind("tally"))
        return SyncApplication(permissions: permissions, triggers: [countNotes])
    }

    /// Statements of 1 KiB: the trigger's apply is cut into chunks of a dozen records after the
    /// first, and lets go of each.
    static let configure: @Sendable (inout ServerConfiguration) -> Void = { configuration in
        FaultFixtures.pollOff(&configuration)
        configuration.storage.statementBytes = 1_024
    }

    @Test("subscribers of three of the 150 partitions, on both instances, see every note counted once")
    func everyChangeDelivered() async throws {
        try await TestDatabase.with { db in
            var puts: [Partition: [SyncOperation]] = [:]
            for id in Self.tallies {
                let (partition, key) = Self.tally(id)
                puts[partition] = [.put(key, body: ["count": 0, "padding": .string(String(repeating: "p", count: 200))])]
            }
            try await db.store().withWriteTransaction(author: "setup") { transaction in
                _ = try await transaction.apply(puts)
            }
            try await TestServer.with(database: db.url, application: Self.application, configure: Self.configure) { a in
                try await TestServer.with(database: db.url, application: Self.application, configure: Self.configure) { b in
                    let alice = try await a.register("alice@example.com")
                    var subscribers: [TestSyncClient] = []
                    var copies: [[Partition: PartitionCopy]] = []
                    for server in [a, b] {
                        let client = try await server.connect(token: alice.accessToken)
                        _ = try await client.next()
                        var held: [Partition: PartitionCopy] = [:]
                        for id in Self.watched {
                            let partition = Self.tally(id).partition
                            guard case .success(let copy) = try await client.subscribe(partition) else {
                                Issue.record("subscribing to \(partition) was refused")
                                return
                            }
                            held[partition] = copy
                        }
                        subscribers.append(client)
                        copies.append(held)
                    }
                    let writer = try await a.connect(token: alice.accessToken)
                    _ = try await writer.next()
                    for n in 1...3 {
                        let answer = try await writer.upload([.put(key("Note", "n\(n)"), body: [:])], to: Self.room, requestId: "note-\(n)")
                        #expect(answer.isAck, "\(answer)")
                    }
                    for index in subscribers.indices {
                        let deadline = ContinuousClock.now + .seconds(30)
                        func counts() -> [String: Int64] {
                            Dictionary(uniqueKeysWithValues: Self.watched.map { id in
                                let (partition, key) = Self.tally(id)
                                return (id, copies[index][partition]?.objects[key]?.body?["count"]?.intValue ?? -1)
                            })
                        }
                        while counts().values.contains(where: { $0 != 3 }) {
                            guard ContinuousClock.now < deadline,
                                let message = try? await subscribers[index].next(timeout: deadline - ContinuousClock.now)
                            else {
                                Issue.record("the subscriber on instance \(index == 0 ? "A" : "B") holds the counts \(counts()), not 3")
                                break
                            }
                            if case .changes(let batch) = message, copies[index][batch.partition] != nil {
                                copies[index][batch.partition]?.apply(batch)
                            }
                        }
                    }
                    let stored = try await db.store().snapshot(of: Self.tally("t077").partition)
                    #expect(stored[Self.tally("t077").key]?.body?["count"] == 3, "each note counted once")
                    for client in subscribers + [writer] { await client.close() }
                }
            }
        }
    }
}
