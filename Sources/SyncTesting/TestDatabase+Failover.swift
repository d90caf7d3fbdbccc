import PostgresNIO

/// An asynchronous failover, simulated in one database: what a standby has received is a copy
/// of every table and sequence the engine keeps (``standbyCaughtUp()``); the failover puts that
/// copy back in place of everything written since, and moves the database to the next
/// timeline, as promoting that standby would (``failOverLosingTail()``). The servers' own
/// connections stay up: call ``terminateListeners()`` too, as the failover would drop them.
///
/// Sequences go back with the tables: the new primary may hand out again the numbers the lost
/// tail used (the harsher case; a real one may have logged them ahead). scripts/ha has the same
/// with real PostgreSQL processes (`check-lost-tail.sh`: a standby's files, a new timeline).
extension TestDatabase {
    /// The standby has replayed everything committed so far.
    public func standbyCaughtUp() async throws {
        try await client.query(
            """
            DO $$
            DECLARE t record;
            BEGIN
                DROP SCHEMA IF EXISTS psync_standby CASCADE;
                CREATE SCHEMA psync_standby;
                FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'psync%' LOOP
                    EXECUTE format('CREATE TABLE psync_standby.%I AS TABLE public.%I', t.tablename, t.tablename);
                END LOOP;
                CREATE TABLE psync_standby."sequences" AS
                    SELECT sequencename AS name, last_value FROM pg_sequences WHERE schemaname = 'public';
            END
            $$
            """, logger: logger)
    }

    /// The standby of the last ``standbyCaughtUp()`` is promoted: every commit since is lost,
    /// and new commits are written on the next timeline.
    public func failOverLosingTail() async throws {
        _ = try await client.withTransaction(logger: logger) { connection in
            try await connection.query(
                """
                DO $$
                DECLARE t record; s record; columns text; next integer := psync_timeline() + 1;
                BEGIN
                    -- The copy is put back whole, foreign keys unchecked (as a standby's files are).
                    SET LOCAL session_replication_role = replica;
                    FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'psync_standby' AND tablename <> 'sequences' LOOP
                        SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position) INTO columns
                        FROM information_schema.columns
                        WHERE table_schema = 'public' AND table_name = t.tablename AND is_generated = 'NEVER';
                        EXECUTE format('DELETE FROM public.%I', t.tablename);
                        EXECUTE format('INSERT INTO public.%I (%s) OVERRIDING SYSTEM VALUE SELECT %s FROM psync_standby.%I',
                                       t.tablename, columns, columns, t.tablename);
                    END LOOP;
                    FOR s IN SELECT * FROM psync_standby."sequences" LOOP
                        IF s.last_value IS NULL THEN
                            PERFORM setval(quote_ident(s.name), 1, false);
                        ELSE
                            PERFORM setval(quote_ident(s.name), s.last_value, true);
                        END IF;
                    END LOOP;
                    EXECUTE format('CREATE OR REPLACE FUNCTION psync_timeline() RETURNS integer LANGUAGE sql VOLATILE AS %L',
                                   'SELECT ' || next);
                END
                $$
                """, logger: logger)
        }
    }

    /// The timeline new commits are written on.
    public func timeline() async throws -> Int32 {
        let rows = try await client.query("SELECT psync_timeline()", logger: logger)
        for try await timeline in rows.decode(Int32.self) { return timeline }
        return 0
    }
}
