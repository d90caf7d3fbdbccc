import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension EmbeddedPostgres {
    /// A streaming replica of this running cluster in `dataDirectory` (empty or absent): a base
    /// backup (`pg_basebackup -R -X stream`, so it starts as a standby that streams from this
    /// cluster) with the same superuser and password. Start it with ``start()``; it answers
    /// reads once it has replayed the backup's end.
    package func standby(in dataDirectory: String, settings: [String: String] = [:]) async throws -> EmbeddedPostgres {
        guard let endpoint, let password = endpoint.password else {
            throw EmbeddedPostgresError(.commandFailed, "a standby needs the primary cluster running")
        }
        let bin = try Self.findBinDirectory(configuration.binDirectory)
        let runAs = geteuid() == 0 ? "postgres" : nil
        let path = URL(fileURLWithPath: dataDirectory).standardizedFileURL.path
        try prepareDirectory(path, owner: runAs)
        // The password goes into the standby's primary_conninfo with the rest (-R).
        let source = "host=127.0.0.1 port=\(endpoint.port) user=\(endpoint.username) password=\(password)"
        try check(
            await Command.run(
                [bin + "/pg_basebackup", "-d", source, "-D", path, "-R", "-X", "stream", "-c", "fast", "--no-password"], asUser: runAs),
            "pg_basebackup")
        let passwordFile = EmbeddedPostgresConfiguration.passwordFile(of: path)
        guard FileManager.default.createFile(atPath: passwordFile, contents: Data(password.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw EmbeddedPostgresError(.dataDirectoryUnusable, "cannot write the standby's password file \(passwordFile)")
        }
        var standby = configuration
        standby.dataDirectory = path
        standby.port = nil
        standby.settings.merge(settings) { $1 }
        return EmbeddedPostgres(configuration: standby, logger: logger)
    }
}
