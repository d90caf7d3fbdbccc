#!/usr/bin/env python3
"""The smoke check's writer (scripts/ha/check-cluster.sh): inserts one row every INTERVAL
seconds into `smoke` through DATABASE_URL (HAProxy's primary frontend) on one connection,
reconnecting after an error, until STOP_FILE exists. Logs one line per attempt:
`<unix time> ok <id> <server port>` or `<unix time> fail <id> <error>`.
Runs with .build-ha-venv/bin/python (psycopg2, scripts/install-ha-tools.sh)."""

import argparse
import os
import sys
import time

import psycopg2


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--stop-file", required=True)
    parser.add_argument("--interval", type=float, default=0.05)
    args = parser.parse_args()

    connection = None
    attempt = 0
    with open(args.log, "a", buffering=1) as log:
        while not os.path.exists(args.stop_file):
            attempt += 1
            try:
                if connection is None:
                    connection = psycopg2.connect(args.url, connect_timeout=2,
                                                  options="-c statement_timeout=3000")
                    connection.autocommit = True
                with connection.cursor() as cursor:
                    cursor.execute("INSERT INTO smoke (id, node) VALUES (%s, inet_server_port()) "
                                   "RETURNING inet_server_port()", (attempt,))
                    port = cursor.fetchone()[0]
                log.write(f"{time.time():.3f} ok {attempt} {port}\n")
            except psycopg2.Error as error:
                reason = (getattr(error, "pgcode", None) or type(error).__name__).replace(" ", "_")
                log.write(f"{time.time():.3f} fail {attempt} {reason}\n")
                if connection is not None:
                    try:
                        connection.close()
                    except psycopg2.Error:
                        pass
                    connection = None
            time.sleep(args.interval)  # the writer's pace, not a synchronisation
    if connection is not None:
        connection.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
