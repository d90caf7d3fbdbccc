-- Counters kept beside the body (ObjectCounter, docs/ARCHITECTURE.md "Counters").
--
-- A counter an application declares (RChat's conversations[id=…].unreadCount in each User
-- record) is raised by a trigger many times a second in records of tens of kilobytes. Every
-- raise rewrote the whole body: PostgreSQL stores a new jsonb value whole (a 1,000-member
-- room's message wrote ~7.7 MB of WAL, and the server read, parsed and sent back ~80 MB of
-- records). A raise of declared counters now writes only this column: the counters raised since
-- the body was last written whole, by path, each with where it is in the body and its value.
-- The body keeps its TOAST pointer and is neither read nor written.
--
-- counters: NULL, or {"<path>": [["<field or index>", ...], <value>], ...}: the path as the
-- operation named it (conversations[id=c-42].unreadCount), the place it resolved to in the body
-- when first raised (as a text[] for jsonb_set: {conversations,3,unreadCount}) and the value.
-- Every writer of the body writes it with the counters laid in and sets counters to NULL, so a
-- place resolved against the body stays right for as long as it is kept. Every reader reads
-- psync_with_counters(body, counters).
ALTER TABLE psync_objects ADD COLUMN counters jsonb;

-- The body with its counters laid in (NULL for a tombstone).
CREATE FUNCTION psync_with_counters(body jsonb, counters jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    entry jsonb;
    result jsonb := body;
BEGIN
    IF body IS NULL OR counters IS NULL THEN
        RETURN body;
    END IF;
    FOR entry IN SELECT value FROM jsonb_each(counters) LOOP
        result := jsonb_set(result, ARRAY(SELECT jsonb_array_elements_text(entry -> 0)), entry -> 1, true);
    END LOOP;
    RETURN result;
END
$$;

-- Where a counter's path leads in a body, as a text[] for jsonb_set and #>: steps are field
-- names (JSON strings) and selectors ({"f": field, "v": value}: the first element of an array
-- that is an object whose field is that string, as the operations select). The last step is a
-- field of an object, which may be missing (a raise creates it). NULL when the path leads
-- nowhere (a missing field or no element on the way, or a value of another kind): the server
-- then applies the raise to the whole body instead, with the operations' own errors.
CREATE FUNCTION psync_counter_at(body jsonb, steps jsonb) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    node jsonb := body;
    place text[] := '{}';
    step jsonb;
    last integer := jsonb_array_length(steps) - 1;
    found bigint;
BEGIN
    FOR i IN 0..last LOOP
        step := steps -> i;
        IF jsonb_typeof(step) = 'string' THEN
            IF jsonb_typeof(node) IS DISTINCT FROM 'object' THEN
                RETURN NULL;
            END IF;
            place := place || (step #>> '{}');
            IF i < last THEN
                node := node -> (step #>> '{}');
            END IF;
        ELSE
            IF jsonb_typeof(node) IS DISTINCT FROM 'array' OR i = last THEN
                RETURN NULL;
            END IF;
            SELECT e.n - 1 INTO found
            FROM jsonb_array_elements(node) WITH ORDINALITY AS e(v, n)
            WHERE jsonb_typeof(e.v) = 'object' AND e.v -> (step ->> 'f') = step -> 'v'
            ORDER BY e.n LIMIT 1;
            IF found IS NULL THEN
                RETURN NULL;
            END IF;
            place := place || found::text;
            node := node -> found::integer;
        END IF;
    END LOOP;
    RETURN place;
END
$$;

-- What a raise needs of each (object, counter path), read after the partitions' locks, without
-- sending any body: the object's partition and whether it is live, how many counters it keeps
-- and whether this one is among them, and where the path leads with the value there (from the
-- kept counters when the path is one of them, else from the body; r_at NULL: it leads nowhere;
-- r_value NULL: the field is missing). Objects never stored have no row.
CREATE FUNCTION psync_read_counters(c_collections text[], c_ids text[], c_paths text[], c_steps jsonb[])
RETURNS TABLE (r_n bigint, r_partition text, r_live boolean, r_kept integer, r_is_kept boolean, r_at text[], r_value jsonb)
LANGUAGE sql STABLE
SET enable_seqscan = off
SET jit = off
AS $$
    SELECT c.n, o.partition::text, o.body IS NOT NULL,
           coalesce((SELECT count(*)::integer FROM jsonb_object_keys(o.counters)), 0),
           coalesce(o.counters ? c.path, false),
           r.at,
           CASE WHEN r.at IS NULL THEN NULL
                WHEN o.counters ? c.path THEN o.counters -> c.path -> 1
                ELSE o.body #> r.at END
    FROM unnest(c_collections, c_ids, c_paths, c_steps) WITH ORDINALITY AS c(collection, id, path, steps, n)
    JOIN psync_objects o ON o.collection = c.collection AND o.id = c.id
    LEFT JOIN LATERAL (
        SELECT CASE WHEN o.body IS NULL THEN NULL
                    WHEN o.counters ? c.path THEN ARRAY(SELECT jsonb_array_elements_text(o.counters -> c.path -> 0))
                    ELSE psync_counter_at(o.body, c.steps) END AS at
    ) r ON true
$$;

-- Raises counters: each object gets its new version and its new counters' entries (merged over
-- those it keeps); the body is not touched. Returns how many objects were written (each must
-- be live in the partition given).
CREATE FUNCTION psync_raise_counters(o_collections text[], o_ids text[], o_partitions text[], o_versions bigint[], o_entries jsonb[])
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    written bigint;
BEGIN
    UPDATE psync_objects AS o
    SET version = t.v, counters = coalesce(o.counters, '{}'::jsonb) || t.e, updated_at = now()
    FROM unnest(o_collections, o_ids, o_partitions, o_versions, o_entries) AS t(c, i, p, v, e)
    WHERE o.collection = t.c AND o.id = t.i AND o.partition = t.p AND o.body IS NOT NULL;
    GET DIAGNOSTICS written = ROW_COUNT;
    RETURN written;
END
$$;

-- The row triggers that read the body run only when it is written: a raise of counters leaves
-- the body alone, and their conditions would read it twice (the element indexes' triggers,
-- which the server creates, are made the same way: ObjectIndex.statements).
DROP TRIGGER psync_blob_refs_on_update ON psync_objects;
CREATE TRIGGER psync_blob_refs_on_update AFTER UPDATE OF body ON psync_objects FOR EACH ROW
    WHEN (coalesce(OLD.marks & 1 <> 0, OLD.body @? 'lax $.**."@blob"') OR coalesce(NEW.marks & 1 <> 0, NEW.body @? 'lax $.**."@blob"'))
    EXECUTE FUNCTION psync_track_blob_refs();
DROP TRIGGER psync_expiry_on_update ON psync_objects;
CREATE TRIGGER psync_expiry_on_update AFTER UPDATE OF body ON psync_objects FOR EACH ROW
    WHEN (coalesce(OLD.marks & 2 <> 0, OLD.body ? '@expiresAt') OR coalesce(NEW.marks & 2 <> 0, NEW.body ? '@expiresAt'))
    EXECUTE FUNCTION psync_track_expiry();

-- Instances that lay counters into what they read. An instance of an earlier build reads the
-- body alone and would write an object back without its raised counters, so no instance raises
-- counters beside a body while one of those is running (InstanceRegistry); an earlier build
-- cannot start on this database (it does not know this migration).
ALTER TABLE psync_instances ADD COLUMN reads_counters boolean NOT NULL DEFAULT false;

-- psync_write of migration 0017: a body written whole carries its counters, which are dropped.
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
          SET version = EXCLUDED.version, body = EXCLUDED.body, marks = EXCLUDED.marks, counters = NULL, updated_at = now()
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

-- psync_lock_read of migration 0014, each body with its counters laid in.
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
        SELECT 1::smallint, o.partition::text, o.version, NULL::bigint, o.collection::text, o.id::text,
               CASE WHEN o.counters IS NULL THEN o.body ELSE psync_with_counters(o.body, o.counters) END, NULL::integer
        FROM psync_objects o
        JOIN unnest(collections, ids) AS k(collection, id) ON o.collection = k.collection AND o.id = k.id;
END
$$;

-- psync_page of migration 0014, each body with its counters laid in.
CREATE OR REPLACE FUNCTION psync_page(part text, after_version bigint, after_collection text, after_id text, floor bigint, lim bigint)
RETURNS TABLE (r_head bigint, r_pruned_through bigint, r_collection text, r_id text, r_version bigint, r_body jsonb,
               r_timeline integer, r_past_timelines integer[], r_past_ends bigint[])
LANGUAGE sql STABLE
SET enable_sort = off
AS $$
    SELECT p.version, p.pruned_through, o.collection, o.id, o.version,
           CASE WHEN o.counters IS NULL THEN o.body ELSE psync_with_counters(o.body, o.counters) END, p.timeline,
           NULLIF(p.past_timelines, '{}'), NULLIF(p.past_ends, '{}')
    FROM psync_partitions p
    LEFT JOIN LATERAL (
        SELECT o.collection, o.id, o.version, o.body, o.counters
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
