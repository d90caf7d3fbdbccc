/// Why an event could not be handled, as recorded with a dead letter.
public struct TriggerError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The event is deeper than ``TriggerConfiguration/maximumDepth``: a cycle of triggers.
        public static let depthExceeded = Code(rawValue: "trigger_depth_exceeded")
        /// The handler threw on every attempt.
        public static let handlerFailed = Code(rawValue: "handler_failed")
        /// This instance no longer holds the trigger's lease; another one continues.
        public static let leaseLost = Code(rawValue: "lease_lost")
        /// No dead letter matches.
        public static let notFound = Code(rawValue: "not_found")
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
