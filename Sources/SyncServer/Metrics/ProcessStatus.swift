import Foundation

/// A process's memory as Linux counts it, from `/proc/<pid>/status`: the server's memory
/// release reads its own, `psync-bench` and the tests read the server's.
public enum ProcessStatus {
    /// A field of the status in bytes (`VmRSS`, `RssAnon`, `VmHWM`: the kernel writes them in
    /// kB) of process `pid`, this process by default; `nil` where there is no such file or field.
    public static func bytes(_ field: String, of pid: Int32? = nil) -> Int? {
        let path = "/proc/\(pid.map(String.init) ?? "self")/status"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return bytes(field, in: text)
    }

    /// A field in bytes in the text of a status file, whose lines read `RssAnon:	  123456 kB`.
    static func bytes(_ field: String, in text: String) -> Int? {
        let prefix = field + ":"
        for line in text.split(separator: "\n") where line.hasPrefix(prefix) {
            return line.dropFirst(prefix.count).split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) }.map { $0 * 1024 }
        }
        return nil
    }
}
