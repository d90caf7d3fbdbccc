import PartitionSync
import SyncServer
import SyncTesting

/// Settings of the fault tests: the version poll, the safety net under notifications, is off
/// (an hour between polls), so deliveries between instances rest on LISTEN/NOTIFY alone.
enum FaultFixtures {
    static let pollOff: @Sendable (inout ServerConfiguration) -> Void = { configuration in
        configuration.changePollInterval = .seconds(3600)
    }
}
