import Foundation
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

/// An RChat data set as Atlas Device Sync held it (the committed mongodump of
/// scripts/generate_rchat_export.py) imported by a real `psync import` process into a fresh
/// database, served by a real `psync serve`: each user sets a password with their token and
/// `rchat` shows their rooms with the exported unread counts, each room's messages, and the
/// photos byte for byte.
@Suite("rchat on an imported RChat", .timeLimit(.minutes(20)))
struct ImportedRChatTests {
    static let export = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("SyncImportTests/Fixtures/rchat").path

    /// The JSON documents of a relaxed mongoexport file.
    static func documents(_ collection: String) throws -> [[String: Any]] {
        let text = try String(contentsOfFile: "\(export)/mongoexport-relaxed/\(collection).json", encoding: .utf8)
        return try text.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
    }

    /// Runs `psync` with `arguments` to its end; its status and output.
    static func psync(_ arguments: [String]) async throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: BuiltExecutable.path("psync"))
        process.arguments = arguments
        let log = TestScratch.file("psync-import", suffix: ".log")
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        let deadline = ContinuousClock.now + .seconds(120)
        while process.isRunning {
            guard ContinuousClock.now < deadline else { throw TestTimeout(what: "psync \(arguments.first ?? "") to exit") }
            try await Task.sleep(for: .milliseconds(20))
        }
        return (process.terminationStatus, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
    }

    @Test("rooms with their unread counts, messages and photos as exported")
    func roomsMessagesPhotos() async throws {
        let root = NSTemporaryDirectory() + "rchat-import-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        try await TestDatabase.with(exclusive: true) { db in
            let tokensFile = root + "/tokens.tsv"
            let (status, output) = try await Self.psync([
                "import", "--database-url", db.url.urlString, "--users", "\(Self.export)/users.json", "--tokens-file", tokensFile,
                "\(Self.export)/mongodump",
            ])
            #expect(status == 0, "\(output)")
            #expect(output.contains("Import: 12 read, 12 imported"), "\(output)")
            var tokens: [String: String] = [:]
            for line in try String(contentsOfFile: tokensFile, encoding: .utf8).split(separator: "\n") {
                let fields = line.split(separator: "\t").map(String.init)
                tokens[fields[0]] = fields[2]
            }

            let server = try ServerProcess(database: db.url)
            try await server.start()
            do {
                let messages = try Self.documents("ChatMessage")
                for user in try Self.documents("User") {
                    let id = user["_id"] as! String
                    let email = user["userName"] as! String
                    let set = try await server.http.post("/v1/auth/password", ["token": .string(tokens[id] ?? ""), "password": "imported password 1"])
                    #expect(set.status == 200, "\(set.text)")
                    let cli = RChatCLI(email: email, server: server.baseURL, root: root)
                    #expect(try await cli.ok(["login", "--email", email, "--password", "imported password 1"]).contains("Signed in"))

                    let conversations = user["conversations"] as! [[String: Any]]
                    let rooms = try await cli.ok(["rooms"])
                    for conversation in conversations {
                        let line = "\(conversation["displayName"] as! String) (\(conversation["id"] as! String)) unread \(conversation["unreadCount"] as! Int)"
                        #expect(rooms.contains(line), "\(email): \(line) in\n\(rooms)")
                    }
                    guard let room = conversations.first else { continue }
                    let roomID = room["id"] as! String
                    let inRoom = messages.filter { $0["partition"] as? String == "conversation=\(roomID)" }
                    let photos = root + "/photos-\(id)"
                    // The membership trigger admits the members of imported rooms shortly after the server starts.
                    let read = try await cli.eventually(["read", roomID, "--save-photos", photos], contains: "\(inRoom.count) message(s)")
                    for message in inRoom {
                        #expect(read.contains("\(message["author"] as! String): \(message["text"] as! String)"), "\(message["_id"]!)")
                        guard let image = message["image"] as? [String: Any], let picture = image["picture"] as? [String: Any],
                            let binary = picture["$binary"] as? [String: Any], let base64 = binary["base64"] as? String
                        else { continue }
                        let saved = try Data(contentsOf: URL(fileURLWithPath: "\(photos)/\(message["_id"] as! String).jpg"))
                        #expect(saved == Data(base64Encoded: base64), "the photo of \(message["_id"]!)")
                    }
                }
            } catch {
                await server.stop()
                throw error
            }
            await server.stop()
        }
    }
}
