import ArgumentParser
import Logging
import PartitionSync
import SyncServer

/// `psync apikey create|list|revoke`: server-side keys for back-end services.
struct APIKey: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apikey", abstract: "Manage API keys of back-end services.",
        subcommands: [Create.self, List.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a key; it is printed once and stored only as a hash.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The service name the key acts as (service:<name>).") var name: String

        func run() async throws {
            let logger = Served.commandLogger
            let key = try await database.withMigratedClient(logger: logger) { client in
                try await APIKeys(client: client, logger: logger).create(name: name)
            }
            print(key)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the live keys.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let logger = Served.commandLogger
            let keys = try await database.withMigratedClient(logger: logger) { client in
                try await APIKeys(client: client, logger: logger).list().map { "\($0.name)\tcreated \($0.created)\tlast used \($0.lastUsed.map { "\($0)" } ?? "never")" }
            }
            for line in keys { print(line) }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a key.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The key's name.") var name: String

        func run() async throws {
            let logger = Served.commandLogger
            let revoked = try await database.withMigratedClient(logger: logger) { client in
                try await APIKeys(client: client, logger: logger).revoke(name: name)
            }
            print(revoked ? "Revoked \(name)." : "No live key named \(name).")
        }
    }
}
