import Foundation
import PostgresNIO

/// A `postgres://user:password@host:port/database?sslmode=…` URL, as given in `DATABASE_URL`.
public struct DatabaseURL: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    /// `disable`, `prefer` (the default) or `require`.
    public var sslMode: String

    public init(host: String, port: Int = 5432, username: String, password: String? = nil, database: String, sslMode: String = "prefer") {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.sslMode = sslMode
    }

    /// Parses the URL; throws for anything that is not a PostgreSQL URL.
    public init(_ text: String) throws {
        guard let components = URLComponents(string: text),
            components.scheme == "postgres" || components.scheme == "postgresql",
            let host = components.host, !host.isEmpty
        else {
            throw DatabaseURLError(message: "DATABASE_URL is not a postgres://user:password@host:port/database URL")
        }
        // `user`, `password` and `path` are percent-decoded already: decoding them again would
        // turn a `%25` in the URL into whatever the two characters after it encode.
        let database = String(components.path.drop(while: { $0 == "/" }))
        self.host = host
        self.port = components.port ?? 5432
        self.username = components.user ?? "postgres"
        self.password = components.password
        self.database = database.isEmpty ? self.username : database
        let sslMode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "prefer"
        guard ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"].contains(sslMode) else {
            throw DatabaseURLError(message: "unknown sslmode '\(sslMode)' in DATABASE_URL")
        }
        self.sslMode = sslMode
    }

    /// The same server with another database.
    public func with(database: String) -> DatabaseURL {
        var copy = self
        copy.database = database
        return copy
    }

    /// The URL text, password masked: safe for logs.
    public var description: String {
        "postgres://\(username)\(password == nil ? "" : ":***")@\(host):\(port)/\(database)?sslmode=\(sslMode)"
    }

    /// The URL text with the password, for handing to a child process.
    public var urlString: String {
        var components = URLComponents()
        components.scheme = "postgres"
        components.host = host
        components.port = port
        components.user = username
        components.password = password
        components.path = "/" + database
        components.queryItems = [URLQueryItem(name: "sslmode", value: sslMode)]
        return components.string ?? description
    }

    /// A configuration for a single connection to this URL (for LISTEN, which needs one of its own).
    public func connectionConfiguration() throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS
        switch sslMode {
        case "disable":
            tls = .disable
        default:
            var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
            if sslMode != "verify-ca" && sslMode != "verify-full" { tlsConfiguration.certificateVerification = .none }
            let context = try NIOSSLContext(configuration: tlsConfiguration)
            tls = sslMode == "require" || sslMode.hasPrefix("verify") ? .require(context) : .prefer(context)
        }
        return PostgresConnection.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tls)
    }

    /// A client configuration for this URL.
    public var clientConfiguration: PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS
        switch sslMode {
        case "disable": tls = .disable
        case "require", "verify-ca", "verify-full":
            var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
            if sslMode == "require" { tlsConfiguration.certificateVerification = .none }
            tls = .require(tlsConfiguration)
        default:
            var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
            tlsConfiguration.certificateVerification = .none
            tls = .prefer(tlsConfiguration)
        }
        return PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tls)
    }
}

/// A malformed `DATABASE_URL`.
public struct DatabaseURLError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
