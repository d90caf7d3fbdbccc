import Foundation
import Locking
import SyncTesting

/// One user of the `rchat` executable: every command runs as a separate process with the
/// user's own store folder, as a person at a terminal would run it.
struct RChatCLI: Sendable {
    let email: String
    let home: String
    let server: String

    init(email: String, server: String, root: String) {
        self.email = email
        self.server = server
        self.home = root + "/" + email
    }

    /// The `rchat` binary built next to the test bundle.
    static var executable: String { BuiltExecutable.path("rchat") }

    /// Runs one command to its end; returns its exit status and everything it printed.
    func run(_ arguments: [String], wait: Int = 5, timeout: Duration = .seconds(60)) async throws -> (status: Int32, output: String) {
        let running = try start(arguments, wait: wait)
        let status = try await running.waitForExit(timeout: timeout)
        return (status, running.output)
    }

    /// Runs one command and returns what it printed; throws when it fails.
    @discardableResult
    func ok(_ arguments: [String], wait: Int = 5) async throws -> String {
        let (status, output) = try await run(arguments, wait: wait)
        guard status == 0 else { throw CommandFailed(arguments: arguments, status: status, output: output) }
        return output
    }

    /// Starts a long-running command (`watch`).
    func start(_ arguments: [String], wait: Int = 5) throws -> RunningCommand {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments = arguments + ["--server", server, "--home", home, "--wait", "\(wait)"]
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("RCHAT_") }
        return try RunningCommand(process)
    }

    /// Runs `arguments` until its output contains `text`, at most `attempts` times, a second
    /// apart (for what a trigger brings about shortly after a command).
    func eventually(_ arguments: [String], contains text: String, attempts: Int = 30) async throws -> String {
        var output = ""
        for _ in 0..<attempts {
            output = try await ok(arguments)
            if output.contains(text) { return output }
            try await Task.sleep(for: .seconds(1))
        }
        throw CommandFailed(arguments: arguments, status: 0, output: "never printed \(text.debugDescription):\n\(output)")
    }
}

/// A command started in the background, its output collected as it comes.
final class RunningCommand: Sendable {
    let process: Process
    private let collected = OutputBuffer()

    init(_ process: Process) throws {
        self.process = process
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        pipe.fileHandleForReading.readabilityHandler = { [collected] handle in
            let data = handle.availableData
            guard !data.isEmpty else {
                handle.readabilityHandler = nil
                return
            }
            collected.text.withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
    }

    var output: String { collected.text.withLock { $0 } }

    /// Waits until the output contains `text`.
    func waitFor(_ text: String, timeout: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if output.contains(text) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestTimeout(what: "\(text.debugDescription) in the output of rchat \(process.arguments?.first ?? ""):\n\(output)")
    }

    /// Where the output is now, for ``waitFor(_:since:timeout:)``.
    var mark: Int { output.utf8.count }

    /// Waits until the output printed after `mark` contains `text`.
    func waitFor(_ text: String, since mark: Int, timeout: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if String(decoding: output.utf8.dropFirst(mark), as: UTF8.self).contains(text) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestTimeout(what: "\(text.debugDescription) in the output of rchat \(process.arguments?.first ?? "") after byte \(mark):\n\(output)")
    }

    /// Waits until the process exits and its output is read; returns its status.
    func waitForExit(timeout: Duration) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                process.terminate()
                throw TestTimeout(what: "rchat \(process.arguments?.first ?? "") to exit:\n\(output)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(50))  // the last bytes of the pipe
        return process.terminationStatus
    }

    /// Stops the command (SIGTERM) and waits for it.
    func stop() async {
        if process.isRunning { process.terminate() }
        _ = try? await waitForExit(timeout: .seconds(10))
    }
}

/// What a command printed so far, appended to by the pipe's reader.
final class OutputBuffer: Sendable {
    let text = Locked("")
}

struct CommandFailed: Error, CustomStringConvertible {
    var arguments: [String]
    var status: Int32
    var output: String
    var description: String { "rchat \(arguments.joined(separator: " ")) exited with \(status):\n\(output)" }
}
