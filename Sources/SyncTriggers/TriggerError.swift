import PartitionSync

/// Why an event could not be handled, as recorded with a dead letter.
package struct TriggerError: Error, Sendable, Hashable, CustomStringConvertible {
    package struct Code: RawRepresentable, Sendable, Hashable {
        package var rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        /// The event is deeper than ``TriggerConfiguration/maximumDepth``: a cycle of triggers.
        package static let depthExceeded = Code(rawValue: "trigger_depth_exceeded")
        /// The handler threw on every attempt.
        package static let handlerFailed = Code(rawValue: "handler_failed")
        /// This instance no longer holds the trigger's lease; another one continues.
        package static let leaseLost = Code(rawValue: "lease_lost")
        /// No dead letter matches.
        package static let notFound = Code(rawValue: "not_found")
    }

    package var code: Code
    package var message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { "\(code.rawValue): \(message)" }
}
