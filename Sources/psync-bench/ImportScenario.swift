import Foundation
import PostgresNIO
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting

/// `psync import` of a mongoexport file of RChat messages (relaxed Extended JSON, one per
/// line), as a process of its own beside the running server, in documents per second and
/// peak resident memory; the floor: PostgreSQL's own `COPY` of the same rows (collection,
/// id, partition and the body psync stores) into a table keyed like `psync_objects`, from a
/// file on the database's machine.
struct ImportScenario {
    struct Parameters {
        var documents = 1_000_000
        var conversations = 1_000
        var batchDocuments = 500
        static let quick = Parameters(documents: 20_000, conversations: 100)
    }

    let parameters: Parameters

    init(_ parameters: Parameters) {
        self.parameters = parameters
    }

    func run(in environment: BenchEnvironment) async throws -> JSONValue {
        let p = parameters
        let folder = environment.folder
        let psync = environment.server.executablePath
        progress("import: writing \(p.documents) ChatMessage documents in \(p.conversations) conversations")
        let export = folder + "/import/ChatMessage.json"
        let rows = folder + "/import-rows.csv"
        try FileManager.default.createDirectory(atPath: folder + "/import", withIntermediateDirectories: true)
        try write(export: export, rows: rows)
        let exportBytes = (try FileManager.default.attributesOfItem(atPath: export)[.size] as? NSNumber)?.int64Value ?? 0

        progress("import: COPY of the same rows (the floor)")
        try await environment.client.query("DROP TABLE IF EXISTS bench_import_copy", logger: environment.logger)
        try await environment.client.query(
            """
            CREATE TABLE bench_import_copy (collection text COLLATE "C", id text COLLATE "C", partition text COLLATE "C",
                body jsonb, PRIMARY KEY (collection, id))
            """, logger: environment.logger)
        let copyStarted = ContinuousClock.now
        try await environment.client.query(
            PostgresQuery(unsafeSQL: "COPY bench_import_copy FROM '\(rows.replacingOccurrences(of: "'", with: "''"))' (FORMAT csv)"),
            logger: environment.logger)
        let copySeconds = copyStarted.duration(to: .now).seconds
        try await environment.client.query("DROP TABLE bench_import_copy", logger: environment.logger)
        try? FileManager.default.removeItem(atPath: rows)

        progress("import: psync import (batches of \(p.batchDocuments))")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: psync)
        process.arguments = ["import", "--database-url", environment.database.urlString, "--batch-documents", "\(p.batchDocuments)", export]
        let log = folder + "/import.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        let started = ContinuousClock.now
        try process.run()
        var peak = 0
        while process.isRunning {
            peak = max(peak, ProcessStatus.bytes("VmHWM", of: process.processIdentifier) ?? 0)
            try await Task.sleep(for: .milliseconds(100))
        }
        let seconds = started.duration(to: .now).seconds
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        guard process.terminationStatus == 0, output.contains("\(p.documents) imported") else {
            throw BenchError("psync import failed (status \(process.terminationStatus)): \(output.suffix(2000))")
        }
        let rate = Double(p.documents) / seconds
        let copyRate = Double(p.documents) / copySeconds
        return [
            "scenario": "import",
            "documents": .int(Int64(p.documents)),
            "exportBytes": .int(exportBytes),
            "batchDocuments": .int(Int64(p.batchDocuments)),
            "documentsPerSecond": .double((rate * 10).rounded() / 10),
            "seconds": .double((seconds * 100).rounded() / 100),
            "peakRSSBytes": .int(Int64(peak)),
            "floor": ["copyRowsPerSecond": .double((copyRate * 10).rounded() / 10), "seconds": .double((copySeconds * 100).rounded() / 100)],
            "ratioToFloor": .double((rate / copyRate * 1000).rounded() / 1000),
        ]
    }

    /// The export (what mongoexport writes) and the same rows as CSV for COPY (what psync
    /// stores), written a document at a time.
    private func write(export: String, rows: String) throws {
        _ = FileManager.default.createFile(atPath: export, contents: nil)
        _ = FileManager.default.createFile(atPath: rows, contents: nil)
        let exportHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: export))
        let rowsHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: rows))
        defer {
            try? exportHandle.close()
            try? rowsHandle.close()
        }
        var generator = SeededGenerator(seed: 20_261_126)
        var exportChunk = ""
        var rowsChunk = ""
        for number in 0..<parameters.documents {
            let id = String(format: "%024x", number + 1)
            let partition = "conversation=room-\(Int.random(in: 0..<parameters.conversations, using: &generator))"
            let text = "message \(number): " + String(repeating: "lorem ipsum ", count: Int.random(in: 1...8, using: &generator))
            let timestamp = "2024-05-01T10:\(String(format: "%02d", number % 60)):00.000Z"
            let source: JSONValue = [
                "_id": ["$oid": .string(id)], "partition": .string(partition), "author": "ann@example.com", "text": .string(text),
                "location": [], "timestamp": ["$date": .string(timestamp)],
            ]
            let stored: JSONValue = [
                "_id": .string(id), "partition": .string(partition), "author": "ann@example.com", "text": .string(text),
                "location": [], "timestamp": .string(timestamp),
            ]
            exportChunk += source.jsonString + "\n"
            rowsChunk += "ChatMessage,\(id),\(partition),\"\(stored.jsonString.replacingOccurrences(of: "\"", with: "\"\""))\"\n"
            if exportChunk.utf8.count > 1 << 20 {
                exportHandle.write(Data(exportChunk.utf8))
                rowsHandle.write(Data(rowsChunk.utf8))
                exportChunk = ""
                rowsChunk = ""
            }
        }
        exportHandle.write(Data(exportChunk.utf8))
        rowsHandle.write(Data(rowsChunk.utf8))
    }
}
