@testable import EmbeddedPostgres
import Foundation
import Testing

/// Programs run by ``Command``: the embedded cluster's commands, which may leave a server
/// running for as long as the cluster lives.
@Suite("Commands")
struct CommandTests {
    @Test("a spawned program inherits none of this process's descriptors but its standard ones")
    func noInheritedDescriptors() async throws {
        // A descriptor open here, as Foundation's `Process` keeps one per child it watches.
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        // The shell lists its own descriptors.
        let output = try await Command.run(["/bin/sh", "-c", "ls /proc/$$/fd"])
        #expect(output.status == 0)
        let open = Set(output.text.split(whereSeparator: \.isWhitespace).compactMap { Int32($0) })
        #expect(!open.contains(ends[0]) && !open.contains(ends[1]), "the program holds the pipe: \(open.sorted())")
        #expect(open.isSubset(of: [0, 1, 2, 10]), "\(open.sorted())")  // dash keeps 10 for itself
    }
}
