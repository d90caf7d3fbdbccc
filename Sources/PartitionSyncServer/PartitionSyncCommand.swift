import ArgumentParser
import Foundation
import Locking
import Logging
import PartitionSync
import SyncServer

/// The whole server command of an application: `serve` (the default), `migrate`, `apikey`,
/// `triggers` and `import`, with every flag and environment variable, the embedded PostgreSQL when
/// there is no `DATABASE_URL`, logging, metrics and graceful shutdown, exactly as `psync`
/// has them. An application's executable is a main of a few lines:
///
/// ```swift
/// import CouchChat
/// import PartitionSyncServer
///
/// @main
/// struct CouchChatServer {
///     static func main() async {
///         await PartitionSyncCommand.main(application: .couchChat)
///     }
/// }
/// ```
public enum PartitionSyncCommand {
    /// Parses `arguments` (default: the process's) and runs the command for `application`;
    /// exits the process with the command's status.
    ///
    /// - Parameters:
    ///   - application: the rules, validators, triggers and indexes to serve.
    ///   - commandName: the name in usage and help texts, and the label of log lines;
    ///     default: the executable's file name.
    public static func main(application: SyncApplication, commandName: String? = nil, arguments: [String]? = nil) async {
        // Before the command starts a thread: each new thread gets an arena of its own.
        if let arenas = MallocArenas.requested(
            arguments: arguments ?? Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
        {
            MallocArenas.limit(to: arenas)
        }
        let name = commandName ?? URL(fileURLWithPath: CommandLine.arguments.first ?? "psync").lastPathComponent
        Served.current.withLock { $0 = Served(application: application, commandName: name) }
        await Root.main(arguments)
    }
}

/// What `main` was given, for the subcommands (which ArgumentParser makes without arguments).
struct Served: Sendable {
    var application: SyncApplication
    var commandName: String

    static let current = Locked<Served?>(nil)

    static var application: SyncApplication {
        current.withLock { $0?.application } ?? SyncApplication(permissions: Permissions())
    }

    static var commandName: String {
        current.withLock { $0?.commandName } ?? "psync"
    }

    /// The logger of an administration command (`migrate`, `apikey`, `triggers`): it prints its
    /// answer and, at the default level, nothing else but warnings and errors (`LOG_LEVEL` to
    /// see more).
    static var commandLogger: Logger {
        var logger = Logger(label: commandName)
        logger.logLevel = EnvironmentDefault.logLevel("LOG_LEVEL") ?? .warning
        return logger
    }
}

/// The root command.
struct Root: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: Served.commandName,
            abstract: "A PartitionSync server: partition-based sync on PostgreSQL, and its administration.",
            subcommands: [Serve.self, Migrate.self, APIKey.self, Triggers.self, Import.self],
            defaultSubcommand: Serve.self)
    }
}
