-- Revoked credentials, so that every server instance refuses them and closes the sessions
-- they opened: a deleted user's access tokens ('user', the user id), the access tokens of a
-- logged-out login ('family', the refresh-token family, the tokens' `sid` claim), a revoked
-- API key ('key', the hex SHA-256 digest of the key). A row is kept until `expires_at` (NULL:
-- for good), when every access token it covers has expired anyway. Each row is announced on
-- psync_changes as 'revoked:<kind>:<subject>' in the transaction that writes it; instances
-- read the whole table again whenever their LISTEN connection (re)connects, so a lost
-- notification cannot leave access open.
CREATE TABLE psync_revocations (
    kind text COLLATE "C" NOT NULL,
    subject text COLLATE "C" NOT NULL,
    expires_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, subject)
);
CREATE INDEX psync_revocations_by_expiry ON psync_revocations (expires_at);
