@testable import SyncStorage
import Testing

@Suite("New-object guess")
struct NewObjectGuessTests {
    @Test("a collection is guessed until a guess fails, then read first for a while, then guessed again")
    func cooldown() {
        let guess = NewObjectGuess()
        #expect(guess.guess(["ChatMessage"]))
        guess.failed(["User"])
        // Puts of User objects are read first for the next uploads that touch it; others are not.
        for _ in 0..<NewObjectGuess.cooldown {
            #expect(!guess.guess(["User"]))
            #expect(guess.guess(["ChatMessage"]))
        }
        #expect(guess.guess(["User"]))
        // A batch touching a collection read first is read first as a whole.
        guess.failed(["User"])
        #expect(!guess.guess(["ChatMessage", "User"]))
    }
}
