import PartitionSyncServer
import RChat

/// `psync`: the PartitionSync server serving RChat, the reference application.
@main
struct PSync {
    static func main() async {
        await PartitionSyncCommand.main(application: .rchat, commandName: "psync")
    }
}
