-- Whether a streaming replica may serve a page (docs/SCALING.md, "Reads from replicas"): it
-- has replayed the primary's WAL up to `target` (a position in bytes, `pg_lsn - '0/0'`, read on
-- the primary when the catch-up started: every commit the client has seen and the head it must
-- reach are before it) and streams the primary's timeline `target_timeline` (0: not compared).
-- The server asks this, then reads the page with psync_page in a later statement, whose
-- snapshot holds every commit replayed by then: never an older state.
--
-- A replica a little behind is waited for, up to `wait_ms`: replay trails the primary by
-- milliseconds while it writes. One that has not replayed that far by then fails with PSR01;
-- one on another timeline (left on a history a failover lost) or not streaming fails with
-- PSR02; the server then reads the page from the primary. The timeline is read from
-- pg_stat_wal_receiver, which shows it to members of pg_read_all_stats (pg_monitor) only:
-- without it, PSR02.
CREATE FUNCTION psync_replica_ready(target bigint, target_timeline integer, wait_ms integer) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    replayed bigint;
    streamed integer;
    deadline timestamptz := clock_timestamp() + make_interval(secs => wait_ms / 1000.0);
BEGIN
    IF target_timeline <> 0 THEN
        SELECT received_tli INTO streamed FROM pg_stat_wal_receiver WHERE status = 'streaming';
        IF streamed IS DISTINCT FROM target_timeline THEN
            RAISE EXCEPTION 'the replica streams timeline %, not the primary''s %', streamed, target_timeline
                USING ERRCODE = 'PSR02';
        END IF;
    END IF;
    LOOP
        replayed := pg_last_wal_replay_lsn() - '0/0'::pg_lsn;
        EXIT WHEN replayed >= target;
        IF replayed IS NULL OR clock_timestamp() >= deadline THEN
            RAISE EXCEPTION 'the replica has replayed % of the % bytes of WAL the page needs', replayed, target
                USING ERRCODE = 'PSR01';
        END IF;
        PERFORM pg_sleep(0.001);
    END LOOP;
END
$$;
