/// A message a client sends over the WebSocket (docs/PROTOCOL.md, "WebSocket").
public enum ClientMessage: Sendable, Hashable {
    /// Authenticate (as the first message) or refresh the session's token.
    case auth(token: String)
    /// Start receiving a partition from a cursor; `nil` asks for a full snapshot.
    /// `progress`: the first page of a catch-up that more pages follow says how many objects
    /// the whole catch-up holds (`total`, see ``ChangeBatch/total``).
    case subscribe(partition: Partition, cursor: Cursor?, progress: Bool = false)
    /// Stop receiving a partition.
    case unsubscribe(partition: Partition)
    /// Apply operations to a partition.
    case upload(requestId: String, partition: Partition, operations: [SyncOperation])
    /// Keepalive, answered by `pong` with the same nonce.
    case ping(nonce: JSONValue)

    /// Decodes a message, throwing `bad_request` (or the code of the part at fault, such as
    /// `invalid_partition`) for anything malformed.
    public init(json: JSONValue) throws(SyncError) {
        guard let fields = json.objectValue else {
            throw SyncError(.badRequest, "a message is a JSON object")
        }
        guard let type = fields["type"]?.stringValue else {
            throw SyncError(.badRequest, "a message has a string field 'type'")
        }
        func string(_ name: String) throws(SyncError) -> String {
            guard let value = fields[name]?.stringValue else {
                throw SyncError(.badRequest, "'\(type)' needs a string '\(name)'")
            }
            return value
        }
        switch type {
        case "auth":
            self = .auth(token: try string("token"))
        case "subscribe":
            let cursor: Cursor?
            switch fields["cursor"] {
            case nil, .null?: cursor = nil
            case .string(let text)?: cursor = Cursor(rawValue: text)
            default: throw SyncError(.badRequest, "'subscribe' has a string or null 'cursor'")
            }
            let progress: Bool
            switch fields["progress"] {
            case nil, .null?: progress = false
            case .bool(let value)?: progress = value
            default: throw SyncError(.badRequest, "'subscribe' has a boolean 'progress'")
            }
            self = .subscribe(partition: try Partition(try string("partition")), cursor: cursor, progress: progress)
        case "unsubscribe":
            self = .unsubscribe(partition: try Partition(try string("partition")))
        case "upload":
            let requestId = try string("requestId")
            let partition = try Partition(try string("partition"))
            guard let list = fields["operations"]?.arrayValue else {
                throw SyncError(.badRequest, "'upload' needs an array 'operations'")
            }
            var operations: [SyncOperation] = []
            operations.reserveCapacity(list.count)
            for item in list { operations.append(try SyncOperation(json: item)) }
            self = .upload(requestId: requestId, partition: partition, operations: operations)
        case "ping":
            self = .ping(nonce: fields["nonce"] ?? .null)
        default:
            throw SyncError(.unsupportedProtocol, "unknown message type \(Partition.quoted(type))")
        }
    }

    /// The wire form.
    public var json: JSONValue {
        switch self {
        case .auth(let token):
            return ["type": "auth", "token": .string(token)]
        case .subscribe(let partition, let cursor, let progress):
            var fields: [String: JSONValue] = ["type": "subscribe", "partition": .string(partition.description), "cursor": cursor.map { .string($0.rawValue) } ?? .null]
            if progress { fields["progress"] = .bool(true) }
            return .object(fields)
        case .unsubscribe(let partition):
            return ["type": "unsubscribe", "partition": .string(partition.description)]
        case .upload(let requestId, let partition, let operations):
            return [
                "type": "upload", "requestId": .string(requestId), "partition": .string(partition.description),
                "operations": .array(operations.map(\.json)),
            ]
        case .ping(let nonce):
            return ["type": "ping", "nonce": nonce]
        }
    }
}

extension ClientMessage {
    /// The request id and partition of an upload message whose decoding failed, so that it is
    /// answered `rejected` with its request id (a final refusal a pipelining client can match)
    /// rather than with a bare `error`. `nil` when the message is not an upload, or its
    /// `requestId` or `partition` is itself unreadable (then only `error` can answer it).
    public static func uploadEnvelope(of json: JSONValue) -> (requestId: String, partition: Partition)? {
        guard json["type"] == "upload", let requestId = json["requestId"]?.stringValue,
            let text = json["partition"]?.stringValue, let partition = try? Partition(text)
        else { return nil }
        return (requestId, partition)
    }
}
