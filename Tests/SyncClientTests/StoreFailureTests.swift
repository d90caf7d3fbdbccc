import Foundation
import GRDB
import PartitionSync
@testable import SyncClient
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

/// What the client does when its own store fails.
@Suite("Client store failures", .timeLimit(.minutes(30)))
struct StoreFailureTests {
    @Test("a change the local store cannot save is reported as ClientEvent.storeFailed, not dropped in silence")
    func changeNotSaved() async throws {
        try await ClientHarness.withAnn { db, client, userID in
            let mine = try await client.open(partition("user=\(userID)"))
            #expect(await client.waitUntilUpToDate(mine.partition, timeout: .seconds(10)))
            let events = await client.events()
            // The store loses the table the server's objects are kept in.
            try await client.store.database.write { try $0.execute(sql: "DROP TABLE objects") }
            // A change the server then sends cannot be saved.
            try await db.store().upload(Upload(partition: mine.partition, operations: [.put(key("Note", "n"), body: [:])], principal: userID))
            var reported: (String, String)?
            for await event in events {
                if case .storeFailed(let what, let error) = event {
                    reported = (what, error)
                    break
                }
            }
            #expect(reported?.0 == "storing changes of \(mine.partition)", "\(String(describing: reported))")
            #expect(reported?.1.contains("objects") == true, "\(String(describing: reported))")
        }
    }
}
