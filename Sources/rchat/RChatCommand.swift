import ArgumentParser

/// `rchat`: chat from a terminal, on a PartitionSync server serving RChat.
@main
struct RChatCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rchat",
        abstract: "Chat from the terminal (RChat on PartitionSync). Works offline: writes are queued and sent later.",
        subcommands: [Register.self, Verify.self, Login.self, Logout.self, Rooms.self, Create.self, Send.self, Read.self, Watch.self, Profile.self]
    )
}
