import ArgumentParser

/// The values a numeric option takes, and the value it was given (as the option, or as its
/// environment variable, or the default).
///
/// A command's `validate()` hands its options' bounds to ``check(_:)``, which refuses any value
/// outside them with one line per option naming the option, its variable and its values (exit
/// status 64, as for any bad option): `--trigger-run-events (env PSYNC_TRIGGER_RUN_EVENTS)
/// takes 1 to 100000, not 0`. The server never clamps a value it was given into range in
/// silence: an operator who wrote `--stop-timeout 0` learns it is not one.
struct OptionBounds: Sendable {
    let option: String
    let variable: String
    let value: Int64
    let values: ClosedRange<Int64>

    init(_ option: String, env variable: String, _ value: some BinaryInteger, _ values: ClosedRange<Int64>) {
        self.option = option
        self.variable = variable
        self.value = Int64(clamping: value)
        self.values = values
    }

    /// An option that takes `minimum` or more.
    init(_ option: String, env variable: String, _ value: some BinaryInteger, atLeast minimum: Int64) {
        self.init(option, env: variable, value, minimum...Int64.max)
    }

    /// The line refusing the value, `nil` when it is one of the option's values.
    var refusal: String? {
        guard !values.contains(value) else { return nil }
        let takes = values.upperBound == Int64.max ? "\(values.lowerBound) or more" : "\(values.lowerBound) to \(values.upperBound)"
        return "\(option) (env \(variable)) takes \(takes), not \(value)"
    }

    /// Throws a `ValidationError` naming every option given a value outside its bounds.
    static func check(_ bounds: [OptionBounds]) throws {
        let refusals = bounds.compactMap(\.refusal)
        guard refusals.isEmpty else { throw ValidationError(refusals.joined(separator: "\n")) }
    }
}
