import Foundation
import SyncStorage

#if canImport(Glibc)
import Glibc
#endif

/// The `psync` executable run as a separate process, for tests that kill a server with
/// SIGKILL or run several instances as a deployment would.
public final class ServerProcess: @unchecked Sendable {
    // Mutated only by the test that owns the instance, one call at a time.
    private var process: Process?
    public let port: Int
    public let database: DatabaseURL
    public let environment: [String: String]
    public let logPath: String
    /// The `psync` binary this instance runs.
    public let executablePath: String
    /// The subcommand it runs (`serve`), before the port and database options.
    public let command: [String]

    public var baseURL: String { "http://127.0.0.1:\(port)" }
    public var webSocketURL: String { "ws://127.0.0.1:\(port)/v1/sync" }
    public var http: TestHTTPClient { TestHTTPClient(baseURL: baseURL) }

    /// - Parameters:
    ///   - environment: more settings (`PSYNC_TRIGGER_LEASE`, …); the JWT secret and a
    ///   fast bcrypt cost are set already.
    ///   - executable: the `psync` binary; default ``executable``.
    ///   - command: the subcommand; another executable's (the benchmark's relay) takes the
    ///   same `--port` and `--database-url` options.
    public init(
        database: DatabaseURL, port: Int? = nil, environment: [String: String] = [:], executable: String? = nil,
        command: [String] = ["serve"]
    ) throws {
        self.database = database
        self.executablePath = executable ?? Self.executable
        self.command = command
        self.port = try port ?? Self.freePort()
        self.environment = environment
        self.logPath = NSTemporaryDirectory() + "psync-server-\(getpid())-\(self.port).log"
    }

    /// The `psync` built beside the tests, or `PSYNC_SERVER_EXECUTABLE` (a release build, say,
    /// for the fault tests: `PSYNC_SERVER_EXECUTABLE=.build/release/psync`).
    public static var executable: String {
        ProcessInfo.processInfo.environment["PSYNC_SERVER_EXECUTABLE"] ?? BuiltExecutable.path("psync")
    }

    /// Starts the server and waits until it is ready.
    public func start(timeout: Duration = .seconds(30)) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executablePath)
        process.arguments = command + ["--port", "\(port)", "--database-url", database.urlString]
        var environment = ProcessInfo.processInfo.environment
        environment["PSYNC_JWT_SECRET"] = TestServer.jwtSecret
        environment["PSYNC_BCRYPT_COST"] = "4"
        environment["PSYNC_REGISTRATIONS_PER_ADDRESS"] = "1000000"
        environment["LOG_LEVEL"] = environment["PSYNC_TEST_LOG_LEVEL"] ?? "notice"
        environment.merge(self.environment) { _, new in new }
        process.environment = environment
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try log.seekToEnd()
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.process = process
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if !process.isRunning {
                throw TestTimeout(what: "the server to start (it exited; see \(logPath))")
            }
            if let response = try? await http.get("/ready"), response.status == 200 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestTimeout(what: "the server to be ready (see \(logPath))")
    }

    /// Kills the server with SIGKILL, as a crash would, and waits until it is gone.
    public func kill() async {
        guard let process, process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        while process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
        self.process = nil
    }

    /// Freezes the server with SIGSTOP: its sockets and database connections stay open and
    /// nothing answers, as in a long garbage-collection pause or a VM migration.
    public func freeze() {
        guard let process, process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGSTOP)
    }

    /// Lets a frozen server go on (SIGCONT).
    public func resume() {
        guard let process else { return }
        Glibc.kill(process.processIdentifier, SIGCONT)
    }

    /// Stops the server with SIGTERM (graceful shutdown) and waits; returns its exit status,
    /// or `nil` when it did not stop within 20 seconds and was killed.
    @discardableResult
    public func stop() async -> Int32? {
        guard let process, process.isRunning else { return nil }
        process.terminate()
        let deadline = ContinuousClock.now + .seconds(20)
        while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        self.process = nil
        if process.isRunning {
            Glibc.kill(process.processIdentifier, SIGKILL)
            return nil
        }
        return process.terminationStatus
    }

    public var isRunning: Bool { process?.isRunning ?? false }

    /// The running process's id, part of the instance name it holds leases under.
    public var processIdentifier: Int32? { process?.processIdentifier }

    deinit {
        if let process, process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
    }

    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
