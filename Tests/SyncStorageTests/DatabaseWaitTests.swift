import Logging
import SyncStorage
import Testing

@Suite("Waiting for the database")
struct DatabaseWaitTests {
    let down = DatabaseWait.Failure.passing("Connection refused")

    @Test("a server waits as long as it takes: one warning at the first failed try, a reminder every 30 s, a notice when the database answers; the tries between are not logged")
    func serverWaits() {
        var wait = DatabaseWait(target: "db:5432", patience: .forever)
        #expect(wait.connected(after: .zero) == nil, "no wait, no line")
        #expect(wait.failed(down, after: .zero) == .retry(after: .milliseconds(500), log: .init(.warning, "waiting for the database at db:5432: Connection refused; trying again every 0.5 s")))
        #expect(wait.failed(down, after: .seconds(29)) == .retry(after: .milliseconds(500), log: nil))
        #expect(wait.failed(down, after: .seconds(30)) == .retry(after: .milliseconds(500), log: .init(.warning, "still waiting for the database at db:5432 after 30 s: Connection refused")))
        #expect(wait.failed(down, after: .seconds(59)) == .retry(after: .milliseconds(500), log: nil))
        #expect(wait.failed(.passing("the database system is starting up"), after: .seconds(61)) == .retry(
            after: .milliseconds(500), log: .init(.warning, "still waiting for the database at db:5432 after 61 s: the database system is starting up")))
        #expect(wait.failed(down, after: .seconds(3600)) == .retry(after: .milliseconds(500), log: .init(.warning, "still waiting for the database at db:5432 after 3600 s: Connection refused")))
        #expect(wait.connected(after: .seconds(3601)) == "the database at db:5432 answered after 3601 s")
    }

    @Test("a one-shot command gives up at its deadline with the last reason, and its last pause ends at the deadline; with no patience after one try")
    func commandGivesUp() {
        var wait = DatabaseWait(target: "db:5432", patience: .upTo(.seconds(1)))
        #expect(wait.failed(down, after: .zero) == .retry(after: .milliseconds(500), log: .init(.warning, "waiting for the database at db:5432: Connection refused; trying again every 0.5 s")))
        #expect(wait.failed(down, after: .milliseconds(800)) == .retry(after: .milliseconds(200), log: nil))
        #expect(wait.failed(.passing("timeout"), after: .seconds(1)) == .giveUp("cannot connect to the database at db:5432 (tried for 1 s, --db-connect-timeout): timeout"))
        var once = DatabaseWait(target: "db:5432", patience: .upTo(.zero))
        #expect(once.failed(down, after: .zero) == .giveUp("cannot connect to the database at db:5432 (tried for 0 s, --db-connect-timeout): Connection refused"))
    }

    @Test("a refusal that stays (a wrong password, no such database) ends a command's wait at once and is an error line in a server's, which waits on (a database being set up); one that passes (starting up, in recovery, too many clients) is waited out")
    func refusals() {
        var command = DatabaseWait(target: "db:5432", patience: .upTo(.seconds(30)))
        let refused = DatabaseReachability.classify(sqlState: "28P01", message: "password authentication failed for user \"psync\"")
        #expect(command.failed(refused, after: .zero) == .giveUp("the database at db:5432 refused the connection: password authentication failed for user \"psync\""))
        var server = DatabaseWait(target: "db:5432", patience: .forever)
        #expect(server.failed(refused, after: .zero) == .retry(after: .milliseconds(500), log: .init(
            .error, "waiting for the database at db:5432: it refuses the connection: password authentication failed for user \"psync\"; trying again every 0.5 s")))
        #expect(server.failed(refused, after: .seconds(30)) == .retry(after: .milliseconds(500), log: .init(
            .error, "still waiting for the database at db:5432 after 30 s: it refuses the connection: password authentication failed for user \"psync\"")))
        #expect(DatabaseReachability.classify(sqlState: "3D000", message: "database \"x\" does not exist") == .refused("database \"x\" does not exist"))
        #expect(DatabaseReachability.classify(sqlState: nil, message: "?") == .refused("?"))
        for (state, message) in [("57P03", "the database system is starting up"), ("57P01", "terminating connection due to administrator command"), ("53300", "sorry, too many clients already")] {
            #expect(DatabaseReachability.classify(sqlState: state, message: message) == .passing(message))
        }
    }
}
