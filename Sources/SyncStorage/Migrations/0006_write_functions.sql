-- The first step of every write transaction in one round trip (WriteTransaction.lockAndLoad):
-- lock the partitions to write and bump their versions and Lamport clocks, then read the
-- objects the operations touch.
--
-- The read must see every commit that preceded ours on these partitions. Under READ COMMITTED
-- a statement keeps the snapshot it started with while it waits for a row lock, so the lock and
-- the read cannot be one SQL statement; but each statement of a VOLATILE PL/pgSQL function takes
-- a fresh snapshot, so the read below, which starts after the lock was granted, sees them.
--
-- Rows come back as (0, partition, version, clock, NULL, NULL) for each locked partition and
-- (1, partition, version, NULL, collection, id, body) for each stored object.
--
-- Both functions of this file plan their statements once per connection (a custom plan per
-- call would cost more than the statements) and never scan a table whole: psync_partitions is
-- small but its rows are updated by every write, so a sequential scan reads all their dead
-- versions. Without JIT: a plan that would need a disabled scan costs more than JIT's
-- threshold, and compiling it takes a hundred times longer than running it.
CREATE FUNCTION psync_lock_read(parts text[], collections text[], ids text[], lock_wait_ms integer)
RETURNS TABLE (r_kind smallint, r_partition text, r_version bigint, r_clock bigint, r_collection text, r_id text, r_body jsonb)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    patience text := current_setting('lock_timeout');
BEGIN
    -- With lock_wait_ms, a lock not granted within it fails the transaction (55P03).
    IF lock_wait_ms IS NOT NULL THEN
        PERFORM set_config('lock_timeout', lock_wait_ms || 'ms', true);
    END IF;
    RETURN QUERY
        INSERT INTO psync_partitions AS p (partition, version, clock)
        SELECT name, 1, 1 FROM unnest(parts) AS t(name) ORDER BY name
        ON CONFLICT (partition) DO UPDATE SET version = p.version + 1, clock = p.clock + 1, updated_at = now()
        RETURNING 0::smallint, p.partition::text, p.version, p.clock, NULL::text, NULL::text, NULL::jsonb;
    IF lock_wait_ms IS NOT NULL THEN
        PERFORM set_config('lock_timeout', patience, true);
    END IF;
    RETURN QUERY
        SELECT 1::smallint, o.partition::text, o.version, NULL::bigint, o.collection::text, o.id::text, o.body
        FROM psync_objects o
        JOIN unnest(collections, ids) AS k(collection, id) ON o.collection = k.collection AND o.id = k.id;
END
$$;

-- The last step of every write transaction before COMMIT, in one round trip
-- (WriteTransaction.finish): write the changed objects, store the upload outcomes, give the
-- changed partitions the transaction's Lamport clock, and record the change events.
-- Returns how many objects were written (fewer than given when a key was created meanwhile in
-- another partition) and how many outcomes were stored (fewer when a request id has one
-- already). A function, so its statements are planned once per connection.
CREATE FUNCTION psync_write(
    o_collections text[], o_ids text[], o_partitions text[], o_versions bigint[], o_bodies jsonb[], o_deleted boolean[],
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
        INSERT INTO psync_objects AS o (collection, id, partition, version, body)
        SELECT c, i, p, v, CASE WHEN d THEN NULL ELSE b END
        FROM unnest(o_collections, o_ids, o_partitions, o_versions, o_bodies, o_deleted) AS t(c, i, p, v, b, d)
        ON CONFLICT (collection, id) DO UPDATE
          SET version = EXCLUDED.version, body = EXCLUDED.body, updated_at = now()
          WHERE o.partition = EXCLUDED.partition;
        GET DIAGNOSTICS written = ROW_COUNT;
    END IF;
    IF cardinality(q_request_ids) > 0 THEN
        INSERT INTO psync_requests (principal, request_id, partition, outcome)
        SELECT * FROM unnest(q_principals, q_request_ids, q_partitions, q_outcomes)
        ON CONFLICT (principal, request_id) DO NOTHING;
        GET DIAGNOSTICS recorded = ROW_COUNT;
    END IF;
    -- The Lamport clock: locking a partition raised its clock by one; a transaction that changed
    -- several takes the largest of them and sets it on all, while it holds their locks
    -- (docs/TRIGGERS.md, "Ordering"). `stamp` lists the partitions still below it.
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

-- A batch of uploads written whole in one statement that commits on its own (ObjectStore's
-- optimistic path, WriteTransaction.commitOptimistically): the batch was computed in the
-- server from a read made without locks (or, for uploads that only put objects, from the
-- assumption that none of them is stored yet), so this statement locks the partitions, checks
-- that every object the batch was computed from is still as it was read (`x_versions`: its
-- version then, -1 when it was not stored), and then writes like psync_write, with the
-- versions and the Lamport clock its locks gave. When a state changed, a request id has an
-- outcome already, or an object was created meanwhile in another partition, it raises
-- PS409 and nothing is written: the server applies the batch again the careful way. Two round
-- trips per batch (read, then this), or one, instead of BEGIN, lock and read, write, COMMIT.
--
-- o_versions, e_versions and stamp/stamp_clock are not read: every object and event takes its
-- partition's new version; an outcome given as JSON null becomes {"version": <that version>}.
-- Returns each locked partition with its new version.
CREATE FUNCTION psync_upload(
    parts text[], lock_wait_ms integer, x_collections text[], x_ids text[], x_versions bigint[],
    o_collections text[], o_ids text[], o_partitions text[], o_versions bigint[], o_bodies jsonb[], o_deleted boolean[],
    q_principals text[], q_request_ids text[], q_partitions text[], q_outcomes jsonb[],
    stamp text[], stamp_clock bigint,
    e_kinds text[], e_operations text[], e_collections text[], e_object_ids text[], e_partitions text[], e_versions bigint[],
    e_user_ids text[], e_before jsonb[], e_after jsonb[], e_changed jsonb[], e_removed jsonb[], e_depths integer[], e_authors text[])
RETURNS TABLE (r_partition text, r_version bigint)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    locked_parts text[];
    locked_versions bigint[];
    locked_clocks bigint[];
    stamp_at bigint;
    n bigint;
    written bigint;
    recorded bigint;
BEGIN
    -- With lock_wait_ms, a lock not granted within it fails the statement (55P03).
    IF lock_wait_ms IS NOT NULL THEN
        PERFORM set_config('lock_timeout', lock_wait_ms || 'ms', true);
    END IF;
    WITH l AS (
        INSERT INTO psync_partitions AS p (partition, version, clock)
        SELECT name, 1, 1 FROM unnest(parts) AS t(name) ORDER BY name
        ON CONFLICT (partition) DO UPDATE SET version = p.version + 1, clock = p.clock + 1, updated_at = now()
        RETURNING p.partition, p.version, p.clock)
    SELECT array_agg(l.partition::text), array_agg(l.version), array_agg(l.clock), max(l.clock)
    INTO locked_parts, locked_versions, locked_clocks, stamp_at FROM l;
    -- A new snapshot, taken after the locks were granted: it sees every commit that preceded
    -- ours on these partitions.
    -- (A lookup by primary key per object: a join may be planned as a scan of the table.)
    SELECT count(*) INTO n
    FROM unnest(x_collections, x_ids, x_versions) AS x(c, i, v)
    WHERE (SELECT o.version FROM psync_objects o WHERE o.collection = x.c AND o.id = x.i) IS DISTINCT FROM NULLIF(x.v, -1);
    IF n > 0 THEN
        RAISE EXCEPTION 'an object changed since the upload was computed' USING ERRCODE = 'PS409';
    END IF;
    -- Then psync_write, given what it takes from the server in the locking transaction —
    -- each object's and event's version, an accepted upload's outcome, the partitions to
    -- stamp and the clock — from the locks just taken.
    SELECT * INTO written, recorded FROM psync_write(
        o_collections, o_ids, o_partitions,
        ARRAY(SELECT l.v FROM unnest(o_partitions) WITH ORDINALITY AS t(p, ord)
              JOIN unnest(locked_parts, locked_versions) AS l(p, v) ON l.p = t.p ORDER BY t.ord),
        o_bodies, o_deleted,
        q_principals, q_request_ids, q_partitions,
        ARRAY(SELECT CASE WHEN q.o = 'null'::jsonb THEN jsonb_build_object('version', l.v) ELSE q.o END
              FROM unnest(q_partitions, q_outcomes) WITH ORDINALITY AS q(p, o, ord)
              LEFT JOIN unnest(locked_parts, locked_versions) AS l(p, v) ON l.p = q.p ORDER BY q.ord),
        ARRAY(SELECT l.p FROM unnest(locked_parts, locked_clocks) AS l(p, c) WHERE l.c < stamp_at), stamp_at,
        e_kinds, e_operations, e_collections, e_object_ids, e_partitions,
        ARRAY(SELECT coalesce(l.v, -1) FROM unnest(e_partitions) WITH ORDINALITY AS e(p, ord)
              LEFT JOIN unnest(locked_parts, locked_versions) AS l(p, v) ON l.p = e.p ORDER BY e.ord),
        e_user_ids, e_before, e_after, e_changed, e_removed, e_depths, e_authors);
    IF written < cardinality(o_ids) THEN
        RAISE EXCEPTION 'an object of the upload was created in another partition meanwhile' USING ERRCODE = 'PS409';
    END IF;
    IF recorded < cardinality(q_request_ids) THEN
        RAISE EXCEPTION 'a request id of the batch has an outcome already' USING ERRCODE = 'PS409';
    END IF;
    RETURN QUERY SELECT * FROM unnest(locked_parts, locked_versions);
END
$$;

-- One pass of the event sequencer in one statement (EventLog.sequencePass): lock the
-- sequencer's row (passes run one at a time across instances), then — in a new snapshot,
-- which sees every transaction committed before the lock was granted — number the committed,
-- unnumbered events in (clock, xid, id) order. Returns the new last position with the kind,
-- collection and operation of each numbered event; nothing when there was nothing to number.
--
-- The events are found through the partial index of unnumbered events and updated by
-- primary key: planned freely, PostgreSQL joins them to a scan of the whole event log once
-- its statistics count many unnumbered rows (every event is inserted unnumbered).
CREATE FUNCTION psync_sequence(lim integer)
RETURNS TABLE (r_last bigint, r_kind text, r_collection text, r_operation text)
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET jit = off
AS $$
DECLARE
    last bigint;
    ids bigint[];
BEGIN
    SELECT last_seq INTO last FROM psync_sequencer FOR UPDATE;
    SELECT array_agg(p.id ORDER BY p.clock, p.xid, p.id) INTO ids
    FROM (SELECT id, clock, xid FROM psync_events WHERE seq IS NULL ORDER BY clock, xid, id LIMIT lim) AS p;
    IF ids IS NULL THEN
        RETURN;
    END IF;
    UPDATE psync_sequencer SET last_seq = last + cardinality(ids);
    RETURN QUERY
        UPDATE psync_events e SET seq = last + t.n
        FROM unnest(ids) WITH ORDINALITY AS t(id, n)
        WHERE e.id = t.id
        RETURNING last + cardinality(ids), e.kind::text, e.collection::text, e.operation::text;
END
$$;

-- The server instances sharing this database, each renewing its row while it runs. An instance
-- that finds itself alone does not announce its commits with NOTIFY: no one else would hear
-- them (its own subscribers and triggers learn of them in process).
CREATE TABLE psync_instances (
    name text COLLATE "C" PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
