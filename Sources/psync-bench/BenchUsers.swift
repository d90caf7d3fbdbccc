import Foundation
import PostgresNIO
import RChatModel
import SyncProtocol
import SyncServer
import SyncTesting

/// A user the benchmark acts as.
struct BenchUser: Sendable {
    var id: String
    var email: String
    var token: String
}

extension BenchEnvironment {
    /// Registers users over HTTP, `parallel` at a time (the RChat triggers make their User and
    /// Chatster records).
    func registerUsers(_ prefix: String, count: Int, parallel: Int = 8) async throws -> [BenchUser] {
        let http = server.http
        let started = ContinuousClock.now
        let users = try await withThrowingTaskGroup(of: (Int, BenchUser).self) { group in
            var next = 0
            var users: [BenchUser?] = Array(repeating: nil, count: count)
            func add() {
                let index = next
                next += 1
                group.addTask {
                    let email = "\(prefix)-\(index)@bench.example"
                    let tokens = try await http.register(email, password: "bench password \(index)")
                    return (index, BenchUser(id: tokens.userID, email: email, token: tokens.accessToken))
                }
            }
            while next < min(parallel, count) { add() }
            while let (index, user) = try await group.next() {
                users[index] = user
                if next < count { add() }
            }
            return users.compactMap { $0 }
        }
        // The registration trigger makes each User record shortly after.
        try await waitUntil("the User records of \(prefix) exist", timeout: .seconds(300)) {
            let rows = try await client.query(
                "SELECT count(*) FROM psync_objects WHERE collection = 'User' AND body IS NOT NULL AND id = ANY(\(users.map(\.id)))",
                logger: logger)
            for try await found in rows.decode(Int64.self) { return found == users.count }
            return false
        }
        progress("registered \(count) users in \(started.duration(to: .now))")
        return users
    }

    /// Makes a conversation the way RChat's app does: its creator appends it to their own User
    /// record with the others as pending members, and the membership trigger gives it to them.
    /// Returns once every member's record lists it.
    func createConversation(_ id: String, name: String, members: [BenchUser]) async throws {
        let creator = members[0]
        let conversation = Conversation(
            id: id, displayName: name,
            members: [Member(userName: creator.email, membershipStatus: .active)] + members.dropFirst().map { Member(userName: $0.email) })
        let operation = SyncOperation.arrayAppend(
            try ObjectKey(collection: User.collection, id: creator.id), path: try Path(parsing: "conversations"),
            value: try JSONValue(encoding: conversation))
        let partition = RChatPartitions.user(creator.id).description
        let response = try await server.http.post(
            "/v1/partitions/\(partition.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? partition)/uploads",
            ["requestId": .string("create-\(id)"), "operations": [operation.json]], token: creator.token)
        guard response.status == 200 else { throw BenchError("creating \(id) failed: \(response.text)") }
        try await waitUntil("every member of \(id) has it", timeout: .seconds(300)) {
            let filter = JSONValue.array([["id": .string(id)]]).jsonString
            let rows = try await client.query(
                """
                SELECT count(*) FROM psync_objects
                WHERE collection = 'User' AND partition = ANY(\(members.map { RChatPartitions.user($0.id).description }))
                  AND body->'conversations' @> \(filter)::jsonb
                """, logger: logger)
            for try await count in rows.decode(Int64.self) { return count == members.count }
            return false
        }
    }

    /// Users that exist only as signed tokens (no account, no records): for sessions that need
    /// nothing but their own `user=` partition.
    func tokenUsers(_ prefix: String, count: Int) async throws -> [BenchUser] {
        var users: [BenchUser] = []
        users.reserveCapacity(count)
        for index in 0..<count {
            let id = "\(prefix)-\(index)"
            users.append(BenchUser(id: id, email: id + "@bench.example", token: try await tokens.issue(userID: id).token))
        }
        return users
    }

    /// Polls `condition` every 50 ms until it holds.
    func waitUntil(_ what: String, timeout: Duration, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw BenchError("timed out waiting until \(what)")
    }
}

/// A chat message body of about `bytes` bytes of text, stamped with the monotonic time it was
/// sent (`t`, nanoseconds), so receivers in this process can measure its delivery.
func messageBody(conversation: String, author: String, text bytes: Int, sequence: Int) -> [String: JSONValue] {
    [
        "author": .string(author),
        "text": .string(String(repeating: "x", count: max(0, bytes - 20)) + " message \(sequence)"),
        "timestamp": .string(JSONValue.iso8601(Date())),
        "location": [],
        "t": .int(Int64(clamping: DispatchTime.now().uptimeNanoseconds)),
    ]
}

/// Nanoseconds since `t` (a stamp of ``messageBody(conversation:author:text:sequence:)``).
func nanosecondsSince(_ stamp: JSONValue?) -> UInt64? {
    guard case .int(let t)? = stamp else { return nil }
    let now = DispatchTime.now().uptimeNanoseconds
    return now >= UInt64(t) ? now - UInt64(t) : 0
}
