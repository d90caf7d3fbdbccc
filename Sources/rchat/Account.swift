import ArgumentParser
import SyncClient

struct Register: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create an account and sign in.")
    @OptionGroup var options: Options
    @Option var email: String
    @Option var password: String

    func run() async throws {
        let session = try Session.start(options)
        let id = try await session.client.register(email: email, password: password)
        print("Registered \(email) (\(id)).")
        await session.finish()
    }
}

struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Sign in.")
    @OptionGroup var options: Options
    @Option var email: String
    @Option var password: String

    func run() async throws {
        let session = try Session.start(options)
        let id = try await session.client.login(email: email, password: password)
        print("Signed in as \(email) (\(id)).")
        await session.finish()
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
