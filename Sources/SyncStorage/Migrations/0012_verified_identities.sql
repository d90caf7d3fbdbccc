-- Verified identities (docs/SECURITY.md, "Identity"): an account's email binds to rules and
-- invitations only once it is verified; accounts of an external OpenID Connect provider.

-- When the account proved it receives mail at its email; NULL while it has not. The accounts
-- that exist before this migration were trusted with their emails: they count as verified.
ALTER TABLE psync_users ADD COLUMN email_verified_at timestamptz;
UPDATE psync_users SET email_verified_at = created_at;

-- An account of an external provider has no password, and no email unless the provider
-- vouched for one that no other verified account holds.
ALTER TABLE psync_users ALTER COLUMN password_hash DROP NOT NULL;
ALTER TABLE psync_users ALTER COLUMN email DROP NOT NULL;
ALTER TABLE psync_users ALTER COLUMN email_key DROP NOT NULL;
ALTER TABLE psync_users ADD COLUMN issuer text COLLATE "C";
ALTER TABLE psync_users ADD COLUMN subject text COLLATE "C";
ALTER TABLE psync_users ADD CONSTRAINT psync_users_external_identity UNIQUE (issuer, subject);
ALTER TABLE psync_users ADD CONSTRAINT psync_users_one_kind
    CHECK ((issuer IS NULL) = (subject IS NULL) AND (issuer IS NOT NULL OR (password_hash IS NOT NULL AND email IS NOT NULL)));

-- The code an account's email was sent, hashed (SHA-256), until it is used, replaced by the
-- next one sent, or expires. Each wrong guess counts; past the limit the code is spent.
CREATE TABLE psync_email_codes (
    user_id text COLLATE "C" PRIMARY KEY REFERENCES psync_users (id) ON DELETE CASCADE,
    code_hash bytea NOT NULL,
    sent_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    failed_attempts integer NOT NULL DEFAULT 0
);
