-- One page of a partition's objects for a snapshot or a catch-up (ObjectStore.page): the head
-- version and pruning point of the partition, and the objects after a keyset position
-- (version, collection, id) in that order, live ones and tombstones above `floor`.
--
-- A page must walk psync_objects_by_partition in order and stop after `lim` rows. When the
-- table's statistics do not know the partition yet (a large partition loaded faster than
-- autovacuum analyzes it), PostgreSQL estimates a few hundred rows and prefers a bitmap scan of
-- everything after the position plus a sort: every page then reads the rest of the partition,
-- and a snapshot of N objects costs O(N²). This function plans its query with sorting
-- disabled, so the ordered index scan is always the plan.
CREATE FUNCTION psync_page(part text, after_version bigint, after_collection text, after_id text, floor bigint, lim bigint)
RETURNS TABLE (r_head bigint, r_pruned_through bigint, r_collection text, r_id text, r_version bigint, r_body jsonb)
LANGUAGE sql STABLE
SET enable_sort = off
AS $$
    SELECT p.version, p.pruned_through, o.collection, o.id, o.version, o.body
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
