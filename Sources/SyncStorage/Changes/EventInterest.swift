import PartitionSync

/// Which change events a store records: every event, or only those something will read.
///
/// Events are an outbox for triggers. A change no trigger handles would be written (with the
/// document before and after), numbered and passed over for nothing, and on a write path that
/// is most of its cost: RChat's unread counts change M User records per message, and no
/// trigger reads those changes. A server therefore records only the events its triggers match
/// (``ObjectStore/recordEvents(_:)``, set by the trigger service), and everything while another
/// instance runs a trigger this one does not know.
package struct EventInterest: Sendable {
    private enum Choice: Sendable {
        case all
        case none
        case matching(@Sendable (ChangeEvent) -> Bool)
    }

    private let choice: Choice

    /// Every event is recorded (the default of a store).
    package static let all = EventInterest(choice: .all)

    /// No event is recorded, and none is even made (an import whose objects no trigger
    /// handles made an event of each, its changed fields compared, to drop it).
    package static let none = EventInterest(choice: .none)

    /// Only the events `test` accepts are recorded. It sees the event as a trigger would, with
    /// position 0, inside the writing transaction: it must be quick and must not block.
    package static func matching(_ test: @escaping @Sendable (ChangeEvent) -> Bool) -> EventInterest {
        EventInterest(choice: .matching(test))
    }

    /// Whether `event` is recorded.
    package func wants(_ event: ChangeEvent) -> Bool {
        switch choice {
        case .all: true
        case .none: false
        case .matching(let test): test(event)
        }
    }

    /// Whether every event is recorded without asking.
    package var recordsAll: Bool {
        if case .all = choice { return true }
        return false
    }

    /// Whether no event is recorded (``none``).
    package var recordsNothing: Bool {
        if case .none = choice { return true }
        return false
    }
}
