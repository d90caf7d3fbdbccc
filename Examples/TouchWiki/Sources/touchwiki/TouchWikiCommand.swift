import ArgumentParser
import Foundation
import SyncProtocol
import TouchWiki
import TouchWikiClient

/// `touchwiki`, TouchWiki's terminal client: wikis, members, pages, drafts edited in
/// `$EDITOR`, and `[[links]]` followed by name. It works offline from its store; queued
/// changes go with the next command that reaches the server.
@main
struct TouchWikiCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "touchwiki", abstract: "TouchWiki in a terminal.",
        subcommands: [
            Register.self, Verify.self, Login.self, Wikis.self, Create.self, Members.self, AddMember.self, RemoveMember.self, Pages.self,
            Show.self, Follow.self, Edit.self, Drafts.self, Publish.self, Discard.self, Watch.self,
        ])
}

/// Where the server and the local store are.
struct Options: ParsableArguments {
    @Option(help: "The server (env TOUCHWIKI_SERVER).")
    var server: String = ProcessInfo.processInfo.environment["TOUCHWIKI_SERVER"] ?? "http://127.0.0.1:8080"
    @Option(help: "Folder of the local store and credentials (env TOUCHWIKI_HOME).")
    var home: String = ProcessInfo.processInfo.environment["TOUCHWIKI_HOME"] ?? (NSHomeDirectory() + "/.touchwiki")
    @Option(help: "Seconds to wait for the server before working offline.")
    var wait: Int = 5

    var waiting: Duration { .seconds(wait) }

    /// Runs `body` with a connected session, then sends what was queued (if it can).
    func run(_ body: (TouchWikiSession) async throws -> Void) async throws {
        try await perform { session in
            try await body(session)
            return nil
        }
    }

    /// Runs a command that writes: `done` (what `body` returns) is printed once the server has
    /// taken every write, and not when a write is still queued (offline) or was refused.
    func write(_ body: (TouchWikiSession) async throws -> String) async throws {
        try await perform(body)
    }

    /// Runs `body`, sends what was queued (if it can), and tells the truth about it: a write the
    /// server refused is printed with its code and the command exits 1; writes still queued
    /// are said to be queued.
    private func perform(_ body: (TouchWikiSession) async throws -> String?) async throws {
        guard let url = URL(string: server) else { throw ValidationError("--server is not a URL") }
        let session = try TouchWikiSession(server: url, home: home)
        let connection = Task { await session.client.run() }
        defer { connection.cancel() }
        let done = try await body(session)
        if await session.client.waitUntilOnline(timeout: waiting) {
            _ = await session.client.waitUntilUploaded(timeout: waiting * 6)
        }
        let pending = try await session.client.unacknowledgedWrites()
        connection.cancel()
        await connection.value
        let refusals = await session.client.refusedWrites
        guard refusals.isEmpty else {
            for refusal in refusals {
                FileHandle.standardError.write(Data("\(refusal)\n".utf8))
            }
            throw ExitCode(1)
        }
        if pending > 0 {
            print("\(pending) change(s) queued; the next command that reaches the server sends them.")
        } else if let done {
            print(done)
        }
    }
}

/// A wiki named on the command line, by its id or its title.
struct WikiArgument: ParsableArguments {
    @Argument(help: "The wiki: its id, or its title.") var wiki: String

    func id(_ session: TouchWikiSession, _ options: Options) async throws -> String {
        try await session.wikiID(wiki, wait: options.waiting)
    }
}

struct Register: AsyncParsableCommand {
    @OptionGroup var options: Options
    @Option var email: String
    @Option var password: String

    func run() async throws {
        try await options.run { session in
            try await session.client.register(email: email, password: password)
            print("Registered \(email).")
            if try await !session.client.emailVerified() {
                print("A code was mailed to \(email): enter it with `touchwiki verify CODE`; until then no wiki that names you admits you.")
            }
        }
    }
}

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify your email with the code mailed to it; --resend mails a new code instead.")
    @OptionGroup var options: Options
    @Argument(help: "The code, like K7QM-4XPA.") var code: String?
    @Flag(help: "Mail a new code.") var resend = false

    func run() async throws {
        guard resend || code != nil else { throw ValidationError("give the code, or --resend") }
        try await options.run { session in
            if resend {
                print(try await session.client.sendVerificationCode() ? "A new code is on its way." : "Your email is verified already.")
            } else if let code {
                try await session.client.verifyEmail(code: code)
                print("Your email is verified.")
            }
        }
    }
}

struct Login: AsyncParsableCommand {
    @OptionGroup var options: Options
    @Option var email: String
    @Option var password: String

    func run() async throws {
        try await options.run { session in
            try await session.client.login(email: email, password: password)
            print("Signed in as \(email).")
        }
    }
}

struct Wikis: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The wikis you own or are a member of.")
    @OptionGroup var options: Options

    func run() async throws {
        try await options.run { session in
            let wikis = try await session.wikis(wait: options.waiting)
            if wikis.isEmpty { print("No wikis yet: `touchwiki create TITLE` makes one.") }
            for wiki in wikis { print("\(wiki.title) (\(wiki.id)), owned by \(wiki.owner_id)") }
        }
    }
}

struct Create: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Make a wiki that you own.")
    @OptionGroup var options: Options
    @Argument var title: String

    func run() async throws {
        try await options.write { session in
            let id = try await session.createWiki(title: title)
            return "Created \(title) (\(id))."
        }
    }
}

struct Members: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "A wiki's owner and members.")
    @OptionGroup var options: Options
    @OptionGroup var wiki: WikiArgument

    func run() async throws {
        try await options.run { session in
            let wiki = try await session.wiki(try await self.wiki.id(session, options), wait: options.waiting)
            print("owner: \(wiki.owner_id)")
            for member in wiki.members ?? [] { print("member: \(member)") }
        }
    }
}

struct AddMember: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Let someone (by email) read and edit a wiki you own.")
    @OptionGroup var options: Options
    @OptionGroup var wiki: WikiArgument
    @Argument var email: String

    func run() async throws {
        try await options.write { session in
            try await session.setMember(email, of: try await wiki.id(session, options), adding: true, wait: options.waiting)
            return "\(email) is a member of \(wiki.wiki)."
        }
    }
}

struct RemoveMember: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Take someone out of a wiki you own; their open views of it end.")
    @OptionGroup var options: Options
    @OptionGroup var wiki: WikiArgument
    @Argument var email: String

    func run() async throws {
        try await options.write { session in
            try await session.setMember(email, of: try await wiki.id(session, options), adding: false, wait: options.waiting)
            return "\(email) is no longer a member of \(wiki.wiki)."
        }
    }
}

struct Pages: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "A wiki's pages (yours in draft marked).")
    @OptionGroup var options: Options
    @OptionGroup var wiki: WikiArgument

    func run() async throws {
        try await options.run { session in
            let id = try await wiki.id(session, options)
            let drafts = Set(try await session.drafts().filter { $0.wiki == id }.map(\.page))
            let (found, pages) = try await session.contents(of: id, wait: options.waiting)
            if let found { print("\(found.title), owned by \(found.owner_id)") }
            if pages.isEmpty { print("No pages yet: `touchwiki edit WIKI NAME` writes one.") }
            for page in pages { print(page.name + (drafts.contains(page.name) ? " (draft)" : "")) }
        }
    }
}

/// Prints a page: its wiki's title and its name, its text, then its links, numbered for
/// `touchwiki follow`.
func show(_ page: WikiPage?, named name: String, draft: Bool, session: TouchWikiSession) async throws {
    guard let page else {
        print("\(name): no such page yet (`touchwiki edit` writes it).")
        return
    }
    var heading = "== \(page.name)"
    if let wiki = try await session.wiki(of: page) { heading = "== \(wiki.title) › \(page.name)" }
    if draft { heading += " (your draft: not shared until you publish it)" }
    if let updated = page.updated_at { heading += " · updated \(JSONValue.iso8601(updated))" }
    print(heading)
    print(page.markdown ?? "")
    for (number, link) in page.links.enumerated() { print("[\(number + 1)] → \(link)") }
}

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show a page, with its [[links]] numbered.")
    @OptionGroup var options: Options
    @OptionGroup var wiki: WikiArgument
    @Argument(help: "The page's name.") var page: String

    func run() async throws {
        try await options.run { session in
            let id = try await wiki.id(session, options)
            let draft = try await session.drafts().contains { $0 == (id, page) }
            try await show(try await session.page(page, of: id, wait: options.waiting), named: page, draft: draft, session: session)
        }
    }
}

struct Follow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the page that a page's link number N names (by name: no query).")
    @OptionGroup var options: Options
    @OptionGroup var wiki: WikiArgument
    @Argument(help: "The page with the link.") var page: String
    @Argument(help: "The link's number, as `show` prints it.") var link: Int

    func run() async throws {
        try await options.run { session in
            let id = try await wiki.id(session, options)
            let links = try await session.page(page, of: id, wait: options.waiting)?.links ?? []
            guard links.indices.contains(link - 1) else { throw ValidationError("\(page) has \(links.count) link(s)") }
            let target = links[link - 1]
            let draft = try await session.drafts().contains { $0 == (id, target) }
            try await show(try await session.page(target, of: id, wait: options.waiting), named: target, draft: draft, session: session)
        }
    }
}

struct Edit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Edit a page in $EDITOR; it is saved as your draft, which nobody else sees until you publish it.")
    @OptionGroup var options: Options
    @OptionGroup var wiki: WikiArgument
    @Argument(help: "The page's name (a new name makes a new page).") var page: String

    func run() async throws {
        guard WikiPage.isName(page) else { throw ValidationError("a page's name has 1 to \(WikiPage.maximumNameLength) characters, without brackets") }
        try await options.run { session in
            let id = try await wiki.id(session, options)
            let text = try await session.page(page, of: id, wait: options.waiting)?.markdown ?? "# \(page)\n"
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("touchwiki-\(UUID().uuidString).md")
            try text.write(to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            try runEditor(on: file)
            let edited = try String(contentsOf: file, encoding: .utf8)
            guard edited != text else {
                print("No change.")
                return
            }
            try await session.saveDraft(edited, page: page, of: id)
            print("Saved your draft of \(page); `touchwiki publish \(shellQuoted(wiki.wiki)) \(shellQuoted(page))` shares it.")
        }
    }

    /// Runs `$EDITOR` (or `vi`) on the file, in this terminal, and waits for it.
    private func runEditor(on file: URL) throws {
        let editor = ProcessInfo.processInfo.environment["VISUAL"] ?? ProcessInfo.processInfo.environment["EDITOR"] ?? "vi"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        // The editor's command may carry arguments (`code --wait`): the shell splits it.
        process.arguments = ["-c", editor + " \"$1\"", "touchwiki-editor", file.path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ValidationError("\(editor) ended with status \(process.terminationStatus): nothing saved") }
    }
}

struct Drafts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Your drafts, not yet shared.")
    @OptionGroup var options: Options

    func run() async throws {
        try await options.run { session in
            let drafts = try await session.drafts()
            if drafts.isEmpty { print("No drafts.") }
            for draft in drafts { print("\(draft.wiki): \(draft.page)") }
        }
    }
}

struct Publish: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Share your draft of a page.")
    @OptionGroup var options: Options
    @OptionGroup var wiki: WikiArgument
    @Argument(help: "The page's name.") var page: String

    func run() async throws {
        try await options.write { session in
            try await session.publish(page, of: try await wiki.id(session, options))
            return "Published \(page)."
        }
    }
}

struct Discard: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Forget your draft of a page.")
    @OptionGroup var options: Options
    @OptionGroup var wiki: WikiArgument
    @Argument(help: "The page's name.") var page: String

    func run() async throws {
        try await options.run { session in
            try await session.discard(page, of: try await wiki.id(session, options))
            print("Discarded your draft of \(page).")
        }
    }
}

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a page, and again each time it changes, until you stop it (Ctrl-C) or lose access to its wiki.")
    @OptionGroup var options: Options
    @OptionGroup var wiki: WikiArgument
    @Argument(help: "The page's name.") var page: String

    func run() async throws {
        var ended: SyncError.Code?
        try await options.run { session in
            let id = try await wiki.id(session, options)
            for await change in try await session.watch(page, of: id) {
                switch change {
                case .page(let shown):
                    let draft = try await session.drafts().contains { $0 == (id, page) }
                    try await show(shown, named: page, draft: draft, session: session)
                case .accessEnded(let code):
                    print("Your access to \(wiki.wiki) ended (\(code.rawValue)).")
                    ended = code
                }
                fflush(nil)   // every stream: the output may be a pipe
            }
        }
        if ended != nil { throw ExitCode(3) }
    }
}

/// `text` as one word of a POSIX shell command, whatever it holds: a hint printed to be pasted
/// works as printed (single quotes, each `'` written as `'\''`).
func shellQuoted(_ text: String) -> String {
    let plain = text.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || "-_./:@".unicodeScalars.contains($0) }
    return plain && !text.isEmpty ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
}
