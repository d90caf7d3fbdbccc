import Foundation
import Locking
import SyncTesting

#if canImport(Glibc)
import Glibc
#endif

/// The `psync-client-probe` executable (built with the tests) run as a separate process: an app
/// that writes increments and can be frozen or killed with a signal.
final class ProbeProcess: Sendable {
    let process: Process
    private let input: Pipe
    private let output = Output()
    let logPath: String

    /// What the probe printed, filled by the pipe's reader.
    private final class Output: Sendable {
        let state = Locked(State())
    }

    private struct State {
        var lines: [String] = []
        var partial = Data()
        var ended = false
        var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]
    }

    /// The probe binary built next to the test bundle.
    static var executable: String { BuiltExecutable.path("psync-client-probe") }

    /// Starts the probe; its log (standard error) goes to `logPath`.
    init(_ arguments: [String], logPath: String) throws {
        self.logPath = logPath
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments = arguments
        input = Pipe()
        let pipe = Pipe()
        process.standardInput = input
        process.standardOutput = pipe
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try log.seekToEnd()
        process.standardError = log
        pipe.fileHandleForReading.readabilityHandler = { [output] handle in
            let data = handle.availableData
            let waiters = output.state.withLock { state -> [CheckedContinuation<Void, Never>] in
                if data.isEmpty {
                    state.ended = true
                } else {
                    state.partial.append(data)
                    while let newline = state.partial.firstIndex(of: UInt8(ascii: "\n")) {
                        state.lines.append(String(decoding: state.partial[state.partial.startIndex..<newline], as: UTF8.self))
                        state.partial = Data(state.partial[state.partial.index(after: newline)...])
                    }
                }
                defer { state.waiters.removeAll() }
                return Array(state.waiters.values)
            }
            if data.isEmpty { handle.readabilityHandler = nil }
            for waiter in waiters { waiter.resume() }
        }
        try process.run()
    }

    /// The lines printed so far.
    var lines: [String] { output.state.withLock { $0.lines } }

    /// How many increments the probe said it queued (its last `queued N` line).
    var queued: Int {
        lines.reversed().lazy.compactMap { $0.hasPrefix("queued ") ? Int($0.dropFirst(7)) : nil }.first ?? 0
    }

    /// Waits until the probe printed `line` (woken by each new line, not polling).
    func waitFor(_ line: String, timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        let timer = Task { [output] in
            guard (try? await Task.sleep(until: deadline)) != nil else { return }
            let waiters = output.state.withLock { state in
                defer { state.waiters.removeAll() }
                return Array(state.waiters.values)
            }
            for waiter in waiters { waiter.resume() }
        }
        defer { timer.cancel() }
        while true {
            let (found, ended) = output.state.withLock { ($0.lines.contains(line), $0.ended) }
            if found { return }
            guard !ended, ContinuousClock.now < deadline else {
                throw TestTimeout(what: "\(line.debugDescription) from the probe (it printed \(lines); log \(logPath))")
            }
            await withCheckedContinuation { continuation in
                let resumeNow = output.state.withLock { state -> Bool in
                    // Checked again under the lock, so a line that came meanwhile is not missed.
                    if state.lines.contains(line) || state.ended { return true }
                    state.waiters[UUID()] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
    }

    /// Lets the probe go on past `ready`.
    func go() throws {
        try input.fileHandleForWriting.write(contentsOf: Data("go\n".utf8))
    }

    func signal(_ signal: Int32) {
        if process.isRunning { Glibc.kill(process.processIdentifier, signal) }
    }

    /// Kills the probe with SIGKILL, waits until it is gone and its output is read; returns the
    /// number of increments it said it queued.
    func kill() async throws -> Int {
        signal(SIGKILL)
        try await waitForEnd()
        return queued
    }

    private func waitForEnd() async throws {
        while process.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        // The output pipe's end: every line the probe wrote before it died has been read.
        while !output.state.withLock({ $0.ended }) { try await Task.sleep(for: .milliseconds(10)) }
    }

    deinit {
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
    }
}
