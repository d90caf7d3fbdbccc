import Foundation
import Synchronization
import SyncProtocol
import SyncTesting
import SyncStorage

/// A fresh client downloads a big partition with no cursor: time to up to date, objects per
/// second, and the server's memory meanwhile.
struct BootstrapScenario {
    struct Parameters {
        var objects = 100_000
        var textBytes = 200
        static let quick = Parameters(objects: 2_000, textBytes: 200)
    }

    let parameters: Parameters

    init(_ parameters: Parameters) {
        self.parameters = parameters
    }

    func run(in environment: BenchEnvironment) async throws -> JSONValue {
        let (objects, textBytes) = (parameters.objects, parameters.textBytes)
        progress("bootstrap: \(objects) messages of ~\(textBytes) bytes")
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

        let rssBefore = environment.serverRSS()
        let peak = Mutex(rssBefore)
        let sampling = Task {
            while !Task.isCancelled {
                let now = environment.serverRSS()
                peak.withLock { $0 = max($0, now) }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        let received = Counter()
        let batches = Counter()
        let done = Once<Void>()
        let connection = try await BenchConnection.connect(environment.server.webSocketURL, token: reader.token, logger: environment.logger) { message in
            guard case .changes(let batch) = message else { return }
            received.increment(by: batch.objects.count)
            batches.increment()
            if batch.upToDate { done.set(()) }
        }
        let started = ContinuousClock.now
        connection.send(.subscribe(partition: partition, cursor: nil))
        let complete = await waitFor([done], timeout: .seconds(600))
        let elapsed = started.duration(to: .now).seconds
        sampling.cancel()
        await connection.close()
        let rate = Double(received.current) / elapsed
        progress("bootstrap: \(received.current) objects in \(rounded(elapsed)) s")

        let floor = try await Floor(client: environment.client, logger: environment.logger)
            .pagedRead(partition: partition.description, pageSize: StorageConfiguration().defaultPageSize)
        let megabytes = { (bytes: Int) in JSONValue.double(rounded(Double(bytes) / 1_048_576)) }
        return [
            "scenario": "bootstrap",
            "objects": .int(Int64(received.current)), "batches": .int(Int64(batches.current)), "complete": .bool(complete),
            "seconds": .double(rounded(elapsed)),
            "objectsPerSecond": .double(rounded(rate)),
            "serverRSSMB": ["before": megabytes(rssBefore), "peak": megabytes(peak.withLock { $0 }), "increase": megabytes(peak.withLock { $0 } - rssBefore)],
            "floor": ["what": "the same rows read in keyset pages of the same size", "rowsPerSecond": .double(rounded(floor.rowsPerSecond)), "rows": .int(Int64(floor.rows))],
            "ratio": ratio(rate, floor.rowsPerSecond),
            "target": "ratio >= 0.5, memory not proportional to objects",
        ]
    }
}
