-- Change events for triggers (docs/TRIGGERS.md): an outbox written in the same transaction as
-- the changes, sequenced after commit into one gapless, commit-consistent order.

-- A Lamport clock per partition: a writing transaction sets the clock of every partition it
-- changed to one more than the largest of them, while it holds their locks. Two transactions
-- that touch a common partition therefore get clocks in their commit order.
ALTER TABLE psync_partitions ADD COLUMN clock bigint NOT NULL DEFAULT 0;

CREATE TABLE psync_events (
    id bigserial PRIMARY KEY,
    -- Set by the sequencer after commit: the event's position in the order triggers see.
    seq bigint UNIQUE,
    clock bigint NOT NULL,
    xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    -- 'object' for object changes; 'user' and 'session' for authentication and presence.
    kind text COLLATE "C" NOT NULL,
    -- insert, update, replace, delete; registered, deleted; opened, closed.
    operation text COLLATE "C" NOT NULL,
    collection text COLLATE "C",
    object_id text COLLATE "C",
    partition text COLLATE "C",
    version bigint,
    user_id text COLLATE "C",
    before jsonb,
    after jsonb,
    changed jsonb,
    removed jsonb,
    -- Who made the change: a user id, service:<name>, or trigger:<name>.
    author text NOT NULL,
    -- 0 for changes made by clients; a trigger's writes are one deeper than the event it handled.
    depth integer NOT NULL DEFAULT 0,
    -- The moment the event was written: the transaction's last statement, just before commit.
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX psync_events_unsequenced ON psync_events (clock, xid, id) WHERE seq IS NULL;

-- The sequencer's progress. Passes lock this row, so they run one at a time in any instance.
CREATE TABLE psync_sequencer (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    last_seq bigint NOT NULL DEFAULT 0
);
INSERT INTO psync_sequencer DEFAULT VALUES;

-- Each trigger's durable position and its lease: the instance holding an unexpired lease is the
-- one that runs the trigger.
CREATE TABLE psync_triggers (
    name text COLLATE "C" PRIMARY KEY,
    position bigint NOT NULL DEFAULT 0,
    lease_holder text,
    lease_expires timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Events of concurrent triggers already handled (their position advances after a whole batch).
CREATE TABLE psync_trigger_done (
    trigger text COLLATE "C" NOT NULL,
    seq bigint NOT NULL,
    PRIMARY KEY (trigger, seq)
);

-- Events a trigger gave up on after its retries, with the last error.
CREATE TABLE psync_dead_letters (
    id bigserial PRIMARY KEY,
    trigger text COLLATE "C" NOT NULL,
    seq bigint NOT NULL,
    attempts integer NOT NULL,
    error text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    retried_at timestamptz,
    UNIQUE (trigger, seq)
);

-- Open sessions per user and server instance, renewed while the instance lives. A user is
-- present while any unexpired row has sessions.
CREATE TABLE psync_presence (
    user_id text COLLATE "C" NOT NULL,
    instance text COLLATE "C" NOT NULL,
    sessions integer NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (user_id, instance)
);
CREATE INDEX psync_presence_by_expiry ON psync_presence (expires_at);
