import EmbeddedPostgres
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real SMTP server on loopback for a test (`scripts/smtp-sink.py`, on aiosmtpd): it keeps
/// every mail it receives, for the test to read. Stopped when ``with(user:password:_:)`` ends.
public struct SMTPSink: Sendable {
    /// A mail as the sink received it.
    public struct Received: Sendable, Hashable {
        public var from: String
        public var to: [String]
        /// Headers and body, as sent.
        public var data: String

        /// The body, after the blank line that ends the headers.
        public var body: String {
            guard let end = data.range(of: "\r\n\r\n") ?? data.range(of: "\n\n") else { return "" }
            return String(data[end.upperBound...])
        }

        /// The verification code the mail gives (`K7QM-4XPA`), if any.
        public var verificationCode: String? {
            body.split(whereSeparator: { $0 == " " || $0 == "." || $0.isNewline })
                .first { $0.count == 9 && $0.dropFirst(4).first == "-" && $0.filter { $0 != "-" }.allSatisfy { $0.isUppercase || $0.isNumber } }
                .map(String.init)
        }

        /// The value of header `name` (the first of that name), unfolded.
        public func header(_ name: String) -> String? {
            let headers = data.components(separatedBy: "\n\n").first?.components(separatedBy: "\r\n\r\n").first ?? ""
            for line in headers.split(whereSeparator: \.isNewline) {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].lowercased() == name.lowercased() {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        }
    }

    public let port: Int
    let directory: URL

    /// The URL a server sends to it with.
    public var url: String { "smtp://127.0.0.1:\(port)" }

    /// Runs `body` with a sink started for it; with `user`, the sink requires AUTH with them;
    /// with `tls` (PEM files of its certificate and key) it requires STARTTLS, or with
    /// `implicitTLS` speaks TLS from the start.
    public static func with<Result: Sendable>(
        user: String? = nil, password: String? = nil, tls: (certificate: String, key: String)? = nil, implicitTLS: Bool = false,
        _ body: @Sendable (SMTPSink) async throws -> Result
    ) async throws -> Result {
        try await installTools()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("psync-smtp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var arguments = ["python3", Self.script.path, directory.path]
        if let user { arguments += ["--user", user, "--password", password ?? ""] }
        if let tls { arguments += ["--tls-cert", tls.certificate, "--tls-key", tls.key] + (implicitTLS ? ["--implicit-tls"] : []) }
        process.arguments = arguments
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        try process.run()
        do {
            let port = try await readPort(from: output.fileHandleForReading)
            let result = try await body(SMTPSink(port: port, directory: directory))
            await stop(process, input: input)
            return result
        } catch {
            await stop(process, input: input)
            throw error
        }
    }

    /// Ends the sink with SIGKILL (a process started from a concurrency thread may inherit a
    /// mask that blocks SIGTERM, and its stdin's other end may be held by other children) and
    /// waits, without blocking a thread, until it is gone.
    private static func stop(_ process: Process, input: Pipe) async {
        try? input.fileHandleForWriting.close()
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        let deadline = ContinuousClock.now + .seconds(10)
        while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
    }

    /// The mails received so far, in order.
    public func mails() throws -> [Received] {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
        return try files.map { name in
            let data = try Data(contentsOf: directory.appendingPathComponent(name))
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
            return Received(
                from: object["from"] as? String ?? "", to: object["to"] as? [String] ?? [], data: object["data"] as? String ?? "")
        }
    }

    /// Waits until at least `count` mails arrived; returns them all.
    public func waitForMails(_ count: Int, timeout: Duration = .seconds(20)) async throws -> [Received] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let received = try mails()
            if received.count >= count { return received }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestTimeout(what: "\(count) mail(s) at the SMTP sink")
    }

    /// scripts/install-test-tools.sh, run once per test process (it installs the pinned
    /// aiosmtpd when it is missing), so `swift test` needs no step before it.
    private static let installation = Task { try await Command.run(["/bin/sh", installScript.path]) }

    static func installTools() async throws {
        let output = try await installation.value
        guard output.status == 0 else {
            throw TestTimeout(what: "scripts/install-test-tools.sh (it exited \(output.status): \(output.text.suffix(500)))")
        }
    }

    static var installScript: URL { script.deletingLastPathComponent().appendingPathComponent("install-test-tools.sh") }

    static var script: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/smtp-sink.py")
    }

    private static func readPort(from handle: FileHandle) async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                var line = Data()
                while let byte = try? handle.read(upToCount: 1), let first = byte.first {
                    if first == UInt8(ascii: "\n") { break }
                    line.append(first)
                }
                let text = String(decoding: line, as: UTF8.self)
                if text.hasPrefix("listening "), let port = Int(text.dropFirst("listening ".count)) {
                    continuation.resume(returning: port)
                } else {
                    continuation.resume(throwing: TestTimeout(what: "the SMTP sink to start (it said \"\(text)\"; run scripts/install-test-tools.sh)"))
                }
            }
        }
    }
}
