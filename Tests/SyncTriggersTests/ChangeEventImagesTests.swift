import Foundation
import PartitionSync
import SyncProtocol
import SyncTesting
import Testing

/// Which fields a trigger's images leave out (``ChangeEvent/Images``), as a pure rule; the event
/// log's read is compared with it in `EventLogTests`.
@Suite("Change event images")
struct ChangeEventImagesTests {
    private let images = ChangeEvent.Images.withoutUnchanged(["members", "settings"])

    private func event(_ operation: ChangeEvent.Operation, changed: [String] = [], removed: [String] = []) -> ChangeEvent {
        let body: [String: JSONValue] = ["members": ["a", "b"], "settings": ["x": 1], "name": "n"]
        return ChangeEvent(
            position: 1, kind: .object, operation: operation, key: key("Group", "g"), partition: partition("room=r1"),
            before: operation == .insert ? nil : body, after: operation == .delete ? nil : body, changedFields: changed,
            removedFields: removed, author: "u", created: Date(timeIntervalSince1970: 0))
    }

    @Test("an update or replace leaves out the named fields it does not touch; a path under a field touches it")
    func leftOut() {
        #expect(images.leftOut(of: event(.update, changed: ["name"])) == ["members", "settings"])
        #expect(images.leftOut(of: event(.replace, changed: ["name"])) == ["members", "settings"])
        #expect(images.leftOut(of: event(.update, changed: ["members"])) == ["settings"])
        #expect(images.leftOut(of: event(.update, changed: ["settings.x"])) == ["members"])
        #expect(images.leftOut(of: event(.update, removed: ["settings"])) == ["members"])
        #expect(images.leftOut(of: event(.update, changed: ["membersCount"])) == ["members", "settings"], "a field only sharing the name's start counted as it")
    }

    @Test("inserts, deletes, imports and the whole images leave out nothing")
    func wholeOtherwise() {
        for operation in [ChangeEvent.Operation.insert, .delete, .import] {
            #expect(images.leftOut(of: event(operation, changed: ["name"])).isEmpty, "\(operation)")
        }
        #expect(ChangeEvent.Images.whole.leftOut(of: event(.update, changed: ["name"])).isEmpty)
    }

    @Test("applied: both images lose the fields left out, and keep every other")
    func applied() {
        let seen = images.applied(to: event(.update, changed: ["members"]))
        #expect(seen.before?.keys.sorted() == ["members", "name"])
        #expect(seen.after?.keys.sorted() == ["members", "name"])
        #expect(seen.changedFields == ["members"] && seen.position == 1)
    }
}
