import DequeModule
import Locking
import SyncProtocol

/// Applies the uploads of many concurrent callers (sessions, HTTP requests) in shared
/// transactions: group commit. A caller hands over its uploads and waits; up to
/// ``concurrency`` transactions run at once, and each takes everything queued when it starts
/// (within ``maximumUploads``), so under load a commit carries many clients' uploads instead
/// of one, and when idle an upload starts at once, alone.
///
/// Each upload is still all-or-nothing on its own and keeps its order among a caller's
/// uploads (``ObjectStore/upload(batch:validators:)``). A transaction that fails as a whole
/// (an internal or transient error) is not allowed to fail its neighbours: each caller's
/// uploads are then applied again on their own.
package final class UploadCombiner: Sendable {
    package typealias Results = [Result<UploadResult, SyncError>]

    private struct Job: Sendable {
        var uploads: [Upload]
        var validate: ObjectStore.Validator?
        var continuation: CheckedContinuation<Results, any Error>
    }

    private struct State {
        var pending: Deque<Job> = []
        var running = 0
    }

    let store: ObjectStore
    /// Transactions applying uploads at once.
    package let concurrency: Int
    /// The most uploads one transaction takes (a caller's uploads are never split).
    package let maximumUploads: Int
    /// How long a transaction may take before its callers are answered with
    /// ``DeadlineError`` (the database is taken to be unavailable) and the combiner goes on:
    /// after PostgreSQL restarts, a query on a connection that died may never answer. The
    /// work left behind can still commit; the uploads' request ids make the callers' resends
    /// harmless. `nil`: no bound.
    package let timeout: Duration?
    private let state = Locked(State())

    package init(store: ObjectStore, concurrency: Int = 2, maximumUploads: Int = 200, timeout: Duration? = nil) {
        self.store = store
        self.concurrency = max(1, concurrency)
        self.maximumUploads = max(1, maximumUploads)
        self.timeout = timeout
    }

    /// Applies `uploads` (in order; each validated by `validate`), in a transaction shared
    /// with other callers' uploads when there are some; one result per upload.
    package func upload(_ uploads: [Upload], validate: ObjectStore.Validator?) async throws -> Results {
        guard !uploads.isEmpty else { return [] }
        return try await withCheckedThrowingContinuation { continuation in
            let start = state.withLock { state -> Bool in
                state.pending.append(Job(uploads: uploads, validate: validate, continuation: continuation))
                guard state.running < concurrency else { return false }
                state.running += 1
                return true
            }
            if start { Task { await self.drain() } }
        }
    }

    /// Applies what is queued, transaction after transaction, until nothing is.
    private func drain() async {
        while true {
            let jobs = state.withLock { state -> [Job] in
                var jobs: [Job] = []
                var count = 0
                while let next = state.pending.first, jobs.isEmpty || count + next.uploads.count <= maximumUploads {
                    jobs.append(state.pending.removeFirst())
                    count += next.uploads.count
                }
                if jobs.isEmpty { state.running -= 1 }
                return jobs
            }
            guard !jobs.isEmpty else { return }
            await apply(jobs)
        }
    }

    private func apply(_ jobs: [Job]) async {
        let uploads = jobs.flatMap(\.uploads)
        let validators = jobs.flatMap { job in job.uploads.map { _ in job.validate } }
        do {
            let store = self.store
            let results = try await withDeadline(timeout, "an upload transaction") {
                try await store.upload(batch: uploads, validators: validators)
            }
            var offset = 0
            for job in jobs {
                job.continuation.resume(returning: Array(results[offset..<(offset + job.uploads.count)]))
                offset += job.uploads.count
            }
        } catch {
            guard jobs.count > 1, !(error is DeadlineError) else {
                for job in jobs { job.continuation.resume(throwing: error) }
                return
            }
            // One caller's upload may have failed them all: each on its own again.
            await withTaskGroup(of: Void.self) { group in
                for job in jobs {
                    group.addTask {
                        do {
                            let store = self.store
                            job.continuation.resume(returning: try await withDeadline(self.timeout, "an upload transaction") {
                                try await store.upload(batch: job.uploads, validate: job.validate)
                            })
                        } catch {
                            job.continuation.resume(throwing: error)
                        }
                    }
                }
            }
        }
    }
}
