import ArgumentParser
import SyncClient

/// The email and password of `register` and `login`.
struct Credentials: ParsableArguments {
    @Option var email: String
    @Option var password: String

    /// Runs `signIn` with these credentials in a session and prints `done` with the user id.
    func signIn(_ options: Options, done: String, _ signIn: (SyncClient, String, String) async throws -> String) async throws {
        let session = try Session.start(options)
        let id = try await signIn(session.client, email, password)
        print("\(done) \(email) (\(id)).")
        try await session.finish()
    }
}

struct Register: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create an account and sign in.")
    @OptionGroup var options: Options
    @OptionGroup var credentials: Credentials

    func run() async throws {
        try await credentials.signIn(options, done: "Registered") { client, email, password in
            let id = try await client.register(email: email, password: password)
            if try await !client.emailVerified() {
                print("A code was mailed to \(email): enter it with `rchat verify CODE` (until then nobody can find you).")
            }
            return id
        }
    }
}

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify your email with the code mailed to it; `--resend` mails a new code instead.")
    @OptionGroup var options: Options
    @Argument(help: "The code, like K7QM-4XPA.") var code: String?
    @Flag(help: "Mail a new code.") var resend = false

    func run() async throws {
        let session = try Session.start(options)
        if resend {
            print(try await session.client.sendVerificationCode() ? "A new code is on its way." : "Your email is verified already.")
        } else if let code {
            try await session.client.verifyEmail(code: code)
            print("Your email is verified.")
        } else {
            throw ValidationError("give the code, or --resend")
        }
        try await session.finish()
    }
}

struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Sign in.")
    @OptionGroup var options: Options
    @OptionGroup var credentials: Credentials

    func run() async throws {
        try await credentials.signIn(options, done: "Signed in as") { try await $0.login(email: $1, password: $2) }
    }
}

struct Logout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Sign out.")
    @OptionGroup var options: Options

    func run() async throws {
        let session = try Session.start(options)
        try await session.client.logout()
        print("Signed out.")
        try await session.finish()
    }
}
