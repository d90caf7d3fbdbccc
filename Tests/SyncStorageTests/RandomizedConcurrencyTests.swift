import Foundation
import Locking
import SyncProtocol
@testable import SyncStorage
import SyncTesting
import Testing

/// Several writers apply random batches to a few partitions while several readers pull
/// "changes after my cursor". Every committed batch is recorded (its version and the states
/// it wrote), which gives the state of each partition at every version. Each time a reader
/// is up to date at version v, its copy must equal that state at v: a reader that skipped a
/// commit, or saw one out of order, would differ.
@Suite("Randomized concurrency", .timeLimit(.minutes(30)))
struct RandomizedConcurrencyTests {
    struct Committed: Sendable {
        var version: Int64
        var states: [ObjectKey: String?]  // body JSON, nil for deleted
    }

    struct Observation: Sendable {
        var partition: Partition
        var version: Int64
        var copy: [ObjectKey: String]
        /// Read after every writer finished: must equal the database.
        var isFinal: Bool
    }

    static let partitions = (0..<3).map { partition("room=r\($0)") }
    static let keysPerPartition = 12

    static func randomBatch(in index: Int, using random: inout SeededGenerator) -> [SyncOperation] {
        let count = Int.random(in: 1...5, using: &random)
        var operations: [SyncOperation] = []
        for _ in 0..<count {
            let object = key("Doc", "r\(index)-\(Int.random(in: 0..<keysPerPartition, using: &random))")
            if Bool.random(using: &random) { operations.append(.put(object, body: [:])) }
            switch Int.random(in: 0..<10, using: &random) {
            case 0, 1:
                operations.append(.put(object, body: ["name": .string("n\(Int.random(in: 0..<100, using: &random))"), "tags": []]))
            case 2: operations.append(.set(object, path: path("meta.x"), value: .int(Int64.random(in: 0..<50, using: &random))))
            case 3, 4: operations.append(.increment(object, path: path("n"), by: 1))
            case 5: operations.append(.arrayAppend(object, path: path("tags"), value: .int(Int64.random(in: 0..<4, using: &random))))
            case 6: operations.append(.arrayRemove(object, path: path("tags"), match: .int(Int64.random(in: 0..<4, using: &random))))
            case 7: operations.append(.unset(object, path: path("meta")))
            case 8: operations.append(.delete(object))
            default: operations.append(.set(object, path: path("name"), value: "renamed"))
            }
        }
        return operations
    }

    @Test("readers pulling from cursors never miss, repeat out of order, or reorder a commit")
    func oracle() async throws {
        let seed = ProcessInfo.processInfo.environment["PSYNC_SEED"].flatMap(UInt64.init) ?? 20_261_122
        let batchesPerWriter = ProcessInfo.processInfo.environment["PSYNC_STRESS_BATCHES"].flatMap(Int.init) ?? 300
        let writers = 6
        let readers = 4
        print("randomized concurrency: seed \(seed), \(writers) writers × \(batchesPerWriter) batches, \(readers) readers")
        try await TestDatabase.with(maximumConnections: 14, exclusive: true) { db in
            let store = db.store()
            let clock = ContinuousClock()
            let started = clock.now
            let writing = Countdown(writers)

            let (committed, observations, operationCount) = try await withThrowingTaskGroup(
                of: ([Partition: [Committed]], [Observation], Int).self
            ) { group in
                for writer in 0..<writers {
                    group.addTask {
                        defer { writing.decrement() }
                        var random = SeededGenerator(seed: seed &+ UInt64(writer) &* 1000)
                        var log: [Partition: [Committed]] = [:]
                        var operations = 0
                        for step in 0..<batchesPerWriter {
                            let index = Int.random(in: 0..<Self.partitions.count, using: &random)
                            let partition = Self.partitions[index]
                            let batch = Self.randomBatch(in: index, using: &random)
                            do {
                                let result = try await store.upload(
                                    Upload(partition: partition, operations: batch, principal: "w\(writer)", requestId: "s\(step)"))
                                operations += batch.count
                                var states: [ObjectKey: String?] = [:]
                                for change in result.changes {
                                    // updateValue, not subscript assignment: a nil state (deleted) must be kept.
                                    states.updateValue(change.after.body.map { JSONValue.object($0).jsonString }, forKey: change.key)
                                }
                                log[partition, default: []].append(Committed(version: result.version, states: states))
                            } catch let error as SyncError where error.code == .notFound {
                                // A batch touching an absent object is refused whole; nothing to record.
                            }
                        }
                        return (log, [], operations)
                    }
                }
                for reader in 0..<readers {
                    group.addTask {
                        var random = SeededGenerator(seed: seed &+ 7_000 &+ UInt64(reader))
                        var cursors: [Partition: Cursor] = [:]
                        var copies: [Partition: [ObjectKey: SyncObject]] = [:]
                        var seen: [Partition: Int64] = [:]
                        var observations: [Observation] = []
                        var finalPass = Set(Self.partitions)
                        while true {
                            let done = writing.isZero
                            if done && finalPass.isEmpty { break }
                            let partition = done ? finalPass.first! : Self.partitions.randomElement(using: &random)!
                            if !done, Int.random(in: 0..<50, using: &random) == 0 { cursors[partition] = nil }  // start over
                            let batch = try await store.changes(
                                in: partition, after: cursors[partition], limit: Int.random(in: 1...15, using: &random))
                            if batch.reset {
                                copies[partition] = [:]
                                seen[partition] = 0
                            }
                            var last = seen[partition] ?? 0
                            for object in batch.objects {
                                #expect(object.version >= last, "versions went backwards in \(partition)")
                                last = object.version
                                copies[partition, default: [:]][object.key] = object.isDeleted ? nil : object
                            }
                            seen[partition] = last
                            cursors[partition] = batch.cursor
                            if batch.upToDate {
                                let head = try #require(CursorPosition(batch.cursor)).version
                                let copy = (copies[partition] ?? [:]).mapValues { JSONValue.object($0.body!).jsonString }
                                observations.append(Observation(partition: partition, version: head, copy: copy, isFinal: done))
                                if done { finalPass.remove(partition) }
                            }
                        }
                        return ([:], observations, 0)
                    }
                }
                var committed: [Partition: [Committed]] = [:]
                var observations: [Observation] = []
                var operations = 0
                for try await (log, seen, count) in group {
                    for (partition, entries) in log { committed[partition, default: []].append(contentsOf: entries) }
                    observations.append(contentsOf: seen)
                    operations += count
                }
                return (committed, observations, operations)
            }

            // Versions of each partition are exactly 1...head, one per committed batch.
            var history: [Partition: [Committed]] = [:]
            for partition in Self.partitions {
                let entries = (committed[partition] ?? []).sorted { $0.version < $1.version }
                let head = try await store.headVersion(of: partition)
                #expect(entries.map(\.version) == (head > 0 ? Array(1...head) : []), "gap or repeat in \(partition)")
                history[partition] = entries
            }
            // Every up-to-date copy equals the oracle at its version.
            var checked = 0
            for observation in observations {
                var expected: [ObjectKey: String] = [:]
                for entry in history[observation.partition]! where entry.version <= observation.version {
                    for (key, state) in entry.states {
                        if let state { expected[key] = state } else { expected.removeValue(forKey: key) }
                    }
                }
                if observation.copy != expected {
                    let keys = Set(observation.copy.keys).union(expected.keys).filter { observation.copy[$0] != expected[$0] }
                    let detail = keys.sorted().map { "\($0): reader \(observation.copy[$0] ?? "-") oracle \(expected[$0] ?? "-")" }
                    Issue.record("reader copy of \(observation.partition) at \(observation.version) differs: \(detail.joined(separator: "; "))")
                }
                checked += 1
            }
            // And the final copies equal the database.
            for partition in Self.partitions {
                let database = try await store.snapshot(of: partition).mapValues { JSONValue.object($0.body!).jsonString }
                let finals = observations.filter { $0.partition == partition && $0.isFinal }
                #expect(finals.count == readers)
                for final in finals { #expect(final.copy == database) }
            }
            let elapsed = clock.now - started
            print("randomized concurrency: \(operationCount) operations committed in \(history.values.map(\.count).reduce(0, +)) batches, \(checked) up-to-date copies checked, \(elapsed)")
            #expect(checked > 100)
        }
    }
}

/// How many writers are still running, shared between tasks.
final class Countdown: Sendable {
    private let remaining: Locked<Int>
    init(_ count: Int) { remaining = Locked(count) }
    func decrement() { remaining.withLock { $0 -= 1 } }
    var isZero: Bool { remaining.withLock { $0 == 0 } }
}
