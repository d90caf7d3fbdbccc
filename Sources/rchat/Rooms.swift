import ArgumentParser
import Foundation
import RChatModel
import SyncClient
import SyncProtocol

struct Rooms: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Your conversations, their unread counts and their members' presence.")
    @OptionGroup var options: Options

    func run() async throws {
        let session = try Session.start(options)
        try await session.sync([RChatPartitions.allUsers])
        let (_, user) = try await session.me()
        let chatsters = try await session.client.objects(in: RChatPartitions.allUsers).decoded(Chatster.self)
        if user.conversations.isEmpty { print("No rooms yet: `rchat create <name> <member-email>…`.") }
        for conversation in user.conversations {
            print(Self.line(for: conversation, me: user.userName, chatsters: chatsters))
        }
        try await session.finish()
    }

    /// `Team (c-…) unread 2 — Bob B. <bob@example.com> On-Line, carol@example.com Off-Line (pending)`
    static func line(for conversation: Conversation, me: String, chatsters: [Chatster]) -> String {
        let members = conversation.members.filter { $0.userName != me }.map { member -> String in
            let chatster = chatsters.first { $0.userName == member.userName }
            let displayName = chatster?.displayName ?? ""
            let name = displayName.isEmpty || displayName == member.userName ? member.userName : "\(displayName) <\(member.userName)>"
            let presence = chatster?.presence.rawValue ?? "unknown"
            let status = member.membershipStatus == .pending ? " (pending)" : ""
            return "\(name) \(presence)\(status)"
        }
        return "\(conversation.displayName) (\(conversation.id)) unread \(conversation.unreadCount) — \(members.joined(separator: ", "))"
    }
}

struct Create: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create a room with other users (by email).")
    @OptionGroup var options: Options
    @Argument var name: String
    @Argument var members: [String]

    func run() async throws {
        let session = try Session.start(options)
        let (id, user) = try await session.me()
        let conversation = Conversation(
            id: "c-" + UUID().uuidString.prefix(8).lowercased(), displayName: name,
            members: [Member(userName: user.userName, membershipStatus: .active)] + members.map { Member(userName: $0) })
        try await session.client.write(
            [.arrayAppend(try ObjectKey(collection: User.collection, id: id), path: try Path(parsing: "conversations"), value: try JSONValue(encoding: conversation))],
            in: RChatPartitions.user(id))
        try await session.finish()
        print("Created \(name) (\(conversation.id)).")
    }
}

struct Profile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Change your profile.")
    @OptionGroup var options: Options
    @Option(name: .customLong("display-name")) var displayName: String?
    @Option(help: "On-Line, Off-Line or Hidden.") var presence: String?

    func run() async throws {
        let session = try Session.start(options)
        let (id, _) = try await session.me()
        let key = try ObjectKey(collection: User.collection, id: id)
        var operations: [SyncOperation] = []
        if let displayName { operations.append(.set(key, path: try Path(parsing: "userPreferences.displayName"), value: .string(displayName))) }
        if let presence {
            guard Presence(rawValue: presence) != nil else { throw ValidationError("presence is On-Line, Off-Line or Hidden") }
            operations.append(.set(key, path: try Path(parsing: "presence"), value: .string(presence)))
        }
        guard !operations.isEmpty else { throw ValidationError("nothing to change: give --display-name or --presence") }
        try await session.client.write(operations, in: RChatPartitions.user(id))
        try await session.finish()
        print("Profile updated.")
    }
}

extension [SyncObject] {
    func decoded<T: Decodable>(_ type: T.Type) -> [T] {
        compactMap { object in object.body.flatMap { try? JSONValue.object($0).decode(T.self) } }
    }
}
