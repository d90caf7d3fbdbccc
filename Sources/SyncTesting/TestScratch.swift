import Foundation

/// The folders and files tests write (exports, web app folders, logs of child processes): all
/// under one folder per test process, removed when the process exits, so a test run leaves
/// nothing behind in the temporary directory. A process that dies without exiting (a crash, a
/// kill) leaves its folder, and the next test process removes it, as ``TestPostgres`` does with
/// abandoned clusters.
public enum TestScratch {
    private static let prefix = "psync-scratch-"

    /// This process's folder, made (and its removal at exit registered) on first use.
    private static let root: URL = {
        let temporary = URL(fileURLWithPath: NSTemporaryDirectory())
        removeAbandoned(in: temporary)
        let root = temporary.appendingPathComponent("\(prefix)\(getpid())")
        try? FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: TestScratch.root) }
        return root
    }()

    /// A fresh, empty folder whose name starts with `name`.
    public static func folder(_ name: String) throws -> URL {
        let folder = root.appendingPathComponent("\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// The path of a file not yet written, whose name starts with `name` and ends with `suffix`.
    public static func file(_ name: String, suffix: String = "") -> String {
        root.appendingPathComponent("\(name)-\(UUID().uuidString)\(suffix)").path
    }

    /// Removes the folders of test processes that are gone.
    private static func removeAbandoned(in temporary: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? []
        for name in names where name.hasPrefix(prefix) {
            guard let pid = Int32(name.dropFirst(prefix.count)), pid != getpid() else { continue }
            if kill(pid, 0) == 0 || errno == EPERM { continue }  // still running
            try? FileManager.default.removeItem(at: temporary.appendingPathComponent(name))
        }
    }
}
