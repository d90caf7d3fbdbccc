@testable import SyncServer
import Testing

/// Reading a field of `/proc/<pid>/status`: the kernel's text, and this process's own file.
@Suite("Process status")
struct ProcessStatusTests {
    /// Lines as Linux writes them: a tab after the colon, blanks aligning the number, kB.
    static let status = """
        Name:\tpsync
        VmHWM:\t  491520 kB
        VmRSS:\t  301312 kB
        RssAnon:\t  287744 kB
        RssFile:\t   13568 kB
        Threads:\t4
        """

    @Test("a field is read in bytes; a field only prefixed by the name, or missing, is not taken")
    func parses() {
        #expect(ProcessStatus.bytes("RssAnon", in: Self.status) == 287_744 * 1024)
        #expect(ProcessStatus.bytes("VmHWM", in: Self.status) == 491_520 * 1024)
        #expect(ProcessStatus.bytes("Rss", in: Self.status) == nil, "RssAnon taken for Rss")
        #expect(ProcessStatus.bytes("VmSwap", in: Self.status) == nil)
    }

    @Test("this process's resident memory is read, and a process that does not exist has none")
    func ownProcess() {
        let resident = ProcessStatus.bytes("VmRSS") ?? 0
        #expect(resident > 1 << 20)
        #expect(ProcessStatus.bytes("VmRSS", of: Int32.max) == nil)
    }
}
