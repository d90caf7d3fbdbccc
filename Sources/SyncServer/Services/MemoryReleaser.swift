import Foundation
import Logging
import PartitionSync
import ServiceLifecycle
import SyncProtocol
import SyncStorage

#if canImport(Glibc)
import Glibc
#endif

/// Trims the heap when ``MemoryReleasePolicy`` says so, checking every `interval`.
final class MemoryReleaser: Service, Sendable {
    let sessions: SessionRegistry
    let interval: Duration
    let time: SyncClock
    let logger: Logger

    init(sessions: SessionRegistry, interval: Duration = .seconds(10), time: SyncClock, logger: Logger) {
        self.sessions = sessions
        self.interval = interval
        self.time = time
        self.logger = logger
    }

    func run() async {
        var policy = MemoryReleasePolicy()
        await Periodic(every: interval, time: time, startsAtOnce: false).run {
            guard policy.check(sessions: sessions.count, anonymousBytes: ProcessStatus.bytes("RssAnon")) else { return }
            Self.release(logger)
            policy.released(anonymousBytes: ProcessStatus.bytes("RssAnon"))
        }
    }

    /// glibc's `malloc_trim`, which Swift's Glibc module does not import (`malloc.h`).
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        #if canImport(Glibc)
        guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
        #else
        return nil
        #endif
    }()

    /// Returns the free memory of every malloc arena to the system.
    static func release(_ logger: Logger) {
        guard let mallocTrim else { return }
        let released = mallocTrim(0)
        logger.debug("memory released to the system", metadata: ["released": "\(released != 0)"])
    }
}
