#!/usr/bin/env python3
"""Measures RChat's unread-count trigger under a steady stream of messages.

Starts `psync serve` (embedded PostgreSQL in a temporary directory, durable settings),
registers two users with a conversation, sends messages at a fixed rate for a while, then
reads from the database, per message, the delay from the commit of the message to the commit
of the trigger transaction that raised the unread counts (both stamped with clock_timestamp()
as the last statement before their commit). Prints one JSON object.

Usage: scripts/measure_trigger_lag.py [--binary .build/release/psync] [--rate 200] [--seconds 20]
"""
import argparse, json, os, re, signal, subprocess, sys, tempfile, threading, time, urllib.request

def request(base, method, path, body=None, token=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=30) as response:
        text = response.read()
        return json.loads(text) if text else None

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/psync")
    parser.add_argument("--rate", type=float, default=200.0, help="messages per second")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--senders", type=int, default=8)
    parser.add_argument("--port", type=int, default=18300)
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="psync-lag-", dir="/tmp")
    os.chmod(work, 0o755)
    log_path = os.path.join(work, "server.log")
    env = dict(os.environ, PSYNC_BCRYPT_COST="4", LOG_LEVEL="info")
    server = subprocess.Popen([args.binary, "serve", "--port", str(args.port), "--data-dir", os.path.join(work, "pg")],
                              stdout=open(log_path, "w"), stderr=subprocess.STDOUT, env=env)
    base = "http://127.0.0.1:%d" % args.port
    try:
        for _ in range(300):
            try:
                request(base, "GET", "/ready")
                break
            except Exception:
                time.sleep(0.1)
        port = re.search(r"port=(\d+) \[EmbeddedPostgres\] embedded PostgreSQL started", open(log_path).read()).group(1)
        psql = ["psql", "-h", "127.0.0.1", "-p", port, "-U", "psync", "-d", "psync", "-At", "-c"]

        alice = request(base, "POST", "/v1/auth/register", {"email": "alice@example.com", "password": "correct horse"})
        bob = request(base, "POST", "/v1/auth/register", {"email": "bob@example.com", "password": "correct horse"})
        def wait_for(sql):
            for _ in range(300):
                result = subprocess.run(psql + [sql], capture_output=True, text=True)
                if result.stdout.strip() == "t":
                    return
                time.sleep(0.1)
            raise SystemExit("timed out waiting for: " + sql + ": " + result.stdout + result.stderr)
        wait_for("SELECT count(*) = 2 FROM psync_objects WHERE collection = 'User' AND body IS NOT NULL")
        conversation = {"id": "lag", "displayName": "Lag", "unreadCount": 0, "members": [
            {"userName": "alice@example.com", "membershipStatus": "Membership active"},
            {"userName": "bob@example.com", "membershipStatus": "User added, but invite pending"}]}
        request(base, "POST", "/v1/partitions/user%3D" + alice["userId"] + "/uploads", {"requestId": "c", "operations": [
            {"op": "arrayAppend", "collection": "User", "id": alice["userId"], "path": "conversations", "value": conversation}]},
            alice["accessToken"])
        wait_for("SELECT count(*) = 2 FROM psync_objects WHERE collection = 'User' AND jsonb_array_length(body->'conversations') = 1")

        total = int(args.rate * args.seconds)
        interval = args.senders / args.rate
        errors = []
        def sender(index):
            next_time = time.monotonic() + index * (interval / args.senders)
            for n in range(index, total, args.senders):
                delay = next_time - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                next_time += interval
                try:
                    request(base, "POST", "/v1/partitions/conversation%3Dlag/uploads", {"requestId": "m%d" % n, "operations": [
                        {"op": "put", "collection": "ChatMessage", "id": "m%d" % n, "body": {
                            "author": "alice@example.com", "text": "message %d" % n, "location": [],
                            "timestamp": "2026-11-22T10:00:00.000Z"}}]}, alice["accessToken"])
                except Exception as error:
                    errors.append(str(error))
        started = time.monotonic()
        threads = [threading.Thread(target=sender, args=(i,)) for i in range(args.senders)]
        for thread in threads: thread.start()
        for thread in threads: thread.join()
        sent_in = time.monotonic() - started

        # Wait until the trigger has caught up with every message.
        for _ in range(600):
            done = subprocess.run(psql + ["SELECT (SELECT position FROM psync_triggers WHERE name = 'rchat.unread-counts') >= "
                                  "(SELECT max(seq) FROM psync_events WHERE collection = 'ChatMessage')"], capture_output=True, text=True).stdout.strip()
            if done == "t":
                break
            time.sleep(0.1)
        # The k-th message raised alice's unread count to k: pair them, and take the moment the
        # trigger transaction that did it wrote its events (its last statement, before commit).
        query = """
            WITH messages AS (
                SELECT row_number() OVER (ORDER BY seq) AS n, created_at FROM psync_events
                WHERE collection = 'ChatMessage' AND operation = 'insert'),
            counts AS (
                SELECT (after->'conversations'->0->>'unreadCount')::bigint AS n, created_at FROM psync_events
                WHERE author = 'trigger:rchat.unread-counts' AND object_id = '%s'),
            delays AS (SELECT extract(epoch FROM c.created_at - m.created_at) * 1000 AS ms FROM messages m JOIN counts c USING (n))
            SELECT count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY ms), percentile_cont(0.99) WITHIN GROUP (ORDER BY ms), max(ms),
                   (SELECT extract(epoch FROM max(created_at) - min(created_at)) FROM psync_events WHERE author = 'trigger:rchat.unread-counts')
            FROM delays""" % alice["userId"]
        row = subprocess.run(psql + [query], capture_output=True, text=True).stdout.strip().split("|")
        count, p50, p99, worst, span = int(row[0]), float(row[1]), float(row[2]), float(row[3]), float(row[4] or 0)
        print(json.dumps({
            "scenario": "trigger-lag", "messages": total, "send_seconds": round(sent_in, 2), "rate_target": args.rate,
            "handled": count, "handled_per_second": round(count / span, 1) if span else None,
            "delay_ms": {"p50": round(p50, 2), "p99": round(p99, 2), "max": round(worst, 2)}, "errors": len(errors)}))
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
        subprocess.run(["rm", "-rf", work])

if __name__ == "__main__":
    main()
