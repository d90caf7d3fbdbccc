-- The storage engine: objects in partitions, per-partition version counters, idempotent uploads.
-- See docs/ARCHITECTURE.md ("Why cursors are gapless").

-- One row: the epoch names this database, so a cursor from another database is detected.
CREATE TABLE psync_meta (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    epoch uuid NOT NULL DEFAULT gen_random_uuid(),
    created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO psync_meta DEFAULT VALUES;

-- A partition's version is bumped, under the row lock, by every transaction that writes to it.
-- The lock is held until commit, so versions of one partition commit in increasing order and a
-- reader that has seen version v has seen every change at or below v.
CREATE TABLE psync_partitions (
    partition text COLLATE "C" PRIMARY KEY,
    version bigint NOT NULL,
    -- Tombstones at or below this version have been removed; older cursors get a reset.
    pruned_through bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Every object, live or tombstone (body IS NULL). version is the partition version of the
-- commit that last changed it.
CREATE TABLE psync_objects (
    collection text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    partition text COLLATE "C" NOT NULL,
    version bigint NOT NULL,
    body jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (collection, id)
);

-- Snapshots and "changes after cursor" read a partition in (version, collection, id) order.
CREATE INDEX psync_objects_by_partition ON psync_objects (partition, version, collection, id);

-- The outcome of each upload per (principal, request id): a repeat returns it and applies nothing.
CREATE TABLE psync_requests (
    principal text COLLATE "C" NOT NULL,
    request_id text COLLATE "C" NOT NULL,
    partition text COLLATE "C" NOT NULL,
    -- {"version": n} when applied, {"code": c, "message": m} when rejected.
    outcome jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (principal, request_id)
);
CREATE INDEX psync_requests_by_age ON psync_requests (created_at);
