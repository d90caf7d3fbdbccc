import Foundation
import SyncProtocol

/// A user's presence, as the article spells it.
public enum Presence: String, Codable, Sendable, Hashable {
    case onLine = "On-Line"
    case offLine = "Off-Line"
    case hidden = "Hidden"
}

/// A member's place in a conversation.
public enum MembershipStatus: String, Codable, Sendable, Hashable {
    case pending = "User added, but invite pending"
    case active = "Membership active"
}

/// An image with its thumbnail (embedded in User preferences and chat messages): the
/// thumbnail small and inline, the picture a blob (docs/PROTOCOL.md, "Blobs"), fetched with
/// `SyncClient.blob(_:)` when shown.
public struct Photo: Codable, Sendable, Hashable {
    public var _id: String
    public var thumbNail: Data?
    public var picture: BlobReference?
    public var date: Date

    public init(_id: String = UUID().uuidString, thumbNail: Data? = nil, picture: BlobReference? = nil, date: Date = Date()) {
        self._id = _id
        self.thumbNail = thumbNail
        self.picture = picture
        self.date = date
    }
}

/// Embedded in User.
public struct UserPreferences: Codable, Sendable, Hashable {
    public var displayName: String?
    public var avatarImage: Photo?

    public init(displayName: String? = nil, avatarImage: Photo? = nil) {
        self.displayName = displayName
        self.avatarImage = avatarImage
    }
}

/// A member of a conversation, by user name (the email they registered with).
public struct Member: Codable, Sendable, Hashable {
    public var userName: String
    public var membershipStatus: MembershipStatus

    public init(userName: String, membershipStatus: MembershipStatus = .pending) {
        self.userName = userName
        self.membershipStatus = membershipStatus
    }
}

/// A conversation as each member's User record holds it; only `unreadCount` differs between
/// the copies.
public struct Conversation: Codable, Sendable, Hashable {
    public var id: String
    public var displayName: String
    public var unreadCount: Int
    public var members: [Member]

    public init(id: String = UUID().uuidString, displayName: String, unreadCount: Int = 0, members: [Member]) {
        self.id = id
        self.displayName = displayName
        self.unreadCount = unreadCount
        self.members = members
    }
}

/// A user's own record, in `user=<userId>`: readable and writable by that user only.
public struct User: SyncModel, Hashable {
    public static let collection = "User"

    public var _id: String
    public var partition: String
    public var userName: String
    public var userPreferences: UserPreferences?
    public var lastSeenAt: Date?
    public var conversations: [Conversation]
    public var presence: Presence

    public init(
        _id: String, userName: String, userPreferences: UserPreferences? = nil, lastSeenAt: Date? = nil,
        conversations: [Conversation] = [], presence: Presence = .offLine
    ) {
        self._id = _id
        self.partition = RChatPartitions.user(_id).description
        self.userName = userName
        self.userPreferences = userPreferences
        self.lastSeenAt = lastSeenAt
        self.conversations = conversations
        self.presence = presence
    }
}

/// The public part of a user, in `all-users=all-the-users`, kept equal to the User record by a
/// trigger; readable by everyone, written by the server only.
public struct Chatster: SyncModel, Hashable {
    public static let collection = "Chatster"

    public var _id: String
    public var partition: String
    public var userName: String?
    public var displayName: String?
    public var avatarImage: Photo?
    public var lastSeenAt: Date?
    public var presence: Presence
}

/// A message, in `conversation=<conversationId>`.
public struct ChatMessage: SyncModel, Hashable {
    public static let collection = "ChatMessage"

    public var _id: String
    public var partition: String
    public var author: String?
    public var text: String
    public var image: Photo?
    public var location: [Double]
    public var timestamp: Date

    public init(
        _id: String = UUID().uuidString, conversationID: String, author: String, text: String, image: Photo? = nil,
        location: [Double] = [], timestamp: Date = Date()
    ) {
        self._id = _id
        self.partition = RChatPartitions.conversation(conversationID).description
        self.author = author
        self.text = text
        self.image = image
        self.location = location
        self.timestamp = timestamp
    }
}

extension Chatster {
    /// The Chatster of a user: the public part of their User record, which a trigger keeps
    /// equal to it.
    public init(mirroring user: User) {
        self.init(
            _id: user._id, partition: RChatPartitions.allUsers.description, userName: user.userName,
            displayName: user.userPreferences?.displayName, avatarImage: user.userPreferences?.avatarImage,
            lastSeenAt: user.lastSeenAt, presence: user.presence)
    }
}
