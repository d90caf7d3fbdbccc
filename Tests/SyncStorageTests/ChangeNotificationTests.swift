import Foundation
import SyncProtocol
import SyncStorage
import Testing

/// The payloads on the change channel: the text of each kind is fixed (instances of an older
/// version may share the database), and anything else is refused, not misread.
@Suite("Change notifications")
struct ChangeNotificationTests {
    static let cases: [(ChangeNotification, String)] = [
        (.committed(try! Partition("conversation=c-1"), version: 42), "42:conversation=c-1"),
        (.committed(try! Partition("all-users=all-the-users"), version: 0), "0:all-users=all-the-users"),
        (.committed(try! Partition("user=a:b"), version: 7), "7:user=a:b"),
        (.eventsRecorded, "events"),
        (.sequenced(through: 0), "seq:0"),
        (.sequenced(through: 9_007_199_254_740_993), "seq:9007199254740993"),
        (.instanceArrived("host-1:8080"), "instance:host-1:8080"),
        (.revoked(.user("u-1"), expires: nil), "revoked:user:never:u-1"),
        (.revoked(.family("F-1"), expires: Date(timeIntervalSince1970: 1_800_000_000)), "revoked:family:1800000000:f-1"),
        (.revoked(Revocation(kind: .key, subject: "ab:cd"), expires: nil), "revoked:key:never:ab:cd"),
    ]

    @Test("each kind is written as before and read back as itself", arguments: cases)
    func roundTrip(_ notification: ChangeNotification, _ payload: String) {
        #expect(notification.payload == payload)
        #expect(ChangeNotification(payload: payload) == notification)
    }

    @Test("a revocation's expiry is written in whole seconds, rounded up")
    func expiryRoundsUp() {
        let notification = ChangeNotification.revoked(.user("u"), expires: Date(timeIntervalSince1970: 1_800_000_000.2))
        #expect(notification.payload == "revoked:user:1800000001:u")
    }

    @Test("malformed text is refused", arguments: [
        "", "event", "Events", "seq:", "seq:x", "seq:12a", "42", "42:", "x:room=r", "42:no-equals", "-:room=r",
        "revoked:", "revoked:user", "revoked:user:never", "revoked:robot:never:x", "revoked:user:soon:x",
    ])
    func malformed(_ payload: String) {
        #expect(ChangeNotification(payload: payload) == nil)
    }
}
