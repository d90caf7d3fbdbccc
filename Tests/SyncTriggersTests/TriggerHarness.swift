import CoreMetrics
import Logging
import ServiceLifecycle
import SyncProtocol
import SyncStorage
import SyncTesting
import SyncTriggers

func key(_ collection: String, _ id: String) -> ObjectKey { try! ObjectKey(collection: collection, id: id) }
func partition(_ text: String) -> Partition { try! Partition(text) }
func path(_ text: String) -> Path { try! Path(parsing: text) }

/// Runs trigger services (as server instances would) against a test database.
enum TriggerHarness {
    static var fastConfiguration: TriggerConfiguration {
        var configuration = TriggerConfiguration()
        configuration.leaseDuration = .seconds(2)
        configuration.leaseRenewal = .milliseconds(200)
        configuration.pollInterval = .milliseconds(50)
        return configuration
    }

    static func service(_ store: ObjectStore, _ triggers: [Trigger], instance: String = "test", configuration: TriggerConfiguration = fastConfiguration) -> TriggerService {
        TriggerService(
            store: store, triggers: triggers, configuration: configuration, instance: instance,
            metricsFactory: NOOPMetricsHandler.instance, logger: TestPostgres.makeLogger("psync.test.triggers"))
    }

    /// Runs `body` while the services run; stops them gracefully afterwards.
    static func running<Result: Sendable>(_ services: [TriggerService], _ body: @Sendable () async throws -> Result) async throws -> Result {
        let group = ServiceGroup(services: services, gracefulShutdownSignals: [], logger: TestPostgres.makeLogger("psync.test.triggers"))
        return try await withThrowingTaskGroup(of: Result?.self) { tasks in
            tasks.addTask {
                try await group.run()
                return nil
            }
            do {
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

    /// Polls `condition` until it holds or `timeout` passes.
    static func eventually(timeout: Duration = .seconds(20), _ condition: @Sendable () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }
}
