-- What a body may hold that a trigger of psync_objects tracks, recorded by the writer beside
-- it, so a write no longer searches the old and the new body for it (BodyMarks in the server).
-- The blob and expiry triggers' conditions searched both bodies of every update: for a
-- 1,000-member room's unread counts (1,000 records of ~80 kB rewritten per message) the
-- searches, each reading the whole stored value again, were about 40 % of PostgreSQL's time
-- for the update.
--
-- marks: bit 1 (1) the body may hold an "@blob" reference, bit 2 (2) it may hold
-- "@expiresAt"; 0 when it holds neither (a tombstone's is 0). NULL means unknown (a row
-- written before this migration, or inserted by a writer that does not say): the triggers then
-- search that body as before. An UPDATE of body by hand must set marks to NULL with it. The marks may say more than the body holds (the writer looks for the
-- names anywhere, also in values), never less.
ALTER TABLE psync_objects ADD COLUMN marks smallint;

DROP TRIGGER psync_blob_refs_on_insert ON psync_objects;
DROP TRIGGER psync_blob_refs_on_update ON psync_objects;
DROP TRIGGER psync_blob_refs_on_delete ON psync_objects;
CREATE TRIGGER psync_blob_refs_on_insert AFTER INSERT ON psync_objects FOR EACH ROW
    WHEN (coalesce(NEW.marks & 1 <> 0, NEW.body @? 'lax $.**."@blob"'))
    EXECUTE FUNCTION psync_track_blob_refs();
CREATE TRIGGER psync_blob_refs_on_update AFTER UPDATE ON psync_objects FOR EACH ROW
    WHEN (coalesce(OLD.marks & 1 <> 0, OLD.body @? 'lax $.**."@blob"') OR coalesce(NEW.marks & 1 <> 0, NEW.body @? 'lax $.**."@blob"'))
    EXECUTE FUNCTION psync_track_blob_refs();
CREATE TRIGGER psync_blob_refs_on_delete AFTER DELETE ON psync_objects FOR EACH ROW
    WHEN (coalesce(OLD.marks & 1 <> 0, OLD.body @? 'lax $.**."@blob"'))
    EXECUTE FUNCTION psync_track_blob_refs();

DROP TRIGGER psync_expiry_on_insert ON psync_objects;
DROP TRIGGER psync_expiry_on_update ON psync_objects;
DROP TRIGGER psync_expiry_on_delete ON psync_objects;
CREATE TRIGGER psync_expiry_on_insert AFTER INSERT ON psync_objects FOR EACH ROW
    WHEN (coalesce(NEW.marks & 2 <> 0, NEW.body ? '@expiresAt'))
    EXECUTE FUNCTION psync_track_expiry();
CREATE TRIGGER psync_expiry_on_update AFTER UPDATE ON psync_objects FOR EACH ROW
    WHEN (coalesce(OLD.marks & 2 <> 0, OLD.body ? '@expiresAt') OR coalesce(NEW.marks & 2 <> 0, NEW.body ? '@expiresAt'))
    EXECUTE FUNCTION psync_track_expiry();
CREATE TRIGGER psync_expiry_on_delete AFTER DELETE ON psync_objects FOR EACH ROW
    WHEN (coalesce(OLD.marks & 2 <> 0, OLD.body ? '@expiresAt'))
    EXECUTE FUNCTION psync_track_expiry();

-- psync_write and psync_insert_new take each object's marks (o_marks; -1 for unknown). Their
-- signatures without marks stay, for an instance of the previous build still running during a
-- rolling upgrade: its writes store unknown marks (below).
CREATE FUNCTION psync_write(
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
          SET version = EXCLUDED.version, body = EXCLUDED.body, marks = EXCLUDED.marks, updated_at = now()
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

CREATE FUNCTION psync_insert_new(
    o_collections text[], o_ids text[], o_partitions text[], o_versions bigint[], o_bodies jsonb[], o_marks smallint[],
    stamp text[], stamp_clock bigint)
RETURNS TABLE (r_written bigint, r_recorded bigint)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    written bigint := 0;
BEGIN
    IF cardinality(o_ids) > 0 THEN
        INSERT INTO psync_objects (collection, id, partition, version, body, marks)
        SELECT c, i, p, v, b, NULLIF(m, -1::smallint)
        FROM unnest(o_collections, o_ids, o_partitions, o_versions, o_bodies, o_marks) AS t(c, i, p, v, b, m);
        GET DIAGNOSTICS written = ROW_COUNT;
    END IF;
    IF cardinality(stamp) > 0 THEN
        UPDATE psync_partitions AS p SET clock = stamp_clock FROM unnest(stamp) AS s(name) WHERE p.partition = s.name;
    END IF;
    RETURN QUERY SELECT written, 0::bigint;
END
$$;

-- The signatures of migrations 0006 and 0016, as the previous build calls them: the same
-- writes with unknown marks, so a row that one of its instances rewrites is searched again.
CREATE OR REPLACE FUNCTION psync_write(
    o_collections text[], o_ids text[], o_partitions text[], o_versions bigint[], o_bodies jsonb[], o_deleted boolean[],
    q_principals text[], q_request_ids text[], q_partitions text[], q_outcomes jsonb[],
    stamp text[], stamp_clock bigint,
    e_kinds text[], e_operations text[], e_collections text[], e_object_ids text[], e_partitions text[], e_versions bigint[],
    e_user_ids text[], e_before jsonb[], e_after jsonb[], e_changed jsonb[], e_removed jsonb[], e_depths integer[], e_authors text[])
RETURNS TABLE (r_written bigint, r_recorded bigint)
LANGUAGE sql VOLATILE
AS $$
    SELECT * FROM psync_write(
        o_collections, o_ids, o_partitions, o_versions, o_bodies, o_deleted, array_fill(-1::smallint, ARRAY[cardinality(o_ids)]),
        q_principals, q_request_ids, q_partitions, q_outcomes, stamp, stamp_clock,
        e_kinds, e_operations, e_collections, e_object_ids, e_partitions, e_versions,
        e_user_ids, e_before, e_after, e_changed, e_removed, e_depths, e_authors)
$$;

CREATE OR REPLACE FUNCTION psync_insert_new(
    o_collections text[], o_ids text[], o_partitions text[], o_versions bigint[], o_bodies jsonb[],
    stamp text[], stamp_clock bigint)
RETURNS TABLE (r_written bigint, r_recorded bigint)
LANGUAGE sql VOLATILE
AS $$
    SELECT * FROM psync_insert_new(
        o_collections, o_ids, o_partitions, o_versions, o_bodies, array_fill(-1::smallint, ARRAY[cardinality(o_ids)]),
        stamp, stamp_clock)
$$;
