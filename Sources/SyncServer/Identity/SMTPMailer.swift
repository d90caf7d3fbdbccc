import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import SyncStorage

/// Sends mail to an SMTP server (`PSYNC_SMTP_URL`), one connection per mail, the whole
/// dialogue bounded by ``Settings/timeout``: `smtps://` over TLS from the start (port 465),
/// `smtp+starttls://` upgraded with STARTTLS before anything else is said (port 587; a server
/// that does not offer it gets nothing), `smtp://` in the clear (port 25: a relay on this host
/// or a private network). Certificates are verified against the system's roots, or the CA file
/// given. The dialogue itself is ``SMTPDialogue``; this only moves its bytes.
package struct SMTPMailer: Mailer {
    /// How the connection is protected.
    package enum Security: String, Sendable, Hashable {
        case none = "smtp"
        case startTLS = "smtp+starttls"
        case implicitTLS = "smtps"
    }

    package struct Settings: Sendable, Hashable {
        package var host: String
        package var port: Int
        package var security: Security
        /// PEM file of the certificate authorities to trust instead of the system's.
        package var caFile: String?
        package var user: String?
        package var password: String?
        /// The `From` address of every mail.
        package var sender: String
        /// The name the server gives itself in `EHLO`.
        package var helloName: String
        /// How long one mail may take, connection included. Default 30 seconds.
        package var timeout: Duration = .seconds(30)

        /// Reads `smtp://`, `smtp+starttls://` or `smtps://`, then `[user:password@]host[:port]`
        /// (ports 25, 587 and 465 by default); `nil` for anything else.
        package init?(url: String, sender: String, helloName: String = "localhost", caFile: String? = nil) {
            guard let components = URLComponents(string: url), let scheme = components.scheme.flatMap(Security.init(rawValue:)),
                let host = components.host, !host.isEmpty
            else { return nil }
            self.host = host
            self.security = scheme
            self.caFile = caFile
            switch scheme {
            case .none: self.port = components.port ?? 25
            case .startTLS: self.port = components.port ?? 587
            case .implicitTLS: self.port = components.port ?? 465
            }
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
            credentials: settings.user.map { ($0, settings.password ?? "") }, startTLS: settings.security == .startTLS)
        let tls = settings.security == .none ? nil : try tlsContext(settings)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(10))
            .connect(host: settings.host, port: settings.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if settings.security == .implicitTLS, let tls {
                        try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: sniName(settings.host)))
                    }
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
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
                case .startTLS:
                    guard let tls else { throw SMTPDialogue.Failure(step: "STARTTLS", code: 0, text: "no TLS settings") }
                    // At the head of the pipeline, next to the socket: what follows is encrypted.
                    // Made and added on the channel's event loop, where the handler lives.
                    let serverHostname = sniName(settings.host)
                    let pipeline = channel.channel.pipeline
                    try await channel.channel.eventLoop.submit {
                        try pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: tls, serverHostname: serverHostname), position: .first)
                    }.get()
                    action = dialogue.secured()
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

    /// The TLS settings: the system's roots, or only those of `caFile`; the server's name is verified.
    private static func tlsContext(_ settings: Settings) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let caFile = settings.caFile { configuration.trustRoots = .file(caFile) }
        return try NIOSSLContext(configuration: configuration)
    }

    /// The name sent (SNI) and verified: the host, unless it is an address.
    private static func sniName(_ host: String) -> String? {
        host.allSatisfy { $0.isNumber || $0 == "." || $0 == ":" } ? nil : host
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
