import Foundation
import Locking
import PartitionSync
import PartitionSyncServer
import PostgresNIO
import RChat
import Synchronization
import SyncImport
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

/// App Services users become accounts keeping their ids, which cannot sign in until their
/// one-time token sets a password; RChat's triggers make the imported rooms' memberships, so
/// each user reads their rooms as before.
@Suite("Imported users", .timeLimit(.minutes(30)))
struct ImportedUsersTests {
    static let password = "imported password 1"

    @Test("accounts keep their ids; no sign-in before the token; the token sets the password once; rooms readable by their members")
    func accountsAndRooms() async throws {
        try await TestDatabase.with { db in
            var options = ImportOptions(paths: [ImportHarness.folder("mongoexport-relaxed")])
            options.usersFile = ImportHarness.rchat + "/users.json"
            let printed = ImportHarness.Printed()
            let report = try await ImportHarness.run(db, options, printed: printed)
            #expect(report.users.imported == 3 && report.total.imported == 12, "\(report.lines)")
            let tokens = printed.tokens.withLock { $0 }
            let users = try ImportHarness.documents(ImportHarness.file("mongoexport-relaxed", "User"))
            #expect(Set(tokens.keys) == Set(try users.map { try DocumentPlacement.objectID($0.id) }))

            // Run again: no new account, no new token.
            let again = ImportHarness.Printed()
            let second = try await ImportHarness.run(db, options, printed: again)
            #expect(second.users.unchanged == 3 && again.tokens.withLock { $0 }.isEmpty)

            try await TestServer.with(database: db, application: RChat.application) { server in
                let user = users[0].document
                let id = try DocumentPlacement.objectID(user["_id"])
                guard case .string(let email)? = user["userName"] else { throw TestTimeout(what: "the user's email") }
                let refused = try await server.http.post("/v1/auth/login", ["email": .string(email), "password": .string(Self.password)])
                #expect(refused.status == 401, "an imported account signs in before its password is set")

                let set = try await server.http.post("/v1/auth/password", ["token": .string(tokens[id]!), "password": .string(Self.password)])
                #expect(set.status == 200, "\(set.text)")
                #expect(set.json?["userId"]?.stringValue == id)
                let reused = try await server.http.post("/v1/auth/password", ["token": .string(tokens[id]!), "password": "another password 2"])
                #expect(reused.status == 400 && reused.json?["error"]?["code"] == "invalid_token", "\(reused.text)")
                let signedIn = try await server.http.login(email, password: Self.password)
                #expect(signedIn.userID == id)

                // The trigger makes every listed room a membership; then the member reads it.
                guard case .array(let conversations)? = user["conversations"], case .document(let first)? = conversations.first,
                    case .string(let room)? = first["id"]
                else { throw TestTimeout(what: "a conversation of the user") }
                let path = "/v1/partitions/\(RChatPartitions.conversation(room).description.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)/changes"
                #expect(try await TestTriggers.eventually {
                    try await server.http.get(path, token: signedIn.accessToken).status == 200
                }, "the member never read the imported room")
                let pulled = try await server.http.get(path, token: signedIn.accessToken)
                let messages = try ImportHarness.documents(ImportHarness.file("mongoexport-relaxed", "ChatMessage")).filter {
                    $0.document["partition"] == .string("conversation=\(room)")
                }
                let ids = Set(try messages.map { try DocumentPlacement.objectID($0.id) })
                let objects = pulled.json?["objects"]?.arrayValue ?? pulled.json?["changes"]?.arrayValue ?? []
                let pulledIDs = Set(objects.compactMap { $0["id"]?.stringValue })
                #expect(pulledIDs == ids, "\(pulled.text.prefix(500))")
            }
        }
    }
}
