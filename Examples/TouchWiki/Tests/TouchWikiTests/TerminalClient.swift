import Foundation
import Synchronization
import SyncTesting
import Testing

/// The `touchwiki` terminal client, run as a real process against a test server, with its
/// own home folder (store and credentials) and `$EDITOR`.
struct TerminalClient: Sendable {
    let server: String
    let home: String

    /// The `touchwiki` binary built next to the test bundle.
    static var executable: String { BuiltExecutable.path("touchwiki") }

    /// Runs a command to its end; returns its exit status and what it printed.
    func run(_ arguments: String..., editing text: String? = nil) async throws -> (status: Int32, output: String) {
        let command = try start(arguments, editing: text)
        let status = await command.exit()
        return (status, command.output)
    }

    /// Runs a command that should succeed; returns what it printed.
    func succeed(_ arguments: String..., editing text: String? = nil) async throws -> String {
        let command = try start(arguments, editing: text)
        let status = await command.exit()
        #expect(status == 0, "touchwiki \(arguments.joined(separator: " ")) ended with \(status): \(command.output)")
        return command.output
    }

    /// Starts a command; `text`, when given, is what the "editor" writes into the file it edits.
    func start(_ arguments: [String], editing text: String? = nil) throws -> Command {
        var environment = ProcessInfo.processInfo.environment
        environment["TOUCHWIKI_SERVER"] = server
        environment["TOUCHWIKI_HOME"] = home
        environment["VISUAL"] = nil
        if let text {
            let file = home + "/edited-\(UUID().uuidString).md"
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            environment["EDITOR"] = "cp '\(file)'"
        }
        return try Command(executable: Self.executable, arguments: arguments, environment: environment)
    }

    /// A running `touchwiki` process: its output as it comes, and its end.
    final class Command: Sendable {
        private let process: Process
        private let printed = Mutex("")
        private let ended = Mutex<(status: Int32?, waiters: [CheckedContinuation<Int32, Never>])>((nil, []))

        init(executable: String, arguments: [String], environment: [String: String]) throws {
            guard FileManager.default.isExecutableFile(atPath: executable) else {
                throw TerminalClientMissing(path: executable)
            }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            process.environment = environment
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            self.process = process
            try process.run()
            // Read and wait on a thread of its own: blocking calls stay off the concurrency pool.
            let reader = pipe.fileHandleForReading
            Thread.detachNewThread { [self] in
                // `availableData` returns what the pipe holds as soon as it holds something
                // (`read(upToCount:)` would wait for the whole count), and nothing at its end.
                while case let chunk = reader.availableData, !chunk.isEmpty {
                    printed.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
                }
                process.waitUntilExit()
                let status = process.terminationStatus
                let waiters = ended.withLock { state in
                    state.status = status
                    defer { state.waiters = [] }
                    return state.waiters
                }
                for waiter in waiters { waiter.resume(returning: status) }
            }
        }

        /// What it printed so far.
        var output: String { printed.withLock { $0 } }

        /// Its exit status, once it ends.
        func exit() async -> Int32 {
            await withCheckedContinuation { continuation in
                let status = ended.withLock { state in
                    if state.status == nil { state.waiters.append(continuation) }
                    return state.status
                }
                if let status { continuation.resume(returning: status) }
            }
        }

        /// Stops it (SIGTERM).
        func stop() { if process.isRunning { process.terminate() } }
    }
}

struct TerminalClientMissing: Error, CustomStringConvertible {
    let path: String
    var description: String { "no touchwiki binary at \(path): build it first (`swift build --build-tests`)" }
}
