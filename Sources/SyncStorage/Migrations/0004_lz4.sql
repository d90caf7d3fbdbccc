-- Documents and change events are compressed with lz4 instead of pglz when they are large
-- enough to be compressed (about 2 kB): several times faster to compress, which matters on the
-- write path (every change event holds the document before and after). Only values written
-- from now on are affected. A server built without lz4 keeps pglz.
DO $$
BEGIN
    ALTER TABLE psync_objects ALTER COLUMN body SET COMPRESSION lz4;
    ALTER TABLE psync_events ALTER COLUMN before SET COMPRESSION lz4;
    ALTER TABLE psync_events ALTER COLUMN after SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'lz4 is not available; jsonb values stay compressed with pglz';
END
$$;
