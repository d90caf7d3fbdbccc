import Foundation
import PartitionSync

extension Duration {
    /// The duration in seconds, for `Date` arithmetic.
    var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
