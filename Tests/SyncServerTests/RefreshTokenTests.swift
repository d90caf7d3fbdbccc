import Foundation
import PartitionSync
import SyncProtocol
import SyncServer
import SyncTesting
import Testing

/// Refresh-token rotation under concurrency: reuse detection must be atomic with rotation.
@Suite("Refresh tokens", .timeLimit(.minutes(30)))
struct RefreshTokenTests {
    /// Presents `token` twice at once, `pairs` times over, and checks every outcome is one
    /// the rules allow: both answered (grace), or the family revoked with no token left usable.
    static func raceRefreshes(_ server: TestServer, pairs: Int) async throws -> (graced: Int, revoked: Int) {
        let http = server.http
        var graced = 0
        var revoked = 0
        for index in 0..<pairs {
            let tokens = try await server.register("racer\(index)@example.com")
            async let first = http.post("/v1/auth/refresh", ["refreshToken": .string(tokens.refreshToken)])
            async let second = http.post("/v1/auth/refresh", ["refreshToken": .string(tokens.refreshToken)])
            let answers = try await [first, second]
            let issued = answers.compactMap { $0.status == 200 ? $0.json?["refreshToken"]?.stringValue : nil }
            if issued.count == 2 {
                // Both within grace: both replacements continue the family.
                graced += 1
                for token in issued {
                    #expect(try await http.post("/v1/auth/refresh", ["refreshToken": .string(token)]).status == 200)
                }
            } else {
                // One lost: its replay revoked the family, so no token issued here may still work.
                revoked += 1
                for token in issued {
                    let after = try await http.post("/v1/auth/refresh", ["refreshToken": .string(token)])
                    #expect(after.status == 401, "a token issued before the replay revoked its family still works")
                }
            }
        }
        return (graced, revoked)
    }

    @Test("concurrent uses of one refresh token: within the default grace both continue the family")
    func concurrentWithGrace() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let outcome = try await Self.raceRefreshes(server, pairs: 20)
                #expect(outcome.graced == 20)
            }
        }
    }

    @Test("concurrent uses of one refresh token without grace: one wins, and the replay leaves no token usable")
    func concurrentWithoutGrace() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: { $0.auth.refreshReuseGrace = .zero }) { server in
                let outcome = try await Self.raceRefreshes(server, pairs: 20)
                #expect(outcome.revoked == 20)
            }
        }
    }

    @Test("a used refresh token within the grace answers again and the family continues; after it, the family is revoked")
    func graceThenRevocation() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let http = server.http
                let tokens = try await server.register("ann@example.com")
                let lost = try await http.post("/v1/auth/refresh", ["refreshToken": .string(tokens.refreshToken)])
                #expect(lost.status == 200)
                // The answer was lost: the client presents the old token again, within the grace.
                let retried = try await http.post("/v1/auth/refresh", ["refreshToken": .string(tokens.refreshToken)])
                #expect(retried.status == 200)
                #expect(retried.json?["userId"]?.stringValue == tokens.userID)
                let next = try #require(retried.json?["refreshToken"]?.stringValue)
                let access = try #require(retried.json?["accessToken"]?.stringValue)
                #expect(try await http.get("/v1/partitions/user%3D\(tokens.userID)/changes", token: access).status == 200)
                // The family continues from the retried answer.
                let continued = try await http.post("/v1/auth/refresh", ["refreshToken": .string(next)])
                #expect(continued.status == 200)
                let head = try #require(continued.json?["refreshToken"]?.stringValue)
                // The same tokens seen by a server whose grace has passed (grace 0: every reuse is late).
                try await TestServer.with(database: db.url, configure: { $0.auth.refreshReuseGrace = .zero }) { late in
                    let replay = try await late.http.post("/v1/auth/refresh", ["refreshToken": .string(tokens.refreshToken)])
                    #expect(replay.status == 401)
                    #expect(replay.json?["error"]?["code"] == "unauthenticated")
                    // The whole family is revoked, whichever branch a token came from.
                    #expect(try await late.http.post("/v1/auth/refresh", ["refreshToken": .string(head)]).status == 401)
                    let lostToken = try #require(lost.json?["refreshToken"]?.stringValue)
                    #expect(try await late.http.post("/v1/auth/refresh", ["refreshToken": .string(lostToken)]).status == 401)
                    // And so are the access tokens the family issued, on both instances.
                    #expect(try await late.http.get("/v1/partitions/user%3D\(tokens.userID)/changes", token: access).status == 401)
                }
                #expect(try await TestTriggers.eventually {
                    try await http.get("/v1/partitions/user%3D\(tokens.userID)/changes", token: access).status == 401
                })
                // A new login is a new family, untouched.
                let again = try await http.login("ann@example.com", password: "correct horse battery")
                #expect(try await http.get("/v1/partitions/user%3D\(tokens.userID)/changes", token: again.accessToken).status == 200)
            }
        }
    }
}
