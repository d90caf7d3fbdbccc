import Foundation
import Locking
import SyncProtocol
import SyncTesting
import SyncStorage

/// A fresh client downloads a big partition with no cursor: time to up to date, objects per
/// second, and the server's memory meanwhile.
struct BootstrapScenario {
    struct Parameters {
        var objects = 100_000
        var textBytes = 200
        /// Subscribe as the SDK does, asking for progress (the first page then counts the rest).
        var progress = true
        static let quick = Parameters(objects: 2_000, textBytes: 200)
    }

    let parameters: Parameters

    init(_ parameters: Parameters) {
        self.parameters = parameters
    }

    func run(in environment: BenchEnvironment) async throws -> JSONValue {
        let (objects, textBytes) = (parameters.objects, parameters.textBytes)
        progress("bootstrap: \(objects) messages of ~\(textBytes) bytes\(parameters.progress ? ", subscribing with progress" : "")")
        let reader = try await environment.registerUsers("bootstrap", count: 1)[0]
        let id = "bootstrap-\(objects)"
        let partition = try Partition(key: "conversation", value: id)
        try await environment.createConversation(id, name: "Bootstrap", members: [reader])
        let seeding = ContinuousClock.now
        for start in stride(from: 0, to: objects, by: 1_000) {
            let operations = try (start..<min(start + 1_000, objects)).map { n in
                SyncOperation.put(
                    try ObjectKey(collection: "ChatMessage", id: "m-\(n)"),
                    body: messageBody(conversation: id, author: reader.email, text: textBytes, sequence: n))
            }
            _ = try await environment.store.upload(Upload(partition: partition, operations: operations, principal: reader.id))
        }
        progress("bootstrap: seeded in \(seeding.duration(to: .now)); waiting for the trigger")
        try await environment.waitForTriggers()
        try await Task.sleep(for: .seconds(1))

        // With a replica: the pages each server served during the passes (the server's own
        // count, and each PostgreSQL's statistics of the page functions).
        let servedBefore = environment.replica == nil ? nil : try await ReplicaReads(environment)
        let rssBefore = environment.serverRSS()
        let peak = Locked(rssBefore)
        let sampling = Task {
            while !Task.isCancelled {
                let now = environment.serverRSS()
                peak.withLock { $0 = max($0, now) }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        // Three fresh clients one after the other, and three floor passes: each figure is the
        // median of its three, so one pass disturbed by autovacuum does not decide the ratio.
        var passes: [(objects: Int, batches: Int, seconds: Double, complete: Bool)] = []
        for pass in 1...3 {
            let received = Counter()
            let batches = Counter()
            let done = Once<Void>()
            let mismatch = Locked<String?>(nil)
            // The client counts each batch by scanning it (the floor reads the rows without
            // parsing their bodies either); the first batch of a pass is also parsed whole,
            // and the two counts must agree.
            let connection = try await BenchConnection.connect(
                environment.server.webSocketURL, token: reader.token, logger: environment.logger,
                onChanges: { scan, bytes in
                    if batches.increment() == 1 {
                        let parsed = (try? ServerMessage(json: JSONParser(maximumDepth: 512).parse(bytes))).flatMap { message -> ChangeBatch? in
                            if case .changes(let batch) = message { return batch }
                            return nil
                        }
                        if parsed?.objects.count != scan.objects || parsed?.upToDate != scan.upToDate {
                            mismatch.withLock { $0 = "scan \(scan.objects)/\(scan.upToDate), parse \(String(describing: parsed?.objects.count))" }
                        }
                    }
                    received.increment(by: scan.objects)
                    if scan.upToDate { done.set(()) }
                }
            ) { _ in }
            progress("bootstrap: pass \(pass): a fresh client subscribes with no cursor")
            let started = ContinuousClock.now
            connection.send(.subscribe(partition: partition, cursor: nil, progress: parameters.progress))
            let complete = await waitFor([done], timeout: .seconds(600))
            let elapsed = started.duration(to: .now).seconds
            await connection.close()
            if let mismatch = mismatch.withLock({ $0 }) { throw BenchError("bootstrap: a batch scanned and parsed differ: \(mismatch)") }
            passes.append((received.current, batches.current, elapsed, complete))
            progress("bootstrap: \(received.current) objects in \(rounded(elapsed)) s")
        }
        sampling.cancel()
        var served: JSONValue?
        if let servedBefore { served = try await ReplicaReads.after(servedBefore, passes: passes.map(\.batches), environment) }
        let median = passes.sorted { $0.seconds < $1.seconds }[1]
        let rate = Double(median.objects) / median.seconds

        var floors: [Double] = []
        var floorRows = 0
        for _ in 1...3 {
            let floor = try await Floor(client: environment.client, logger: environment.logger)
                .pagedRead(partition: partition.description, pageSize: StorageConfiguration().defaultPageSize)
            floors.append(floor.rowsPerSecond)
            floorRows = floor.rows
        }
        let floorRate = floors.sorted()[1]
        var result: JSONValue = [
            "scenario": "bootstrap",
            "objects": .int(Int64(median.objects)), "batches": .int(Int64(median.batches)), "complete": .bool(passes.allSatisfy(\.complete)),
            "seconds": .double(rounded(median.seconds)),
            "objectsPerSecond": .double(rounded(rate)),
            "passesObjectsPerSecond": .array(passes.map { .double(rounded(Double($0.objects) / $0.seconds)) }),
            "serverRSSMB": ["before": megabytes(rssBefore), "peak": megabytes(peak.withLock { $0 }), "increase": megabytes(peak.withLock { $0 } - rssBefore)],
            "floor": [
                "what": "the same rows read in keyset pages of the same size (median of 3 passes)",
                "rowsPerSecond": .double(rounded(floorRate)), "rows": .int(Int64(floorRows)),
                "passesRowsPerSecond": .array(floors.map { .double(rounded($0)) }),
            ],
            "ratio": ratio(rate, floorRate),
            "target": "ratio >= 0.5, memory not proportional to objects",
        ]
        if let served, case .object(var fields) = result {
            fields["replica"] = served
            result = .object(fields)
        }
        return result
    }
}

/// Where a bootstrap's pages were read with `--replica`: the server's metrics and each
/// PostgreSQL's function statistics, before and after the passes.
struct ReplicaReads {
    var replicaPages: Double
    /// Pages read from the primary instead, by reason (`behind`, `failed`, `none`).
    var fallbacks: [String: Double] = [:]
    var primaryPageCalls: Int
    var replicaPageCalls: Int

    init(_ environment: BenchEnvironment) async throws {
        replicaPages = try await environment.serverMetric("psync_replica_pages_total")
        for reason in ["behind", "failed", "none"] {
            fallbacks[reason] = try await environment.serverMetric("psync_replica_fallbacks_total", labels: "reason=\"\(reason)\"")
        }
        primaryPageCalls = try await environment.functionCalls("psync_page", on: environment.database)
        replicaPageCalls = try await environment.functionCalls("psync_page", on: environment.replica ?? environment.database)
    }

    /// The figures of the passes, once the replica's statistics count every page it served
    /// (a backend reports them when it goes idle: within ten seconds).
    static func after(_ before: ReplicaReads, passes: [Int], _ environment: BenchEnvironment) async throws -> JSONValue {
        var now = try await ReplicaReads(environment)
        let deadline = ContinuousClock.now + .seconds(15)
        while Double(now.replicaPageCalls - before.replicaPageCalls) < now.replicaPages - before.replicaPages, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(250))
            now = try await ReplicaReads(environment)
        }
        return [
            "batchesReceived": .int(Int64(passes.reduce(0, +))),
            "pagesFromReplica": .int(Int64(now.replicaPages - before.replicaPages)),
            "pagesFromPrimaryInstead": .object(
                Dictionary(uniqueKeysWithValues: now.fallbacks.map { ($0.key, .int(Int64($0.value - (before.fallbacks[$0.key] ?? 0)))) })),
            "replicaStatistics": ["psync_page calls": .int(Int64(now.replicaPageCalls - before.replicaPageCalls))],
            "primaryStatistics": ["psync_page calls": .int(Int64(now.primaryPageCalls - before.primaryPageCalls))],
        ]
    }
}
