import Foundation
import PartitionSync
import RChat
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// RChat's permission matrix, generated: every partition kind × every kind of principal ×
/// every way to read or write, each answer compared with the one allowed set. A denied write
/// leaves nothing a trigger could see.
@Suite("RChat: permission matrix", .timeLimit(.minutes(30)))
struct PermissionMatrixTests {
    /// Who asks.
    enum Who: String, CaseIterable, Sendable {
        case owner, invited, former, forger, outsider, deleted, service, admin, anonymous
    }

    /// Which partition, relative to the cast below.
    enum Kind: String, CaseIterable, Sendable {
        /// `user=<owner>`.
        case ownerUser
        /// `user=<deleted>`: the partition of the account that was deleted.
        case deletedUser
        /// `conversation=<room>`.
        case conversation
        case allUsers
        /// `membership=<room>`: the server's record.
        case membership
        case unknown
    }

    enum Access: String, CaseIterable, Sendable {
        case subscribe, pull, put, set, unset, increment, arrayAppend, arrayRemove, delete
        var isRead: Bool { self == .subscribe || self == .pull }
    }

    /// The allowed set.
    static func allowed(_ who: Who, _ kind: Kind, _ access: Access) -> Bool {
        switch kind {
        case .ownerUser: who == .owner
        case .conversation: who == .owner || who == .invited
        case .allUsers: access.isRead && ![.deleted, .anonymous].contains(who)
        case .deletedUser, .membership, .unknown: false
        }
    }

    struct Cast: Sendable {
        var users: [Who: TestHTTPClient.Tokens]
        var tokens: [Who: String]
        var room: String

        func partition(_ kind: Kind) -> Partition {
            switch kind {
            case .ownerUser: RChatPartitions.user(users[.owner]!.userID)
            case .deletedUser: RChatPartitions.user(users[.deleted]!.userID)
            case .conversation: RChatPartitions.conversation(room)
            case .allUsers: RChatPartitions.allUsers
            case .membership: try! Partition(key: "membership", value: room)
            case .unknown: try! Partition("things=all")
            }
        }

        /// The object a write of `who` to `kind` targets: a new message for conversations (its
        /// author the writer), the partition's User record, else a new object.
        func operation(_ access: Access, _ who: Who, _ kind: Kind) -> SyncOperation {
            let tag = "\(who.rawValue)-\(access.rawValue)"
            let target: ObjectKey = switch kind {
            case .ownerUser: key("User", users[.owner]!.userID)
            case .deletedUser: key("User", users[.deleted]!.userID)
            case .conversation: key("ChatMessage", "m-\(tag)")
            default: key("Thing", "t-\(kind.rawValue)-\(tag)")
            }
            let author = JSONValue.string("\(who.rawValue)@example.com")
            let field = kind == .ownerUser || kind == .deletedUser ? path("userPreferences.displayName") : path("text")
            switch access {
            case .put:
                return .put(target, body: kind == .conversation
                    ? ["author": author, "text": "hi", "location": [], "timestamp": "2026-11-25T00:00:00Z"] : ["text": "hi"])
            case .set: return .set(target, path: field, value: "x")
            case .unset: return .unset(target, path: path("nothing"))
            case .increment: return .increment(target, path: path("conversations[id=\(room)].unreadCount"), by: 1)
            case .arrayAppend: return .arrayAppend(target, path: path("tags"), value: "x")
            case .arrayRemove: return .arrayRemove(target, path: path("conversations"), match: ["id": "none"])
            case .delete: return .delete(target)
            case .subscribe, .pull: preconditionFailure("not a write")
            }
        }
    }

    /// Alice creates the room with bob, carol and erin; carol leaves; erin deletes her account;
    /// mallory lists the room himself; dave is nobody's.
    static func cast(_ server: TestServer, _ db: TestDatabase) async throws -> Cast {
        let store = db.store()
        let names: [(Who, String)] = [(.owner, "owner"), (.invited, "invited"), (.former, "former"), (.deleted, "deleted"), (.forger, "forger"), (.outsider, "outsider")]
        var users: [Who: TestHTTPClient.Tokens] = [:]
        for (who, name) in names { users[who] = try await server.register("\(name)@example.com") }
        let all = users
        #expect(try await RChatHarness.eventually {
            for user in all.values where try await store.body(of: key("User", user.userID)) == nil { return false }
            return true
        })
        let room = "c-matrix"
        func upload(_ who: Who, _ operation: SyncOperation, _ partition: Partition) async throws {
            let client = try await server.connect(token: users[who]!.accessToken)
            _ = try await client.next()
            _ = try await client.upload([operation], to: partition, requestId: "setup-\(who.rawValue)-\(UUID().uuidString)")
            await client.close()
        }
        let owner = users[.owner]!.userID
        try await upload(.owner, .arrayAppend(key("User", owner), path: path("conversations"),
                                              value: RChatHarness.conversation(room, name: "Matrix", creator: "owner@example.com",
                                                                               members: ["invited@example.com", "former@example.com", "deleted@example.com"])),
                         RChatPartitions.user(owner))
        #expect(try await RChatHarness.eventually { try await ConversationAccessTests.membership(store, room)?.count == 4 })
        let former = users[.former]!.userID
        try await upload(.former, .arrayRemove(key("User", former), path: path("conversations"), match: ["id": .string(room)]), RChatPartitions.user(former))
        let forger = users[.forger]!.userID
        try await upload(.forger, .arrayAppend(key("User", forger), path: path("conversations"),
                                               value: RChatHarness.conversation(room, name: "Mine", creator: "forger@example.com", members: [])),
                         RChatPartitions.user(forger))
        #expect(try await server.http.request("DELETE", "/v1/auth/user", body: nil, token: users[.deleted]!.accessToken).status == 204)
        let invited = users[.invited]!.userID
        #expect(try await RChatHarness.eventually {
            let members = try await ConversationAccessTests.membership(store, room)
            let forged = try await ConversationAccessTests.lists(store, forger, room)
            return members?.sorted() == [owner, invited].sorted() && !forged
        })
        var tokens = users.mapValues(\.accessToken)
        tokens[.service] = try await APIKeys(client: db.client, logger: db.logger).create(name: "bot")
        tokens[.admin] = try await APIKeys(client: db.client, logger: db.logger).create(name: "admin")
        return Cast(users: users, tokens: tokens, room: room)
    }

    @Test("every partition kind × principal × operation answers exactly as the allowed set says")
    func matrix() async throws {
        try await RChatHarness.with { db, server in
            let cast = try await Self.cast(server, db)
            let store = db.store()
            var mismatches: [String] = []
            var checked = 0
            for who in Who.allCases {
                let token = cast.tokens[who]
                // Subscriptions over one WebSocket session per principal (none opens without a
                // valid credential).
                let session = try? await server.connect(token: token)
                let opened: Bool
                if let session, case .ready? = try? await session.next() { opened = true } else { opened = false }
                for kind in Kind.allCases {
                    let partition = cast.partition(kind)
                    let encoded = partition.description.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                    for access in Access.allCases {
                        let granted: Bool
                        switch access {
                        case .subscribe:
                            guard opened, let session else { granted = false; break }
                            session.send(.subscribe(partition: partition, cursor: nil))
                            let answer = try await session.next { message in
                                switch message {
                                case .changes(let batch): return batch.partition == partition
                                case .error(_, let target): return target == partition
                                default: return false
                                }
                            }
                            if case .changes = answer { granted = true } else { granted = false }
                            session.send(.unsubscribe(partition: partition))
                        case .pull:
                            let response = try await server.http.get("/v1/partitions/\(encoded)/changes", token: token)
                            granted = response.status == 200
                        default:
                            let operation = cast.operation(access, who, kind)
                            let body: JSONValue = ["requestId": .string("m-\(who.rawValue)-\(kind.rawValue)-\(access.rawValue)"), "operations": [operation.json]]
                            let response = try await server.http.request("POST", "/v1/partitions/\(encoded)/uploads", body: Data(body.jsonBytes), token: token)
                            granted = response.status != 401 && response.status != 403
                        }
                        checked += 1
                        if granted != Self.allowed(who, kind, access) {
                            mismatches.append("\(who.rawValue) \(access.rawValue) \(kind.rawValue): \(granted ? "granted" : "denied")")
                        }
                    }
                }
                if let session { await session.close() }
            }
            #expect(checked == Who.allCases.count * Kind.allCases.count * Access.allCases.count)
            #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "\n"))")
            // Denied writes left nothing behind that a trigger could see.
            for who in Who.allCases where !Self.allowed(who, .conversation, .put) {
                #expect(try await store.body(of: key("ChatMessage", "m-\(who.rawValue)-put")) == nil, "\(who.rawValue)")
            }
            for kind in [Kind.allUsers, .membership, .unknown] {
                for who in Who.allCases {
                    #expect(try await store.body(of: key("Thing", "t-\(kind.rawValue)-\(who.rawValue)-put")) == nil)
                }
            }
        }
    }
}
