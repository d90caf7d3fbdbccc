import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// glibc's limit on its malloc arenas (`M_ARENA_MAX`), set as the server's command starts.
///
/// glibc gives each new thread that allocates an arena of its own, up to eight per core. Swift's
/// tasks move between threads, so each arena ends up holding blocks of every kind, and after a
/// load the blocks that stay (runtime caches, a pool's connections, buffers that grew) are
/// spread over the pages of all of them: ``MemoryReleaser``'s trim can only return the pages
/// that hold none. Two arenas kept the 30-minute `soak` at 12.2 MB above its baseline after the
/// load instead of 19.6, with `ingest` unchanged (docs/PERFORMANCE.md). The limit only binds
/// arenas made after it, and a thread gets its arena at its first allocation: it is set before
/// the command starts any thread (`PartitionSyncCommand.main`), so it is read from the
/// arguments and the environment there, before they are parsed.
package enum MallocArenas {
    /// The server's limit unless `--malloc-arenas` or `PSYNC_MALLOC_ARENAS` says otherwise.
    package static let defaultCount = 2

    /// The commands that serve no load: they keep glibc's own limit.
    private static let otherCommands: Set<String> = ["migrate", "apikey", "triggers", "import"]

    /// The limit a command line asks for: `--malloc-arenas N` (or `=N`), else
    /// `PSYNC_MALLOC_ARENAS`, else ``defaultCount``; `nil` for a command other than `serve`.
    /// A value that is not a number is left to the command's parser, which refuses it.
    package static func requested(arguments: [String], environment: [String: String]) -> Int? {
        if let first = arguments.first, otherCommands.contains(first) { return nil }
        for (index, argument) in arguments.enumerated() {
            if argument == "--malloc-arenas", index + 1 < arguments.count { return Int(arguments[index + 1]) ?? defaultCount }
            if argument.hasPrefix("--malloc-arenas=") { return Int(argument.dropFirst("--malloc-arenas=".count)) ?? defaultCount }
        }
        if let value = environment["PSYNC_MALLOC_ARENAS"]?.trimmingCharacters(in: .whitespaces), !value.isEmpty {
            return Int(value) ?? defaultCount
        }
        return defaultCount
    }

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
    package static func limit(to count: Int) -> Bool {
        guard count > 0, let mallopt else { return false }
        return mallopt(arenaMaxOption, Int32(clamping: count)) == 1
    }
}
