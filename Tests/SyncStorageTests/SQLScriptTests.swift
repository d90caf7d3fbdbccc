import Testing

@testable import SyncStorage

/// A migration file split into the statements the migrator sends one by one, without
/// PostgreSQL: exactly where it splits, and where a semicolon does not end a statement.
@Suite("SQL script")
struct SQLScriptTests {
    @Test("statements end at semicolons, come trimmed and in order, and the last needs no semicolon")
    func splitsAtSemicolons() {
        let script = SQLScript("  CREATE TABLE t (id int);\n\nINSERT INTO t VALUES (1) ;INSERT INTO t VALUES (2)\n")
        #expect(script.statements == ["CREATE TABLE t (id int)", "INSERT INTO t VALUES (1)", "INSERT INTO t VALUES (2)"])
    }

    @Test("a script of nothing but whitespace, semicolons and line comments has no statement", arguments: [
        "", "   \n\t ", ";", ";;\n;", "-- only a comment", "-- one;\n-- two;\n", "\n  -- indented; comment\r\n;",
    ])
    func nothingToRun(script: String) {
        #expect(SQLScript(script).statements.isEmpty)
    }

    @Test("a semicolon in a string literal or a quoted identifier, doubled quotes included, does not split")
    func quotes() {
        let script = SQLScript(#"INSERT INTO t VALUES ('a;b', 'it''s; fine'); SELECT "odd;""name" FROM t; SELECT ''"#)
        #expect(script.statements == [#"INSERT INTO t VALUES ('a;b', 'it''s; fine')"#, #"SELECT "odd;""name" FROM t"#, "SELECT ''"])
    }

    @Test("a semicolon in a line or block comment does not split; the comment stays in its statement")
    func comments() {
        let script = SQLScript("SELECT 1 -- not; the end\n+ 1; SELECT /* ; */ 2; SELECT 3 /* unterminated ;")
        #expect(script.statements == ["SELECT 1 -- not; the end\n+ 1", "SELECT /* ; */ 2", "SELECT 3 /* unterminated ;"])
        // A comment after the last statement is not one more.
        #expect(SQLScript("SELECT 1;\n-- the end; really\n").statements == ["SELECT 1"])
    }

    @Test("a dollar-quoted body is one piece, whatever semicolons, other tags or quotes it holds")
    func dollarQuotes() {
        let function = """
            CREATE FUNCTION f() RETURNS text LANGUAGE plpgsql AS $fn$
            BEGIN
                EXECUTE $q$SELECT 'x;'$q$;
                RETURN $$a;b$$ || 'it''s';
            END $fn$
            """
        let script = SQLScript(function + ";\nSELECT $$;$$; SELECT $tag1$ ; $TAG1$ ; $tag1$")
        #expect(script.statements == [function, "SELECT $$;$$", "SELECT $tag1$ ; $TAG1$ ; $tag1$"])
    }

    @Test("a parameter such as $1 is not a dollar quote: the statements around it still split")
    func parametersAreNotTags() {
        let script = SQLScript("SELECT $1; SELECT $2::int; SELECT a$b FROM t; SELECT 4")
        #expect(script.statements == ["SELECT $1", "SELECT $2::int", "SELECT a$b FROM t", "SELECT 4"])
    }
}
