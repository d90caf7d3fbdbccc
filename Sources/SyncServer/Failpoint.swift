import Foundation

/// Faults a test can inject into a real `psync` process, named in the environment variable
/// `PSYNC_FAILPOINT` (docs/ARCHITECTURE.md, "Failpoints"). Compiled into debug builds only: in
/// a release build ``reached(_:requestId:)`` does nothing.
///
/// `PSYNC_FAILPOINT=after-commit-before-ack` stops every upload right after its commit, before
/// its answer is sent; `after-commit-before-ack:<requestId>` only the upload with that request
/// id. The process stays up, holding the answer forever, until the test kills it.
enum Failpoint: String, Sendable {
    case afterCommitBeforeAck = "after-commit-before-ack"

    #if DEBUG
    private static let armed: (point: Failpoint, requestId: String?)? = {
        guard let setting = ProcessInfo.processInfo.environment["PSYNC_FAILPOINT"], !setting.isEmpty else { return nil }
        let parts = setting.split(separator: ":", maxSplits: 1).map(String.init)
        guard let point = Failpoint(rawValue: parts[0]) else { return nil }
        return (point, parts.count > 1 ? parts[1] : nil)
    }()
    #endif

    /// Stops here for good when this failpoint is armed for `requestId`.
    static func reached(_ point: Failpoint, requestId: String) async {
        #if DEBUG
        guard let armed, armed.point == point, armed.requestId.map({ $0 == requestId }) ?? true else { return }
        while true { try? await Task.sleep(for: .seconds(3600)) }
        #endif
    }
}
