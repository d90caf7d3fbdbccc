import Foundation
import Locking
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A private PostgreSQL cluster run from the installed server binaries: initialized on first
/// use, started on a loopback port, stopped on shutdown. The server uses it when no
/// `DATABASE_URL` is given; the test harness uses it for every test run.
///
/// PostgreSQL refuses to run as root, so when this process is root the cluster runs as the
/// `postgres` system user and the data directory is handed to that user.
///
/// Several processes share one cluster: a second command (`psync apikey create` beside a
/// running `psync serve`) finds it running and connects to it, and the cluster is stopped by
/// the last process using it. Each user holds a shared `flock` on `<dataDirectory>.users`
/// while it uses the cluster (the kernel drops it when the process dies); a process that stops
/// takes it exclusively first and leaves the cluster running when it cannot. Deciding whether
/// to start is done under `<dataDirectory>.startup`, one process at a time.
///
/// ```swift
/// let postgres = EmbeddedPostgres(configuration: .init(dataDirectory: ".psync-data/postgres"), logger: logger)
/// let endpoint = try await postgres.start()
/// defer { try? postgres.stopNow() }
/// ```
package final class EmbeddedPostgres: Service, Sendable {
    package let configuration: EmbeddedPostgresConfiguration
    let logger: Logger
    private let started = Locked<EmbeddedPostgresEndpoint?>(nil)
    /// The shared lock on `<dataDirectory>.users` while this process uses the cluster.
    private let share = Locked<FileLock?>(nil)

    package init(configuration: EmbeddedPostgresConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Where the cluster listens, once started.
    package var endpoint: EmbeddedPostgresEndpoint? { started.withLock { $0 } }

    /// Runs as a service: starts the cluster, waits for graceful shutdown, stops it.
    package func run() async throws {
        _ = try await start()
        try? await gracefulShutdown()
        try await stop()
    }

    /// Initializes the cluster if needed, starts it, creates the database if missing.
    @discardableResult
    package func start() async throws -> EmbeddedPostgresEndpoint {
        if let endpoint = started.withLock({ $0 }) { return endpoint }
        let bin = try Self.findBinDirectory(configuration.binDirectory)
        let runAs = geteuid() == 0 ? "postgres" : nil
        let dataDirectory = URL(fileURLWithPath: configuration.dataDirectory).standardizedFileURL.path
        try prepareDirectory(dataDirectory, owner: runAs)
        // A user of the cluster from now on; a process stopping it holds this exclusively, and
        // this waits until it has.
        let users = try await FileLock(path: dataDirectory + ".users", exclusive: false)
        // One process at a time initializes the cluster, finds it running, or starts it.
        let startup = try await FileLock(path: dataDirectory + ".startup", exclusive: true)
        defer { startup.release() }

        // The superuser's password: made at initdb, kept beside the data directory, readable by
        // this process's user alone. Connections need it (scram-sha-256), so no other local
        // user reaches the database, which as superuser could run programs as `postgres`.
        let passwordFile = EmbeddedPostgresConfiguration.passwordFile(of: dataDirectory)
        var password = try? String(contentsOfFile: passwordFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        var needsPassword = false
        if !FileManager.default.fileExists(atPath: dataDirectory + "/PG_VERSION") {
            logger.info("initializing embedded PostgreSQL", metadata: ["dataDirectory": "\(dataDirectory)"])
            let secret: String
            do {
                secret = try Self.writeNewPassword(to: passwordFile)
            } catch {
                users.release()
                throw error
            }
            password = secret
            let pwfile = try Self.temporaryPasswordFile(secret, owner: runAs)
            defer { try? FileManager.default.removeItem(atPath: pwfile) }
            try await check(
                Command.run(
                    [bin + "/initdb", "-D", dataDirectory, "-U", configuration.username, "-A", "scram-sha-256", "--pwfile", pwfile,
                     "-E", "UTF8", "--locale=C.UTF-8", "--no-instructions"],
                    asUser: runAs),
                "initdb")
        } else if password == nil || Self.trusts(hba: try? String(contentsOfFile: dataDirectory + "/pg_hba.conf", encoding: .utf8)) {
            // A cluster made before passwords (trust): it gets one once it runs, below.
            needsPassword = true
        }
        do {
            if let running = try await Self.runningCluster(dataDirectory) {
                guard let password else {
                    throw EmbeddedPostgresError(
                        .dataDirectoryUnusable, "the embedded PostgreSQL in \(dataDirectory) is running, but its password file \(passwordFile) cannot be read")
                }
                let endpoint = EmbeddedPostgresEndpoint(
                    host: "127.0.0.1", port: running.port, username: configuration.username, database: configuration.database, password: password)
                started.withLock { $0 = endpoint }
                share.withLock { $0 = users }
                try await createDatabase(configuration.database, bin: bin, runAs: runAs)
                logger.info("using the running embedded PostgreSQL", metadata: ["port": "\(running.port)", "pid": "\(running.pid)"])
                return endpoint
            }
        } catch {
            users.release()
            throw error
        }
        share.withLock { $0 = users }
        var lastFailure = ""
        for _ in 0..<5 {
            let port = try configuration.port ?? Self.freePort()
            var options = ["-p \(port)", "-c listen_addresses=127.0.0.1", "-c unix_socket_directories=''"]
            if !configuration.durable {
                options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
            }
            for (name, value) in configuration.settings.sorted(by: { $0.key < $1.key }) {
                options.append("-c \(name)=\(value)")
            }
            let result = try await Command.run(
                [bin + "/pg_ctl", "start", "-D", dataDirectory, "-l", dataDirectory + "/server.log", "-w", "-t", "60",
                 "-o", options.joined(separator: " ")],
                asUser: runAs)
            if result.status == 0 {
                if needsPassword {
                    password = try await requirePassword(port: port, bin: bin, runAs: runAs, dataDirectory: dataDirectory, passwordFile: passwordFile)
                }
                let endpoint = EmbeddedPostgresEndpoint(
                    host: "127.0.0.1", port: port, username: configuration.username, database: configuration.database, password: password)
                started.withLock { $0 = endpoint }
                try await createDatabase(configuration.database, bin: bin, runAs: runAs)
                logger.info("embedded PostgreSQL started", metadata: ["port": "\(port)"])
                return endpoint
            }
            lastFailure = result.text
            // The port may have been taken between choosing and binding it: try another.
            guard configuration.port == nil else { break }
        }
        releaseShare()
        let log = (try? String(contentsOfFile: dataDirectory + "/server.log", encoding: .utf8)) ?? ""
        throw EmbeddedPostgresError(
            .commandFailed, "pg_ctl start failed: \(lastFailure)\n\(log.split(separator: "\n").suffix(10).joined(separator: "\n"))")
    }

    /// Creates a database on the running cluster unless it exists.
    package func createDatabase(_ name: String) async throws {
        let bin = try Self.findBinDirectory(configuration.binDirectory)
        try await createDatabase(name, bin: bin, runAs: geteuid() == 0 ? "postgres" : nil)
    }

    private func createDatabase(_ name: String, bin: String, runAs: String?) async throws {
        guard let endpoint = started.withLock({ $0 }) else { return }
        let result = try await Command.run(
            [bin + "/createdb", "-h", endpoint.host, "-p", "\(endpoint.port)", "-U", endpoint.username, name],
            asUser: runAs, environment: endpoint.password.map { ["PGPASSWORD": $0] } ?? [:])
        // A standby (``standby(in:settings:)``) has the primary's databases and creates none.
        if result.status != 0, !result.text.contains("already exists"), !result.text.contains("read-only transaction") {
            throw EmbeddedPostgresError(.commandFailed, "createdb \(name) failed: \(result.text)")
        }
    }

    /// Gives a cluster initialized with `trust` (before passwords) a password, and makes
    /// every connection need it.
    private func requirePassword(port: Int, bin: String, runAs: String?, dataDirectory: String, passwordFile: String) async throws -> String {
        let secret = try Self.writeNewPassword(to: passwordFile)
        let sql = "ALTER ROLE \"\(configuration.username)\" PASSWORD '\(secret)'"
        let sqlFile = try Self.temporaryPasswordFile(sql, owner: runAs)
        defer { try? FileManager.default.removeItem(atPath: sqlFile) }
        try await check(
            Command.run([bin + "/psql", "-h", "127.0.0.1", "-p", "\(port)", "-U", configuration.username, "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-f", sqlFile], asUser: runAs),
            "setting the database password")
        let hba = dataDirectory + "/pg_hba.conf"
        let rules = ["# Written by PartitionSync: every connection needs the password.", "host all all 127.0.0.1/32 scram-sha-256", "host all all ::1/128 scram-sha-256", ""]
        let written = try Self.temporaryPasswordFile(rules.joined(separator: "\n"), owner: runAs)
        defer { try? FileManager.default.removeItem(atPath: written) }
        try await check(Command.run(["/bin/cp", written, hba], asUser: runAs), "pg_hba.conf")
        try await check(Command.run([bin + "/pg_ctl", "reload", "-D", dataDirectory], asUser: runAs), "pg_ctl reload")
        logger.notice("embedded PostgreSQL now requires a password", metadata: ["passwordFile": "\(passwordFile)"])
        return secret
    }

    /// Whether a pg_hba.conf lets some connection in without a password (a rule whose method is
    /// `trust`; comments are passed over). An unreadable file counts as trusting.
    static func trusts(hba: String?) -> Bool {
        guard let hba else { return true }
        return hba.split(separator: "\n").contains { line in
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let first = fields.first, !first.hasPrefix("#") else { return false }
            return fields.contains("trust")
        }
    }

    /// A new random password (hex, so it needs no escaping in a URL or SQL), written to
    /// `path` with mode 0600.
    static func writeNewPassword(to path: String) throws -> String {
        var generator = SystemRandomNumberGenerator()
        let secret = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        guard FileManager.default.createFile(atPath: path, contents: Data((secret + "\n").utf8), attributes: [.posixPermissions: 0o600]) else {
            throw EmbeddedPostgresError(.dataDirectoryUnusable, "cannot write the database password to \(path)")
        }
        chmod(path, 0o600)
        return secret
    }

    /// A file only `owner` (or this process's user) can read, for a command that takes a
    /// secret from a file.
    static func temporaryPasswordFile(_ contents: String, owner: String?) throws -> String {
        let path = NSTemporaryDirectory() + "psync-secret-\(UUID().uuidString)"
        guard FileManager.default.createFile(atPath: path, contents: Data(contents.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw EmbeddedPostgresError(.commandFailed, "cannot write \(path)")
        }
        if let owner, let user = getpwnam(owner) { chown(path, user.pointee.pw_uid, user.pointee.pw_gid) }
        return path
    }

    /// Stops using the cluster: stops it, letting open transactions end (`fast` mode), when no
    /// other process uses it, and leaves it running for them otherwise. A cluster already
    /// stopped (by someone else) is no error.
    package func stop() async throws {
        guard endpoint != nil else { return }
        let users = share.withLock { $0 }
        defer {
            share.withLock { $0 = nil }
            users?.release()
        }
        guard users?.tryExclusive() ?? true else {
            started.withLock { $0 = nil }
            logger.info("embedded PostgreSQL left running for the other processes that use it")
            return
        }
        guard isRunning else {
            started.withLock { $0 = nil }
            logger.warning("embedded PostgreSQL had already stopped")
            return
        }
        let bin = try Self.findBinDirectory(configuration.binDirectory)
        try await check(
            Command.run(
                [bin + "/pg_ctl", "stop", "-D", configuration.dataDirectory, "-m", "fast", "-w"],
                asUser: geteuid() == 0 ? "postgres" : nil),
            "pg_ctl stop")
        started.withLock { $0 = nil }
        logger.info("embedded PostgreSQL stopped")
    }

    private func releaseShare() {
        share.withLock { lock -> FileLock? in
            defer { lock = nil }
            return lock
        }?.release()
    }

    /// Stops using the cluster without stopping it, whoever else uses it.
    package func detach() {
        releaseShare()
        started.withLock { $0 = nil }
    }

    /// Whether the cluster's postmaster is alive (its `postmaster.pid` names a live process).
    package var isRunning: Bool {
        Self.postmaster(of: configuration.dataDirectory).map { Self.isAlive($0.pid) } ?? false
    }

    /// Stops the cluster at once without waiting for anything: for `atexit` handlers and
    /// interrupted test runs. Blocks the calling thread.
    package func stopNow() {
        guard endpoint != nil, let bin = try? Self.findBinDirectory(configuration.binDirectory) else { return }
        var arguments = [bin + "/pg_ctl", "stop", "-D", configuration.dataDirectory, "-m", "immediate", "-w"]
        if geteuid() == 0 { arguments = ["/usr/sbin/runuser", "-u", "postgres", "--"] + arguments }
        Command.runBlocking(arguments)
        started.withLock { $0 = nil }
        releaseShare()
    }

    /// What `postmaster.pid` says of a cluster: its process, port, and whether it is ready
    /// (PostgreSQL writes `ready` on its eighth line once it accepts connections).
    static func postmaster(of dataDirectory: String) -> (pid: pid_t, port: Int, ready: Bool)? {
        guard let text = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8) else { return nil }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard lines.count >= 4, let pid = pid_t(lines[0]), let port = Int(lines[3]) else { return nil }
        return (pid, port, lines.count >= 8 && lines[7] == "ready")
    }

    static func isAlive(_ pid: pid_t) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    /// The cluster of `dataDirectory` when its postmaster is alive, once it is ready (within
    /// 60 s); `nil` when none runs (a `postmaster.pid` left by a dead one counts as none:
    /// PostgreSQL replaces it).
    static func runningCluster(_ dataDirectory: String) async throws -> (pid: pid_t, port: Int)? {
        let deadline = ContinuousClock.now + .seconds(60)
        while let found = postmaster(of: dataDirectory), isAlive(found.pid) {
            if found.ready { return (found.pid, found.port) }
            guard ContinuousClock.now < deadline else {
                throw EmbeddedPostgresError(.commandFailed, "the embedded PostgreSQL in \(dataDirectory) did not become ready within 60 s")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }

    /// The processes of the running cluster: the postmaster (from `postmaster.pid`) and its
    /// children, for fault tests that freeze or kill them.
    package func processIDs() -> [pid_t] {
        guard let text = try? String(contentsOfFile: configuration.dataDirectory + "/postmaster.pid", encoding: .utf8),
            let first = text.split(separator: "\n").first, let postmaster = pid_t(first.trimmingCharacters(in: .whitespaces))
        else { return [] }
        var found = [postmaster]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // `pid (comm) state ppid …`: the fields after the command's closing parenthesis.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, pid_t(fields[1]) == postmaster { found.append(pid) }
        }
        return found
    }

    /// Sends `signal` to every process of the cluster: `SIGSTOP` freezes it as a hung host or
    /// a stalled network would, `SIGCONT` lets it go on.
    package func signalAll(_ signal: Int32) {
        for pid in processIDs() { kill(pid, signal) }
    }

    /// Stops a cluster this process did not start (left by a process that died), waiting on
    /// the calling thread.
    package static func stopAbandoned(dataDirectory: String) {
        guard FileManager.default.fileExists(atPath: dataDirectory + "/postmaster.pid"),
            let bin = try? findBinDirectory()
        else { return }
        var arguments = [bin + "/pg_ctl", "stop", "-D", dataDirectory, "-m", "immediate", "-w"]
        if geteuid() == 0 { arguments = ["/usr/sbin/runuser", "-u", "postgres", "--"] + arguments }
        Command.runBlocking(arguments)
    }

    func check(_ output: Command.Output, _ what: String) throws {
        guard output.status == 0 else {
            throw EmbeddedPostgresError(.commandFailed, "\(what) failed (status \(output.status)): \(output.text)")
        }
    }

    /// Creates the data directory's parent folders and hands the directory to `owner`.
    func prepareDirectory(_ path: String, owner: String?) throws {
        let manager = FileManager.default
        do {
            try manager.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw EmbeddedPostgresError(.dataDirectoryUnusable, "cannot create \(path): \(error)")
        }
        guard let owner else { return }
        guard let user = getpwnam(owner) else {
            throw EmbeddedPostgresError(
                .dataDirectoryUnusable, "running as root needs the system user '\(owner)' to run PostgreSQL")
        }
        guard chown(path, user.pointee.pw_uid, user.pointee.pw_gid) == 0, chmod(path, 0o700) == 0 else {
            throw EmbeddedPostgresError(.dataDirectoryUnusable, "cannot hand \(path) to the user '\(owner)'")
        }
        // Every parent must be searchable by that user.
        var parent = URL(fileURLWithPath: path).deletingLastPathComponent()
        while parent.path != "/" {
            var info = stat()
            if stat(parent.path, &info) == 0, info.st_mode & 0o001 == 0, info.st_uid != user.pointee.pw_uid {
                throw EmbeddedPostgresError(
                    .dataDirectoryUnusable,
                    "the '\(owner)' user cannot reach \(path) because \(parent.path) is closed to others; choose a data directory under /tmp or /var/lib")
            }
            parent.deleteLastPathComponent()
        }
    }

    /// A TCP port on 127.0.0.1 that is free at this moment.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw EmbeddedPostgresError(.commandFailed, "socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw EmbeddedPostgresError(.commandFailed, "bind() failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Finds the server binaries (see ``EmbeddedPostgresConfiguration/binDirectory``).
    package static func findBinDirectory(_ configured: String? = nil) throws -> String {
        let manager = FileManager.default
        if let configured { return configured }
        if let fromEnvironment = ProcessInfo.processInfo.environment["PSYNC_PG_BIN"] { return fromEnvironment }
        let root = "/usr/lib/postgresql"
        if let versions = try? manager.contentsOfDirectory(atPath: root) {
            let newest = versions.compactMap { Int($0) }.sorted().reversed()
                .map { "\(root)/\($0)/bin" }
                .first { manager.isExecutableFile(atPath: $0 + "/pg_ctl") }
            if let newest { return newest }
        }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            if manager.isExecutableFile(atPath: "\(directory)/pg_ctl") && manager.isExecutableFile(atPath: "\(directory)/initdb") {
                return String(directory)
            }
        }
        throw EmbeddedPostgresError(
            .binariesNotFound,
            "no PostgreSQL server binaries (initdb, pg_ctl) found; install them or set PSYNC_PG_BIN, or set DATABASE_URL")
    }
}
