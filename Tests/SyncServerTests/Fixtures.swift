import Foundation
import NIOCore
import PartitionSync
import SyncProtocol
import SyncStorage
import SyncTesting

@testable import SyncServer

func key(_ collection: String, _ id: String) -> ObjectKey { try! ObjectKey(collection: collection, id: id) }
func partition(_ text: String) -> Partition { try! Partition(text) }

/// A server whose time is `clock`'s, with access tokens living `tokenLifetime` of it.
func onMockTime(_ clock: MockClock, tokenLifetime: Duration) -> @Sendable (inout ServerConfiguration) -> Void {
    { configuration in
        configuration.auth.accessTokenLifetime = tokenLifetime
        configuration.time = clock.time
    }
}

/// A small rule set for the permission tests, shaped like RChat's:
/// - `user=<id>`: its owner only;
/// - `room=<id>`: users whose own `Profile/<userId>` in `user=<userId>` lists the room in `rooms`;
/// - `notice=all`: everyone reads, only the service `notifier` writes;
/// - anything else: denied.
/// Validation: a body may not hold a field `forbidden`.
enum TestRules {
    static var permissions: Permissions {
        var permissions = Permissions()
        permissions.register(OwnerRule(), for: PartitionKind("user"))
        permissions.register(RoomRule(), for: PartitionKind("room"))
        permissions.register(
            ClosureRule(
                read: { principal, _, _ in principal.userID != nil || principal == .service("notifier") },
                write: { principal, _, _ in principal == .service("notifier") }),
            for: PartitionKind("notice"))
        permissions.add(NoForbiddenField())
        return permissions
    }

    struct RoomRule: PermissionRule {
        func canRead(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
            try await isMember(principal, partition, context)
        }

        func canWrite(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
            try await isMember(principal, partition, context)
        }

        func inputs(of principal: Principal, for partition: Partition) -> [Partition] {
            principal.userID.map { [try! Partition(key: "user", value: $0)] } ?? []
        }

        private func isMember(_ principal: Principal, _ partition: Partition, _ context: PermissionContext) async throws -> Bool {
            guard let userID = principal.userID else { return false }
            let profile = try await context.object(try ObjectKey(collection: "Profile", id: userID))
            return profile?.body?["rooms"]?.arrayValue?.contains(.string(partition.value)) ?? false
        }
    }

    struct NoForbiddenField: WriteValidator {
        func validate(_ change: ObjectChange, in partition: Partition, by principal: Principal, context: ValidationContext) async throws {
            if change.after.body?["forbidden"] != nil {
                throw SyncError(.validationFailed, "the field 'forbidden' is not allowed")
            }
        }
    }
}


/// The database every test position belongs to.
let testEpoch = UUID(uuidString: "00000000-0000-0000-0000-00000000e0c1")!

/// A position at `version` (complete, or up to and including the object `after`) of ``testEpoch``,
/// written on `timeline`.
func position(_ version: Int64, timeline: Int32 = 0, after: ObjectKey? = nil) -> CursorPosition {
    CursorPosition(epoch: testEpoch, version: version, timeline: timeline, after: after)
}

/// A page of `bytes` bytes for a session's outbox, ending at `version`.
func outboxPage(_ partition: Partition, generation: Int, version: Int64, bytes: Int = 10) -> SessionOutbox.Page {
    SessionOutbox.Page(
        partition: partition, generation: generation, end: position(version), bytes: ByteBuffer(repeating: UInt8(ascii: "x"), count: bytes))
}
