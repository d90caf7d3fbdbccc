#!/usr/bin/env python3
"""The lost-tail check of issue 31: an asynchronous failover that loses acknowledged commits,
with real PostgreSQL files and a real new timeline, under a running `psync serve` (RChat).

    .build-ha-venv/bin/python scripts/ha/check_lost_tail.py DIR --psync PATH

In DIR (which it fills, and leaves for the logs): a plain PostgreSQL (balancer.py's: the role
`psync`, no superuser) and one `psync serve`. Alice and Bob share a conversation; Bob holds a
WebSocket session on it and on his own partition, and keeps a copy of both as a client does.

1. five messages, acknowledged; Bob's copy has them and his unread count is 5;
2. the standby: PostgreSQL is stopped cleanly, its files copied, and started again (what a
   standby that has replayed everything holds);
3. the lost tail: three more messages, acknowledged, delivered to Bob, counted by the unread
   trigger (8); Bob's cursors and an HTTP cursor are kept;
4. the failover: PostgreSQL is killed (SIGKILL of the postmaster, `pg_ctl stop -m immediate`),
   and the standby's files started in its place with `recovery.signal`: PostgreSQL ends the
   recovery on a new timeline (2), without the three messages;
5. four new messages, acknowledged (retried with their request ids while the server
   reconnects): the new primary numbers them with the versions and event positions the lost
   ones had.

Checked: the database holds the five and the four, not the three; Bob's live copies of both
partitions end equal to the database after a reset, without a lost message; an HTTP pull from
the lost tail's cursor is answered with a reset; Bob's unread count is 9 (the trigger went on
from its stored position on the new timeline, handling each new message once, none of the old
history's positions skipped); the server exits with status 0 on SIGTERM. Waits are polls with
deadlines. Prints the figures as JSON; exits 1 on the first failed check.
"""

import asyncio
import json
import os
import re
import secrets
import sys
import time

import websockets

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from balancer import as_service_user, pg_ctl, postgres_options, start_postgres, stop_postgres  # noqa: E402
from cluster import chown_service, psql  # noqa: E402
from harness import (CheckFailed, Checker, Copy, Instance, check_main, connect, eventually, free_port, messages, post_upload,  # noqa: E402
                     pull, pull_all, register, share_conversation)
from probe_failover import message_body  # noqa: E402

ROOM = "lost-tail-room"
CONVERSATION = f"conversation={ROOM}"


CHECKER = Checker("check-lost-tail")
say, check = CHECKER.say, CHECKER.check


class Session:
    """Bob's WebSocket session, subscribed to some partitions; it reconnects from its cursors
    when the server drops it."""

    def __init__(self, instance, token, partitions):
        self.instance, self.token = instance, token
        self.copies = {p: Copy() for p in partitions}
        self.connections = 0
        self.task = asyncio.create_task(self.run())

    async def run(self):
        while True:
            try:
                async with connect(self.instance.port, self.token) as ws:
                    self.connections += 1
                    for partition, copy in self.copies.items():
                        await ws.send(json.dumps({"type": "subscribe", "partition": partition, "cursor": copy.cursor}))
                    async for message in messages(ws):
                        if message.get("type") == "changes" and message.get("partition") in self.copies:
                            self.copies[message["partition"]].apply(message)
            except (websockets.ConnectionClosed, OSError, asyncio.TimeoutError, websockets.InvalidHandshake):
                await asyncio.sleep(0.2)  # the client's backoff


class Run:
    def __init__(self, args):
        self.dir = os.path.abspath(args.dir)
        self.psync = args.psync
        self.figures = {}
        os.makedirs(os.path.join(self.dir, "logs"), exist_ok=True)
        os.chmod(self.dir, 0o711)  # PostgreSQL (the postgres user) reaches DIR/pg
        self.state = {"dir": self.dir, "scope": "lost-tail", "instances": {"i1": {}},
                      "ports": {"postgres": free_port()},
                      "passwords": {"superuser": secrets.token_hex(12), "psync": secrets.token_hex(12)}}
        self.data = os.path.join(self.dir, "pg", "data")
        self.standby = os.path.join(self.dir, "pg", "standby")
        self.pg_log = os.path.join(self.dir, "logs", "postgres.log")
        self.instance = None
        self.messages = {}  # message id -> request id, of every acknowledged upload
        self.acked = set()

    # --- PostgreSQL ---------------------------------------------------------------------------

    def start_pg(self):
        options = postgres_options(self.state, self.state["ports"]["postgres"], os.path.dirname(self.data), self.state["scope"])
        pg_ctl(self.data, "start", "-w", "-t", "60", "-l", self.pg_log, "-o", options)

    def timeline(self):
        out = psql(self.state, self.state["ports"]["postgres"], "SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)")
        return int(out.strip(), 16)

    # --- RChat --------------------------------------------------------------------------------

    async def send(self, message_id):
        """Uploads one of Alice's messages until it is answered 200 (the same request id each
        time: applied once)."""
        request_id = f"r-{message_id}"
        async def acked():
            status, code, _, _ = await post_upload(self.instance, self.alice["accessToken"], CONVERSATION,
                                                   message_body(request_id, message_id, f"message {message_id}"), timeout=10)
            if status is not None and 400 <= status < 500 and status != 429:
                raise CheckFailed(f"upload {message_id} refused: {status} {code}")
            return status == 200
        await eventually(f"{message_id} to be acknowledged", acked, 60, interval=0.1)
        self.acked.add(message_id)

    async def stored(self, user, partition):
        copy = await pull_all(self.instance, user["accessToken"], partition)
        return copy.objects, copy.cursor

    async def unread(self):
        objects, _ = await self.stored(self.bob, f"user={self.bob['userId']}")
        record = objects.get(("User", self.bob["userId"])) or {}
        rooms = [c for c in record.get("conversations", []) if c.get("id") == ROOM]
        return rooms[0].get("unreadCount") if rooms else None

    def messages_in(self, objects):
        return {k[1] for k in objects if k[0] == "ChatMessage"}

    async def converged(self, what):
        """Bob's live copies equal the database, both partitions."""
        async def equal():
            for partition, copy in self.session.copies.items():
                user = self.bob
                objects, _ = await self.stored(user, partition)
                if copy.objects != objects:
                    return False
            return True
        try:
            await eventually(what, equal, 30, interval=0.1)
        except TimeoutError:
            conversation = self.session.copies[CONVERSATION]
            raise CheckFailed(f"{what}: Bob's copy holds {sorted(self.messages_in(conversation.objects))}")

    # --- the check ----------------------------------------------------------------------------

    async def run(self):
        say(f"== PostgreSQL and psync serve in {self.dir}")
        url = start_postgres(self.state)
        self.instance = Instance("i1", self.psync, url, os.path.join(self.dir, "logs"), secrets.token_hex(32))
        await self.instance.wait_ready()
        self.alice = await register(self.instance, "alice@example.com")
        self.bob = await register(self.instance, "bob@example.com")
        await share_conversation(self.instance, ROOM, "lost tail", {"alice@example.com": self.alice, "bob@example.com": self.bob})
        check(True, "Alice created a conversation with Bob")
        self.session = Session(self.instance, self.bob["accessToken"], [CONVERSATION, f"user={self.bob['userId']}"])

        say("== 1. five messages")
        for n in range(1, 6):
            await self.send(f"m{n}")
        await eventually("Bob's unread count to be 5", lambda: self.unread_is(5), 30)
        await self.converged("Bob's copies to have the five messages")

        say("== 2. the standby: PostgreSQL's files after a clean stop")
        pg_ctl(self.data, "stop", "-w", "-t", "60", "-m", "fast")
        as_service_user(["cp", "-a", self.data, self.standby])
        self.start_pg()
        await self.instance.wait_ready()
        timeline_before = self.timeline()

        say("== 3. the lost tail: three messages, acknowledged and delivered")
        for n in range(1, 4):
            await self.send(f"lost{n}")
        await eventually("Bob's unread count to be 8", lambda: self.unread_is(8), 30)
        await self.converged("Bob's copies to have the lost tail")
        _, lost_cursor = await self.stored(self.bob, CONVERSATION)
        check({"lost1", "lost2", "lost3"} <= self.messages_in(self.session.copies[CONVERSATION].objects),
              "Bob holds the three messages of the tail")
        resets_before = {p: c.resets for p, c in self.session.copies.items()}

        say("== 4. the failover: PostgreSQL killed, the standby's files promoted")
        started = time.monotonic()
        pg_ctl(self.data, "stop", "-w", "-t", "60", "-m", "immediate")
        as_service_user(["mv", self.data, self.data + ".lost"])
        as_service_user(["mv", self.standby, self.data])
        signal_file = os.path.join(self.data, "recovery.signal")
        open(signal_file, "w").close()
        chown_service(signal_file)
        with open(os.path.join(self.data, "postgresql.auto.conf"), "a") as f:
            f.write("restore_command = 'false'\n")
        self.start_pg()

        async def promoted():
            port = self.state["ports"]["postgres"]
            return psql(self.state, port, "SELECT pg_is_in_recovery()").strip() == "f"
        await eventually("the recovery to end (a new timeline)", promoted, 60)
        timeline_after = self.timeline()
        check(timeline_after > timeline_before, f"PostgreSQL is on timeline {timeline_after}, after {timeline_before}")

        say("== 5. four new messages on the new timeline")
        for n in range(1, 5):
            await self.send(f"new{n}")
        self.figures["seconds_until_acked_again"] = round(time.monotonic() - started, 2)
        stored, _ = await self.stored(self.alice, CONVERSATION)
        expected = {f"m{n}" for n in range(1, 6)} | {f"new{n}" for n in range(1, 5)}
        check(self.messages_in(stored) == expected,
              f"the database holds the five and the four messages, none of the lost three ({sorted(self.messages_in(stored))})")
        await self.converged("Bob's live copies to equal the new primary's")
        resets = {p: c.resets - resets_before[p] for p, c in self.session.copies.items()}
        check(all(n >= 1 for n in resets.values()), f"each of Bob's copies was reset once or more ({resets})")
        check(not {"lost1", "lost2", "lost3"} & self.messages_in(self.session.copies[CONVERSATION].objects),
              "Bob's copy keeps none of the lost messages")
        page = await pull(self.instance, self.bob["accessToken"], CONVERSATION, lost_cursor)
        check(page.get("reset") is True, "an HTTP pull from the lost tail's cursor is answered with a reset")
        await eventually("Bob's unread count to be 9", lambda: self.unread_is(9), 30)
        check(True, "Bob's unread count is 9: each new message counted once, none skipped at the lost positions")
        log = self.instance.log_since(0)
        # held through the failover: the renewal on the new timeline says so; or the lease ran
        # out while PostgreSQL was away (a loaded machine) and was taken again, at the stored position
        retaken = re.search(r"trigger=rchat\.unread-counts \[SyncTriggers\] trigger lease lost.*"
                            r"trigger=rchat\.unread-counts \[SyncTriggers\] trigger lease taken", log, re.S)
        check("another timeline" in log or retaken is not None,
              "the trigger runner went on from the stored position (it logged the new timeline, or took its lease again)")

        say("== SIGTERM")
        seconds, code = await self.instance.terminate()
        check(code == 0, f"psync serve exits with status 0 on SIGTERM ({seconds} s)")
        self.figures["timelines"] = [timeline_before, timeline_after]
        self.figures["session_connections"] = self.session.connections

    async def unread_is(self, n):
        return await self.unread() == n

    def stop(self):
        if self.instance:
            self.instance.kill()
        stop_postgres(self.state)


async def main_async(args):
    run = Run(args)
    try:
        await run.run()
    finally:
        if getattr(run, "session", None):
            run.session.task.cancel()
        run.stop()
        print(json.dumps(run.figures, indent=1))


def main():
    check_main(CHECKER, __doc__, main_async)


if __name__ == "__main__":
    main()
