import ArgumentParser
import Foundation
import Locking
import Logging

/// An option's default taken from its environment variable (`PSYNC_DB_POOL` for
/// `--max-connections`).
///
/// A variable set to what the option cannot take (`PSYNC_DB_POOL=twenty`, `PSYNC_TRIGGER_TIMEOUT=6o`)
/// is not passed over for the built-in default: it is noted, and ``check()``, called by the
/// `validate()` of every command and option group reading such a default, refuses to run with
/// one line naming each variable and its value (exit code 64, as for a bad option). A variable
/// set to the empty string counts as unset; spaces around a value are dropped. Yes-or-no
/// variables (``flag(_:in:)``) and log levels (``logLevel(_:in:)``) are checked the same way.
enum EnvironmentDefault {
    /// Variables read so far whose value their option cannot take, by name.
    private static let malformed = Locked<[String: (value: String, expected: String)]>([:])

    /// The value of the environment variable `name` when it is set, else `fallback`.
    static func value<Value: LosslessStringConvertible>(
        _ name: String, default fallback: Value, in environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Value {
        optional(name, as: Value.self, in: environment) ?? fallback
    }

    /// The value of the environment variable `name`, `nil` when it is unset or empty.
    static func optional<Value: LosslessStringConvertible>(
        _ name: String, as type: Value.Type = Value.self, in environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Value? {
        guard let text = setting(name, in: environment) else { return nil }
        guard let value = Value(text) else { return note(name, text, expected: expectation(of: Value.self)) }
        return value
    }

    /// Whether the environment variable `name` says yes: `1`, `true`, `yes` or `on` (in any
    /// case); `0`, `false`, `no`, `off`, unset or empty say no, and anything else is noted as
    /// malformed.
    static func flag(_ name: String, in environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let text = setting(name, in: environment) else { return false }
        switch text.lowercased() {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: return note(name, text, expected: "true or false (1, true, yes, on / 0, false, no, off)") ?? false
        }
    }

    /// The log level the environment variable `name` names (`trace` … `critical`), `nil` when
    /// it is unset or empty; another value is noted as malformed.
    static func logLevel(_ name: String, in environment: [String: String] = ProcessInfo.processInfo.environment) -> Logger.Level? {
        guard let text = setting(name, in: environment) else { return nil }
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            return note(name, text, expected: "a log level (\(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        return level
    }

    /// The variable's value without the spaces around it; `nil` when unset or empty.
    private static func setting(_ name: String, in environment: [String: String]) -> String? {
        guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        return text
    }

    /// Notes `text` as a malformed value of `name`, for ``check()``; the caller then uses its default.
    private static func note<Value>(_ name: String, _ text: String, expected: String) -> Value? {
        malformed.withLock { $0[name] = (text, expected) }
        return nil
    }

    /// Throws a `ValidationError` naming every variable read with a value its option cannot take.
    static func check() throws {
        let found = malformed.withLock { $0 }
        guard !found.isEmpty else { return }
        let lines = found.keys.sorted().map { name in
            "environment variable \(name)=\"\(found[name]!.value)\" is not \(found[name]!.expected)"
        }
        throw ValidationError(lines.joined(separator: "\n"))
    }

    /// What a value of `type` is, as an answer says it.
    static func expectation<Value>(of type: Value.Type) -> String {
        guard let integer = type as? any FixedWidthInteger.Type else { return "a value of \(type)" }
        return integer.bitWidth < 64 ? "an integer from \(integer.min) to \(integer.max)" : "an integer"
    }
}
