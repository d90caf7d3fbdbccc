import Logging

#if canImport(Glibc)
import Glibc
#endif

/// glibc's limit on its malloc arenas (`M_ARENA_MAX`), set when the server starts.
///
/// glibc gives threads that allocate at once arenas of their own, up to eight per core. Swift's
/// tasks move between threads, so each arena ends up holding blocks of every kind, and after a
/// load the blocks that stay (runtime caches, a pool's connections, buffers that grew) are
/// spread over the pages of all of them: ``MemoryReleaser``'s trim can only return the pages
/// that hold none. Two arenas kept the 30-minute `soak` at 12.2 MB above its baseline after the
/// load instead of 19.6, with `ingest` unchanged (docs/PERFORMANCE.md). Arenas already made
/// stay; the limit applies to the ones made after it.
enum MallocArenas {
    /// `M_ARENA_MAX` in glibc's `malloc.h`, which Swift's Glibc module does not import.
    private static let arenaMaxOption: Int32 = -8

    /// glibc's `mallopt`, looked up like `malloc_trim` (``MemoryReleaser``): absent with
    /// another C library, where this does nothing.
    private static let mallopt: (@convention(c) (Int32, Int32) -> Int32)? = {
        #if canImport(Glibc)
        guard let symbol = dlsym(nil, "mallopt") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
        #else
        return nil
        #endif
    }()

    /// Limits the process to `count` arenas; `0` (or less) leaves glibc's own limit. Returns
    /// whether the limit was set.
    @discardableResult
    static func limit(to count: Int, logger: Logger) -> Bool {
        guard count > 0, let mallopt else { return false }
        let set = mallopt(arenaMaxOption, Int32(clamping: count)) == 1
        logger.debug("malloc arenas limited", metadata: ["arenas": "\(count)", "set": "\(set)"])
        return set
    }
}
