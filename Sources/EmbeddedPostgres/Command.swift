import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a program to completion without blocking a thread of the concurrency pool (the
/// embedded cluster's commands, and the tests' helper programs).
///
/// Spawned with `posix_spawn` and reaped with `waitpid` on a thread of its own rather than
/// through Foundation's `Process`, which on Linux can miss the exit of a child whose own
/// child (the server `pg_ctl start` leaves running) outlives it. Output goes to a temporary
/// file, not a pipe, for the same reason: the server would hold a pipe open forever.
package enum Command {
    package struct Output {
        package var status: Int32
        package var text: String
    }

    /// Runs `arguments[0]` with the rest as arguments; `asUser` runs it through `runuser`
    /// (only possible as root). `environment` is added to this process's environment (a
    /// password goes there, never on the command line, where every local user can read it).
    package static func run(_ arguments: [String], asUser user: String? = nil, environment: [String: String] = [:]) async throws -> Output {
        var arguments = arguments
        if let user { arguments = ["/usr/sbin/runuser", "-u", user, "--"] + arguments }
        let outputPath = NSTemporaryDirectory() + "psync-command-\(UUID().uuidString).log"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let pid = try spawn(arguments, outputPath: outputPath, environment: environment)
        let status = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
                continuation.resume(returning: status)
            }
        }
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // WIFEXITED / WEXITSTATUS, which Swift does not import as functions.
        let exitStatus: Int32 = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return Output(status: exitStatus, text: text)
    }

    /// Runs a command and waits for it on the calling thread: for `atexit` handlers.
    static func runBlocking(_ arguments: [String]) {
        guard let pid = try? spawn(arguments, outputPath: "/dev/null") else { return }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), looked up when first
    /// needed: Swift's Glibc module does not declare it.
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        #if canImport(Glibc)
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
        #else
        return nil
        #endif
    }()

    /// Closes every descriptor from `first` on in the spawned program.
    private static func closeFrom(_ first: Int32, _ actions: inout posix_spawn_file_actions_t) {
        _ = addCloseFrom?(&actions, first)
    }

    private static func spawn(_ arguments: [String], outputPath: String, environment: [String: String] = [:]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of this process's: a server the command leaves running (`pg_ctl start`)
        // would otherwise hold every descriptor open at the spawn for its whole life, among them
        // the socket through which Foundation's `Process` learns that another child exited (a
        // test then waited forever for a server it had stopped), and this process's own
        // connections and listening sockets.
        closeFrom(3, &actions)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result: Int32
        if environment.isEmpty {
            result = posix_spawn(&pid, arguments[0], &actions, nil, argv, environ)
        } else {
            var entries = ProcessInfo.processInfo.environment
            for (name, value) in environment { entries[name] = value }
            let envp: [UnsafeMutablePointer<CChar>?] = entries.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer { envp.forEach { free($0) } }
            result = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        }
        guard result == 0 else {
            throw EmbeddedPostgresError(.commandFailed, "cannot run \(arguments[0]): \(String(cString: strerror(result)))")
        }
        return pid
    }
}
