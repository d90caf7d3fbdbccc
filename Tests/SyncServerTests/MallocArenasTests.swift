import Logging

@testable import SyncServer
import Testing

@Suite("Malloc arenas")
struct MallocArenasTests {
    @Test("a positive count is set through glibc's mallopt; 0 or less leaves glibc's own limit")
    func limit() {
        let logger = Logger(label: "test")
        #expect(MallocArenas.limit(to: 0, logger: logger) == false)
        #expect(MallocArenas.limit(to: -1, logger: logger) == false)
        #if canImport(Glibc)
        // The server's default, which every in-process server of the tests sets too.
        #expect(MallocArenas.limit(to: 2, logger: logger) == true)
        #endif
    }
}
