import Foundation
import Logging
import NIOCore
import NIOPosix
import SyncStorage

/// Sends mail to an SMTP server (`PSYNC_SMTP_URL`, `smtp://[user:password@]host[:port]`),
/// one connection per mail, the whole dialogue bounded by ``timeout``. The dialogue itself is
/// ``SMTPDialogue``; this only moves its bytes.
package struct SMTPMailer: Mailer {
    package struct Settings: Sendable, Hashable {
        package var host: String
        package var port: Int
        package var user: String?
        package var password: String?
        /// The `From` address of every mail.
        package var sender: String
        /// The name the server gives itself in `EHLO`.
        package var helloName: String
        /// How long one mail may take, connection included. Default 30 seconds.
        package var timeout: Duration = .seconds(30)

        /// Reads `smtp://[user:password@]host[:port]` (port 25 by default); `nil` for anything else.
        package init?(url: String, sender: String, helloName: String = "localhost") {
            guard let components = URLComponents(string: url), components.scheme == "smtp",
                let host = components.host, !host.isEmpty
            else { return nil }
            self.host = host
            self.port = components.port ?? 25
            self.user = components.user?.removingPercentEncoding
            self.password = components.password?.removingPercentEncoding
            self.sender = sender
            self.helloName = helloName
        }
    }

    let settings: Settings
    let logger: Logger

    package init(settings: Settings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    package func send(_ mail: Mail) async throws {
        let settings = self.settings
        try await withDeadline(settings.timeout, "sending mail to \(settings.host):\(settings.port)") {
            try await Self.deliver(mail, settings: settings)
        }
        logger.info("mail sent", metadata: ["to": "\(mail.to)", "subject": "\(mail.subject)"])
    }

    private static func deliver(_ mail: Mail, settings: Settings) async throws {
        var dialogue = SMTPDialogue(
            helloName: settings.helloName, sender: settings.sender, recipient: mail.to,
            message: message(mail, settings: settings),
            credentials: settings.user.map { ($0, settings.password ?? "") })
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(10))
            .connect(host: settings.host, port: settings.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        try await channel.executeThenClose { inbound, outbound in
            var bytes = inbound.makeAsyncIterator()
            var action = SMTPDialogue.Action.read
            while true {
                switch action {
                case .read:
                    guard let buffer = try await bytes.next() else {
                        throw SMTPDialogue.Failure(step: "reading", code: 0, text: "the server closed the connection")
                    }
                    action = dialogue.received(buffer.readableBytesView)
                case .send(let command):
                    try await outbound.write(ByteBuffer(bytes: command))
                    action = dialogue.received([])
                case .accepted(let quit):
                    try? await outbound.write(ByteBuffer(bytes: quit))
                    return
                case .failed(let failure, let quit):
                    if let quit { try? await outbound.write(ByteBuffer(bytes: quit)) }
                    throw failure
                }
            }
        }
    }

    /// The message's headers and text. Every header value is the server's own or an address
    /// that passed ``AuthService/checkEmail(_:)`` (no line breaks can be injected).
    static func message(_ mail: Mail, settings: Settings) -> String {
        let date = Date()
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        let headers = [
            "From: \(settings.sender)",
            "To: \(mail.to)",
            "Subject: \(mail.subject)",
            "Date: \(formatter.string(from: date))",
            "Message-ID: <\(UUID().uuidString.lowercased())@\(settings.helloName)>",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: 8bit",
        ]
        return (headers + [""] + [mail.body]).joined(separator: "\r\n")
    }
}
