import ArgumentParser
import Foundation
import Logging
import PartitionSync
import SyncServer
import SyncStorage
import SyncTriggers

/// `psync triggers list|dead-letters|retry`: the state of the application's triggers.
struct Triggers: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Inspect triggers and replay dead-lettered events.",
        subcommands: [List.self, DeadLetters.self, Retry.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Each trigger's position, lag, lease holder and open dead letters.")
        @OptionGroup var database: DatabaseOptions
        @Option(name: .customLong("max-lag"), help: "Events behind after which a trigger shows as behind (env PSYNC_TRIGGER_MAX_LAG).")
        var maximumLag: Int64 = EnvironmentDefault.value("PSYNC_TRIGGER_MAX_LAG", default: 10_000)

        func validate() throws {
            try EnvironmentDefault.check()
            try OptionBounds.check([OptionBounds("--max-lag", env: "PSYNC_TRIGGER_MAX_LAG", maximumLag, atLeast: 0)])
        }

        func run() async throws {
            let logger = Served.commandLogger
            let reports = try await database.withMigratedClient(logger: logger) { client in
                try await TriggerAdmin(store: ObjectStore(client: client, logger: logger), triggers: Served.application.triggers, logger: logger).reports()
            }
            print("trigger\tposition\tlag\tlease holder\tdead letters\tstate")
            for report in reports {
                let problems = report.problems(maximumLag: maximumLag)
                let state = problems.isEmpty ? "ok" : problems.joined(separator: ",")
                print("\(report.name)\t\(report.position)\t\(report.lag)\t\(report.leaseHolder ?? "-")\t\(report.deadLetters)\t\(state)")
            }
        }
    }

    struct DeadLetters: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "dead-letters", abstract: "List the events triggers gave up on.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "Only this trigger's.") var trigger: String?

        func run() async throws {
            let logger = Served.commandLogger
            let letters = try await database.withMigratedClient(logger: logger) { client in
                try await TriggerAdmin(store: ObjectStore(client: client, logger: logger), triggers: Served.application.triggers, logger: logger)
                    .deadLetters(trigger: trigger)
            }
            print("id\ttrigger\tevent\tattempts\twhen\terror")
            for letter in letters {
                print("\(letter.id)\t\(letter.trigger)\t\(letter.position)\t\(letter.attempts)\t\(letter.created)\t\(letter.error)")
            }
        }
    }

    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Replay dead letters through their trigger, each once.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "Dead letter ids (see `psync triggers dead-letters`).") var ids: [Int64] = []
        @Flag(help: "Replay every open dead letter.") var all = false

        func run() async throws {
            let logger = Served.commandLogger
            let ids = self.ids
            let all = self.all
            let failures = try await database.withMigratedClient(logger: logger) { client in
                let admin = TriggerAdmin(store: ObjectStore(client: client, logger: logger), triggers: Served.application.triggers, logger: logger)
                let targets = all ? try await admin.deadLetters().map(\.id) : ids
                var failures = 0
                for id in targets {
                    do {
                        try await admin.retry(id)
                        print("\(id): replayed")
                    } catch {
                        failures += 1
                        print("\(id): failed again: \(error)")
                    }
                }
                return failures
            }
            if failures > 0 { throw ExitCode(1) }
        }
    }
}
