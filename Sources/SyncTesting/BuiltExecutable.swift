import Foundation

/// Executables of the package under test, built beside the test bundle (`psync`, `rchat`, an
/// application's own client).
public enum BuiltExecutable {
    /// The path of the executable `name` next to the running test binary (or one folder up);
    /// where it would be when it is not built yet.
    public static func path(_ name: String) -> String {
        let testBinary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for directory in [testBinary, testBinary.deletingLastPathComponent()] {
            let candidate = directory.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return testBinary.appendingPathComponent(name).path
    }
}
