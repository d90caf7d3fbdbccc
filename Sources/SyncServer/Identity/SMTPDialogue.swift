import Foundation

/// One mail sent over SMTP (RFC 5321), as a state machine without I/O: fed the server's bytes,
/// it returns what to send next, or that the mail was accepted, or why it was not. The driver
/// (``SMTPMailer``) only moves bytes.
///
/// The dialogue: the greeting (220), `EHLO` (250), with STARTTLS asked for `STARTTLS` (220),
/// TLS, and `EHLO` again (250), `AUTH PLAIN` when credentials are set (235), `MAIL FROM`
/// (250), `RCPT TO` (250/251), `DATA` (354), the message ending in `<CRLF>.<CRLF>` (250),
/// `QUIT`. Any other reply ends it with ``Failure``; so does a server that does not offer
/// STARTTLS when it was asked for (the mail is never sent in the clear instead).
struct SMTPDialogue {
    enum Action: Equatable {
        /// Send these bytes; then feed the next reply.
        case send([UInt8])
        /// Start TLS on the connection, then call ``secured()``.
        case startTLS
        /// Wait for more bytes: the reply is not complete.
        case read
        /// The server accepted the mail; send these bytes (`QUIT`) and close.
        case accepted(quit: [UInt8])
        /// The mail was not accepted; close (after sending `quit`, if any).
        case failed(Failure, quit: [UInt8]?)
    }

    struct Failure: Error, Equatable, CustomStringConvertible {
        /// The step that failed: `greeting`, `EHLO`, `AUTH`, `MAIL FROM`, `RCPT TO`, `DATA`, `message`.
        var step: String
        /// The server's reply code, 0 when the reply could not be read.
        var code: Int
        var text: String
        var description: String { "SMTP \(step) answered \(code) \(text)" }
    }

    private enum Step: String {
        case greeting, ehlo = "EHLO", startTLS = "STARTTLS", auth = "AUTH", mailFrom = "MAIL FROM", rcptTo = "RCPT TO", data = "DATA", message, done
    }

    private var step = Step.greeting
    private var replies = SMTPReplyReader()
    private let helloName: String
    private let sender: String
    private let recipient: String
    private let message: [UInt8]
    private let credentials: (user: String, password: String)?
    private var serverTakesUTF8 = false
    /// Whether to upgrade with STARTTLS before anything else is sent; cleared once secured.
    private var wantsTLS: Bool

    /// - Parameters:
    ///   - message: the whole message, headers and body, lines ending in CRLF; it is dot-stuffed here.
    init(
        helloName: String, sender: String, recipient: String, message: String, credentials: (user: String, password: String)?,
        startTLS: Bool = false
    ) {
        self.wantsTLS = startTLS
        self.helloName = helloName
        self.sender = sender
        self.recipient = recipient
        self.message = Self.dotStuffed(message)
        self.credentials = credentials
    }

    /// Feeds bytes the server sent.
    mutating func received(_ bytes: some Sequence<UInt8>) -> Action {
        replies.append(bytes)
        guard let reply = replies.next() else {
            if replies.isMalformed { return fail(code: 0, text: "an unreadable reply") }
            return .read
        }
        return answer(reply)
    }

    private mutating func answer(_ reply: SMTPReplyReader.Reply) -> Action {
        switch step {
        case .greeting:
            guard reply.code == 220 else { return fail(reply) }
            step = .ehlo
            return command("EHLO \(helloName)")
        case .ehlo:
            guard reply.code == 250 else { return fail(reply) }
            let extensions = reply.lines.dropFirst().map { $0.uppercased() }
            serverTakesUTF8 = extensions.contains("SMTPUTF8")
            if wantsTLS {
                guard extensions.contains("STARTTLS") else { return fail(code: 0, text: "the server does not offer STARTTLS") }
                step = .startTLS
                return command("STARTTLS")
            }
            if let credentials {
                step = .auth
                let token = Data(([0] + Array(credentials.user.utf8) + [0] + Array(credentials.password.utf8))).base64EncodedString()
                return command("AUTH PLAIN \(token)")
            }
            return mailFrom()
        case .startTLS:
            guard reply.code == 220 else { return fail(reply) }
            return .startTLS
        case .auth:
            guard reply.code == 235 else { return fail(reply) }
            return mailFrom()
        case .mailFrom:
            guard reply.code == 250 else { return fail(reply) }
            step = .rcptTo
            return command("RCPT TO:<\(recipient)>")
        case .rcptTo:
            guard reply.code == 250 || reply.code == 251 else { return fail(reply) }
            step = .data
            return command("DATA")
        case .data:
            guard reply.code == 354 else { return fail(reply) }
            step = .message
            return .send(message + Array("\r\n.\r\n".utf8))
        case .message:
            guard reply.code == 250 else { return fail(reply) }
            step = .done
            return .accepted(quit: Array("QUIT\r\n".utf8))
        case .done:
            return .read
        }
    }

    /// TLS is up: the dialogue starts again with `EHLO` (RFC 3207: what was learnt before is forgotten).
    mutating func secured() -> Action {
        wantsTLS = false
        step = .ehlo
        return command("EHLO \(helloName)")
    }

    private mutating func mailFrom() -> Action {
        let international = !(sender + recipient).allSatisfy(\.isASCII)
        if international && !serverTakesUTF8 {
            return fail(code: 0, text: "the server does not take international addresses (SMTPUTF8)")
        }
        step = .mailFrom
        return command("MAIL FROM:<\(sender)>" + (international ? " SMTPUTF8" : ""))
    }

    private func command(_ line: String) -> Action {
        .send(Array((line + "\r\n").utf8))
    }

    private mutating func fail(_ reply: SMTPReplyReader.Reply) -> Action {
        fail(code: reply.code, text: reply.lines.joined(separator: " "))
    }

    private mutating func fail(code: Int, text: String) -> Action {
        let failure = Failure(step: step.rawValue, code: code, text: text)
        let quit: [UInt8]? = step == .greeting ? nil : Array("QUIT\r\n".utf8)
        step = .done
        return .failed(failure, quit: quit)
    }

    /// The message with CRLF line ends and each line that starts with a dot given another
    /// (RFC 5321, 4.5.2), so no line of it ends the data early.
    static func dotStuffed(_ message: String) -> [UInt8] {
        let lines = message.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false)
        var trimmed = Array(lines)
        if trimmed.last == "" { trimmed.removeLast() }
        return Array(trimmed.map { $0.hasPrefix(".") ? "." + $0 : String($0) }.joined(separator: "\r\n").utf8)
    }
}

/// Reads SMTP replies from bytes: lines `NNN-text` continue a reply, `NNN text` (or `NNN`) ends it.
struct SMTPReplyReader {
    struct Reply: Equatable {
        var code: Int
        /// The text of each line, without the code.
        var lines: [String]
    }

    private var buffer: [UInt8] = []
    private var lines: [String] = []
    /// A line that is no reply line was read: the dialogue cannot go on.
    private(set) var isMalformed = false
    /// Longest reply line accepted (RFC 5321 allows 512 bytes; servers send longer).
    static let maximumLineBytes = 4_096

    mutating func append(_ bytes: some Sequence<UInt8>) {
        buffer.append(contentsOf: bytes)
    }

    /// The next complete reply, if the bytes hold one.
    mutating func next() -> Reply? {
        while let end = buffer.firstIndex(of: UInt8(ascii: "\n")) {
            var line = buffer[..<end]
            buffer.removeSubrange(...end)
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            let text = String(decoding: line, as: UTF8.self)
            let digits = text.prefix(3)
            guard digits.count == 3, digits.allSatisfy(\.isASCII), let code = Int(digits) else {
                isMalformed = true
                return nil
            }
            let separator = text.dropFirst(3).first
            lines.append(String(text.dropFirst(4)))
            if separator == "-" { continue }
            defer { lines = [] }
            return Reply(code: code, lines: lines)
        }
        if buffer.count > Self.maximumLineBytes { isMalformed = true }
        return nil
    }
}
