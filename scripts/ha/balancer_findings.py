#!/usr/bin/env python3
"""Reproduces what today's `psync serve` does wrong behind a load balancer (docs/SCALING.md,
"Known problems"), on a balancer of scripts/ha/balancer.py started with the server's default
limits:

    python3 scripts/ha/balancer.py start /tmp/lb-findings
    .build-ha-venv/bin/python scripts/ha/balancer_findings.py /tmp/lb-findings
    python3 scripts/ha/balancer.py stop /tmp/lb-findings

1. client addresses: every client reaches the server from HAProxy's address, which the server
   takes for the client's (it ignores X-Forwarded-For), so the per-address limits count all
   clients together: 10 registrations an hour for everyone, and 50 failed logins from anyone
   refuse every user's login for 15 minutes;
2. SIGTERM without a drain: the stopping instance answers /ready 200 and accepts new
   WebSockets while it winds down; with leastconn its own clients, reconnecting, go straight
   back to it, are served, and are cut again (1000, not 1001) when it stops ten seconds later;
3. a logout sometimes sends a session of the instance that served it `error session_revoked`
   twice (the revocation reaches the sessions twice there: from the logout and from the
   instance's own notification).

Each finding is reported as present or absent with what was measured; the database is left
unusable for logins for 15 minutes (the lockout of finding 1), so use a balancer of its own.
Exits 0 either way (a reproduction, not a check).
"""

import asyncio
import collections
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_balancer import PASSWORD, CheckRun, Session, balancer, now  # noqa: E402
from cluster import PG_BIN, psql  # noqa: E402
from probe_failover import eventually  # noqa: E402


async def client_addresses(run):
    """Registrations and failed logins from many client addresses, as HAProxy forwards them
    (one account, f0, registered before)."""
    statuses = []
    for n in range(1, 12):
        response = await run.http.post("/v1/auth/register", json={"email": f"f{n}@example.com", "password": PASSWORD},
                                       headers={"X-Forwarded-For": f"203.0.113.{n}"})
        statuses.append(response.status_code)
    registrations = {"answers_after_one_earlier_registration": statuses,
                     "accepted_in_all": 1 + statuses.count(201)}
    # 50 failed logins of unknown accounts from one address, then the right password of a
    # real account from another
    for n in range(50):
        await run.http.post("/v1/auth/login", json={"email": f"nobody{n}@example.com", "password": "wrong password"},
                            headers={"X-Forwarded-For": "198.51.100.7"})
    response = await run.http.post("/v1/auth/login", json={"email": "f0@example.com", "password": PASSWORD},
                                   headers={"X-Forwarded-For": "192.0.2.55"})
    lockout = {"right_password_after": response.status_code, "retry_after": response.headers.get("retry-after"),
               "body": response.text[:120]}
    present = 429 in statuses and response.status_code == 429
    return {"finding": "per-address limits count every client behind the balancer as one address",
            "present": present, "registrations_from_12_addresses": registrations,
            "login_of_another_user_after_50_failures_elsewhere": lockout}


class RowLock:
    """Holds a partition's row lock from a psql session of the balancer's own PostgreSQL, as a
    long transaction of another writer would: uploads to that partition wait for it."""

    def __init__(self, run, partition):
        self.run, self.partition = run, partition
        self.process = None

    async def __aenter__(self):
        state = self.run.state
        self.process = await asyncio.create_subprocess_exec(
            os.path.join(PG_BIN, "psql"), "-X", "-q", "-At", "-h", "127.0.0.1", "-p", str(state["ports"]["postgres"]),
            "-U", "postgres", "-d", "psync", env=dict(os.environ, PGPASSWORD=state["passwords"]["superuser"]),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        self.process.stdin.write(f"BEGIN;\nSELECT 'locked' FROM psync_partitions WHERE partition = '{self.partition}' "
                                 "FOR UPDATE;\n".encode())
        await self.process.stdin.drain()
        line = await asyncio.wait_for(self.process.stdout.readline(), 10)
        if line.strip() != b"locked":
            raise RuntimeError(f"locking {self.partition}: {line!r}")
        return self

    async def __aexit__(self, *_):
        self.process.stdin.write(b"ROLLBACK;\n")
        self.process.stdin.close()
        await self.process.wait()


async def lock_waiters(run):
    return int(await asyncio.to_thread(psql, run.state, run.state["ports"]["postgres"],
                                       "SELECT count(*) FROM pg_locks WHERE NOT granted", "postgres", "psync"))


async def undrained_sigterm(run):
    """SIGTERM to an instance with sessions, without draining it in HAProxy first, while one of
    its sessions has an upload waiting for a busy partition (the session answers it before it
    closes, as a graceful stop should)."""
    user = await run.register("f0@example.com")
    # clients that reconnect after 0.2 s, as the SDKs do (125-250 ms)
    sessions = [Session(run, user, [], first_delay=0.2).start() for _ in range(3 * len(run.instances()))]
    await eventually("the sessions", lambda: asyncio.sleep(0, all(s.backend for s in sessions)), 20, 0.02)
    target = collections.Counter(s.backend for s in sessions).most_common(1)[0][0]
    mine = [s for s in sessions if s.backend == target]
    partition = f"user={user['userId']}"

    async def has_record():
        return ("User", user["userId"]) in await run.pull_all(user, partition)
    await eventually("f0's User record", has_record, 20, 0.05)
    async with RowLock(run, partition):
        await mine[0].ws.send(json.dumps({"type": "upload", "requestId": "busy-1", "partition": partition, "operations": [
            {"op": "set", "collection": "User", "id": user["userId"], "path": "userPreferences.displayName", "value": "F"}]}))
        await eventually("the upload to wait for the lock", lambda: lock_waiters(run), 10, 0.02)
        return await sigterm_and_follow(run, sessions, mine, target)


async def sigterm_and_follow(run, sessions, mine, target):
    marks = {id(s): len(s.connections) for s in mine}
    kill = asyncio.create_task(balancer("kill-instance", run.dir, target, "--signal", "TERM"))
    await eventually("SIGTERM's first closes", lambda: asyncio.sleep(0, any(s.current["closed"] for s in mine)), 10, 0.01)
    t_closed = now()
    # HAProxy's view a second later, while the instance still winds down
    await eventually("a second", lambda: asyncio.sleep(0, now() - t_closed > 1 or kill.done()), 5, 0.05)
    status_during = None if kill.done() else await run.haproxy_status(target)
    stopped = await kill
    t_term = stopped["at"] - time.time() + now()
    await eventually("the clients to settle elsewhere",
                     lambda: asyncio.sleep(0, all(s.backend != target and s.current["closed"] is None for s in mine)), 40, 0.05)
    back = [c for s in mine for c in s.connections[marks[id(s)]:] if c["backend"] == target]
    for s in sessions:
        await s.close()
    return {"finding": "a stopping instance takes new WebSockets (and /ready stays 200) while it winds down",
            "present": bool(back), "instance": target, "exit_status": stopped["exit_status"],
            "exit_after_sigterm_seconds": stopped["exit_after"], "its_sessions": len(mine),
            "reconnections_back_to_it": len(back), "haproxy_status_1_s_after_sigterm": status_during,
            "their_close_codes": dict(collections.Counter(c["code"] for c in back)),
            "closed_after_sigterm_seconds": sorted({round(c["closed"] - t_term, 1) for c in back if c["closed"]}),
            "the_waiting_upload_got": mine[0].connections[marks[id(mine[0])] - 1].get("errors") or "an answer"}


async def revocation_error_twice(run, rounds=30):
    """A user logs in, opens four sessions per live instance, logs out; how often a session
    is sent `error session_revoked` twice before its close."""
    twice, served_by = 0, collections.Counter()
    live = [n for n in run.instances() if (await run.haproxy_status(n)).startswith("UP")]
    for _ in range(rounds):
        response = await run.http.post("/v1/auth/login", json={"email": "f0@example.com", "password": PASSWORD})
        login = response.json()
        sessions = [Session(run, login, [], reconnect=False, presence=False).start() for _ in range(4 * len(live))]
        await eventually("the sessions", lambda: asyncio.sleep(0, all(s.backend for s in sessions)), 10, 0.02)
        response = await run.http.post("/v1/auth/logout", json={"refreshToken": login["refreshToken"]})
        await eventually("the sessions to end", lambda: asyncio.sleep(0, all(s.closed_for_good.is_set() for s in sessions)), 10, 0.02)
        for s in sessions:
            if len(s.connections[0].get("errors", [])) > 1:
                twice += 1
                served_by["the instance that served the logout" if s.backend == response.headers.get("X-PSync-Backend")
                          else "another instance"] += 1
    return {"finding": "a session is sometimes sent `error session_revoked` twice", "present": twice > 0,
            "logouts": rounds, "sessions_sent_it_twice": twice, "where": dict(served_by)}


async def main_async(directory):
    run = CheckRun(directory)
    report = []
    try:
        report.append(await undrained_sigterm(run))
        report.append(await revocation_error_twice(run))
        report.append(await client_addresses(run))
    finally:
        await run.http.aclose()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    asyncio.run(main_async(sys.argv[1]))
