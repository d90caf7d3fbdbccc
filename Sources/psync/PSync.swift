import Foundation
import PartitionSyncServer
import RChat
import SyncProtocol

/// `psync`: the PartitionSync server serving RChat, the reference application, with the
/// limits the environment sets (`RCHAT_MAX_MEMBERS` and the others of `RChatLimits`).
@main
struct PSync {
    static func main() async {
        let limits: RChatLimits
        do {
            limits = try RChatLimits(environment: ProcessInfo.processInfo.environment)
        } catch {
            FileHandle.standardError.write(Data("psync: \(error.message)\n".utf8))
            exit(64)
        }
        await PartitionSyncCommand.main(application: RChat.application(limits: limits), commandName: "psync")
    }
}
