import Foundation
import Logging
import NIOCore
import PartitionSync
import SyncImport
import SyncProtocol
import SyncStorage

/// `import`'s work (docs/MIGRATING.md): reads the export files a document at a time, maps
/// each (``DocumentPlacement``, the values by ``JSONMapper``, the application's
/// ``ImportMapping``), holds them by partition in a bounded window (``PartitionWindow``), and
/// writes them in transactions of a bounded batch, a few partitions each, through the
/// application's validators (``ObjectStore/importObjects(_:author:validate:commit:provisionalBlobs:)``), so memory is
/// bounded by the window and a batch whatever the files' size. An object already stored is
/// never written again: running the same import twice, or again after an interruption, stores
/// each document once.
package struct Importer: Sendable {
    /// Where the import's lines go.
    package struct Output: Sendable {
        /// Progress (a bar on a terminal, lines otherwise).
        package var progress: @Sendable (String) -> Void
        /// Each refusal, as it happens.
        package var refusal: @Sendable (ImportReport.Refusal) -> Void
        /// Each imported account's one-time password-set token: user id, email, token.
        package var token: @Sendable (String, String, String) throws -> Void

        package init(
            progress: @escaping @Sendable (String) -> Void, refusal: @escaping @Sendable (ImportReport.Refusal) -> Void,
            token: @escaping @Sendable (String, String, String) throws -> Void
        ) {
            self.progress = progress
            self.refusal = refusal
            self.token = token
        }
    }

    let store: ObjectStore
    let application: SyncApplication
    let options: ImportOptions
    let output: Output
    let progressStyle: ProgressMeter.Style
    /// The clock of the progress and rate (injected by tests).
    let now: @Sendable () -> ContinuousClock.Instant

    package init(
        store: ObjectStore, application: SyncApplication, options: ImportOptions, output: Output,
        progressStyle: ProgressMeter.Style = .lines, now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) {
        self.store = store
        self.application = application
        self.options = options
        self.output = output
        self.progressStyle = progressStyle
        self.now = now
    }

    var principal: Principal { .service(options.principal) }

    /// The options' placement; the partition field stays when the options or the application say so.
    var placement: DocumentPlacement {
        var placement = options.placement
        placement.keepsPartitionField = placement.keepsPartitionField || application.importing.keepsPartitionField
        return placement
    }

    /// Runs the import; the report says what it did (and `failure`, what stopped it early).
    package func run() async throws -> ImportReport {
        var report = ImportReport(dryRun: options.dryRun, partitionLimit: options.reportPartitions, refusalLimit: options.reportRefusals)
        let files = try Self.files(options.paths)
        let registeredKnown = options.triggers ? try await registeredTriggersKnown() : true
        store.recordEvents(eventInterest(for: nil, registeredKnown: registeredKnown))
        store.labelObjectEvents(as: .import)
        if !options.dryRun { try await store.createIndexes(application.indexes) }
        if let usersFile = options.usersFile {
            try await UserImporter(store: store, options: options, output: output).run(usersFile, into: &report)
        }
        var meter = ProgressMeter(
            style: progressStyle, interval: options.progressInterval ?? (progressStyle == .lines ? .seconds(5) : .milliseconds(200)),
            totalBytes: Self.totalBytes(files))
        let started = now()
        var progress = Progress()
        for file in files {
            do {
                store.recordEvents(eventInterest(for: options.collection ?? file.collection, registeredKnown: registeredKnown))
                try await importFile(file, into: &report, progress: &progress) { progress in
                    if let line = meter.update(documents: progress.documents, bytes: progress.bytes, elapsed: started.duration(to: now())) {
                        output.progress(line)
                    }
                }
            } catch let error as ImportError {
                report.failure = error.description
                break
            }
        }
        if let line = meter.update(documents: progress.documents, bytes: progress.bytes, elapsed: started.duration(to: now()), force: true) {
            output.progress(line)
        }
        return report
    }

    /// Whether every trigger registered in the database is one of the application's (else
    /// another version of the application ran there, and its triggers may handle anything).
    private func registeredTriggersKnown() async throws -> Bool {
        let known = Set(application.triggers.map(\.name))
        return try await TriggerLedger(store: store).statuses().map(\.name).allSatisfy(known.contains)
    }

    /// The events the import records, of accounts (`collection` nil) or of the objects of
    /// `collection`: those the application's triggers handle (an `import` event no trigger
    /// matches would be written, numbered and passed over for nothing, and with the document
    /// as its body it costs as much as the object), as a server records only what its
    /// triggers read (``EventInterest``); none when no trigger takes `import` events of the
    /// collection (or with `--no-triggers`), so none is even made; every event when a trigger
    /// the application does not know is registered. (The application's mapping may move a
    /// document to another collection: with one, any trigger that takes `import` events counts.)
    func eventInterest(for collection: String?, registeredKnown: Bool) -> EventInterest {
        guard options.triggers else { return .none }
        guard registeredKnown else { return .all }
        var triggers = application.triggers
        if let collection {
            let moves = application.importing.document != nil
            triggers = triggers.filter { trigger in
                let filter = trigger.filter
                guard filter.kinds.contains(.object), filter.operations?.contains(.import) ?? true else { return false }
                return moves || (filter.collections?.contains(collection) ?? true)
            }
            guard !triggers.isEmpty else { return .none }
        }
        let handling = triggers
        return .matching { event in handling.contains { $0.matches(event) } }
    }

    /// Documents and bytes read so far, over all files.
    struct Progress {
        var documents = 0
        var bytes: Int64 = 0
    }

    /// Imports one file; throws the ``ImportError`` of a file that cannot be read to its end
    /// (after writing the documents before it).
    private func importFile(
        _ file: ExportFile, into report: inout ImportReport, progress: inout Progress, tick: (Progress) -> Void
    ) async throws {
        let placement = self.placement
        var reader = try ExportReader(file, directMapper: DirectMapper(keptFields: placement.fieldsRead))
        let collection = options.collection ?? file.collection
        let collector = BlobCollector(maximumBytes: options.blobMaximumBytes)
        let mapper = JSONMapper(policy: collector.policy(for: application.importing))
        var window = PartitionWindow<Partition, ImportBatch.Pending>(
            documentLimit: options.windowDocumentLimit, byteLimit: options.windowByteLimit)
        var writing: [Writing] = []
        var previousOffset: Int64 = 0
        let startBytes = progress.bytes
        while true {
            var source: SourceDocument
            do {
                let next = try Self.nextDocument({ () throws(ImportError) in try reader.next() }) { error in
                    report.record(refuse(ImportReport.Refusal(error, collection: collection)), collection: collection, partition: nil)
                }
                guard let next else { break }
                source = next
            } catch {
                try await drain(&window, writing: &writing, into: &report)
                throw error
            }
            let sourceBytes = Int(source.byteOffset - previousOffset)
            progress.bytes = startBytes + source.byteOffset
            previousOffset = source.byteOffset
            progress.documents += 1
            report.conversions.add(source.conversions)
            do {
                let entry = try prepare(&source, collection: collection, mapper: mapper, placement: placement)
                let taken = collector.take()
                report.base64Fields += taken.base64Fields
                var bytes = sourceBytes
                for blob in taken.blobs {
                    report.blobs += 1
                    report.blobBytes += Int64(blob.bytes.count)
                    bytes += blob.bytes.count
                }
                window.append(ImportBatch.Pending(entry: entry, blobs: taken.blobs), partition: entry.object.partition, bytes: bytes)
            } catch let refusal as ImportReport.Refusal {
                _ = collector.take()
                report.record(refuse(refusal), collection: collection, partition: nil)
            }
            while window.isFull {
                try await flush(next(&window), writing: &writing, into: &report)
                tick(progress)
            }
        }
        try await drain(&window, writing: &writing, into: &report)
        tick(progress)
    }

    /// The next batch the window gives.
    private func next(_ window: inout PartitionWindow<Partition, ImportBatch.Pending>) -> ImportBatch {
        ImportBatch(window.takeBatch(documents: options.batchDocuments, bytes: options.batchBytes))
    }

    /// Writes every document the window holds, and waits for the last batch.
    private func drain(
        _ window: inout PartitionWindow<Partition, ImportBatch.Pending>, writing: inout [Writing], into report: inout ImportReport
    ) async throws {
        while !window.isEmpty {
            try await flush(next(&window), writing: &writing, into: &report)
        }
        while !writing.isEmpty { try await finish(&writing, into: &report) }
    }

    /// The object of one document, or its refusal (thrown). Takes the document's body (each
    /// change made to it in place, not to a copy).
    private func prepare(
        _ source: inout SourceDocument, collection: String, mapper: JSONMapper, placement: DocumentPlacement
    ) throws -> ImportBatch.Entry {
        do {
            let (id, partition, field) = try placement.place(source.document)
            var document = ImportMapping.Document(
                collection: collection, id: id, partition: partition,
                body: placement.body(try source.takeBody(collection: collection, mapper: mapper), partitionField: field))
            do {
                try application.importing.document?(&document)
            } catch {
                throw ImportError(.refusedByPolicy, "the application's import mapping refused it: \(error)")
            }
            let key = try ObjectKey(collection: document.collection, id: document.id)
            // The engine's fields set as the engine sets them (where the mapping left them
            // out: one it set is checked by the engine), so a new object's body is stored as it
            // is rather than copied whole to add them.
            var body: [String: JSONValue] = [:]
            swap(&body, &document.body)
            if body["_id"] == nil { body["_id"] = .string(key.id) }
            if body["partition"] == nil { body["partition"] = .string(document.partition.description) }
            // Where it was read, for a refusal: its fields are in the body now.
            var origin = source
            origin.document = BSONDocument(source.id.map { [BSONDocument.Field("_id", $0)] } ?? [])
            origin.mapped = nil
            return ImportBatch.Entry(
                object: NewObject(key: key, partition: document.partition, body: body), collection: collection, source: origin)
        } catch let error as ImportError {
            let located = error.located(
                file: source.file, documentNumber: source.number, documentID: source.id?.displayText, byteOffset: source.byteOffset,
                line: source.line)
            throw ImportReport.Refusal(located, collection: collection)
        } catch let error as SyncError {
            throw Self.refusal(error, source, collection: collection)
        }
    }

    /// A batch being written while the window fills again. Up to ``ImportOptions/writers`` at a
    /// time, each its own transaction: one waits for PostgreSQL while the import applies and
    /// checks the next (the window gives them different partitions, so they seldom wait for
    /// each other's locks). Memory: the window and these batches. The task counts what became
    /// of the batch's documents (``ImportBatch/counts(_:)``) and lets go of the batch there, so
    /// its documents are freed beside the reading, not in it (a twentieth of the import's CPU,
    /// on the task that reads and maps every document).
    struct Writing {
        var task: Task<[ImportBatch.Count], any Error>
    }

    /// Starts writing `batch` (once fewer than ``ImportOptions/writers`` are being written, the
    /// oldest done and counted first), after publishing its blobs: one at a time, here, so two
    /// batches never store the same blob at once.
    private func flush(_ batch: ImportBatch, writing: inout [Writing], into report: inout ImportReport) async throws {
        while writing.count >= max(1, options.writers) { try await finish(&writing, into: &report) }
        guard !batch.isEmpty else { return }
        if !options.dryRun { try await publish(batch.blobs) }
        writing.append(Writing(task: Task { batch.counts(try await write(batch)) }))
    }

    /// Waits for the oldest batch being written and records what became of each of its
    /// documents. When it failed, waits for the others too (what they committed stays, and is
    /// `unchanged` when the import runs again) before passing its error on.
    private func finish(_ writing: inout [Writing], into report: inout ImportReport) async throws {
        guard !writing.isEmpty else { return }
        let current = writing.removeFirst()
        let counts: [ImportBatch.Count]
        do {
            counts = try await current.task.value
        } catch {
            for other in writing { _ = try? await other.task.value }
            writing = []
            throw error
        }
        for count in counts {
            if case .refused(let refusal) = count.outcome { output.refusal(refusal) }
            report.record(count.outcome, collection: count.collection, partition: count.partition, count: count.documents)
        }
    }

    /// Writes a batch in one transaction (its blobs are published before, by ``flush``); what
    /// became of each document.
    private func write(_ batch: ImportBatch) async throws -> [ObjectStore.ImportOutcome] {
        let permissions = application.permissions
        let principal = self.principal
        var validate: ObjectStore.ImportValidator?
        if !options.trusted {
            validate = { @Sendable (changes: [ObjectChange], partition: Partition, transaction: WriteTransaction) async throws in
                guard !changes.isEmpty else { return }
                try await permissions.validate(changes, in: partition, by: principal, transaction: transaction, logger: transaction.logger)
            }
        }
        let provisional = options.dryRun
            ? batch.blobs.map { BlobReference(digest: $0.key, length: Int64($0.value.bytes.count), contentType: $0.value.contentType) } : []
        let objects = batch.entries.map(\.object)
        let author = principal.description
        var attempt = 1
        while true {
            do {
                return try await store.importObjects(
                    objects, author: author, validate: validate, commit: !options.dryRun, provisionalBlobs: provisional)
            } catch let error as SyncError where error.code == .partitionMismatch && attempt < Self.conflictAttempts {
                // An id of the batch was committed in another partition while the batch was
                // written (by a batch written beside it: the same id twice in the export; or by
                // a server): written again, the batch reads it, and that document alone is
                // refused. Each attempt follows another transaction's commit.
                attempt += 1
            }
        }
    }

    /// How many times a batch is written whose ids other transactions keep creating meanwhile.
    static let conflictAttempts = 20

    /// Stores the bytes of the blobs not stored yet, and records the import's service as a
    /// holder of each (so its writes may cite them).
    private func publish(_ blobs: [BlobDigest: (bytes: [UInt8], contentType: String)]) async throws {
        guard !blobs.isEmpty else { return }
        let blobStore = BlobStore(client: store.client, content: PostgresBlobContent(client: store.client, logger: store.logger), logger: store.logger)
        for (digest, blob) in blobs.sorted(by: { $0.key < $1.key }) {
            if try await blobStore.blob(digest) == nil {
                let upload = try await blobStore.content.beginUpload(by: principal.description)
                try await upload.append(ByteBuffer(bytes: blob.bytes))
                try await upload.finish()
                _ = try await blobStore.publish(
                    digest, location: upload.location, length: Int64(blob.bytes.count), contentType: blob.contentType,
                    uploader: principal.description, quota: Int64.max)
                try await upload.published()
            }
            try await blobStore.recordHolder(digest, principal.description)
        }
    }

    private func refuse(_ refusal: ImportReport.Refusal) -> ImportReport.Outcome {
        output.refusal(refusal)
        return .refused(refusal)
    }

    static func refusal(_ error: SyncError, _ source: SourceDocument, collection: String?) -> ImportReport.Refusal {
        ImportReport.Refusal(
            code: error.code.rawValue, message: error.message, file: source.file, documentNumber: source.number, line: source.line,
            documentID: source.id?.displayText, field: error.details?["field"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 },
            collection: collection)
    }

    /// The next document `next` reads, `nil` after the last; a document that cannot be read
    /// or decoded is given to `refused` and passed over (the reader is at the next one); the
    /// error of a file that cannot be read on is thrown.
    static func nextDocument(
        _ next: () throws(ImportError) -> SourceDocument?, refused: (ImportError) -> Void
    ) throws(ImportError) -> SourceDocument? {
        while true {
            do {
                return try next()
            } catch {
                guard skippable(error.kind) else { throw error }
                refused(error)
            }
        }
    }

    /// Errors of one document, after which the reader is at the next one.
    static func skippable(_ kind: ImportError.Kind) -> Bool {
        switch kind {
        case .malformedJSON, .invalidExtendedJSON, .malformedBSON, .tooDeep, .unsupportedValue, .invalidField, .refusedByPolicy:
            true
        default:
            false
        }
    }

    /// The export files of `paths`: files as given, folders searched to any depth (other
    /// files in them passed over), in name order; mongodump's metadata files are passed over.
    static func files(_ paths: [String]) throws(ImportError) -> [ExportFile] {
        var files: [ExportFile] = []
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw ImportError(.io, "no such file or folder", file: path)
            }
            if isDirectory.boolValue {
                files += try folderFiles(path)
            } else if let file = ExportFile(path: path) {
                files.append(file)
            } else {
                throw ImportError(.io, "is neither a mongoexport (.json) nor a mongodump (.bson) file, gzip'd or not", file: path)
            }
        }
        return files.filter { $0.kind != .dumpMetadata }
    }

    private static func folderFiles(_ folder: String) throws(ImportError) -> [ExportFile] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
        } catch {
            throw ImportError(.io, "cannot list the folder: \(error.localizedDescription)", file: folder)
        }
        var files: [ExportFile] = []
        for name in names where !name.hasPrefix(".") {
            let path = (folder as NSString).appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            if isDirectory.boolValue {
                files += try folderFiles(path)
            } else if let file = ExportFile(path: path) {
                files.append(file)
            }
        }
        return files
    }

    /// The bytes of the files when none is compressed (progress in percent), else `nil`.
    static func totalBytes(_ files: [ExportFile]) -> Int64? {
        var total: Int64 = 0
        for file in files {
            guard !file.path.hasSuffix(".gz"),
                let size = (try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? NSNumber
            else { return nil }
            total += size.int64Value
        }
        return total
    }
}

extension ImportReport.Refusal: Error {}
