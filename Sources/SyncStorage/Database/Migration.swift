import Crypto
import Foundation

/// One numbered SQL file of `migrations/`: `0001_objects.sql` is version 1, named `objects`.
package struct Migration: Sendable, Hashable {
    package let version: Int
    package let name: String
    package let sql: String

    /// SHA-256 of the file's text, hex: a changed file is refused once it has been applied.
    package var checksum: String {
        SHA256.hash(data: Data(sql.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    package init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// Parses a file name `NNNN_name.sql`.
    package init(fileName: String, sql: String) throws(MigrationError) {
        guard fileName.hasSuffix(".sql"), let underscore = fileName.firstIndex(of: "_"),
            let version = Int(fileName[..<underscore]), version > 0
        else {
            throw MigrationError(.invalidFileName, "migration file \(fileName) is not named NNNN_name.sql")
        }
        let name = fileName[fileName.index(after: underscore)...].dropLast(4)
        self.init(version: version, name: String(name), sql: sql)
    }

    /// The migrations shipped with the engine (the project's `migrations/` folder), in order.
    package static func bundled() throws -> [Migration] {
        guard let directory = Bundle.module.url(forResource: "Migrations", withExtension: nil) else {
            throw MigrationError(.invalidFileName, "the bundled Migrations folder is missing")
        }
        return try load(from: directory)
    }

    /// Loads every `*.sql` file of a folder, sorted by version; two files with one version are refused.
    package static func load(from directory: URL) throws -> [Migration] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".sql") }
        var migrations: [Migration] = []
        for name in names {
            let sql = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            migrations.append(try Migration(fileName: name, sql: sql))
        }
        migrations.sort { $0.version < $1.version }
        for (previous, next) in zip(migrations, migrations.dropFirst()) where previous.version == next.version {
            throw MigrationError(.duplicateVersion, "two migration files have version \(next.version)")
        }
        return migrations
    }
}

/// Why migrations could not be applied.
package struct MigrationError: Error, Sendable, Hashable, CustomStringConvertible {
    package struct Code: RawRepresentable, Sendable, Hashable {
        package var rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        /// A file name that is not `NNNN_name.sql`.
        package static let invalidFileName = Code(rawValue: "invalid_file_name")
        /// Two files with the same number.
        package static let duplicateVersion = Code(rawValue: "duplicate_version")
        /// A file applied earlier has changed since.
        package static let checksumMismatch = Code(rawValue: "checksum_mismatch")
        /// The database has a migration this build does not know: it was migrated by a newer build.
        package static let unknownMigration = Code(rawValue: "unknown_migration")
        /// A statement of a migration failed; the migration was rolled back.
        package static let statementFailed = Code(rawValue: "statement_failed")
        /// The database takes no writes: a standby in recovery, or a session that is read-only
        /// by default.
        package static let readOnly = Code(rawValue: "read_only")
    }

    package var code: Code
    package var message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { "\(code.rawValue): \(message)" }
}
