/// A message the server sends over the WebSocket (docs/PROTOCOL.md, "WebSocket").
public enum ServerMessage: Sendable, Hashable {
    /// The session is authenticated.
    case ready(userId: String)
    /// A batch of object states of a subscribed partition.
    case changes(ChangeBatch)
    /// An upload committed; its effects are visible at `cursor`, at partition `version` (an
    /// addition to the contract: a client keeps its optimistic copy of the upload until a
    /// batch with at least this version).
    case ack(requestId: String, partition: Partition, cursor: Cursor, version: Int64?)
    /// An upload was refused and nothing of it applied; `objects` holds the current server
    /// state (or tombstones) of every object it touched, so the client can revert its copy.
    case rejected(requestId: String, partition: Partition, error: SyncError, objects: [SyncObject])
    /// A request failed; for a subscribe, the subscription does not exist.
    case error(SyncError, partition: Partition?)
    /// The server ended a subscription.
    case unsubscribed(partition: Partition, code: SyncError.Code)
    /// The answer to a ping.
    case pong(nonce: JSONValue)

    /// The wire form.
    public var json: JSONValue {
        switch self {
        case .ready(let userId):
            return ["type": "ready", "userId": .string(userId)]
        case .changes(let batch):
            var fields = batch.json.objectValue ?? [:]
            fields["type"] = "changes"
            return .object(fields)
        case .ack(let requestId, let partition, let cursor, let version):
            var fields: [String: JSONValue] = [
                "type": "ack", "requestId": .string(requestId), "partition": .string(partition.description),
                "cursor": .string(cursor.rawValue),
            ]
            if let version { fields["version"] = .int(version) }
            return .object(fields)
        case .rejected(let requestId, let partition, let error, let objects):
            var fields: [String: JSONValue] = [
                "type": "rejected", "requestId": .string(requestId), "partition": .string(partition.description),
                "code": .string(error.code.rawValue), "message": .string(error.message), "objects": .array(objects.map(\.json)),
            ]
            if let details = error.details { fields["details"] = details }
            return .object(fields)
        case .error(let error, let partition):
            var fields: [String: JSONValue] = ["type": "error", "code": .string(error.code.rawValue), "message": .string(error.message)]
            if let partition { fields["partition"] = .string(partition.description) }
            return .object(fields)
        case .unsubscribed(let partition, let code):
            return ["type": "unsubscribed", "partition": .string(partition.description), "code": .string(code.rawValue)]
        case .pong(let nonce):
            return ["type": "pong", "nonce": nonce]
        }
    }

    /// Decodes the wire form (for clients).
    public init(json: JSONValue) throws(SyncError) {
        guard let type = json["type"]?.stringValue else {
            throw SyncError(.badRequest, "a message has a string field 'type'")
        }
        func string(_ name: String) throws(SyncError) -> String {
            guard let value = json[name]?.stringValue else {
                throw SyncError(.badRequest, "'\(type)' needs a string '\(name)'")
            }
            return value
        }
        func objects() throws(SyncError) -> [SyncObject] {
            var result: [SyncObject] = []
            for item in json["objects"]?.arrayValue ?? [] { result.append(try SyncObject(json: item)) }
            return result
        }
        switch type {
        case "ready":
            self = .ready(userId: try string("userId"))
        case "changes":
            self = .changes(try ChangeBatch(json: json))
        case "ack":
            self = .ack(
                requestId: try string("requestId"), partition: try Partition(try string("partition")),
                cursor: Cursor(rawValue: try string("cursor")), version: json["version"]?.intValue)
        case "rejected":
            self = .rejected(
                requestId: try string("requestId"), partition: try Partition(try string("partition")),
                error: SyncError(SyncError.Code(try string("code")), try string("message"), details: json["details"]),
                objects: try objects())
        case "error":
            let partition = try json["partition"]?.stringValue.map { text throws(SyncError) in try Partition(text) }
            self = .error(SyncError(SyncError.Code(try string("code")), try string("message")), partition: partition)
        case "unsubscribed":
            self = .unsubscribed(partition: try Partition(try string("partition")), code: SyncError.Code(try string("code")))
        case "pong":
            self = .pong(nonce: json["nonce"] ?? .null)
        default:
            throw SyncError(.unsupportedProtocol, "unknown message type \(Partition.quoted(type))")
        }
    }
}
