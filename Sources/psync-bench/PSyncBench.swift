import ArgumentParser
import Foundation

/// `psync-bench`: measures the sync server against the raw PostgreSQL floor, in one run on
/// one database. Prints one JSON object per scenario on stdout; progress goes to stderr.
@main
struct PSyncBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "psync-bench",
        abstract: "Benchmarks of PartitionSync, each beside the raw PostgreSQL floor for the same rows.",
        discussion: """
            Starts its own `psync serve` process and database (embedded, or a fresh database on \
            DATABASE_URL's server), drives real WebSocket clients over loopback and prints one JSON \
            object per scenario. Build both in release: `swift build -c release --product psync`, then \
            `swift run -c release psync-bench --quick`.
            """,
        subcommands: [All.self, Ingest.self, ImportCommand.self, Latency.self, Fanout.self, Bootstrap.self, Connections.self, Blobs.self, Soak.self, Relay.self],
        defaultSubcommand: All.self
    )
}

/// Runs every scenario in one environment.
struct All: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "all", abstract: "Every scenario with its default sizes (or --quick ones), in one run.")
    @OptionGroup var options: BenchOptions

    func run() async throws {
        let quick = options.quick
        try await BenchEnvironment.with(options) { environment in
            try await environment.report(IngestScenario(quick ? .quick : .init(), seconds: options.seconds(quick: 2)).run(in: environment))
            try await environment.report(LatencyScenario(quick ? .quick : .init(), seconds: options.seconds(quick: 2)).run(in: environment))
            try await environment.report(FanoutScenario(quick ? .quick : .init()).run(in: environment))
            try await environment.report(BootstrapScenario(quick ? .quick : .init()).run(in: environment))
            try await environment.report(ConnectionsScenario(quick ? .quick : .init()).run(in: environment))
            try await environment.report(BlobScenario(quick ? .quick : .init()).run(in: environment))
            try await environment.report(ImportScenario(quick ? .quick : .init()).run(in: environment))
        }
    }
}

struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "psync import of a mongoexport file of chat messages, in bounded memory; floor: PostgreSQL's COPY of the same rows.")
    @OptionGroup var options: BenchOptions
    @Option(help: "Documents in the export.") var documents = ImportScenario.Parameters().documents
    @Option(help: "Conversations (partitions) they are spread over.") var conversations = ImportScenario.Parameters().conversations
    @Option(help: "Documents per import transaction (psync import --batch-documents).") var batchDocuments = ImportScenario.Parameters().batchDocuments

    func run() async throws {
        let parameters = options.quick
            ? ImportScenario.Parameters.quick
            : .init(documents: documents, conversations: conversations, batchDocuments: batchDocuments)
        try await BenchEnvironment.with(options) { environment in
            try await environment.report(ImportScenario(parameters).run(in: environment))
        }
    }
}

struct Ingest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Clients send chat messages as fast as acks return, with the unread-count trigger on; floor: single-row INSERT transactions.")
    @OptionGroup var options: BenchOptions
    @Option(help: "Sending clients.") var clients = IngestScenario.Parameters().clients
    @Option(help: "Conversations.") var conversations = IngestScenario.Parameters().conversations
    @Option(help: "Members per conversation.") var members = IngestScenario.Parameters().members

    func run() async throws {
        let parameters = options.quick ? IngestScenario.Parameters.quick : .init(clients: clients, conversations: conversations, members: members)
        try await BenchEnvironment.with(options) { environment in
            try await environment.report(IngestScenario(parameters, seconds: options.seconds(quick: 2)).run(in: environment))
        }
    }
}

struct Latency: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "One sender at a fixed rate, subscribers in the same room: upload-to-delivery latency; floor: INSERT + NOTIFY to a listener.")
    @OptionGroup var options: BenchOptions
    @Option(help: "Messages per second.") var rate = LatencyScenario.Parameters().rate
    @Option(help: "Subscribers (other members of the room).") var subscribers = LatencyScenario.Parameters().subscribers

    func run() async throws {
        let parameters = options.quick ? LatencyScenario.Parameters.quick : .init(rate: rate, subscribers: subscribers)
        try await BenchEnvironment.with(options) { environment in
            try await environment.report(LatencyScenario(parameters, seconds: options.seconds(quick: 2)).run(in: environment))
        }
    }
}

struct Fanout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "One room with many online members: time until every member has a message.")
    @OptionGroup var options: BenchOptions
    @Option(help: "Online members of the room (sessions).") var members = FanoutScenario.Parameters().members
    @Option(help: "Messages sent, one after the other.") var messages = FanoutScenario.Parameters().messages

    func run() async throws {
        let parameters = options.quick ? FanoutScenario.Parameters.quick : .init(members: members, messages: messages)
        try await BenchEnvironment.with(options) { environment in
            try await environment.report(FanoutScenario(parameters).run(in: environment))
        }
    }
}

struct Soak: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mixed load with sessions coming and going for a long time (not in `all`): the server's memory, descriptors and hub sizes every minute, and after the load.")
    @OptionGroup var options: BenchOptions
    @Option(help: "Minutes of load.") var minutes = SoakScenario.Parameters().minutes
    @Option(help: "Users.") var users = SoakScenario.Parameters().users
    @Option(help: "Rooms of ten members.") var rooms = SoakScenario.Parameters().rooms
    @Option(help: "Messages per second, all rooms together.") var rate = SoakScenario.Parameters().rate
    @Option(help: "Sessions opened (and closed) per second.") var churn = SoakScenario.Parameters().churn

    func run() async throws {
        let parameters = options.quick
            ? SoakScenario.Parameters.quick
            : .init(minutes: minutes, users: users, rooms: rooms, rate: rate, churn: churn)
        try await BenchEnvironment.with(options) { environment in
            try await environment.report(SoakScenario(parameters).run(in: environment))
        }
    }
}

struct Bootstrap: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A fresh client downloads a big partition; floor: reading the same rows in pages of the same size.")
    @OptionGroup var options: BenchOptions
    @Option(help: "Objects in the partition.") var objects = BootstrapScenario.Parameters().objects
    @Option(help: "Bytes of text per message.") var textBytes = BootstrapScenario.Parameters().textBytes
    @Flag(inversion: .prefixedNo, help: "Subscribe asking for progress, as the SDK does (the first page counts the rest).")
    var progress = true

    func run() async throws {
        var parameters = options.quick ? BootstrapScenario.Parameters.quick : .init(objects: objects, textBytes: textBytes)
        parameters.progress = progress
        let scenario = BootstrapScenario(parameters)
        try await BenchEnvironment.with(options) { environment in
            try await environment.report(scenario.run(in: environment))
        }
    }
}

struct Blobs: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Blob uploads and downloads by several clients; floor: the same bytes written and read as chunks through postgres-nio.")
    @OptionGroup var options: BenchOptions
    @Option(help: "Bytes of each blob.") var blobBytes = BlobScenario.Parameters().blobBytes
    @Option(help: "Blobs uploaded.") var blobs = BlobScenario.Parameters().blobs
    @Option(help: "Clients uploading and downloading at once.") var clients = BlobScenario.Parameters().clients
    @Option(help: "Downloads of the blob per client.") var downloadsPerClient = BlobScenario.Parameters().downloadsPerClient

    func run() async throws {
        let parameters = options.quick
            ? BlobScenario.Parameters.quick
            : .init(blobBytes: blobBytes, blobs: blobs, clients: clients, downloadsPerClient: downloadsPerClient)
        try await BenchEnvironment.with(options) { environment in
            try await environment.report(BlobScenario(parameters).run(in: environment))
        }
    }
}

struct Connections: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Many idle sessions: server memory per session, then the delivery of one change all of them watch.")
    @OptionGroup var options: BenchOptions
    @Option(help: "Sessions.") var sessions = ConnectionsScenario.Parameters().sessions
    @Option(help: "Changes delivered to all sessions, one after the other.") var changes = ConnectionsScenario.Parameters().changes

    func run() async throws {
        let parameters = options.quick ? ConnectionsScenario.Parameters.quick : .init(sessions: sessions, changes: changes)
        // Each session is a descriptor here and one in the server, which inherits this limit;
        // past it connections fail one by one, minutes in: say so before starting.
        let limit = BenchEnvironment.raiseFileDescriptorLimit()
        if parameters.sessions + ConnectionsScenario.spareDescriptors > limit {
            FileHandle.standardError.write(Data("""
                psync-bench: \(parameters.sessions) sessions need as many open files in psync-bench and in the server, \
                and this process may open \(limit) (its hard limit; \(ConnectionsScenario.spareDescriptors) are kept for \
                the database and the rest): raise it (`ulimit -Hn`, as root, or LimitNOFILE) or pass \
                --sessions \(max(0, limit - ConnectionsScenario.spareDescriptors)) or fewer\n
                """.utf8))
            throw ExitCode(2)
        }
        try await BenchEnvironment.with(options) { environment in
            try await environment.report(ConnectionsScenario(parameters).run(in: environment))
        }
    }
}
