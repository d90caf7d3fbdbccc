-- The size of each event's before and after images, recorded with the event.
--
-- A trigger reads its events within a budget of bytes (--trigger-run-bytes): the images as JSON
-- text, as they arrive and are parsed, not as stored (a record listing a big room's members is
-- stored compressed in a twentieth of its text). The read measured each image it scanned by
-- turning it into text (octet_length(before::text)), for every candidate of every read: a read
-- of rchat.user-changed over the records of a 5,000-member room (0.4 MB each, both images)
-- turned ~80 MB of jsonb into text to take ten events, and took seconds. The server knows the
-- size of the text it encodes; it now records it in image_bytes, and a read sums that column.
-- An event without it (recorded by an instance of the previous build during a rolling upgrade,
-- or before this migration) is measured as text, as before.
ALTER TABLE psync_events ADD COLUMN image_bytes integer;

-- psync_write of migration 0020, with the events' image sizes (the bytes of the JSON text of
-- before and after, 0 for an image that is absent).
CREATE FUNCTION psync_write(
    o_collections text[], o_ids text[], o_partitions text[], o_versions bigint[], o_bodies jsonb[], o_deleted boolean[], o_marks smallint[],
    q_principals text[], q_request_ids text[], q_partitions text[], q_outcomes jsonb[],
    stamp text[], stamp_clock bigint,
    e_kinds text[], e_operations text[], e_collections text[], e_object_ids text[], e_partitions text[], e_versions bigint[],
    e_user_ids text[], e_before jsonb[], e_after jsonb[], e_changed jsonb[], e_removed jsonb[], e_depths integer[], e_authors text[],
    e_image_bytes integer[])
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
        INSERT INTO psync_events (clock, kind, operation, collection, object_id, partition, version, user_id, before, after, changed, removed, author, depth, image_bytes)
        SELECT coalesce(stamp_clock, 0), e.kind, e.operation, NULLIF(e.collection, ''), NULLIF(e.object_id, ''), NULLIF(e.partition, ''),
               NULLIF(e.version, -1), NULLIF(e.user_id, ''), NULLIF(e.before, 'null'::jsonb), NULLIF(e.after, 'null'::jsonb),
               e.changed, e.removed, e.author, e.depth, e.image_bytes
        FROM unnest(e_kinds, e_operations, e_collections, e_object_ids, e_partitions, e_versions, e_user_ids,
                    e_before, e_after, e_changed, e_removed, e_depths, e_authors, e_image_bytes)
             WITH ORDINALITY AS e(kind, operation, collection, object_id, partition, version, user_id, before, after, changed, removed, depth, author,
                                  image_bytes, ord)
        ORDER BY e.ord;
    END IF;
    RETURN QUERY SELECT written, recorded;
END
$$;

-- The signature of migration 0020 (and 0018), as the previous build calls it: the same writes,
-- its events without sizes (measured as text when read).
CREATE OR REPLACE FUNCTION psync_write(
    o_collections text[], o_ids text[], o_partitions text[], o_versions bigint[], o_bodies jsonb[], o_deleted boolean[], o_marks smallint[],
    q_principals text[], q_request_ids text[], q_partitions text[], q_outcomes jsonb[],
    stamp text[], stamp_clock bigint,
    e_kinds text[], e_operations text[], e_collections text[], e_object_ids text[], e_partitions text[], e_versions bigint[],
    e_user_ids text[], e_before jsonb[], e_after jsonb[], e_changed jsonb[], e_removed jsonb[], e_depths integer[], e_authors text[])
RETURNS TABLE (r_written bigint, r_recorded bigint)
LANGUAGE sql VOLATILE
AS $$
    SELECT * FROM psync_write(
        o_collections, o_ids, o_partitions, o_versions, o_bodies, o_deleted, o_marks,
        q_principals, q_request_ids, q_partitions, q_outcomes, stamp, stamp_clock,
        e_kinds, e_operations, e_collections, e_object_ids, e_partitions, e_versions,
        e_user_ids, e_before, e_after, e_changed, e_removed, e_depths, e_authors, NULL::integer[])
$$;
