#!/bin/sh
# Run once by the postgres image, on its first start with an empty data directory (it runs
# every file of /docker-entrypoint-initdb.d/ against its temporary, socket-only server):
# makes the role psync connects as and the database it owns.
#
# The role is not a superuser and creates no roles or databases: it owns the `psync`
# database, so in it (and in its `public` schema, which PostgreSQL 15 gives to the database's
# owner) the server's migrations create their tables, functions and triggers, and nothing
# outside it. Its password comes from PSYNC_DB_PASSWORD, the one in psync's DATABASE_URL.
#
# No `exit` and no `set -u`: the image sources a script that is not executable, in its own shell.
if [ -z "${PSYNC_DB_PASSWORD:-}" ]; then
    echo "10-psync-role.sh: PSYNC_DB_PASSWORD is not set" >&2
    false
else
    PGHOST= PGHOSTADDR= psql -v ON_ERROR_STOP=1 --no-psqlrc --no-password \
        --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-${POSTGRES_USER:-postgres}}" \
        --set=password="$PSYNC_DB_PASSWORD" <<'SQL'
CREATE ROLE psync LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD :'password';
CREATE DATABASE psync OWNER psync;
REVOKE ALL ON DATABASE psync FROM PUBLIC;
SQL
fi
