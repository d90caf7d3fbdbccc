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
        await session.finish()
    }
}

struct Register: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create an account and sign in.")
    @OptionGroup var options: Options
    @OptionGroup var credentials: Credentials

    func run() async throws {
        try await credentials.signIn(options, done: "Registered") { try await $0.register(email: $1, password: $2) }
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
        await session.finish()
    }
}
