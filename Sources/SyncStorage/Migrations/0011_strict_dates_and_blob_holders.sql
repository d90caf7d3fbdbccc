-- Strict dates and blob capabilities (docs/PROTOCOL.md, "Expiry" and "Blobs").

-- A body's expiry time, read by the same strict RFC 3339 grammar as the server's
-- (SyncProtocol's RFC3339): `YYYY-MM-DDTHH:MM:SS`, an optional fraction of 1 to 9 digits, and
-- `Z` or `±HH:MM`; no day the month does not have, no hour past 23, minute or second past 59,
-- offset past 23:59, or year 0000. NULL when the body (a tombstone's is NULL) has no `@expiresAt`. Any other value
-- raises 22007 (invalid_datetime_format): the server refuses such a value before it writes,
-- so a raise means a writer went around it, and the write fails instead of never expiring.
CREATE OR REPLACE FUNCTION psync_expiry_of(body jsonb) RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    text_value text;
    parts text[];
    year integer;
    month integer;
    day integer;
    offset_minutes integer := 0;
BEGIN
    IF body IS NULL OR NOT body ? '@expiresAt' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(body -> '@expiresAt') <> 'string' THEN
        RAISE EXCEPTION '@expiresAt is not an RFC 3339 date-time string' USING ERRCODE = '22007';
    END IF;
    text_value := body ->> '@expiresAt';
    parts := regexp_match(text_value,
        '^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d{1,9})?(Z|([+-])(\d\d):(\d\d))$');
    IF parts IS NULL THEN
        RAISE EXCEPTION '@expiresAt % is not an RFC 3339 date-time', text_value USING ERRCODE = '22007';
    END IF;
    year := parts[1]::integer;
    month := parts[2]::integer;
    day := parts[3]::integer;
    IF year < 1 OR month NOT BETWEEN 1 AND 12 OR day < 1
        OR day > extract(day FROM (make_date(year, month, 1) + interval '1 month' - interval '1 day'))
        OR parts[4]::integer > 23 OR parts[5]::integer > 59 OR parts[6]::integer > 59
        OR (parts[8] <> 'Z' AND (parts[10]::integer > 23 OR parts[11]::integer > 59)) THEN
        RAISE EXCEPTION '@expiresAt % names no instant', text_value USING ERRCODE = '22007';
    END IF;
    IF parts[8] <> 'Z' THEN
        offset_minutes := (parts[10]::integer * 60 + parts[11]::integer) * (CASE parts[9] WHEN '-' THEN -1 ELSE 1 END);
    END IF;
    RETURN make_timestamptz(year, month, day, parts[4]::integer, parts[5]::integer,
            parts[6]::double precision + coalesce(('0' || parts[7])::double precision, 0), 'UTC')
        - make_interval(mins => offset_minutes);
END
$$;

-- Who has shown they hold a blob's bytes: its uploaders (every `PUT` of the right bytes, the
-- first included) and whoever downloaded it whole. Only they may add a reference to it in a
-- partition where no live object references it yet; others are answered `blob_missing`, as
-- for a blob nobody stored.
CREATE TABLE psync_blob_holders (
    digest text COLLATE "C" NOT NULL,
    principal text COLLATE "C" NOT NULL,
    PRIMARY KEY (digest, principal)
);

INSERT INTO psync_blob_holders (digest, principal) SELECT digest, uploader FROM psync_blobs;

-- A blob is read through a partition: one indexed look-up of a live reference there.
CREATE INDEX psync_blob_refs_live_by_partition ON psync_blob_refs (digest, partition) WHERE released_at IS NULL;
