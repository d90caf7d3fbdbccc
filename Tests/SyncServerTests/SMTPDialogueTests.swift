@testable import SyncServer
import Foundation
import Testing

/// The SMTP dialogue without a network: each reply of a server, and what the client sends.
@Suite("SMTP dialogue")
struct SMTPDialogueTests {
    static func text(_ action: SMTPDialogue.Action) -> String? {
        if case .send(let bytes) = action { return String(decoding: bytes, as: UTF8.self) }
        return nil
    }

    func dialogue(credentials: (String, String)? = nil, recipient: String = "ann@example.com") -> SMTPDialogue {
        SMTPDialogue(
            helloName: "psync.test", sender: "no-reply@example.com", recipient: recipient,
            message: "Subject: Hi\r\n\r\nline one\n.hidden\n..two\nend", credentials: credentials)
    }

    @Test("a mail goes through every step, AUTH PLAIN with credentials; replies may come in pieces and span lines")
    func happyPath() {
        var smtp = dialogue(credentials: ("u", "p"))
        #expect(smtp.received(Array("220 mail.example".utf8)) == .read)
        #expect(Self.text(smtp.received(Array(" ESMTP ready\r\n".utf8))) == "EHLO psync.test\r\n")
        #expect(smtp.received(Array("250-mail.example\r\n250-AUTH PLAIN LOGIN\r\n".utf8)) == .read)
        let token = Data("\0u\0p".utf8).base64EncodedString()
        #expect(Self.text(smtp.received(Array("250 8BITMIME\r\n".utf8))) == "AUTH PLAIN \(token)\r\n")
        #expect(Self.text(smtp.received(Array("235 2.7.0 ok\r\n".utf8))) == "MAIL FROM:<no-reply@example.com>\r\n")
        #expect(Self.text(smtp.received(Array("250 ok\r\n".utf8))) == "RCPT TO:<ann@example.com>\r\n")
        #expect(Self.text(smtp.received(Array("250 ok\r\n".utf8))) == "DATA\r\n")
        // Lines that start with a dot get another, so none ends the data early.
        #expect(Self.text(smtp.received(Array("354 go on\r\n".utf8))) == "Subject: Hi\r\n\r\nline one\r\n..hidden\r\n...two\r\nend\r\n.\r\n")
        #expect(smtp.received(Array("250 queued\r\n".utf8)) == .accepted(quit: Array("QUIT\r\n".utf8)))
    }

    @Test("a refusal at any step ends the dialogue with the step, code and text, and a QUIT")
    func refusals() {
        var smtp = dialogue()
        _ = smtp.received(Array("220 hi\r\n".utf8))
        _ = smtp.received(Array("250 hi\r\n".utf8))
        _ = smtp.received(Array("250 ok\r\n".utf8))
        let action = smtp.received(Array("550 5.1.1 no such user\r\n".utf8))
        #expect(action == .failed(.init(step: "RCPT TO", code: 550, text: "5.1.1 no such user"), quit: Array("QUIT\r\n".utf8)))

        var refusedGreeting = dialogue()
        #expect(refusedGreeting.received(Array("554 go away\r\n".utf8)) == .failed(.init(step: "greeting", code: 554, text: "go away"), quit: nil))

        var badAuth = dialogue(credentials: ("u", "wrong"))
        _ = badAuth.received(Array("220 hi\r\n".utf8))
        _ = badAuth.received(Array("250 hi\r\n".utf8))
        if case .failed(let failure, _) = badAuth.received(Array("535 5.7.8 bad credentials\r\n".utf8)) {
            #expect(failure.step == "AUTH" && failure.code == 535)
        } else {
            Issue.record("a refused AUTH must fail")
        }
    }

    @Test("a reply that is not SMTP, or a line without end, fails instead of waiting for ever")
    func malformed() {
        var smtp = dialogue()
        guard case .failed(let failure, _) = smtp.received(Array("HTTP/1.1 400 Bad Request\r\n".utf8)) else {
            Issue.record("a non-SMTP reply must fail")
            return
        }
        #expect(failure.code == 0)
        var endless = dialogue()
        guard case .failed = endless.received([UInt8](repeating: UInt8(ascii: "2"), count: SMTPReplyReader.maximumLineBytes + 1)) else {
            Issue.record("an endless line must fail")
            return
        }
    }

    @Test("an international address needs a server that takes SMTPUTF8, and is sent with it")
    func international() {
        var plain = dialogue(recipient: "zoë@example.com")
        _ = plain.received(Array("220 hi\r\n".utf8))
        guard case .failed(let failure, _) = plain.received(Array("250 hi\r\n".utf8)) else {
            Issue.record("a server without SMTPUTF8 cannot take it")
            return
        }
        #expect(failure.text.contains("SMTPUTF8"))
        var capable = dialogue(recipient: "zoë@example.com")
        _ = capable.received(Array("220 hi\r\n".utf8))
        #expect(Self.text(capable.received(Array("250-hi\r\n250 SMTPUTF8\r\n".utf8))) == "MAIL FROM:<no-reply@example.com> SMTPUTF8\r\n")
    }

    @Test("verification codes: eight characters of the alphabet, read back in any case, with spaces or a dash")
    func codes() {
        let code = VerificationCode.make()
        #expect(code.count == 8 && code.allSatisfy(VerificationCode.alphabet.contains))
        #expect(VerificationCode.display("K7QM4XPA") == "K7QM-4XPA")
        #expect(VerificationCode.normalized(" k7qm-4xpa ") == "K7QM4XPA")
        #expect(VerificationCode.normalized("K7QM 4XPA") == "K7QM4XPA")
        for bad in ["", "K7QM4XP", "K7QM4XPAB", "K7QM4XP0", "K7QM4XP1", "K7QM4XPÄ"] {
            #expect(VerificationCode.normalized(bad) == nil, "\(bad)")
        }
    }
}

extension SMTPDialogueTests {
    @Test("with STARTTLS: the upgrade comes first, EHLO again after it, and a server that does not offer it is sent nothing")
    func startTLS() {
        var smtp = SMTPDialogue(
            helloName: "psync.test", sender: "no-reply@example.com", recipient: "ann@example.com", message: "Subject: Hi\r\n\r\nhi",
            credentials: ("u", "p"), startTLS: true)
        _ = smtp.received(Array("220 hi\r\n".utf8))
        #expect(Self.text(smtp.received(Array("250-hi\r\n250-STARTTLS\r\n250 AUTH PLAIN\r\n".utf8))) == "STARTTLS\r\n")
        #expect(smtp.received(Array("220 go ahead\r\n".utf8)) == .startTLS)
        #expect(Self.text(smtp.secured()) == "EHLO psync.test\r\n")
        // Secured: no second STARTTLS, on to AUTH.
        #expect(Self.text(smtp.received(Array("250-hi\r\n250 AUTH PLAIN\r\n".utf8)))?.hasPrefix("AUTH PLAIN ") == true)

        var plain = SMTPDialogue(
            helloName: "psync.test", sender: "no-reply@example.com", recipient: "ann@example.com", message: "hi", credentials: nil,
            startTLS: true)
        _ = plain.received(Array("220 hi\r\n".utf8))
        guard case .failed(let failure, _) = plain.received(Array("250-hi\r\n250 AUTH PLAIN\r\n".utf8)) else {
            Issue.record("a server without STARTTLS must not be sent the mail")
            return
        }
        #expect(failure.text.contains("STARTTLS"))
    }
}
