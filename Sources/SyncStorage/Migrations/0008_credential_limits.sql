-- Refresh-token reuse grace: when a token was exchanged. A used token presented again within
-- the grace period continues its family; later, it revokes the family. Until now a used token
-- was marked revoked; such rows stay revoked.
ALTER TABLE psync_refresh_tokens ADD COLUMN used_at timestamptz;

-- The last failure a counter saw, for the per-account backoff. The table also counts
-- registrations per address (scope 'registration') and failures per account and address
-- (scope 'account-address').
ALTER TABLE psync_login_failures ADD COLUMN last_failure_at timestamptz;
