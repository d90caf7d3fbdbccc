import ArgumentParser
import Foundation

/// Options every scenario takes.
struct BenchOptions: ParsableArguments {
    @Option(help: "A PostgreSQL server to use (a fresh database is created on it and dropped after); default: an embedded cluster (env DATABASE_URL).")
    var databaseURL: String?

    @Option(help: "Seconds of each timed phase (ingest, latency). Default 10 (2 with --quick).")
    var seconds: Int?

    @Flag(help: "Small sizes, for a smoke run in under a minute.")
    var quick = false

    @Option(help: "The psync executable; default: the one built next to psync-bench.")
    var psync: String?

    @Option(help: "Server connections to PostgreSQL (psync --max-connections).")
    var serverPool = 20

    @Flag(help: "Also start a streaming replica of the embedded cluster and give it to the server (--replica-url): snapshot and catch-up pages are read from it (bootstrap reports where they were served).")
    var replica = false

    @Option(help: "Keep the server's log (and the embedded cluster's data) in this folder.")
    var keep: String?

    func seconds(quick quickDefault: Int) -> Int {
        seconds ?? (quick ? quickDefault : 10)
    }
}
