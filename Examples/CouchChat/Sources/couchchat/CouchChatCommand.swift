import ArgumentParser
import CouchChat
import CouchChatClient
import Foundation

/// `couchchat`, CouchChat's terminal client: rooms, invitations and messages with pictures.
/// It works offline from its store; queued messages (and their pictures) go with the next
/// command that reaches the server.
@main
struct CouchChatCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "couchchat", abstract: "CouchChat in a terminal.",
        subcommands: [Register.self, Verify.self, Login.self, Accept.self, Rooms.self, Create.self, Leave.self, Send.self, Read.self])
}

/// Where the server and the local store are.
struct Options: ParsableArguments {
    @Option(help: "The server (env COUCHCHAT_SERVER).")
    var server: String = ProcessInfo.processInfo.environment["COUCHCHAT_SERVER"] ?? "http://127.0.0.1:8080"
    @Option(help: "Folder of the local store and credentials (env COUCHCHAT_HOME).")
    var home: String = ProcessInfo.processInfo.environment["COUCHCHAT_HOME"] ?? (NSHomeDirectory() + "/.couchchat")
    @Option(help: "Seconds to wait for the server before working offline.")
    var wait: Int = 5

    /// Runs `body` with a connected session, then sends what was queued (if it can), and tells
    /// the truth about it: `done` (what `body` returns) is printed once the server has taken
    /// every write; a write the server refused is printed with its code and the command exits
    /// 1; writes still queued (offline) are said to be queued.
    func run(_ body: (CouchChatSession) async throws -> String?) async throws {
        guard let url = URL(string: server) else { throw ValidationError("--server is not a URL") }
        let session = try CouchChatSession(server: url, home: home)
        let connection = Task { await session.client.run() }
        defer { connection.cancel() }
        let done = try await body(session)
        if await session.client.waitUntilOnline(timeout: .seconds(wait)) {
            _ = await session.client.waitUntilUploaded(timeout: .seconds(wait * 6))
        }
        let pending = try await session.client.unacknowledgedWrites()
        connection.cancel()
        await connection.value
        let refusals = await session.client.refusedWrites
        guard refusals.isEmpty else {
            for refusal in refusals {
                FileHandle.standardError.write(Data("\(refusal)\n".utf8))
            }
            throw ExitCode(1)
        }
        if pending > 0 {
            print("\(pending) change(s) queued; the next command that reaches the server sends them.")
        } else if let done {
            print(done)
        }
    }
}

struct Register: AsyncParsableCommand {
    @OptionGroup var options: Options
    @Option var email: String
    @Option var password: String

    func run() async throws {
        try await options.run { session in
            try await session.client.register(email: email, password: password)
            guard try await session.client.emailVerified() else {
                return "Registered \(email). A code was mailed to it: enter it with `couchchat verify CODE`; until then nobody can invite you."
            }
            return "Registered \(email)."
        }
    }
}

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify your email with the code mailed to it; --resend mails a new code instead.")
    @OptionGroup var options: Options
    @Argument(help: "The code, like K7QM-4XPA.") var code: String?
    @Flag(help: "Mail a new code.") var resend = false

    func run() async throws {
        guard resend || code != nil else { throw ValidationError("give the code, or --resend") }
        try await options.run { session in
            if resend {
                return try await session.client.sendVerificationCode() ? "A new code is on its way." : "Your email is verified already."
            }
            try await session.client.verifyEmail(code: code ?? "")
            return "Your email is verified."
        }
    }
}

struct Login: AsyncParsableCommand {
    @OptionGroup var options: Options
    @Option var email: String
    @Option var password: String

    func run() async throws {
        try await options.run { session in
            try await session.client.login(email: email, password: password)
            return "Signed in as \(email)."
        }
    }
}

struct Accept: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Let these people (emails), or anyone with --anyone, invite you into rooms.")
    @OptionGroup var options: Options
    @Argument var owners: [String] = []
    @Flag var anyone = false

    func run() async throws {
        try await options.run { session in
            try await session.acceptInvitations(from: owners, fromAnyone: anyone)
            return "Invitations accepted from \(anyone ? "anyone" : owners.joined(separator: ", "))."
        }
    }
}

struct Rooms: AsyncParsableCommand {
    @OptionGroup var options: Options

    func run() async throws {
        try await options.run { session in
            let rooms = try await session.rooms(wait: .seconds(options.wait))
            if rooms.isEmpty { print("No rooms yet.") }
            for room in rooms { print("\(room.title) (\(room.id))") }
            return nil
        }
    }
}

struct Create: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Open a room, inviting people by email.")
    @OptionGroup var options: Options
    @Argument var title: String
    @Argument var invitees: [String] = []

    func run() async throws {
        try await options.run { session in
            let id = try await session.createRoom(title: title, inviting: invitees)
            return "Created \(title) (\(id))."
        }
    }
}

struct Leave: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Leave a room (an owner hands it to another owner or a member).")
    @OptionGroup var options: Options
    @Argument(help: "The room's title or id.") var room: String

    func run() async throws {
        try await options.run { session in
            let found = try await session.room(named: room, wait: .seconds(options.wait))
            try await session.leave(found.id, wait: .seconds(options.wait))
            return "Left \(found.title)."
        }
    }
}

struct Send: AsyncParsableCommand {
    @OptionGroup var options: Options
    @Argument(help: "The room's title or id.") var room: String
    @Argument var markdown: String
    @Option(help: "A picture file to attach (uploaded as a blob).") var photo: String?

    func run() async throws {
        try await options.run { session in
            let found = try await session.room(named: room, wait: .seconds(options.wait))
            try await session.send(markdown, to: found.id, photo: photo.map { URL(fileURLWithPath: $0) })
            return "Sent to \(found.title)."
        }
    }
}

struct Read: AsyncParsableCommand {
    @OptionGroup var options: Options
    @Argument(help: "The room's title or id.") var room: String
    @Option(help: "Save the pictures into this folder, as <message id>.<extension>.") var savePhotos: String?

    func run() async throws {
        try await options.run { session in
            let found = try await session.room(named: room, wait: .seconds(options.wait))
            let chats = try await session.messages(in: found.id, wait: .seconds(options.wait))
            print("\(found.title): \(chats.count) message(s)")
            for chat in chats {
                var line = "\(chat.author): \(chat.markdown)"
                if let photo = chat.photo { line += " (picture \(photo.length) bytes)" }
                print(line)
                if let savePhotos, let data = try await session.photo(of: chat) {
                    try FileManager.default.createDirectory(atPath: savePhotos, withIntermediateDirectories: true)
                    let name = chat._id + (chat.photo?.contentType == "image/png" ? ".png" : ".jpg")
                    try data.write(to: URL(fileURLWithPath: savePhotos).appendingPathComponent(name))
                }
            }
            return nil
        }
    }
}
