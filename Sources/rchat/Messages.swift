import ArgumentParser
import Foundation
import RChatModel
import SyncClient
import SyncProtocol

struct Send: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Send a message to a room (queued when offline).")
    @OptionGroup var options: Options
    @Argument(help: "The room's name or id.") var room: String
    @Argument var text: String = ""
    @Option(help: "An image file to attach.") var photo: String?
    @Option(help: "LAT,LON to attach.") var location: String?

    func run() async throws {
        let session = try Session.start(options)
        let (_, user) = try await session.me()
        let conversation = try session.conversation(room, of: user)
        var message = ChatMessage(conversationID: conversation.id, author: user.userName, text: text)
        if let photo {
            // The picture travels as a blob, uploaded before the message (also when queued offline).
            let file = URL(fileURLWithPath: photo)
            let picture = try await session.client.attach(contentsOf: file, contentType: Self.mediaType(of: file))
            message.image = Photo(picture: picture)
        }
        if let location {
            let parts = location.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count == 2 else { throw ValidationError("--location is LAT,LON") }
            message.location = parts
        }
        guard var body = try JSONValue(encoding: message).objectValue else { return }
        body["_id"] = nil
        body["partition"] = nil
        try await session.client.write(
            [.put(try ObjectKey(collection: ChatMessage.collection, id: message._id), body: body)],
            in: RChatPartitions.conversation(conversation.id))
        if try await session.finish() { print("Sent to \(conversation.displayName).") }
    }

    /// The media type of an image file, by its extension.
    static func mediaType(of file: URL) -> String {
        switch file.pathExtension.lowercased() {
        case "jpg", "jpeg": "image/jpeg"
        case "png": "image/png"
        case "gif": "image/gif"
        case "heic": "image/heic"
        case "webp": "image/webp"
        default: "application/octet-stream"
        }
    }
}

struct Read: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a room's messages and mark them read.")
    @OptionGroup var options: Options
    @Argument(help: "The room's name or id.") var room: String
    @Option(help: "Save the messages' photos into this folder (as <message id>.<extension>).") var savePhotos: String?

    func run() async throws {
        let session = try Session.start(options)
        let (id, user) = try await session.me()
        let conversation = try session.conversation(room, of: user)
        let partition = RChatPartitions.conversation(conversation.id)
        try await session.sync([partition])
        let messages = try await session.client.objects(in: partition).decoded(ChatMessage.self).sorted { $0.timestamp < $1.timestamp }
        print("\(conversation.displayName): \(messages.count) message(s)")
        for message in messages { print(Self.line(for: message)) }
        if let savePhotos {
            try FileManager.default.createDirectory(atPath: savePhotos, withIntermediateDirectories: true)
            for message in messages {
                guard let picture = message.image?.picture else { continue }
                let data = try await session.client.blob(picture, in: partition)
                let name = "\(message._id).\(Self.fileExtension(of: picture.contentType))"
                try data.write(to: URL(fileURLWithPath: savePhotos).appendingPathComponent(name))
                print("saved \(name) (\(data.count) bytes)")
            }
        }
        if conversation.unreadCount != 0 {
            try await session.client.write(
                [.set(try ObjectKey(collection: User.collection, id: id), path: try Path.field("conversations").element(where: "id", is: conversation.id).field("unreadCount"), value: 0)],
                in: RChatPartitions.user(id))
        }
        try await session.finish()
    }

    static func fileExtension(of mediaType: String) -> String {
        switch mediaType {
        case "image/jpeg": "jpg"
        case "image/png": "png"
        case "image/gif": "gif"
        case "image/heic": "heic"
        case "image/webp": "webp"
        default: "bin"
        }
    }

    /// `[10:00:00] alice@example.com: hello (photo 12 kB) (at 48.85,2.35)`
    /// A size as a person reads it: bytes under a kilobyte, kilobytes above.
    static func size(_ bytes: Int64) -> String {
        bytes < 1024 ? "\(bytes) B" : "\(bytes / 1024) kB"
    }

    static func line(for message: ChatMessage) -> String {
        var line = "[\(Session.time(message.timestamp))] \(message.author ?? "?"): \(message.text)"
        if let image = message.image { line += " (photo \(Self.size(image.picture?.length ?? 0)))" }
        if message.location.count == 2 { line += " (at \(message.location[0]),\(message.location[1]))" }
        return line
    }
}

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "A live view: new messages, unread counts and presence as they change (Ctrl-C to stop).")
    @OptionGroup var options: Options
    @Argument(help: "A room to show the messages of.") var room: String?
    @Option(help: "Stop after this many seconds.") var seconds: Int?

    func run() async throws {
        let session = try Session.start(options, present: true)
        let (id, user) = try await session.me()
        var partitions = [RChatPartitions.user(id), RChatPartitions.allUsers]
        if let room { partitions.append(RChatPartitions.conversation(try session.conversation(room, of: user).id)) }
        try await session.sync(partitions)
        print("Watching as \(user.userName)…")
        let stop = seconds.map { ContinuousClock.now + .seconds($0) }
        await withTaskGroup(of: Void.self) { group in
            for partition in partitions {
                group.addTask { await Self.follow(partition, me: user.userName, session: session) }
            }
            group.addTask { await Self.followConnection(session) }
            if let stop {
                group.addTask { try? await Task.sleep(until: stop) }
                await group.next()
                group.cancelAll()
            }
        }
        try await session.finish()
    }

    /// Says when the connection drops and when it is back: meanwhile the view shows what is
    /// stored here, and writes are queued.
    static func followConnection(_ session: Session) async {
        var wasOnline = true
        for await event in await session.client.events() {
            if Task.isCancelled { break }
            guard case .status(let status) = event else { continue }
            if wasOnline, status == .offline {
                print("Connection lost: showing what is stored here; trying again…")
                wasOnline = false
            } else if !wasOnline, status == .online {
                print("Connected again.")
                wasOnline = true
            }
            fflush(nil)
        }
    }

    /// Prints what changes in one partition, compared with what was there before.
    static func follow(_ partition: Partition, me: String, session: Session) async {
        var known: [ObjectKey: [String: JSONValue]] = [:]
        var first = true
        for await snapshot in await session.client.updates(of: partition) {
            if Task.isCancelled { break }
            let current = Dictionary(uniqueKeysWithValues: snapshot.objects.compactMap { object in object.body.map { (object.key, $0) } })
            defer {
                known = current
                first = false
            }
            switch partition.key {
            case "conversation":
                let new = current.filter { known[$0.key] == nil }.values
                    .compactMap { try? JSONValue.object($0).decode(ChatMessage.self) }.sorted { $0.timestamp < $1.timestamp }
                for message in new where !first { print(Read.line(for: message)) }
            case "user":
                guard let body = current.values.first, let user = try? JSONValue.object(body).decode(User.self) else { continue }
                let before = known.values.first.flatMap { try? JSONValue.object($0).decode(User.self) }
                for conversation in user.conversations {
                    let old = before?.conversations.first { $0.id == conversation.id }
                    if first || old?.unreadCount != conversation.unreadCount {
                        print("\(conversation.displayName): \(conversation.unreadCount) unread")
                    }
                }
            default:
                for (key, body) in current {
                    guard let chatster = try? JSONValue.object(body).decode(Chatster.self), chatster.userName != me else { continue }
                    let old = known[key].flatMap { try? JSONValue.object($0).decode(Chatster.self) }
                    if !first, old?.presence != chatster.presence {
                        print("\(chatster.userName ?? key.id) is \(chatster.presence.rawValue)")
                    }
                }
            }
            fflush(nil)  // every stream: a watched terminal or pipe sees each change at once
        }
    }
}
