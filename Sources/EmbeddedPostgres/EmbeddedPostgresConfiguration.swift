import Foundation

/// Settings of a private PostgreSQL cluster.
package struct EmbeddedPostgresConfiguration: Sendable, Hashable {
    /// The cluster's data directory; created and initialized (initdb) on first start.
    package var dataDirectory: String
    /// The folder of `initdb`, `pg_ctl` and `postgres`. `nil`: `PSYNC_PG_BIN`, else the newest
    /// `/usr/lib/postgresql/*/bin`, else the folder of `pg_ctl` on `PATH`.
    package var binDirectory: String?
    /// The loopback port to listen on. `nil` (the default) picks a free one at each start.
    package var port: Int?
    /// The superuser initdb creates. Its password is made at initdb and kept in
    /// ``passwordFile(of:)`` (mode 0600); every connection needs it. Default `psync`.
    package var username: String
    /// The database created after the first start. Default `psync`.
    package var database: String
    /// Whether commits are durable. Default `true`; tests turn it off (no fsync, no
    /// synchronous commit), which loses recent commits if the machine crashes.
    package var durable: Bool
    /// More server settings (`-c name=value`), e.g. `["max_connections": "300"]`.
    package var settings: [String: String]

    package init(
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
    package static func passwordFile(of dataDirectory: String) -> String {
        URL(fileURLWithPath: dataDirectory).standardizedFileURL.path + ".password"
    }
}

/// Where a started cluster listens.
package struct EmbeddedPostgresEndpoint: Sendable, Hashable {
    package var host: String
    package var port: Int
    package var username: String
    package var database: String
    /// The superuser's password.
    package var password: String?

    package init(host: String, port: Int, username: String, database: String, password: String? = nil) {
        self.host = host
        self.port = port
        self.username = username
        self.database = database
        self.password = password
    }

    /// `postgres://user:password@host:port/database`, for `DATABASE_URL`.
    package var url: String {
        let credentials = password.map { "\(username):\($0)" } ?? username
        return "postgres://\(credentials)@\(host):\(port)/\(database)?sslmode=disable"
    }
}

/// Why the embedded cluster could not start or stop.
package struct EmbeddedPostgresError: Error, Sendable, Hashable, CustomStringConvertible {
    package struct Code: RawRepresentable, Sendable, Hashable {
        package var rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        /// No PostgreSQL server binaries were found.
        package static let binariesNotFound = Code(rawValue: "binaries_not_found")
        /// The data directory cannot be used (not writable, or not reachable by the `postgres` user).
        package static let dataDirectoryUnusable = Code(rawValue: "data_directory_unusable")
        /// initdb, pg_ctl or createdb failed; the message holds its output.
        package static let commandFailed = Code(rawValue: "command_failed")
    }

    package var code: Code
    package var message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { "\(code.rawValue): \(message)" }
}
