-- Blobs: bytes named by their SHA-256 digest, referenced from object bodies by
-- {"@blob": "sha256:…", "length": N, "contentType": "…"} (docs/PROTOCOL.md, "Blobs"), and
-- expiry: an object whose body has a top-level "@expiresAt" is deleted at that time
-- ("Expiry"). Both are kept in step with psync_objects by row triggers, whatever writes it.

-- A stored blob. Its bytes are in the content store under `location` (the default store:
-- psync_blob_chunks, the location being the upload's id). `uploader` is the principal whose
-- quota it counts against.
CREATE TABLE psync_blobs (
    digest text COLLATE "C" PRIMARY KEY,
    location text COLLATE "C" NOT NULL,
    length bigint NOT NULL,
    content_type text NOT NULL,
    uploader text COLLATE "C" NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX psync_blobs_by_uploader ON psync_blobs (uploader);
CREATE INDEX psync_blobs_by_age ON psync_blobs (created_at);

-- Uploads in progress: their chunks are written before the digest is known to be right. A row
-- left behind by a crash or a dropped connection is removed, with its chunks, by the collector.
CREATE TABLE psync_blob_uploads (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    principal text COLLATE "C" NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX psync_blob_uploads_by_age ON psync_blob_uploads (started_at);

-- The default content store: a blob's bytes in chunks of equal size (the last shorter).
-- Stored uncompressed out of line, so a range reads only the pages it needs.
CREATE TABLE psync_blob_chunks (
    upload bigint NOT NULL,
    seq integer NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (upload, seq)
);
ALTER TABLE psync_blob_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

-- Which objects reference which blobs. A reference is released (released_at) when its object
-- stops referencing the blob or is deleted; the blob is collected once no reference is live
-- and the last was released longer ago than tombstones are kept.
CREATE TABLE psync_blob_refs (
    digest text COLLATE "C" NOT NULL,
    collection text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    partition text COLLATE "C" NOT NULL,
    released_at timestamptz,
    PRIMARY KEY (digest, collection, id)
);
CREATE INDEX psync_blob_refs_by_object ON psync_blob_refs (collection, id);

-- The well-formed digests a body references (the engine refuses malformed references).
CREATE FUNCTION psync_blob_digests(body jsonb) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT d), '{}')
    FROM (SELECT v #>> '{}' AS d FROM jsonb_path_query(body, 'lax $.**."@blob"') AS v) found
    WHERE d ~ '^sha256:[0-9a-f]{64}$'
$$;

CREATE FUNCTION psync_track_blob_refs() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    old_digests text[] := '{}';
    new_digests text[] := '{}';
    key_collection text;
    key_id text;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        old_digests := psync_blob_digests(OLD.body);
        key_collection := OLD.collection;
        key_id := OLD.id;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        new_digests := psync_blob_digests(NEW.body);
        key_collection := NEW.collection;
        key_id := NEW.id;
    END IF;
    UPDATE psync_blob_refs SET released_at = now()
    WHERE collection = key_collection AND id = key_id AND released_at IS NULL AND NOT (digest = ANY (new_digests));
    INSERT INTO psync_blob_refs (digest, collection, id, partition)
    SELECT d, NEW.collection, NEW.id, NEW.partition FROM unnest(new_digests) AS d
    ON CONFLICT (digest, collection, id) DO UPDATE SET released_at = NULL, partition = EXCLUDED.partition
    WHERE psync_blob_refs.released_at IS NOT NULL;
    RETURN NULL;
END
$$;

-- The conditions keep the cost off writes of bodies without references (a few microseconds
-- for a kilobyte of JSON).
CREATE TRIGGER psync_blob_refs_on_insert AFTER INSERT ON psync_objects FOR EACH ROW
    WHEN (NEW.body @? 'lax $.**."@blob"') EXECUTE FUNCTION psync_track_blob_refs();
CREATE TRIGGER psync_blob_refs_on_update AFTER UPDATE ON psync_objects FOR EACH ROW
    WHEN (OLD.body @? 'lax $.**."@blob"' OR NEW.body @? 'lax $.**."@blob"') EXECUTE FUNCTION psync_track_blob_refs();
CREATE TRIGGER psync_blob_refs_on_delete AFTER DELETE ON psync_objects FOR EACH ROW
    WHEN (OLD.body @? 'lax $.**."@blob"') EXECUTE FUNCTION psync_track_blob_refs();

-- Objects with an expiry time, by that time.
CREATE TABLE psync_expiries (
    collection text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    partition text COLLATE "C" NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (collection, id)
);
CREATE INDEX psync_expiries_by_time ON psync_expiries (expires_at);

-- A body's expiry time; NULL when it has none or it is not an RFC 3339 date-time (the engine
-- refuses those).
CREATE FUNCTION psync_expiry_of(body jsonb) RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    text_value text := body ->> '@expiresAt';
BEGIN
    IF text_value IS NULL OR jsonb_typeof(body -> '@expiresAt') <> 'string'
        OR text_value !~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$' THEN
        RETURN NULL;
    END IF;
    RETURN text_value::timestamptz;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;

CREATE FUNCTION psync_track_expiry() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    due timestamptz;
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM psync_expiries WHERE collection = OLD.collection AND id = OLD.id;
        RETURN NULL;
    END IF;
    due := psync_expiry_of(NEW.body);
    IF due IS NULL THEN
        DELETE FROM psync_expiries WHERE collection = NEW.collection AND id = NEW.id;
    ELSE
        INSERT INTO psync_expiries (collection, id, partition, expires_at)
        VALUES (NEW.collection, NEW.id, NEW.partition, due)
        ON CONFLICT (collection, id) DO UPDATE SET expires_at = EXCLUDED.expires_at, partition = EXCLUDED.partition;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER psync_expiry_on_insert AFTER INSERT ON psync_objects FOR EACH ROW
    WHEN (NEW.body ? '@expiresAt') EXECUTE FUNCTION psync_track_expiry();
CREATE TRIGGER psync_expiry_on_update AFTER UPDATE ON psync_objects FOR EACH ROW
    WHEN (OLD.body ? '@expiresAt' OR NEW.body ? '@expiresAt') EXECUTE FUNCTION psync_track_expiry();
CREATE TRIGGER psync_expiry_on_delete AFTER DELETE ON psync_objects FOR EACH ROW
    WHEN (OLD.body ? '@expiresAt') EXECUTE FUNCTION psync_track_expiry();

-- Locations of deleted blobs whose bytes the content store has still to remove: the
-- collector deletes a blob and records its location in one transaction, and removes the
-- bytes after the commit, so a crash in between leaves work to finish, not bytes forever.
CREATE TABLE psync_blob_trash (
    location text COLLATE "C" PRIMARY KEY
);
