-- Counters in rows of their own (docs/ARCHITECTURE.md "Counters" and "Write amplification").
--
-- Migration 0018 raised declared counters beside the body, in psync_objects.counters: the body
-- stayed as it was, but each raise still gave the object's row a new version. version is in the
-- partition index, so that row was never updated in place: a new row version with an entry in
-- each of the table's indexes and a lock record (PostgreSQL logs one before updating a row whose
-- body is stored out of line), ~1 kB of WAL per member for a message in a big room, 22-27 times
-- the ~38 bytes that change.
--
-- Now a raise writes a row of psync_counters: the object's counters (the form of 0018: by path,
-- each with its place in the body and its value) and the version they give the object. Its only
-- index is the key, which a raise never changes, and half of each page is kept free, so every
-- raise but an object's first is a heap-only update of a short row. The object's row is written
-- once, at its first raise, to say that it has counters (counted), and again only when its body
-- is written whole: that write takes the counters in and drops their row (a trigger).
--
-- What a reader sees is unchanged: an object with counters has its counters' version and its
-- body with them laid in. Counters kept in psync_objects.counters by a build of 0018 or 0019 are
-- read as before, and moved to a row at the object's next raise: an instance of those builds
-- still running reads that column only, so none of this build's raises is made while one is
-- alive (psync_instances.reads_counter_rows), and this build's instances say they do not read
-- the column (reads_counters false) so that those stop raising counters themselves.
CREATE TABLE psync_counters (
    partition text COLLATE "C" NOT NULL,
    collection text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    -- The changing columns last, so the WAL record of an update carries little more than them.
    counters jsonb NOT NULL,
    version bigint NOT NULL,
    PRIMARY KEY (partition, collection, id)
) WITH (fillfactor = 50);

ALTER TABLE psync_objects ADD COLUMN counted boolean NOT NULL DEFAULT false;
ALTER TABLE psync_instances ADD COLUMN reads_counter_rows boolean NOT NULL DEFAULT false;

-- A body written whole took its counters in (psync_write sets counted to false); an object
-- removed takes them along.
CREATE FUNCTION psync_drop_counters() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    DELETE FROM psync_counters WHERE partition = OLD.partition AND collection = OLD.collection AND id = OLD.id;
    RETURN NULL;
END
$$;
CREATE TRIGGER psync_counters_on_write AFTER UPDATE OF body ON psync_objects FOR EACH ROW
    WHEN (OLD.counted AND NOT NEW.counted) EXECUTE FUNCTION psync_drop_counters();
CREATE TRIGGER psync_counters_on_delete AFTER DELETE ON psync_objects FOR EACH ROW
    WHEN (OLD.counted) EXECUTE FUNCTION psync_drop_counters();

-- The objects as the server serves them, for reading by hand and by scripts: a counted object
-- at its counters' version with them laid in (the server's own statements read them the same
-- way, StoredBody). psync_objects alone holds the bodies as last written whole.
CREATE VIEW psync_served_objects AS
SELECT o.collection, o.id, o.partition,
       CASE WHEN k.version IS NOT NULL THEN k.version ELSE o.version END AS version,
       CASE WHEN k.counters IS NOT NULL THEN psync_with_counters(o.body, k.counters)
            WHEN o.counters IS NOT NULL THEN psync_with_counters(o.body, o.counters)
            ELSE o.body END AS body,
       o.created_at, o.updated_at
FROM psync_objects o
LEFT JOIN psync_counters k ON o.counted AND k.partition = o.partition AND k.collection = o.collection AND k.id = o.id;

-- What a raise needs of each (object, counter path), as in 0018, the kept counters read from the
-- object's row of psync_counters when it has one, else from the column of 0018.
CREATE OR REPLACE FUNCTION psync_read_counters(c_collections text[], c_ids text[], c_paths text[], c_steps jsonb[])
RETURNS TABLE (r_n bigint, r_partition text, r_live boolean, r_kept integer, r_is_kept boolean, r_at text[], r_value jsonb)
LANGUAGE sql STABLE
SET enable_seqscan = off
SET jit = off
AS $$
    SELECT c.n, o.partition::text, o.body IS NOT NULL,
           coalesce((SELECT count(*)::integer FROM jsonb_object_keys(k.counters)), 0),
           coalesce(k.counters ? c.path, false),
           r.at,
           CASE WHEN r.at IS NULL THEN NULL
                WHEN k.counters ? c.path THEN k.counters -> c.path -> 1
                ELSE o.body #> r.at END
    FROM unnest(c_collections, c_ids, c_paths, c_steps) WITH ORDINALITY AS c(collection, id, path, steps, n)
    JOIN psync_objects o ON o.collection = c.collection AND o.id = c.id
    LEFT JOIN LATERAL (
        SELECT CASE WHEN o.counted
                    THEN (SELECT x.counters FROM psync_counters x WHERE x.partition = o.partition AND x.collection = o.collection AND x.id = o.id)
                    ELSE o.counters END AS counters
    ) k ON true
    LEFT JOIN LATERAL (
        SELECT CASE WHEN o.body IS NULL THEN NULL
                    WHEN k.counters ? c.path THEN ARRAY(SELECT jsonb_array_elements_text(k.counters -> c.path -> 0))
                    ELSE psync_counter_at(o.body, c.steps) END AS at
    ) r ON true
$$;

-- Raises counters: each live object of the partition given gets its new counters' entries
-- merged over those it keeps, with the new version, in its row of psync_counters; an object's
-- first raise also marks it counted (and moves counters kept in the column of 0018 to the row).
-- The object's row is otherwise not touched. Returns how many objects were written.
CREATE OR REPLACE FUNCTION psync_raise_counters(o_collections text[], o_ids text[], o_partitions text[], o_versions bigint[], o_entries jsonb[])
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    written bigint;
BEGIN
    WITH live AS (
        SELECT t.c, t.i, t.p, t.v, CASE WHEN o.counted THEN t.e ELSE coalesce(o.counters, '{}'::jsonb) || t.e END AS e, o.counted
        FROM unnest(o_collections, o_ids, o_partitions, o_versions, o_entries) AS t(c, i, p, v, e)
        JOIN psync_objects o ON o.collection = t.c AND o.id = t.i AND o.partition = t.p AND o.body IS NOT NULL
    ), raised AS (
        INSERT INTO psync_counters AS k (partition, collection, id, counters, version)
        SELECT p, c, i, e, v FROM live
        ON CONFLICT (partition, collection, id) DO UPDATE SET counters = k.counters || EXCLUDED.counters, version = EXCLUDED.version
        RETURNING 1
    ), marked AS (
        UPDATE psync_objects o SET counted = true, counters = NULL
        FROM live l WHERE NOT l.counted AND o.collection = l.c AND o.id = l.i
        RETURNING 1
    )
    SELECT count(*) INTO written FROM raised;
    RETURN written;
END
$$;

-- psync_write of migration 0018: a body written whole carries its counters; the object is no
-- longer counted, and its row of counters goes (psync_counters_on_write).
CREATE OR REPLACE FUNCTION psync_write(
    o_collections text[], o_ids text[], o_partitions text[], o_versions bigint[], o_bodies jsonb[], o_deleted boolean[], o_marks smallint[],
    q_principals text[], q_request_ids text[], q_partitions text[], q_outcomes jsonb[],
    stamp text[], stamp_clock bigint,
    e_kinds text[], e_operations text[], e_collections text[], e_object_ids text[], e_partitions text[], e_versions bigint[],
    e_user_ids text[], e_before jsonb[], e_after jsonb[], e_changed jsonb[], e_removed jsonb[], e_depths integer[], e_authors text[])
RETURNS TABLE (r_written bigint, r_recorded bigint)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    written bigint := 0;
    recorded bigint := 0;
BEGIN
    IF cardinality(o_ids) > 0 THEN
        INSERT INTO psync_objects AS o (collection, id, partition, version, body, marks)
        SELECT c, i, p, v, CASE WHEN d THEN NULL ELSE b END, CASE WHEN d THEN 0::smallint ELSE NULLIF(m, -1::smallint) END
        FROM unnest(o_collections, o_ids, o_partitions, o_versions, o_bodies, o_deleted, o_marks) AS t(c, i, p, v, b, d, m)
        ON CONFLICT (collection, id) DO UPDATE
          SET version = EXCLUDED.version, body = EXCLUDED.body, marks = EXCLUDED.marks, counters = NULL, counted = false, updated_at = now()
          WHERE o.partition = EXCLUDED.partition;
        GET DIAGNOSTICS written = ROW_COUNT;
    END IF;
    IF cardinality(q_request_ids) > 0 THEN
        INSERT INTO psync_requests (principal, request_id, partition, outcome)
        SELECT * FROM unnest(q_principals, q_request_ids, q_partitions, q_outcomes)
        ON CONFLICT (principal, request_id) DO NOTHING;
        GET DIAGNOSTICS recorded = ROW_COUNT;
    END IF;
    IF cardinality(stamp) > 0 THEN
        UPDATE psync_partitions AS p SET clock = stamp_clock FROM unnest(stamp) AS s(name) WHERE p.partition = s.name;
    END IF;
    IF cardinality(e_kinds) > 0 THEN
        INSERT INTO psync_events (clock, kind, operation, collection, object_id, partition, version, user_id, before, after, changed, removed, author, depth)
        SELECT coalesce(stamp_clock, 0), e.kind, e.operation, NULLIF(e.collection, ''), NULLIF(e.object_id, ''), NULLIF(e.partition, ''),
               NULLIF(e.version, -1), NULLIF(e.user_id, ''), NULLIF(e.before, 'null'::jsonb), NULLIF(e.after, 'null'::jsonb),
               e.changed, e.removed, e.author, e.depth
        FROM unnest(e_kinds, e_operations, e_collections, e_object_ids, e_partitions, e_versions, e_user_ids,
                    e_before, e_after, e_changed, e_removed, e_depths, e_authors)
             WITH ORDINALITY AS e(kind, operation, collection, object_id, partition, version, user_id, before, after, changed, removed, depth, author, ord)
        ORDER BY e.ord;
    END IF;
    RETURN QUERY SELECT written, recorded;
END
$$;

-- psync_lock_read of migration 0018, each object at its counters' version with them laid in.
CREATE OR REPLACE FUNCTION psync_lock_read(parts text[], collections text[], ids text[], lock_wait_ms integer)
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
        SELECT 1::smallint, o.partition::text, coalesce(kc.version, o.version), NULL::bigint, o.collection::text, o.id::text,
               CASE WHEN kc.counters IS NOT NULL THEN psync_with_counters(o.body, kc.counters)
                    WHEN o.counters IS NOT NULL THEN psync_with_counters(o.body, o.counters)
                    ELSE o.body END,
               NULL::integer
        FROM psync_objects o
        JOIN unnest(collections, ids) AS k(collection, id) ON o.collection = k.collection AND o.id = k.id
        LEFT JOIN LATERAL (
            SELECT x.version, x.counters FROM psync_counters x
            WHERE o.counted AND x.partition = o.partition AND x.collection = o.collection AND x.id = o.id
        ) kc ON true;
END
$$;

-- psync_page of migration 0018: the objects with counters come from their rows of counters, at
-- the counters' version. A partition's counted objects are all read for each page (they are few:
-- the counters of an application's per-user records), and sorted; the others walk the partition
-- index. In PL/pgSQL, so its plan is made once per connection, not at every call as a SQL
-- function's is (this statement's planning cost more than its run: 0.4 ms a page). The sort of
-- the counters' rows is the one enable_sort = off cannot avoid: its penalty makes the plan cost
-- ~1e10, which would have every call compiled by JIT (~230 ms), hence jit = off.
CREATE OR REPLACE FUNCTION psync_page(part text, after_version bigint, after_collection text, after_id text, floor bigint, lim bigint)
RETURNS TABLE (r_head bigint, r_pruned_through bigint, r_collection text, r_id text, r_version bigint, r_body jsonb,
               r_timeline integer, r_past_timelines integer[], r_past_ends bigint[])
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
SET enable_sort = off
SET jit = off
AS $$
BEGIN
    RETURN QUERY
    SELECT p.version, p.pruned_through, o.collection::text, o.id::text, o.version, o.body, p.timeline,
           NULLIF(p.past_timelines, '{}'), NULLIF(p.past_ends, '{}')
    FROM psync_partitions p
    LEFT JOIN LATERAL (
        SELECT u.collection, u.id, u.version, u.body
        FROM (
            (SELECT x.collection, x.id, x.version,
                    CASE WHEN x.counters IS NULL THEN x.body ELSE psync_with_counters(x.body, x.counters) END AS body
             FROM psync_objects x
             WHERE x.partition = p.partition
               AND x.version >= after_version
               AND (x.version > after_version
                    OR (after_collection IS NOT NULL AND (x.collection, x.id) > (after_collection, after_id)))
               AND (x.body IS NOT NULL OR x.version > COALESCE(floor, p.version))
               AND NOT x.counted
             ORDER BY x.version, x.collection, x.id
             LIMIT lim)
            UNION ALL
            (SELECT k.collection, k.id, k.version, psync_with_counters(c.body, k.counters) AS body
             FROM psync_counters k
             JOIN psync_objects c ON c.collection = k.collection AND c.id = k.id
             WHERE k.partition = p.partition
               AND k.version >= after_version
               AND (k.version > after_version
                    OR (after_collection IS NOT NULL AND (k.collection, k.id) > (after_collection, after_id)))
             ORDER BY k.version, k.collection, k.id
             LIMIT lim)
        ) u
        ORDER BY u.version, u.collection, u.id
        LIMIT lim
    ) o ON true
    WHERE p.partition = part;
END
$$;
