import ArgumentParser
import Logging
import PartitionSync
import SyncStorage

/// `psync migrate`: applies the database migrations and exits.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply the database migrations and exit.")

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let logger = Served.commandLogger
        let applied = try await database.withClient(logger: logger) { client in
            try await Migrator(client: client, logger: logger).migrate()
        }
        if applied.isEmpty {
            print("The database is up to date.")
        } else {
            for migration in applied { print("Applied \(migration.version)_\(migration.name)") }
        }
    }
}
