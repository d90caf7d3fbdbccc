import SyncStorage
import Testing

/// `DATABASE_URL` read into its parts, without connecting: what each part becomes, the
/// defaults, what is refused, and the text handed to logs and to child processes.
@Suite("Database URL")
struct DatabaseURLTests {
    @Test("every part is read: user, password, host, port, database and sslmode")
    func everyPart() throws {
        let url = try DatabaseURL("postgres://psync:s3cret@db.example.com:6543/sync_prod?sslmode=require")
        #expect(
            url == DatabaseURL(host: "db.example.com", port: 6543, username: "psync", password: "s3cret", database: "sync_prod", sslMode: "require"))
    }

    @Test("left out: port 5432, user postgres, no password, the database named after the user, sslmode prefer")
    func defaults() throws {
        #expect(try DatabaseURL("postgres://localhost") == DatabaseURL(host: "localhost", username: "postgres", database: "postgres"))
        #expect(try DatabaseURL("postgresql://kim@localhost/") == DatabaseURL(host: "localhost", username: "kim", database: "kim"))
        #expect(try DatabaseURL("postgres://kim:@localhost/db?application_name=x").password == "")
    }

    @Test("percent escapes in the user, password and database are decoded exactly once", arguments: [
        ("postgres://us%40er:p%40ss%3Aw%2Frd@h/my%20db", "us@er", "p@ss:w/rd", "my db"),
        // A literal percent sign followed by hex digits must stay as written.
        ("postgres://u%2541:a%2541b@h/db%252F1", "u%41", "a%41b", "db%2F1"),
        ("postgres://u:50%25off@h/d", "u", "50%off", "d"),
    ])
    func percentEscapes(text: String, user: String, password: String, database: String) throws {
        let url = try DatabaseURL(text)
        #expect(url.username == user)
        #expect(url.password == password)
        #expect(url.database == database)
    }

    @Test("refused: another scheme, no host, not a URL, an sslmode PostgreSQL does not know", arguments: [
        "", "localhost:5432/db", "mysql://u:p@h/db", "http://h/db", "postgres:///db", "postgres://u@/db?host=/tmp",
        "postgres://u:p@h:port/db", "postgres://h/db?sslmode=on", "postgres://h/db?sslmode=", "postgres://h/db?sslmode=REQUIRE",
    ])
    func refused(text: String) {
        #expect(throws: DatabaseURLError.self) { try DatabaseURL(text) }
    }

    @Test("the text for logs never holds the password, and says there is one")
    func descriptionMasksPassword() throws {
        let url = try DatabaseURL("postgres://kim:hunter2-secret@h:5433/db?sslmode=disable")
        #expect(url.description == "postgres://kim:***@h:5433/db?sslmode=disable")
        #expect(!"\(url)".contains("hunter2"))
        #expect(try DatabaseURL("postgres://kim@h/db").description == "postgres://kim@h:5432/db?sslmode=prefer")
    }

    @Test("the URL text for a child process reads back as the same URL, whatever its parts hold", arguments: [
        DatabaseURL(host: "127.0.0.1", port: 40_089, username: "psync", password: "d13f62ce31d48c6e", database: "psync", sslMode: "disable"),
        DatabaseURL(host: "db", username: "a@b/d e", password: "p@ss:/w?#&=+ é%", database: "my db/x?", sslMode: "verify-full"),
        DatabaseURL(host: "db", username: "u%41", password: "%2F%zz%", database: "d%20b"),
        DatabaseURL(host: "db", username: "u", password: nil, database: "d"),
    ])
    func urlStringRoundTrip(url: DatabaseURL) throws {
        #expect(try DatabaseURL(url.urlString) == url)
    }
}
