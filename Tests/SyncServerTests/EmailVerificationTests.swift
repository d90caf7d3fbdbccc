import EmbeddedPostgres
import Foundation
import PartitionSync
import SyncProtocol
@testable import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Verified identities (docs/SECURITY.md, "Identity"; issue 29, finding 6): an email binds to
/// rules and triggers only after its owner enters the code mailed to it through a real SMTP
/// server (aiosmtpd on loopback, scripts/smtp-sink.py).
@Suite("Email verification", .timeLimit(.minutes(30)))
struct EmailVerificationTests {
    /// `mail=<email>` is readable by the user whose account's email it is: a rule that trusts
    /// ``PermissionContext/email(ofUser:)``, as TouchWiki's and CouchChat's do.
    struct MailboxRule: PermissionRule {
        func canRead(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
            try await context.email(of: principal)?.lowercased() == partition.value
        }

        func canWrite(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
            try await canRead(principal, partition, context: context)
        }
    }

    /// A trigger of user events, so that they are recorded (the engine records only events
    /// some trigger wants).
    static let userEvents = Trigger(name: "test.user-events", kinds: [.user], handler: { _, _ in })

    static var application: SyncApplication { SyncApplication(permissions: permissions, triggers: [userEvents]) }

    static var permissions: Permissions {
        var permissions = TestServer.defaultPermissions
        permissions.register(MailboxRule(), for: PartitionKind("mail"))
        return permissions
    }

    static func requiring(_ sink: SMTPSink, user: String? = nil, _ change: @escaping @Sendable (inout EmailVerificationConfiguration) -> Void = { _ in })
        -> @Sendable (inout ServerConfiguration) -> Void
    {
        { configuration in
            var url = sink.url
            if let user { url = "smtp://\(user):secret%20word@127.0.0.1:\(sink.port)" }
            configuration.auth.emailVerification.required = true
            configuration.auth.emailVerification.mailer = SMTPMailer(
                settings: SMTPMailer.Settings(url: url, sender: "no-reply@psync.test", helloName: "psync.test")!,
                logger: TestPostgres.makeLogger("psync.test.mail"))
            change(&configuration.auth.emailVerification)
        }
    }

    /// The code in a verification mail (`K7QM-4XPA`).
    static func code(in mail: SMTPSink.Received) throws -> String {
        try #require(mail.verificationCode)
    }

    static func mailbox(_ email: String) -> String { "/v1/partitions/mail=\(email)/changes" }

    @Test("the code is mailed through SMTP with AUTH; until it is entered the email binds to nothing; wrong codes are counted; the right one binds it and records `verified`")
    func codeMailedAndEntered() async throws {
        try await SMTPSink.with(user: "psync", password: "secret word") { sink in
            try await TestDatabase.with { db in
                try await TestServer.with(database: db.url, application: Self.application, configure: Self.requiring(sink, user: "psync")) { server in
                    let http = server.http
                    let response = try await http.post("/v1/auth/register", ["email": "Ann@Example.com", "password": "correct horse battery"])
                    #expect(response.status == 201)
                    #expect(response.json?["emailVerified"] == false)
                    let token = try #require(response.json?["accessToken"]?.stringValue)
                    let userID = try #require(response.json?["userId"]?.stringValue)

                    let mail = try #require(try await sink.waitForMails(1).first)
                    #expect(mail.to == ["Ann@Example.com"])
                    #expect(mail.from == "no-reply@psync.test")
                    #expect(mail.header("Subject") == "Your PartitionSync verification code")
                    let code = try Self.code(in: mail)

                    #expect(try await http.get("/v1/auth/me", token: token).json == ["userId": .string(userID), "email": "Ann@Example.com", "emailVerified": false])
                    #expect(try await http.get(Self.mailbox("ann@example.com"), token: token).status == 403)

                    let wrong = code == "AAAA-AAAA" ? "BBBB-BBBB" : "AAAA-AAAA"
                    let guess = try await http.post("/v1/auth/email/verify", ["code": .string(wrong)], token: token)
                    #expect(guess.status == 400)
                    #expect(guess.json?["error"]?["code"] == "invalid_code")
                    #expect(guess.json?["error"]?["details"]?["attemptsLeft"] == 4)
                    // Not a code at all: answered, not counted.
                    #expect(try await http.post("/v1/auth/email/verify", ["code": "hello"], token: token).json?["error"]?["code"] == "invalid_code")
                    // A second code within the resend interval is refused.
                    #expect(try await http.post("/v1/auth/email/code", [:], token: token).status == 429)

                    let entered = try await http.post("/v1/auth/email/verify", ["code": .string(code.lowercased().replacingOccurrences(of: "-", with: " "))], token: token)
                    #expect(entered.status == 200)
                    #expect(entered.json?["emailVerified"] == true)
                    #expect(try await http.get(Self.mailbox("ann@example.com"), token: token).status == 200)
                    // Verified: no more codes are sent.
                    #expect(try await http.post("/v1/auth/email/code", [:], token: token).json?["sent"] == false)

                    let events = try await db.rows(
                        "SELECT operation || ' ' || coalesce(after->>'email', '-') FROM psync_events WHERE kind = 'user' AND user_id = '\(userID)' ORDER BY id")
                    #expect(events == ["registered Ann@Example.com", "verified Ann@Example.com"])
                    #expect(try sink.mails().count == 1)
                }
            }
        }
    }

    @Test("a squatter's unverified registration gets nothing, and gives the email up to its owner once the hold ends; a verified one keeps it")
    func squatterGivesUp() async throws {
        try await SMTPSink.with { sink in
            try await TestDatabase.with { db in
                // The hold is the code's lifetime: none here, so the squat ends at once.
                try await TestServer.with(database: db.url, permissions: Self.permissions, configure: Self.requiring(sink) { $0.codeLifetime = .zero }) { server in
                    let http = server.http
                    let mallory = try await http.register("ceo@bank.example", password: "correct horse battery")
                    #expect(try await http.get(Self.mailbox("ceo@bank.example"), token: mallory.accessToken).status == 403)

                    let owner = try await http.register("ceo@bank.example", password: "another good password")
                    #expect(owner.userID != mallory.userID)
                    // Mallory's account is gone, and her tokens with it.
                    #expect(try await TestTriggers.eventually { try await http.get("/v1/auth/me", token: mallory.accessToken).status == 401 })
                    #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_users WHERE email_key = 'ceo@bank.example'") == 1)
                    #expect(try await http.post("/v1/auth/login", ["email": "ceo@bank.example", "password": "correct horse battery"]).status == 401)
                }
            }
        }
        try await SMTPSink.with { sink in
            try await TestDatabase.with { db in
                try await TestServer.with(database: db.url, permissions: Self.permissions, configure: Self.requiring(sink) { $0.codeLifetime = .seconds(3600) }) { server in
                    let http = server.http
                    _ = try await http.register("ceo@bank.example", password: "correct horse battery")
                    // Within the hold the email stays with the account that registered it.
                    #expect(try await http.post("/v1/auth/register", ["email": "ceo@bank.example", "password": "another good password"]).status == 409)
                }
            }
        }
    }

    @Test("five wrong guesses spend a code; a new one replaces the old; a mail server that is down leaves the account made and answers unavailable")
    func guessesAndResends() async throws {
        try await SMTPSink.with { sink in
            try await TestDatabase.with { db in
                try await TestServer.with(database: db.url, permissions: Self.permissions, configure: Self.requiring(sink) { $0.resendInterval = .zero }) { server in
                    let http = server.http
                    let ann = try await http.register("ann@example.com", password: "correct horse battery")
                    let first = try Self.code(in: try #require(try await sink.waitForMails(1).first))
                    let wrong = first == "AAAA-AAAA" ? "BBBB-BBBB" : "AAAA-AAAA"
                    for left in (0..<5).reversed() {
                        let guess = try await http.post("/v1/auth/email/verify", ["code": .string(wrong)], token: ann.accessToken)
                        #expect(guess.json?["error"]?["details"]?["attemptsLeft"] == .int(Int64(left)))
                    }
                    // Spent: even the right code no longer works.
                    #expect(try await http.post("/v1/auth/email/verify", ["code": .string(first)], token: ann.accessToken).status == 400)

                    #expect(try await http.post("/v1/auth/email/code", [:], token: ann.accessToken).status == 202)
                    let second = try Self.code(in: try await sink.waitForMails(2)[1])
                    if second != first {
                        #expect(try await http.post("/v1/auth/email/verify", ["code": .string(first)], token: ann.accessToken).status == 400)
                    }
                    #expect(try await http.post("/v1/auth/email/verify", ["code": .string(second)], token: ann.accessToken).status == 200)
                }
            }
        }
        try await TestDatabase.with { db in
            // A port nobody listens on.
            let closed = try await SMTPSink.with { $0.port }
            try await TestServer.with(
                database: db.url, permissions: Self.permissions,
                configure: { configuration in
                    configuration.auth.emailVerification.required = true
                    configuration.auth.emailVerification.mailer = SMTPMailer(
                        settings: SMTPMailer.Settings(url: "smtp://127.0.0.1:\(closed)", sender: "no-reply@psync.test")!, logger: TestPostgres.makeLogger("psync.test.mail"))
                }
            ) { server in
                let http = server.http
                let response = try await http.post("/v1/auth/register", ["email": "bob@example.com", "password": "correct horse battery"])
                #expect(response.status == 201)
                let token = try #require(response.json?["accessToken"]?.stringValue)
                let again = try await http.post("/v1/auth/email/code", [:], token: token)
                #expect(again.status == 503)
                #expect(again.json?["error"]?["code"] == "unavailable")
            }
        }
    }

    @Test("without verification (no mail server) emails count as verified at registration, as before")
    func off() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: Self.permissions) { server in
                let ann = try await server.register("ann@example.com")
                #expect(try await server.http.get("/v1/auth/me", token: ann.accessToken).json?["emailVerified"] == true)
                #expect(try await server.http.get(Self.mailbox("ann@example.com"), token: ann.accessToken).status == 200)
            }
        }
    }

}

/// The mail server over TLS: STARTTLS required, or TLS from the start, the certificate checked
/// against the configured authority; never the clear text a server without STARTTLS would take.
@Suite("Email verification over TLS", .timeLimit(.minutes(30)))
struct MailOverTLSTests {
    /// A self-signed certificate for `localhost` and its key, made with openssl in `directory`.
    static func certificate(in directory: URL) async throws -> (certificate: String, key: String) {
        let certificate = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        let made = try await Command.run([
            "/usr/bin/env", "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
            "-out", certificate, "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
        ])
        guard made.status == 0 else { throw TestTimeout(what: "openssl to make a certificate: \(made.text)") }
        return (certificate, key)
    }

    /// Registers ann on a server that mails through `url` (trusting `caFile`); the status of asking for a code again.
    static func register(url: String, caFile: String?, db: TestDatabase) async throws -> Int {
        try await TestServer.with(
            database: db.url, permissions: EmailVerificationTests.permissions,
            configure: { configuration in
                configuration.auth.emailVerification.required = true
                configuration.auth.emailVerification.resendInterval = .zero
                configuration.auth.emailVerification.mailer = SMTPMailer(
                    settings: SMTPMailer.Settings(url: url, sender: "no-reply@psync.test", helloName: "psync.test", caFile: caFile)!,
                    logger: TestPostgres.makeLogger("psync.test.mail"))
            }
        ) { server in
            let ann = try await server.register("ann-\(UUID().uuidString.prefix(8))@example.com")
            return try await server.http.post("/v1/auth/email/code", [:], token: ann.accessToken).status
        }
    }

    @Test("STARTTLS and TLS from the start deliver the code; a server without STARTTLS, or an untrusted certificate, gets nothing (503)")
    func tls() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("psync-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = try await Self.certificate(in: directory)
        try await TestDatabase.with { db in
            try await SMTPSink.with(user: "psync", password: "secret", tls: files) { (sink: SMTPSink) async throws -> Void in
                #expect(try await Self.register(url: "smtp+starttls://psync:secret@localhost:\(sink.port)", caFile: files.certificate, db: db) == 202)
                let mails = try await sink.waitForMails(2)
                #expect(mails.allSatisfy { $0.data.contains("verification code is") })
                // The system's roots do not know this certificate: nothing is sent.
                #expect(try await Self.register(url: "smtp+starttls://psync:secret@localhost:\(sink.port)", caFile: nil, db: db) == 503)
                #expect(try sink.mails().count == 2)
            }
            try await SMTPSink.with(tls: files, implicitTLS: true) { (sink: SMTPSink) async throws -> Void in
                #expect(try await Self.register(url: "smtps://localhost:\(sink.port)", caFile: files.certificate, db: db) == 202)
                #expect(try await sink.waitForMails(2).count == 2)
            }
            // A server that does not offer STARTTLS is not sent the mail in the clear.
            try await SMTPSink.with { (sink: SMTPSink) async throws -> Void in
                #expect(try await Self.register(url: "smtp+starttls://localhost:\(sink.port)", caFile: files.certificate, db: db) == 503)
                #expect(try sink.mails().isEmpty)
            }
        }
    }
}
