import PartitionSync
import SyncProtocol
import SyncServer
import SyncTesting
import Testing

/// A subscriber of the server oracle: a WebSocket client that wanders at random between
/// subscribing (from its cursor, or afresh), unsubscribing, reconnecting to either instance and
/// resuming every subscription from its cursor, not reading for a while, and reading. It keeps
/// a copy per partition as a client would, and records each up-to-date copy.
actor OracleSubscriber {
    let index: Int
    let servers: [TestServer]
    let token: String
    let oracle: ServerOracle
    private(set) var copies: [Partition: PartitionCopy] = [:]
    private(set) var observations: [OracleObservation] = []
    private var random: SeededGenerator
    private var lastVersion: [Partition: Int64] = [:]
    private var subscribed: Set<Partition> = []
    private var client: TestSyncClient?

    init(index: Int, seed: UInt64, servers: [TestServer], token: String, oracle: ServerOracle) {
        self.index = index
        self.random = SeededGenerator(seed: seed)
        self.servers = servers
        self.token = token
        self.oracle = oracle
    }

    /// Acts at random while `active` holds.
    func wander(while active: @Sendable () -> Bool) async throws {
        try await connect()
        while active() {
            switch Int.random(in: 0..<12, using: &random) {
            case 0..<3:
                let candidates = ServerOracleTests.partitions.filter { !subscribed.contains($0) }
                guard let partition = candidates.randomElement(using: &random) else { continue }
                // Mostly from the cursor held, sometimes a full snapshot again.
                let cursor = Int.random(in: 0..<4, using: &random) == 0 ? nil : copies[partition]?.cursor
                subscribed.insert(partition)
                client?.send(.subscribe(partition: partition, cursor: cursor))
            case 3:
                guard let partition = subscribed.randomElement(using: &random) else { continue }
                subscribed.remove(partition)
                client?.send(.unsubscribe(partition: partition))
            case 4:
                // A slow client: the server's writes back up while it does not read.
                client?.pauseReading()
                try await Task.sleep(for: .milliseconds(Int.random(in: 50...400, using: &random)))
                client?.resumeReading()
            case 5:
                await client?.close()
                client = nil
                try await connect()
            default:
                try await read(for: .milliseconds(Int.random(in: 20...200, using: &random)))
            }
        }
    }

    /// Subscribes to every partition again (from its cursor) and reads until each copy is up
    /// to date at `heads`.
    func finish(heads: [Partition: Int64]) async throws {
        for partition in ServerOracleTests.partitions where !subscribed.contains(partition) {
            subscribed.insert(partition)
            client?.send(.subscribe(partition: partition, cursor: copies[partition]?.cursor))
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while heads.contains(where: { partition, head in lastVersion[partition] != head || copies[partition]?.upToDate != true }) {
            let remaining = deadline - ContinuousClock.now
            do {
                guard remaining > .zero, let client else { throw TestTimeout(what: "a message") }
                try handle(try await client.next(timeout: remaining))
            } catch is TestTimeout {
                let behind = heads.filter { lastVersion[$0.key] != $0.value }.map { "\($0.key) at \(lastVersion[$0.key].map(String.init) ?? "-") of \($0.value)" }
                Issue.record("subscriber \(index) never caught up (a commit was not delivered): \(behind.sorted())")
                throw TestTimeout(what: "subscriber \(index) to catch up")
            }
        }
    }

    func close() async {
        await client?.close()
    }

    private func connect() async throws {
        let server = servers[Int.random(in: 0..<servers.count, using: &random)]
        let client = try await server.connect(token: token)
        let ready = try await client.next()
        guard case .ready = ready else { throw OracleFailure("subscriber \(index): \(ready) instead of ready") }
        self.client = client
        for partition in subscribed {
            client.send(.subscribe(partition: partition, cursor: copies[partition]?.cursor))
        }
    }

    private func read(for interval: Duration) async throws {
        guard let client else { return }
        let deadline = ContinuousClock.now + interval
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { return }
            let message: ServerMessage
            do {
                message = try await client.next(timeout: remaining)
            } catch is TestTimeout {
                return
            }
            try handle(message)
        }
    }

    private func handle(_ message: ServerMessage) throws {
        switch message {
        case .changes(let batch):
            let partition = batch.partition
            oracle.learn(batch.objects, in: partition, from: "subscriber \(index)")
            // Batches still on the wire after an unsubscribe continue the copy gaplessly: apply them too.
            copies[partition, default: PartitionCopy()].apply(batch)
            guard batch.upToDate else { return }
            guard let version = batch.version else {
                Issue.record("subscriber \(index): an up-to-date batch of \(partition) without a version")
                return
            }
            if let last = lastVersion[partition], version < last {
                Issue.record("subscriber \(index): \(partition) went back from version \(last) to \(version)")
            }
            lastVersion[partition] = version
            observations.append(OracleObservation(subscriber: index, partition: partition, version: version, objects: copies[partition]!.objects))
        case .error(let error, let partition):
            Issue.record("subscriber \(index): error \(error) for \(String(describing: partition))")
        case .unsubscribed(let partition, let code):
            Issue.record("subscriber \(index): unsubscribed from \(partition) with \(code)")
        default:
            break
        }
    }
}
