import ArgumentParser

/// The `psync` command: the PartitionSync server and its administration.
@main
struct PSync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "psync",
        abstract: "PartitionSync: a partition-based sync server on PostgreSQL.",
        subcommands: [Serve.self, Migrate.self, APIKey.self, Triggers.self],
        defaultSubcommand: Serve.self
    )
}
