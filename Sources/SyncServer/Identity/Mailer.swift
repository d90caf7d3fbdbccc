import Foundation
import Logging

/// Sends the server's mail: email verification codes (docs/SECURITY.md, "Identity").
package protocol Mailer: Sendable {
    /// Sends `mail`; throws when it could not be handed to the mail server.
    func send(_ mail: Mail) async throws
}

/// A plain-text mail.
package struct Mail: Sendable, Hashable {
    package var to: String
    package var subject: String
    package var body: String

    package init(to: String, subject: String, body: String) {
        self.to = to
        self.subject = subject
        self.body = body
    }
}

/// Writes each mail to the server's log instead of sending it: what a development server
/// without `PSYNC_SMTP_URL` does, so the codes can be read in its terminal.
package struct LogMailer: Mailer {
    let logger: Logger

    package init(logger: Logger) {
        self.logger = logger
    }

    package func send(_ mail: Mail) async throws {
        logger.notice(
            "mail not sent (no SMTP server is configured, PSYNC_SMTP_URL): \(mail.subject)\n\(mail.body)",
            metadata: ["to": "\(mail.to)"])
    }
}
