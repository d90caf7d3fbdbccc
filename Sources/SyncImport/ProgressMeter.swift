/// The progress lines of an import: on a terminal a bar redrawn in place (`\r`) with the
/// rate, otherwise a plain line now and then. Pure: the caller gives the time (an injected
/// clock's reading since the start) and prints what it returns.
public struct ProgressMeter: Sendable {
    public enum Style: Sendable, Hashable {
        /// A bar redrawn in place, at most every `interval`.
        case bar(width: Int)
        /// A line at most every `interval`.
        case lines
    }

    public let style: Style
    public let interval: Duration
    /// All the bytes of the files, when known (uncompressed files); `nil` for a count only.
    public var totalBytes: Int64?
    private var last: Duration?

    public init(style: Style, interval: Duration, totalBytes: Int64? = nil) {
        self.style = style
        self.interval = interval
        self.totalBytes = totalBytes
    }

    /// What to print after `documents` documents and `bytes` bytes read, at `elapsed` since
    /// the start; `nil` when the last output is recent. `force` prints anyway (the end).
    public mutating func update(documents: Int, bytes: Int64, elapsed: Duration, force: Bool = false) -> String? {
        if !force, let last, elapsed - last < interval { return nil }
        last = elapsed
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = seconds > 0 ? Int((Double(documents) / seconds).rounded()) : 0
        let fraction: Double? = totalBytes.flatMap { $0 > 0 ? min(1, Double(bytes) / Double($0)) : nil }
        switch style {
        case .bar(let width):
            let filled = fraction.map { Int(($0 * Double(width)).rounded(.down)) } ?? 0
            let bar = fraction == nil ? "" : "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            let percent = fraction.map { "\(Int(($0 * 100).rounded(.down)))% " } ?? ""
            return "\r\(bar)\(percent)\(documents) documents, \(rate)/s"
        case .lines:
            let percent = fraction.map { " (\(Int(($0 * 100).rounded(.down)))%)" } ?? ""
            return "progress: \(documents) documents\(percent), \(rate)/s"
        }
    }
}
