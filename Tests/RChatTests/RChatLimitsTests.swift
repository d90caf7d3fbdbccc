import Foundation
import RChat
import SyncProtocol
import SyncTesting
import Testing

/// RChat's limits from its server command's environment (`RCHAT_MAX_MEMBERS` and the others).
@Suite("RChat: limits from the environment", .timeLimit(.minutes(30)))
struct RChatLimitsTests {
    @Test("no variable: the defaults; each variable sets its limit alone, at both ends of its range")
    func variables() throws {
        #expect(try RChatLimits(environment: [:]) == RChatLimits())
        #expect(try RChatLimits(environment: ["PSYNC_PORT": "9000", "RCHAT_UNKNOWN": "x"]) == RChatLimits())
        let cases: [(String, ClosedRange<Int>, WritableKeyPath<RChatLimits, Int>)] = [
            ("RCHAT_MAX_CONVERSATION_ID_LENGTH", 1...1_000, \.maximumConversationIDLength),
            ("RCHAT_MAX_DISPLAY_NAME_LENGTH", 1...10_000, \.maximumDisplayNameLength),
            ("RCHAT_MAX_USER_NAME_LENGTH", 1...10_000, \.maximumUserNameLength),
            ("RCHAT_MAX_MEMBERS", 1...100_000, \.maximumMembers),
            ("RCHAT_MAX_CONVERSATIONS", 1...100_000, \.maximumConversations),
            ("RCHAT_MAX_AVATAR_BYTES", 0...16_777_216, \.maximumAvatarBytes),
            ("RCHAT_INVITATION_BUDGET_BYTES", 0...16_777_216, \.invitationBudgetBytes),
        ]
        for (name, values, limit) in cases {
            for value in [values.lowerBound, values.upperBound] {
                var expected = RChatLimits()
                expected[keyPath: limit] = value
                #expect(try RChatLimits(environment: [name: String(value)]) == expected, "\(name)=\(value)")
            }
            for text in [String(values.lowerBound - 1), String(values.upperBound + 1)] {
                #expect(throws: SyncError.self, "\(name)=\(text)") { try RChatLimits(environment: [name: text]) }
            }
        }
        let both = try RChatLimits(environment: ["RCHAT_MAX_MEMBERS": "5000", "RCHAT_INVITATION_BUDGET_BYTES": "1048576"])
        #expect(both == RChatLimits(maximumMembers: 5_000, invitationBudgetBytes: 1 << 20))
    }

    @Test("a value that is not a whole number in range is refused, naming the variable and its range")
    func refused() {
        for text in ["", "abc", " 5000", "5000 ", "5e3", "5000.0", "+", "0x10", "-1", "0", "100001", "99999999999999999999"] {
            do {
                _ = try RChatLimits(environment: ["RCHAT_MAX_MEMBERS": text])
                Issue.record("RCHAT_MAX_MEMBERS='\(text)' was taken")
            } catch {
                #expect(error.code == .badRequest)
                #expect(error.message == "RCHAT_MAX_MEMBERS takes a whole number from 1 to 100000, not '\(text)'")
            }
        }
    }

    @Test("psync does not start on a limit it cannot read: one line naming it, exit status 64")
    func serverRefuses() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ServerProcess.executable)
        process.arguments = ["serve"]
        process.environment = ProcessInfo.processInfo.environment.merging(["RCHAT_MAX_MEMBERS": "lots", "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"]) { $1 }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = await Task.detached { pipe.fileHandleForReading.readDataToEndOfFile() }.value
        process.waitUntilExit()
        #expect(process.terminationStatus == 64)
        #expect(String(decoding: data, as: UTF8.self) == "psync: RCHAT_MAX_MEMBERS takes a whole number from 1 to 100000, not 'lots'\n")
    }
}
