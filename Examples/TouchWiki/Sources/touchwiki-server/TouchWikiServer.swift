import PartitionSyncServer
import TouchWiki

/// `touchwiki-server`: every subcommand, flag and setting of `psync`, serving TouchWiki.
@main
struct TouchWikiServer {
    static func main() async {
        await PartitionSyncCommand.main(application: .touchWiki)
    }
}
