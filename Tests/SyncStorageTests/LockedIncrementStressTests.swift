import PostgresNIO
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

@Suite("Locked increments (stress)")
struct LockedIncrementStressTests {
    @Test("concurrent deferring transactions raising one counter lose no increment", arguments: [true, false])
    func increments(deferring: Bool) async throws {
        try await TestDatabase.with(maximumConnections: 12) { db in
            let store = db.store()
            let tally = partition("tally=all")
            let counter = key("Tally", "t")
            let writers = 8
            let rounds = 60
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for round in 0..<rounds {
                            try await store.withWriteTransaction(author: "w") { transaction in
                                transaction.defersWrites = deferring
                                transaction.defersEncoding = deferring
                                try await transaction.apply([
                                    .put(counter, body: [:]), .increment(counter, path: path("n"), by: 1),
                                    .arrayAppend(counter, path: path("seen"), value: .string("\(writer)-\(round)")),
                                ], in: tally)
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let body = try await store.body(of: counter)
            #expect(body?["n"] == .int(Int64(writers * rounds)))
            #expect(Set(body?["seen"]?.arrayValue ?? []).count == writers * rounds)
        }
    }
}
