-- psync_lock_read of migration 0020, for a write transaction whose BEGIN was not waited for.
--
-- An upload's transaction sends BEGIN and its first statement, the lock and read, one behind the
-- other: postgres-nio sends a queued statement as soon as the one before it is answered, without
-- waiting for the server's task to take the answer (~0.4 ms a transaction on two busy cores,
-- docs/PERFORMANCE.md). Should BEGIN fail while the connection lives (a cancel that lands on it),
-- the lock and read would run on its own and commit its partitions' version bumps. So it refuses
-- to run outside the transaction BEGIN opened: that BEGIN says DEFERRABLE, which no other
-- statement sets and which means nothing to a READ COMMITTED, READ WRITE transaction
-- (PostgreSQL applies it to SERIALIZABLE READ ONLY ones only). Refused, the statement leaves
-- nothing behind. psync_lock_read stays as it was, for the previous build's instances during a
-- rolling upgrade (their BEGIN is a plain one).
CREATE FUNCTION psync_lock_read_begun(parts text[], collections text[], ids text[], lock_wait_ms integer)
RETURNS TABLE (r_kind smallint, r_partition text, r_version bigint, r_clock bigint, r_collection text, r_id text, r_body jsonb,
               r_timeline integer)
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    IF current_setting('transaction_deferrable') <> 'on' THEN
        RAISE EXCEPTION 'psync_lock_read_begun runs in the transaction of a BEGIN DEFERRABLE'
            USING ERRCODE = 'no_active_sql_transaction';
    END IF;
    RETURN QUERY SELECT * FROM psync_lock_read(parts, collections, ids, lock_wait_ms);
END
$$;
