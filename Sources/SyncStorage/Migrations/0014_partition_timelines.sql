-- Which history each partition version belongs to (docs/ARCHITECTURE.md, "Cursors across a
-- failover"). After an asynchronous failover or a point-in-time restore, PostgreSQL continues
-- on a new timeline from an earlier point: the commits after it (the lost tail) are gone, and
-- the new primary numbers its own commits with the same partition versions. A cursor names
-- the timeline of the commit at its version; a partition records on which timeline each of its
-- versions was written, so a cursor from a lost tail is told apart from one of this history
-- and answered with a reset.

-- The timeline new WAL is written on, from the name of the current WAL file. 0 on a standby
-- (which cannot write: the statement that tries fails with 25006 as before), and on a platform
-- that has no WAL file names to give (timelines are then not recorded, as before this
-- migration). A primary's timeline does not change while it runs, so the answer is kept for
-- the session (`psync.timeline`), which a standby's never is: its connection learns the new
-- timeline at its first call after a promotion.
CREATE FUNCTION psync_timeline() RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    known text := current_setting('psync.timeline', true);
BEGIN
    IF known IS NOT NULL AND known <> '' THEN
        RETURN known::integer;
    END IF;
    IF pg_is_in_recovery() THEN
        RETURN 0;
    END IF;
    BEGIN
        known := ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer::text;
    EXCEPTION WHEN OTHERS THEN
        known := '0';
    END;
    PERFORM set_config('psync.timeline', known, false);
    RETURN known::integer;
END
$$;

-- `timeline`: the one the partition's versions after the last of `past_ends` were written on
-- (0: before this migration). `past_timelines[i]` is the timeline of the versions up to and
-- including `past_ends[i]` (and after `past_ends[i-1]`): a version is appended when the
-- partition is first written on another timeline.
ALTER TABLE psync_partitions
    ADD COLUMN timeline integer NOT NULL DEFAULT 0,
    ADD COLUMN past_timelines integer[] NOT NULL DEFAULT '{}',
    ADD COLUMN past_ends bigint[] NOT NULL DEFAULT '{}';

-- The optimistic upload path is gone (every upload takes the locking transaction).
DROP FUNCTION psync_upload(text[], integer, text[], text[], bigint[], text[], text[], text[], bigint[], jsonb[], boolean[],
    text[], text[], text[], jsonb[], text[], bigint, text[], text[], text[], text[], text[], bigint[], text[], jsonb[], jsonb[],
    jsonb[], jsonb[], integer[], text[]);

-- psync_lock_read of migration 0006, which also keeps the partitions' timelines and returns
-- the transaction's timeline with each locked partition:
-- (0, partition, version, clock, NULL, NULL, NULL, timeline) and
-- (1, partition, version, NULL, collection, id, body, NULL).
DROP FUNCTION psync_lock_read(text[], text[], text[], integer);
CREATE FUNCTION psync_lock_read(parts text[], collections text[], ids text[], lock_wait_ms integer)
RETURNS TABLE (r_kind smallint, r_partition text, r_version bigint, r_clock bigint, r_collection text, r_id text, r_body jsonb,
               r_timeline integer)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    patience text := current_setting('lock_timeout');
    tl integer := psync_timeline();
BEGIN
    -- With lock_wait_ms, a lock not granted within it fails the transaction (55P03).
    IF lock_wait_ms IS NOT NULL THEN
        PERFORM set_config('lock_timeout', lock_wait_ms || 'ms', true);
    END IF;
    RETURN QUERY
        INSERT INTO psync_partitions AS p (partition, version, clock, timeline)
        SELECT name, 1, 1, tl FROM unnest(parts) AS t(name) ORDER BY name
        ON CONFLICT (partition) DO UPDATE SET
            version = p.version + 1, clock = p.clock + 1, updated_at = now(), timeline = tl,
            past_timelines = CASE WHEN p.timeline = tl THEN p.past_timelines ELSE p.past_timelines || p.timeline END,
            past_ends = CASE WHEN p.timeline = tl THEN p.past_ends ELSE p.past_ends || p.version END
        RETURNING 0::smallint, p.partition::text, p.version, p.clock, NULL::text, NULL::text, NULL::jsonb, tl;
    IF lock_wait_ms IS NOT NULL THEN
        PERFORM set_config('lock_timeout', patience, true);
    END IF;
    RETURN QUERY
        SELECT 1::smallint, o.partition::text, o.version, NULL::bigint, o.collection::text, o.id::text, o.body, NULL::integer
        FROM psync_objects o
        JOIN unnest(collections, ids) AS k(collection, id) ON o.collection = k.collection AND o.id = k.id;
END
$$;

-- psync_page of migration 0005, which also returns the partition's timelines (the same on
-- every row; the past ones NULL when there are none).
DROP FUNCTION psync_page(text, bigint, text, text, bigint, bigint);
CREATE FUNCTION psync_page(part text, after_version bigint, after_collection text, after_id text, floor bigint, lim bigint)
RETURNS TABLE (r_head bigint, r_pruned_through bigint, r_collection text, r_id text, r_version bigint, r_body jsonb,
               r_timeline integer, r_past_timelines integer[], r_past_ends bigint[])
LANGUAGE sql STABLE
SET enable_sort = off
AS $$
    SELECT p.version, p.pruned_through, o.collection, o.id, o.version, o.body, p.timeline,
           NULLIF(p.past_timelines, '{}'), NULLIF(p.past_ends, '{}')
    FROM psync_partitions p
    LEFT JOIN LATERAL (
        SELECT o.collection, o.id, o.version, o.body
        FROM psync_objects o
        WHERE o.partition = p.partition
          AND o.version >= after_version
          AND (o.version > after_version
               OR (after_collection IS NOT NULL AND (o.collection, o.id) > (after_collection, after_id)))
          AND (o.body IS NOT NULL OR o.version > COALESCE(floor, p.version))
        ORDER BY o.version, o.collection, o.id
        LIMIT lim
    ) o ON true
    WHERE p.partition = part
$$;

-- The timeline a trigger's lease was last taken or renewed on (TriggerLedger). A runner's
-- position in memory, and the events it has read, may be from commits a failover lost: a
-- renewal on another timeline stores none of it and hands the runner the stored position, and
-- a handler's transaction commits its position only on the lease's timeline.
ALTER TABLE psync_triggers ADD COLUMN lease_timeline integer NOT NULL DEFAULT 0;
