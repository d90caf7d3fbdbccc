-- Accounts brought in by `psync import` from an App Services users export (docs/MIGRATING.md,
-- "Users"): they keep their ids, and have no password until their owner sets one with the
-- one-time token the import gave the operator to deliver.

-- When the account was imported; NULL for the others. An imported account is never given up
-- to a registration of its email (the operator brought it), verified or not.
ALTER TABLE psync_users ADD COLUMN imported_at timestamptz;
ALTER TABLE psync_users DROP CONSTRAINT psync_users_one_kind;
ALTER TABLE psync_users ADD CONSTRAINT psync_users_one_kind
    CHECK ((issuer IS NULL) = (subject IS NULL)
        AND (issuer IS NOT NULL OR (email IS NOT NULL AND (password_hash IS NOT NULL OR imported_at IS NOT NULL))));

-- The one-time password-set token of an imported account, hashed (SHA-256), until it is used
-- or expires. The account cannot sign in before.
CREATE TABLE psync_password_tokens (
    user_id text COLLATE "C" PRIMARY KEY REFERENCES psync_users (id) ON DELETE CASCADE,
    token_hash bytea NOT NULL UNIQUE,
    expires_at timestamptz NOT NULL
);
