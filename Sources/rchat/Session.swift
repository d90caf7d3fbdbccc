import ArgumentParser
import Foundation
import Logging
import RChatModel
import SyncClient
import SyncProtocol

/// Where the server and the local store are.
struct Options: ParsableArguments {
    @Option(help: "The server (env RCHAT_SERVER).")
    var server: String = ProcessInfo.processInfo.environment["RCHAT_SERVER"] ?? "http://127.0.0.1:8080"

    @Option(help: "Folder of the local store and credentials (env RCHAT_HOME).")
    var home: String = ProcessInfo.processInfo.environment["RCHAT_HOME"] ?? (NSHomeDirectory() + "/.rchat")

    @Option(help: "Seconds to wait for the server before working offline.")
    var wait: Int = 5
}

/// A running client for one command: connects in the background, works from the local store
/// when the server cannot be reached, and before exiting sends what was queued (if it can).
struct Session {
    let client: SyncClient
    let connection: Task<Void, Never>
    let options: Options

    /// `present`: whether the user counts as On-Line while the command runs; only `watch`,
    /// which stays, makes them present (a `send` or a `read` connects for a moment).
    static func start(_ options: Options, present: Bool = false) throws -> Session {
        var logger = Logger(label: "rchat")
        logger.logLevel = ProcessInfo.processInfo.environment["RCHAT_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .error
        guard let url = URL(string: options.server) else { throw ValidationError("--server is not a URL") }
        var configuration = SyncClientConfiguration(serverURL: url, storePath: options.home + "/store.sqlite", logger: logger)
        configuration.maximumReconnectDelay = .seconds(2)
        configuration.countsInPresence = present
        let client = try SyncClient(configuration: configuration)
        let connection = Task { await client.run() }
        return Session(client: client, connection: connection, options: options)
    }

    /// The signed-in user, or an error telling to log in.
    func userID() async throws -> String {
        guard let id = await client.userID else {
            throw ValidationError("not signed in: run `rchat register` or `rchat login` first")
        }
        return id
    }

    /// Whether the server answered in time.
    func online() async -> Bool {
        await client.waitUntilOnline(timeout: .seconds(options.wait))
    }

    /// Opens partitions and waits (while online) until they are up to date.
    func sync(_ partitions: [Partition]) async throws {
        for partition in partitions { _ = try await client.open(partition) }
        guard await online() else { return }
        for partition in partitions { _ = await client.waitUntilUpToDate(partition, timeout: .seconds(options.wait * 2)) }
    }

    /// The user's own record (from the local copy).
    func me() async throws -> (id: String, user: User) {
        let id = try await userID()
        try await sync([RChatPartitions.user(id)])
        guard let object = try await client.objects(in: RChatPartitions.user(id)).first(where: { $0.key.collection == User.collection }),
            let body = object.body
        else {
            throw ValidationError("your User record has not arrived yet; is the server reachable?")
        }
        return (id, try JSONValue.object(body).decode(User.self))
    }

    /// A conversation of the user by display name or id.
    func conversation(_ name: String, of user: User) throws -> Conversation {
        if let found = user.conversations.first(where: { $0.id == name || $0.displayName == name }) { return found }
        throw ValidationError("no room named \(name); see `rchat rooms`")
    }

    /// Sends the queue if online, then stops. Returns whether everything was sent; a write the
    /// server refused is printed with its code (on standard error) and the command exits 1.
    @discardableResult
    func finish() async throws -> Bool {
        var sent = (try? await client.unacknowledgedWrites()) == 0
        if !sent, await client.connectionStatus == .online {
            sent = await client.waitUntilUploaded(timeout: .seconds(options.wait * 2))
        }
        let pending = (try? await client.unacknowledgedWrites()) ?? 0
        if pending > 0 {
            print("\(pending) change(s) queued; they will be sent when the server is reachable (any rchat command sends them).")
        }
        connection.cancel()
        await connection.value
        let refusals = await client.refusedWrites
        guard refusals.isEmpty else {
            for refusal in refusals {
                FileHandle.standardError.write(Data("\(refusal)\n".utf8))
            }
            throw ExitCode(1)
        }
        return sent
    }

    static func time(_ date: Date) -> String {
        date.formatted(.iso8601.time(includingFractionalSeconds: false))
    }
}
