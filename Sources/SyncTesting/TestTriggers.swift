import CoreMetrics
import Logging
import PartitionSync
import ServiceLifecycle
import SyncStorage
import SyncTriggers

/// Runs triggers against a test database as a server instance would, for testing a trigger
/// handler on its own (docs/TRIGGERS.md, "Testing a trigger").
///
/// ```swift
/// try await TestDatabase.with { db in
///     try await TestTriggers.running(db, [myTrigger]) {
///         try await db.apply([...], in: room, as: .user("alice"))
///         #expect(try await TestTriggers.eventually { try await db.body(of: counter)?["n"] == 1 })
///     }
/// }
/// ```
public enum TestTriggers {
    /// Short leases and polls, so tests of takeover and retries are quick.
    package static var fastConfiguration: TriggerConfiguration {
        var configuration = TriggerConfiguration()
        configuration.leaseDuration = .seconds(2)
        configuration.leaseRenewal = .milliseconds(200)
        configuration.pollInterval = .milliseconds(50)
        return configuration
    }

    /// A trigger service for `store`, as one server instance named `instance` runs it.
    package static func service(
        _ store: ObjectStore, _ triggers: [Trigger], instance: String = "test", configuration: TriggerConfiguration = fastConfiguration
    ) -> TriggerService {
        TriggerService(
            store: store, triggers: triggers, configuration: configuration, instance: instance,
            metricsFactory: NOOPMetricsHandler.instance, logger: TestPostgres.makeLogger("psync.test.triggers"))
    }

    /// Runs `body` while `triggers` run on the database, as a server instance would run them
    /// (with short leases and polls); stops them afterwards.
    public static func running<Result: Sendable>(
        _ database: TestDatabase, _ triggers: [Trigger], _ body: @Sendable () async throws -> Result
    ) async throws -> Result {
        try await running(database.store(), triggers, body)
    }

    /// Runs `body` while `triggers` run on `store`; stops them afterwards.
    package static func running<Result: Sendable>(
        _ store: ObjectStore, _ triggers: [Trigger], _ body: @Sendable () async throws -> Result
    ) async throws -> Result {
        try await running([service(store, triggers)], body)
    }

    /// Runs `body` while the services run (several: several instances), once each has
    /// registered its triggers (a trigger handles the events committed after its
    /// registration); stops them gracefully afterwards.
    package static func running<Result: Sendable>(_ services: [TriggerService], _ body: @Sendable () async throws -> Result) async throws -> Result {
        let group = ServiceGroup(services: services, gracefulShutdownSignals: [], logger: TestPostgres.makeLogger("psync.test.triggers"))
        return try await withThrowingTaskGroup(of: Result?.self) { tasks in
            tasks.addTask {
                try await group.run()
                return nil
            }
            do {
                for service in services {
                    guard try await eventually({ try await service.registered() }) else {
                        throw TestTriggersError.notRegistered(service.triggers.map(\.name))
                    }
                }
                let result = try await body()
                await group.triggerGracefulShutdown()
                while let next = try await tasks.next() { if next != nil { break } }
                return result
            } catch {
                await group.triggerGracefulShutdown()
                tasks.cancelAll()
                throw error
            }
        }
    }

    /// Polls `condition` until it holds or `timeout` passes; returns whether it held.
    public static func eventually(timeout: Duration = .seconds(20), _ condition: @Sendable () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }
}

/// The triggers did not register within ``TestTriggers/eventually(timeout:_:)``'s time.
package enum TestTriggersError: Error {
    case notRegistered([String])
}
