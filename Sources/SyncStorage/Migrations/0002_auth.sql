-- Accounts, refresh tokens, API keys and login rate limiting. No secret is stored in clear:
-- passwords as bcrypt hashes, tokens and keys as SHA-256 hashes.

CREATE TABLE psync_users (
    id text COLLATE "C" PRIMARY KEY,
    email text NOT NULL,
    -- The email lowercased: the identity for login and uniqueness.
    email_key text COLLATE "C" NOT NULL UNIQUE,
    password_hash text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Refresh tokens rotate: each use revokes the token and issues the next of its family. A revoked
-- token presented again revokes the whole family (it was stolen, or replayed).
CREATE TABLE psync_refresh_tokens (
    token_hash bytea PRIMARY KEY,
    user_id text COLLATE "C" NOT NULL REFERENCES psync_users (id) ON DELETE CASCADE,
    family uuid NOT NULL,
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX psync_refresh_tokens_by_family ON psync_refresh_tokens (family);
CREATE INDEX psync_refresh_tokens_by_user ON psync_refresh_tokens (user_id);

-- Server-side keys for back-end principals ("service:<name>").
CREATE TABLE psync_api_keys (
    name text COLLATE "C" PRIMARY KEY,
    key_hash bytea NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz,
    last_used_at timestamptz
);

-- Failed logins per account and per client address, counted in fixed windows, shared by all
-- server instances.
CREATE TABLE psync_login_failures (
    scope text COLLATE "C" NOT NULL,
    subject text COLLATE "C" NOT NULL,
    window_start timestamptz NOT NULL,
    failures integer NOT NULL,
    PRIMARY KEY (scope, subject)
);
