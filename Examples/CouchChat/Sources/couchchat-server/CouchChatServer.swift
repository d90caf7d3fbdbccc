import CouchChat
import PartitionSyncServer

/// `couchchat-server`: every subcommand, flag and setting of `psync`, serving CouchChat.
@main
struct CouchChatServer {
    static func main() async {
        await PartitionSyncCommand.main(application: .couchChat)
    }
}
