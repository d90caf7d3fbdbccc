import Logging
import SyncServer
import SyncStorage

/// The application `psync serve` serves: its permission rules and hooks.
///
/// Until an application module is registered here, `user=<userId>` partitions belong to their
/// user and every other key is denied.
struct Application {
    let server: SyncServer

    static func make(configuration: ServerConfiguration, database: DatabaseURL, logger: Logger) -> Application {
        var permissions = Permissions()
        permissions.register(OwnerRule(), forKey: "user")
        return Application(
            server: SyncServer(
                configuration: configuration, database: database, application: SyncApplication(permissions: permissions), logger: logger))
    }
}
