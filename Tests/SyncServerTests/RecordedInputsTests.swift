import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// A permission decision depends on what its rule reads, not on what the rule declares: a
/// rule that reads another partition and declares no inputs still has its subscriptions
/// revoked when that partition changes, and one that grants because an object is absent has
/// them revoked when the object is created, on this instance and on another.
@Suite("Recorded permission inputs", .timeLimit(.minutes(30)))
struct RecordedInputsTests {
    /// - `user=<id>`: its owner;
    /// - `club=<id>`: the users `Roster/<id>` (kept in `rosters=all`) lists in `members`; no
    ///   declared inputs;
    /// - `vault=<id>`: every user without a `Ban/<userId>` object (kept in `bans=all`); no
    ///   declared inputs;
    /// - `rosters=all`, `bans=all`: written by users (a back office, for the test).
    static var permissions: Permissions {
        var permissions = Permissions()
        permissions.register(OwnerRule(), for: PartitionKind("user"))
        let member: ClosureRule.Decision = { principal, partition, context in
            guard let userID = principal.userID else { return false }
            let roster = try await context.body(of: try ObjectKey(collection: "Roster", id: partition.value))
            return roster?["members"]?.arrayValue?.contains(.string(userID)) ?? false
        }
        permissions.register(ClosureRule(read: member, write: member), for: PartitionKind("club"))
        let unbanned: ClosureRule.Decision = { principal, _, context in
            guard let userID = principal.userID else { return false }
            return try await context.body(of: try ObjectKey(collection: "Ban", id: userID)) == nil
        }
        permissions.register(ClosureRule(read: unbanned, write: unbanned), for: PartitionKind("vault"))
        let backOffice = ClosureRule(read: { principal, _, _ in principal.userID != nil }, write: { principal, _, _ in principal.userID != nil })
        permissions.register(backOffice, for: PartitionKind("rosters"))
        permissions.register(backOffice, for: PartitionKind("bans"))
        return permissions
    }

    @Test("a rule that reads another partition without declaring it is revoked when that partition changes")
    func undeclaredPartition() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: Self.permissions) { server in
                let alice = try await server.register("alice@example.com")
                let admin = try await server.register("admin@example.com")
                let office = try await server.connect(token: admin.accessToken)
                _ = try await office.next()
                let rosters = partition("rosters=all")
                let roster = key("Roster", "chess")
                #expect(try await office.upload([.put(roster, body: ["members": [.string(alice.userID)]])], to: rosters, requestId: "r1").isAck)

                let club = partition("club=chess")
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                client.send(.subscribe(partition: club, cursor: nil))
                var copy = PartitionCopy()
                try await client.sync(club, into: &copy)
                #expect(try await client.upload([.put(key("Move", "m1"), body: ["move": "e4"])], to: club, requestId: "m1").isAck)

                // The roster drops her: her subscription ends, her next write is refused.
                #expect(try await office.upload([.put(roster, body: ["members": []])], to: rosters, requestId: "r2").isAck)
                let ended = try await client.next(timeout: .seconds(30)) { message in
                    if case .unsubscribed = message { return true }
                    return false
                }
                #expect(ended == .unsubscribed(partition: club, code: .permissionRevoked))
                let refused = try await client.upload([.put(key("Move", "m2"), body: ["move": "e5"])], to: club, requestId: "m2")
                guard case .rejected(_, _, let error, _) = refused else { Issue.record("\(refused)"); return }
                #expect(error.code == .permissionDenied)
                await client.close()
                await office.close()
            }
        }
    }

    @Test("a rule that grants because an object is absent is revoked when it is created, on this instance and on another", arguments: [false, true])
    func absentObjectCreated(elsewhere: Bool) async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: Self.permissions) { server in
                let alice = try await server.register("alice@example.com")
                let vault = partition("vault=v1")
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                client.send(.subscribe(partition: vault, cursor: nil))
                var copy = PartitionCopy()
                try await client.sync(vault, into: &copy)
                #expect(try await client.upload([.put(key("Coin", "c1"), body: [:])], to: vault, requestId: "c1").isAck)

                let ban = Upload(partition: partition("bans=all"), operations: [.put(key("Ban", alice.userID), body: [:])], principal: "system:admin")
                if elsewhere {
                    // Another process commits it: this instance hears of the partition only.
                    try await db.store().upload(ban)
                } else {
                    let admin = try await server.register("admin@example.com")
                    let office = try await server.connect(token: admin.accessToken)
                    _ = try await office.next()
                    #expect(try await office.upload(ban.operations, to: ban.partition, requestId: "ban").isAck)
                    await office.close()
                }
                let ended = try await client.next(timeout: .seconds(30)) { message in
                    if case .unsubscribed = message { return true }
                    return false
                }
                #expect(ended == .unsubscribed(partition: vault, code: .permissionRevoked))
                let refused = try await client.upload([.put(key("Coin", "c2"), body: [:])], to: vault, requestId: "c2")
                guard case .rejected(_, _, let error, _) = refused else { Issue.record("\(refused)"); return }
                #expect(error.code == .permissionDenied)
                await client.close()
            }
        }
    }
}
