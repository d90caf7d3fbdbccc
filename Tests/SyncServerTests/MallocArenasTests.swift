@testable import SyncServer
import Testing

@Suite("Malloc arenas")
struct MallocArenasTests {
    @Test("the limit a command line asks for: the option (either form) before the environment, the default otherwise, none for a command that serves nothing")
    func requested() {
        let cases: [(arguments: [String], environment: [String: String], limit: Int?)] = [
            ([], [:], 2),
            (["serve", "--port", "0"], [:], 2),
            (["--port", "0"], ["PSYNC_MALLOC_ARENAS": " 4 "], 4),
            (["serve", "--malloc-arenas", "8"], ["PSYNC_MALLOC_ARENAS": "4"], 8),
            (["--malloc-arenas=0"], [:], 0),
            (["serve", "--malloc-arenas"], ["PSYNC_MALLOC_ARENAS": "3"], 3),
            // Not a number: the default here, and the command's parser refuses it.
            (["serve", "--malloc-arenas", "many"], [:], 2),
            (["import", "User.json"], ["PSYNC_MALLOC_ARENAS": "4"], nil),
            (["migrate"], [:], nil),
        ]
        for (arguments, environment, limit) in cases {
            #expect(MallocArenas.requested(arguments: arguments, environment: environment) == limit, "\(arguments) \(environment)")
        }
    }

    @Test("a positive count is set through glibc's mallopt; 0 or less leaves glibc's own limit")
    func limit() {
        #expect(MallocArenas.limit(to: 0) == false)
        #expect(MallocArenas.limit(to: -1) == false)
        #if canImport(Glibc)
        #expect(MallocArenas.limit(to: 2) == true)
        #endif
    }
}
