import Histogram
import Locking
import SyncProtocol

/// Latencies in microseconds in an HdrHistogram (3 significant digits), safe to record into
/// from any task.
final class LatencyRecorder: Sendable {
    private let histogram = Locked(Histogram<UInt64>(highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: .three))

    func record(nanoseconds: UInt64) {
        _ = histogram.withLock { $0.record(min(nanoseconds / 1_000, 600_000_000)) }
    }

    func record(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        record(nanoseconds: UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000))
    }

    var count: UInt64 { histogram.withLock { $0.totalCount } }

    /// Milliseconds at a percentile.
    func milliseconds(at percentile: Double) -> Double {
        histogram.withLock { Double($0.valueAtPercentile(percentile)) / 1_000 }
    }

    /// `{"count", "p50", "p99", "max", "mean"}`, in milliseconds.
    var summary: JSONValue {
        histogram.withLock { histogram in
            let count = histogram.totalCount
            func ms(_ microseconds: UInt64) -> JSONValue { .double(rounded(Double(microseconds) / 1_000)) }
            return [
                "count": .int(Int64(count)),
                "p50": count == 0 ? .null : ms(histogram.valueAtPercentile(50)),
                "p99": count == 0 ? .null : ms(histogram.valueAtPercentile(99)),
                "max": count == 0 ? .null : ms(histogram.max),
                "mean": count == 0 ? .null : .double(rounded(histogram.mean / 1_000)),
            ]
        }
    }
}

/// A number with three decimals, for reports.
func rounded(_ value: Double) -> Double {
    (value * 1_000).rounded() / 1_000
}

/// Bytes as mebibytes with three decimals, for the JSON reports.
func megabytes(_ bytes: Int) -> JSONValue {
    .double(rounded(Double(bytes) / 1_048_576))
}

/// `ours / floor` with three decimals, or null when the floor is zero.
func ratio(_ ours: Double, _ floor: Double) -> JSONValue {
    floor > 0 ? .double(rounded(ours / floor)) : .null
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
