import SyncProtocol

/// Whether a WebSocket session makes its user present (docs/PROTOCOL.md, "Presence"): the
/// `presence` query parameter of `/v1/sync`, `on` (the default) or `off` for a client that
/// connects for one command and is gone again, so that its user does not flap between
/// present and absent.
enum SessionPresence: Equatable {
    case counted
    case notCounted

    init(query value: String?) throws(SyncError) {
        switch value {
        case nil, "on": self = .counted
        case "off": self = .notCounted
        default: throw SyncError(.badRequest, "presence is on or off")
        }
    }
}
