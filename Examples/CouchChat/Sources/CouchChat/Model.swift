import Foundation
import PartitionSync

/// A user's profile, in `profiles=all`: every user reads every profile (to invite from); only
/// its owner writes it. Its id comes from the account's email, as in the Sync Gateway
/// demo: `profile:<email, lowercased>`.
///
/// Who may invite the user into a room is the profile's to say: anyone
/// (`acceptsAnyInvitation`), or the owners it lists (`acceptsInvitationsFrom`, emails).
public struct Profile: SyncModel, Hashable {
    public static let collection = "profile"

    public var _id: String
    public var type: String = "profile"
    public var email: String
    public var nick: String?
    public var acceptsAnyInvitation: Bool?
    public var acceptsInvitationsFrom: [String]?

    public init(email: String, nick: String? = nil, acceptsAnyInvitation: Bool? = nil, acceptsInvitationsFrom: [String]? = nil) {
        self._id = Profile.id(of: email)
        self.email = email
        self.nick = nick
        self.acceptsAnyInvitation = acceptsAnyInvitation
        self.acceptsInvitationsFrom = acceptsInvitationsFrom
    }

    /// The id of the profile of the account with this email.
    public static func id(of email: String) -> String { "profile:" + email.lowercased() }

    /// Whether an invitation from `owner` (an email) is welcome.
    public func accepts(invitationFrom owner: String) -> Bool {
        acceptsAnyInvitation == true || (acceptsInvitationsFrom ?? []).contains { $0.lowercased() == owner.lowercased() }
    }
}

/// A chat room, in `room=<id>`: its id is its `channel_id` and its partition's value. Its owners
/// and members (emails) read and write the room; owners list invitees in `pendingMembers`, and
/// the friend bot moves each into `members` if their profile accepts the owner, or into
/// `declinedInvitations` with the reason.
public struct Room: SyncModel, Hashable {
    public static let collection = "room"

    public var _id: String
    public var type: String = "room"
    public var channel_id: String
    public var title: String
    public var owners: [String]
    public var members: [String]?
    public var pendingMembers: [String]?
    public var declinedInvitations: [DeclinedInvitation]?

    public init(id: String, title: String, owner: String, pendingMembers: [String]? = nil) {
        self._id = id
        self.channel_id = id
        self.title = title
        self.owners = [owner]
        self.pendingMembers = pendingMembers
    }

    /// Whether `email` is an owner or a member: who may read and write the room.
    public func admits(_ email: String) -> Bool {
        owners.contains(email) || (members ?? []).contains(email)
    }

    /// Everyone the room admits.
    public var everyone: Set<String> { Set(owners + (members ?? [])) }
}

/// An invitation the friend bot did not carry out, and why.
public struct DeclinedInvitation: Codable, Sendable, Hashable {
    public var email: String
    public var reason: String

    public init(email: String, reason: String) {
        self.email = email
        self.reason = reason
    }
}

/// A chat message, in its room's partition: `channel_id` names the room, `author` is the
/// writer's email.
public struct Chat: SyncModel, Hashable {
    public static let collection = "chat"

    public var _id: String
    public var type: String = "chat"
    public var channel_id: String
    public var author: String
    public var created_at: Date
    public var markdown: String
    /// A picture, as a blob (the seed's attachment): uploaded first with `PUT /v1/blobs/{digest}`
    /// (`SyncClient.attach(_:contentType:)`), readable by the room's members.
    public var photo: BlobReference?

    public init(
        id: String = UUID().uuidString, room: String, author: String, markdown: String, photo: BlobReference? = nil,
        createdAt: Date = Date()
    ) {
        self._id = id
        self.channel_id = room
        self.author = author
        self.created_at = createdAt
        self.markdown = markdown
        self.photo = photo
    }
}

/// The rooms a user is in, in `user=<userId>`, kept by the server: what a client opens first
/// to know which room partitions to open.
public struct RoomList: SyncModel, Hashable {
    public static let collection = "room_list"

    public var _id: String
    public var type: String = "room_list"
    public var rooms: [Entry]

    public struct Entry: Codable, Sendable, Hashable {
        public var id: String
        public var title: String
    }

    public init(userID: String, rooms: [Entry] = []) {
        self._id = userID
        self.rooms = rooms
    }
}

/// CouchChat's kinds of partition.
extension PartitionKind {
    /// `profiles=all`: every profile.
    public static let profiles = PartitionKind("profiles")
    /// `room=<roomId>`: a room and its chat messages.
    public static let room = PartitionKind("room")
    /// `user=<userId>`: the user's room list.
    public static let user = PartitionKind("user")
}

/// CouchChat's partitions.
public enum CouchChatPartitions {
    /// `profiles=all`: every profile.
    public static let profiles = try! PartitionKind.profiles("all")

    /// `room=<roomId>`: a room and its chat messages.
    public static func room(_ id: String) throws -> Partition { try PartitionKind.room(id) }

    /// `user=<userId>`: the user's room list.
    public static func user(_ userID: String) throws -> Partition { try PartitionKind.user(userID) }
}
