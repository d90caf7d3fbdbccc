import Foundation

/// Settings of a private PostgreSQL cluster.
public struct EmbeddedPostgresConfiguration: Sendable, Hashable {
    /// The cluster's data directory; created and initialized (initdb) on first start.
    public var dataDirectory: String
    /// The folder of `initdb`, `pg_ctl` and `postgres`. `nil`: `PSYNC_PG_BIN`, else the newest
    /// `/usr/lib/postgresql/*/bin`, else the folder of `pg_ctl` on `PATH`.
    public var binDirectory: String?
    /// The loopback port to listen on. `nil` (the default) picks a free one at each start.
    public var port: Int?
    /// The superuser initdb creates. Its password is made at initdb and kept in
    /// ``passwordFile(of:)`` (mode 0600); every connection needs it. Default `psync`.
    public var username: String
    /// The database created after the first start. Default `psync`.
    public var database: String
    /// Whether commits are durable. Default `true`; tests turn it off (no fsync, no
    /// synchronous commit), which loses recent commits if the machine crashes.
    public var durable: Bool
    /// More server settings (`-c name=value`), e.g. `["max_connections": "300"]`.
    public var settings: [String: String]

    public init(
        dataDirectory: String,
        binDirectory: String? = nil,
        port: Int? = nil,
        username: String = "psync",
        database: String = "psync",
        durable: Bool = true,
        settings: [String: String] = [:]
    ) {
        self.dataDirectory = dataDirectory
        self.binDirectory = binDirectory
        self.port = port
        self.username = username
        self.database = database
        self.durable = durable
        self.settings = settings
    }
}

extension EmbeddedPostgresConfiguration {
    /// Where the superuser's password of the cluster in `dataDirectory` is kept: beside it,
    /// `<dataDirectory>.password`, readable by the server's user alone.
    public static func passwordFile(of dataDirectory: String) -> String {
        URL(fileURLWithPath: dataDirectory).standardizedFileURL.path + ".password"
    }
}

/// Where a started cluster listens.
public struct EmbeddedPostgresEndpoint: Sendable, Hashable {
    public var host: String
    public var port: Int
    public var username: String
    public var database: String
    /// The superuser's password.
    public var password: String?

    public init(host: String, port: Int, username: String, database: String, password: String? = nil) {
        self.host = host
        self.port = port
        self.username = username
        self.database = database
        self.password = password
    }

    /// `postgres://user:password@host:port/database`, for `DATABASE_URL`.
    public var url: String {
        let credentials = password.map { "\(username):\($0)" } ?? username
        return "postgres://\(credentials)@\(host):\(port)/\(database)?sslmode=disable"
    }
}

/// Why the embedded cluster could not start or stop.
public struct EmbeddedPostgresError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// No PostgreSQL server binaries were found.
        public static let binariesNotFound = Code(rawValue: "binaries_not_found")
        /// The data directory cannot be used (not writable, or not reachable by the `postgres` user).
        public static let dataDirectoryUnusable = Code(rawValue: "data_directory_unusable")
        /// initdb, pg_ctl or createdb failed; the message holds its output.
        public static let commandFailed = Code(rawValue: "command_failed")
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
