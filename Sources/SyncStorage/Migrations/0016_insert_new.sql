-- The writes of an import's batch whose keys were not read (ObjectStore.importObjects): every
-- object is new, so its row is inserted without psync_write's ON CONFLICT clause, whose
-- check of the key before the insert (and the read of every key after the locks) cost an
-- import a quarter of its database time. A key stored already fails the statement with
-- unique_violation (23505): the import then writes the batch again the careful way, reading
-- every key. The clock stamp is psync_write's; an import that records events uses psync_write.
-- Returns how many objects were written, and 0 outcomes, as psync_write does.
CREATE FUNCTION psync_insert_new(
    o_collections text[], o_ids text[], o_partitions text[], o_versions bigint[], o_bodies jsonb[],
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
        INSERT INTO psync_objects (collection, id, partition, version, body)
        SELECT * FROM unnest(o_collections, o_ids, o_partitions, o_versions, o_bodies);
        GET DIAGNOSTICS written = ROW_COUNT;
    END IF;
    IF cardinality(stamp) > 0 THEN
        UPDATE psync_partitions AS p SET clock = stamp_clock FROM unnest(stamp) AS s(name) WHERE p.partition = s.name;
    END IF;
    RETURN QUERY SELECT written, 0::bigint;
END
$$;
