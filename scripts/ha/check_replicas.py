#!/usr/bin/env python3
"""The replica-reads check of issue 31: snapshots and catch-ups read from a real streaming
replica under a running `psync serve` (RChat), and from the primary whenever the replica cannot
give the page the client needs.

    .build-ha-venv/bin/python scripts/ha/check_replicas.py DIR --psync PATH

In DIR (which it fills, and leaves for the logs): a plain PostgreSQL (balancer.py's: the role
`psync`, no superuser, a member of pg_monitor; track_functions = all), a streaming replica of it
made by pg_basebackup (hot standby), and one `psync serve` with the replica as
PSYNC_REPLICA_URLS, looking at it every 100 ms, a page on it abandoned after 1 s. Alice and Bob
share a conversation; Alice uploads, Bob reads: each read is a fresh WebSocket subscription
without a cursor read until a batch is up to date (a snapshot), or an HTTP pull.

1. the primary, and the replica streaming from it;
2. the server, until /metrics says the replica is in use;
3. five messages, acknowledged, and replayed by the replica;
4. reads from the replica: a snapshot subscription and an HTTP pull hold every acknowledged
   message, and psync_replica_pages_total grew (both kinds of read served by the replica);
5. a lagging replica: its replay paused, one more message M acknowledged; a snapshot
   subscription and an HTTP pull from the cursor of 4's pull both hold M (never a stale page):
   the replica served neither, a fallback (`behind` or `none`) was counted for each;
6. replay resumed: once the replica has replayed the primary's WAL and is in use, snapshots
   come from it again, with M;
7. a frozen replica (SIGSTOP of its postmaster and every process under it) just after it served
   a page, so that the server takes it to have replayed what the next page needs without asking
   it: a snapshot subscription at once still holds everything, read from the primary once the
   replica's read deadline passed (a read that waited on the frozen replica would never end);
   it is out of use; thawed (SIGCONT), it is in use again;
8. a stopped replica (pg_ctl stop -m fast): snapshots still hold everything, from the primary;
   it is out of use;
9. a promoted replica: started again and in use, then promoted (pg_ctl promote); it is out
   of use ("not a standby"), and a message N uploaded to the real primary is in the next
   snapshot, which the promoted one (it never has N) did not serve;
10. the server exits with status 0 on SIGTERM.

Waits are polls with deadlines. Prints the figures as JSON (per step: the pages the check read,
those the replica served, the fallbacks to the primary by reason; the calls of psync_page and
psync_replica_ready on both servers); exits 1 on the first failed check.
"""

import asyncio
import json
import os
import secrets
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from balancer import as_service_user, pg_ctl, postgres_options, start_postgres, stop_postgres  # noqa: E402
from cluster import PG_BIN, children_of, chown_service, psql, service_env, signal_pid  # noqa: E402
from harness import (CheckFailed, Checker, Copy, Instance, check_main, connect, eventually, free_port,  # noqa: E402
                     interesting_log_lines, messages, post_upload, pull_all, register, share_conversation)
from probe_failover import message_body  # noqa: E402

ROOM = "replica-room"
CONVERSATION = f"conversation={ROOM}"
PAGES, FALLBACKS, IN_USE = "psync_replica_pages_total", "psync_replica_fallbacks_total", "psync_replica_in_use"
REASONS = ("behind", "failed", "none")

CHECKER = Checker("check-replicas")
say, check = CHECKER.say, CHECKER.check


class Run:
    def __init__(self, args):
        self.dir = os.path.abspath(args.dir)
        self.psync = args.psync
        os.makedirs(os.path.join(self.dir, "logs"), exist_ok=True)
        os.chmod(self.dir, 0o711)  # PostgreSQL (the postgres user) reaches DIR/pg and DIR/replica
        primary_port = free_port()
        replica_port = free_port()
        while replica_port == primary_port:
            replica_port = free_port()
        self.state = {"dir": self.dir, "scope": "replicas", "instances": {"i1": {}},
                      "ports": {"postgres": primary_port, "replica": replica_port},
                      "passwords": {"superuser": secrets.token_hex(12), "psync": secrets.token_hex(12)}}
        self.replica_dir = os.path.join(self.dir, "replica")
        self.replica_data = os.path.join(self.replica_dir, "data")
        self.replica_log = os.path.join(self.dir, "logs", "replica.log")
        self.replica = f"127.0.0.1:{replica_port}"  # the server's name for it, in the metrics' labels
        self.instance = None
        self.frozen = []  # the replica's processes stopped by step 7, until thawed
        self.acked = set()  # every acknowledged message's id
        self.figures = {"replica": self.replica, "steps": {}}
        self.step = None

    @property
    def primary_port(self):
        return self.state["ports"]["postgres"]

    @property
    def replica_port(self):
        return self.state["ports"]["replica"]

    # --- PostgreSQL ---------------------------------------------------------------------------

    async def sql(self, port, query, database="postgres"):
        """psql as postgres, off the event loop."""
        return await asyncio.to_thread(psql, self.state, port, query, "postgres", database)

    async def start_primary(self):
        url = start_postgres(self.state)
        port = self.primary_port
        # the calls of psync_page and psync_replica_ready counted; WAL kept for a replica that is
        # stopped for a while (step 7)
        await self.sql(port, "ALTER SYSTEM SET track_functions = 'all'")
        await self.sql(port, "ALTER SYSTEM SET wal_keep_size = '128MB'")
        await self.sql(port, "SELECT pg_reload_conf()")
        await eventually("track_functions to be `all`", lambda: self.sql_is(port, "SHOW track_functions", "all"), 10, 0.05)
        # pg_stat_wal_receiver shows its status only to members of pg_read_all_stats
        await self.sql(port, "GRANT pg_monitor TO psync")
        check(await self.sql(port, "SELECT rolsuper FROM pg_roles WHERE rolname = 'psync'") == "f",
              "the server's role `psync` is not a superuser, and a member of pg_monitor")
        with open(os.path.join(self.state["postgres_data"], "pg_hba.conf")) as f:
            rules = [line.split() for line in f if line.strip() and not line.lstrip().startswith("#")]
        check(any(rule[:4] == ["host", "replication", "all", "127.0.0.1/32"] for rule in rules),
              "the primary's pg_hba.conf (initdb's) lets replication connections in from 127.0.0.1")
        return url

    async def sql_is(self, port, query, expected, database="postgres"):
        return await self.sql(port, query, database) == expected

    def start_replica(self):
        options = (postgres_options(self.state, self.replica_port, self.replica_dir, f"{self.state['scope']}-replica")
                   + " -c hot_standby=on -c track_functions=all")
        pg_ctl(self.replica_data, "start", "-w", "-t", "60", "-l", self.replica_log, "-o", options)

    async def make_replica(self):
        """pg_basebackup of the primary (with standby.signal and primary_conninfo: -R), started on its own port."""
        os.makedirs(self.replica_dir, mode=0o700, exist_ok=True)
        chown_service(self.replica_dir)
        open(self.replica_log, "a").close()
        chown_service(self.replica_log)
        env = dict(service_env(self.replica_dir), PGPASSWORD=self.state["passwords"]["superuser"])
        await asyncio.to_thread(
            as_service_user, [os.path.join(PG_BIN, "pg_basebackup"), "-h", "127.0.0.1", "-p", str(self.primary_port),
                              "-U", "postgres", "-D", self.replica_data, "-R", "-X", "stream", "--checkpoint=fast"],
            env, 180)
        await asyncio.to_thread(self.start_replica)
        await self.wait_streaming()

    async def wait_streaming(self):
        await eventually("the replica's WAL receiver to stream",
                         lambda: self.sql_is(self.replica_port, "SELECT status FROM pg_stat_wal_receiver", "streaming"), 60, 0.05)

    async def primary_lsn(self):
        return await self.sql(self.primary_port, "SELECT pg_current_wal_insert_lsn()")

    async def replay_lsn(self):
        return await self.sql(self.replica_port, "SELECT pg_last_wal_replay_lsn()")

    async def replayed(self, lsn):
        return await self.sql_is(self.replica_port, f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn", "t")

    async def wait_replayed(self):
        """Waits until the replica has replayed the primary's WAL as far as it is inserted now."""
        lsn = await self.primary_lsn()
        await eventually(f"the replica to replay the primary's WAL up to {lsn}", lambda: self.replayed(lsn), 30, 0.05)
        return lsn

    async def function_calls(self):
        """The calls of psync_page and psync_replica_ready on each server (pg_stat_user_functions,
        which backends flush lazily: informative)."""
        calls = {}
        for name, port in (("primary", self.primary_port), ("replica", self.replica_port)):
            try:
                rows = await self.sql(port, "SELECT funcname, calls FROM pg_stat_user_functions "
                                            "WHERE funcname IN ('psync_page', 'psync_replica_ready') ORDER BY 1", "psync")
                calls[name] = {row.split("|")[0]: int(row.split("|")[1]) for row in rows.splitlines() if row}
            except Exception as error:  # noqa: BLE001 - a figure, not a check
                calls[name] = f"{type(error).__name__}: {str(error)[:120]}"
        return calls

    # --- the server's view --------------------------------------------------------------------

    async def counts(self):
        """The replica's pages and the fallbacks to the primary, by reason, so far."""
        metrics = await self.instance.metrics()
        counts = {"replica": int(metrics.value(PAGES, replica=self.replica))}
        counts.update({reason: int(metrics.value(FALLBACKS, reason=reason)) for reason in REASONS})
        return counts

    async def in_use(self):
        return int((await self.instance.metrics()).value(IN_USE, replica=self.replica))

    async def wait_in_use(self, value, why, timeout=30):
        async def settled():
            return await self.in_use() == value
        await eventually(f"psync_replica_in_use to be {value} ({why})", settled, timeout, 0.05)
        check(True, f"/metrics: psync_replica_in_use{{replica=\"{self.replica}\"}} {value} ({why})")

    async def wait_logged(self, offset, text, timeout=10):
        """``logged``, polled until it finds a line or `timeout` s pass (then empty)."""
        async def found():
            return self.logged(offset, text)
        try:
            return await eventually(f"the server to log {text!r}", found, timeout, 0.05)
        except TimeoutError:
            return []

    def logged(self, offset, text):
        """The server's log lines since `offset` that hold `text`, without their timestamps."""
        return [line.split(" ", 1)[-1].strip()[:200] for line in self.instance.log_since(offset).splitlines() if text in line]

    # --- RChat --------------------------------------------------------------------------------

    async def send(self, message_id):
        """Uploads one of Alice's messages until it is answered 200 (the same request id each time)."""
        async def acked():
            status, code, _, _ = await post_upload(self.instance, self.alice["accessToken"], CONVERSATION,
                                                   message_body(f"r-{message_id}", message_id, f"message {message_id}"),
                                                   timeout=10)
            if status is not None and 400 <= status < 500 and status != 429:
                raise CheckFailed(f"upload {message_id} refused: {status} {code}")
            return status == 200
        await eventually(f"{message_id} to be acknowledged", acked, 60, interval=0.1)
        self.acked.add(message_id)

    async def subscription(self, timeout=30):
        """A fresh WebSocket session of Bob's (presence off) that subscribes to the
        conversation without a cursor: the Copy of its batches once one is up to date."""
        copy = Copy()

        async def read():
            async with connect(self.instance.port, self.bob["accessToken"], "?presence=off") as ws:
                await ws.send(json.dumps({"type": "subscribe", "partition": CONVERSATION, "cursor": None}))
                async for message in messages(ws):
                    if message.get("partition") != CONVERSATION:
                        continue
                    if message.get("type") == "error":
                        raise CheckFailed(f"the subscription was refused: {message}")
                    if message.get("type") == "changes":
                        copy.apply(message)
                        if message.get("upToDate"):
                            return
        try:
            await asyncio.wait_for(read(), timeout)
        except asyncio.TimeoutError:
            raise CheckFailed(f"a snapshot subscription was not up to date within {timeout} s (it held "
                              f"{sorted(copy.ids('ChatMessage'))}; the server counts {await self.counts()}, "
                              f"psync_replica_in_use {await self.in_use()})") from None
        return copy

    async def read(self, kind, cursor=None):
        """One read of the conversation (`snapshot`: a subscription; `pull`: HTTP), with what
        the server counted for it: (copy, {pages read, replica, behind, failed, none})."""
        before = await self.counts()
        copy = await (self.subscription() if kind == "snapshot"
                      else pull_all(self.instance, self.bob["accessToken"], CONVERSATION, cursor))
        after = await self.counts()
        pages = copy.applied
        counted = {"read": kind, "pages": pages, **{k: after[k] - before[k] for k in after}}
        self.figures["steps"][self.step]["reads"].append(counted)
        say(f"{kind}{' from a cursor' if cursor else ''}: {pages} page(s); replica {counted['replica']}, "
            f"fallbacks {', '.join(f'{r} {counted[r]}' for r in REASONS)}")
        return copy, counted

    def holds_everything(self, copy, what):
        held = copy.ids("ChatMessage")
        missing, extra = sorted(self.acked - held), sorted(held - self.acked)
        check(not missing and not extra, f"{what} holds the {len(self.acked)} acknowledged messages"
              + (f": missing {missing}, not acknowledged {extra}" if missing or extra else ""))

    # --- steps --------------------------------------------------------------------------------

    async def begin(self, step, title):
        say(f"== {step}. {title}")
        self.step = step
        self.step_log = self.instance.log_size() if self.instance else 0
        self.step_counts = await self.counts() if self.instance else None
        self.figures["steps"][step] = {"title": title, "reads": []}

    async def end_step(self):
        """The step's totals: what the replica served and the fallbacks (all reads, the check's and any other)."""
        if self.step_counts is not None:
            now = await self.counts()
            self.figures["steps"][self.step]["totals"] = {k: now[k] - self.step_counts[k] for k in now}

    async def run(self):
        started = time.monotonic()
        await self.begin(1, "the primary and a streaming replica")
        url = await self.start_primary()
        await self.make_replica()
        check(True, f"the replica on port {self.replica_port} streams from the primary on {self.primary_port}")

        await self.begin(2, "psync serve with the replica")
        replica_url = f"postgres://psync:{self.state['passwords']['psync']}@{self.replica}/psync?sslmode=disable"
        self.instance = Instance("i1", self.psync, url, os.path.join(self.dir, "logs"), secrets.token_hex(32),
                                 extra_env={"PSYNC_REPLICA_URLS": replica_url, "PSYNC_REPLICA_POLL_MS": "100",
                                            "PSYNC_REPLICA_READ_TIMEOUT_MS": "1000"})
        await self.instance.wait_ready()
        await self.wait_in_use(1, "the monitor found it streaming")
        check(await self.wait_logged(0, "replica in use for snapshots and catch-ups"), "the server logged that the replica is in use")

        await self.begin(3, "five messages, replayed by the replica")
        self.alice = await register(self.instance, "alice@example.com")
        self.bob = await register(self.instance, "bob@example.com")
        await share_conversation(self.instance, ROOM, "replica reads", {"alice@example.com": self.alice, "bob@example.com": self.bob})
        for n in range(1, 6):
            await self.send(f"m{n}")
        lsn = await self.wait_replayed()
        check(True, f"the replica replayed the primary's WAL up to {lsn}")
        await self.end_step()

        await self.begin(4, "snapshots from the replica")
        cursor = await self.from_replica(("snapshot", "pull"))
        calls = await self.function_calls()
        self.figures["function_calls_after_4"] = calls
        say(f"pg_stat_user_functions (flushed lazily): {json.dumps(calls)}")
        await self.end_step()

        await self.begin(5, "a lagging replica: replay paused, one more message")
        await self.sql(self.replica_port, "SELECT pg_wal_replay_pause()")
        await eventually("the replica's replay to pause",
                         lambda: self.sql_is(self.replica_port, "SELECT pg_get_wal_replay_pause_state()", "paused"), 30, 0.05)
        paused_at = await self.replay_lsn()
        await self.send("M")
        m_lsn = await self.primary_lsn()
        check(not await self.replayed(m_lsn), f"the replica's replay stays at {paused_at}, before M (the primary is at {m_lsn})")
        copy, counted = await self.read("snapshot")
        self.holds_everything(copy, "a snapshot subscription while the replica lags")
        self.fell_back(counted, "the snapshot")
        copy, counted = await self.read("pull", cursor)
        check("M" in copy.ids("ChatMessage"), f"an HTTP pull from step 4's cursor holds M ({sorted(copy.ids('ChatMessage'))})")
        self.fell_back(counted, "the pull")
        check(await self.replay_lsn() == paused_at, f"the replica's replay is still at {paused_at}: the reads were never its to serve")
        self.figures["steps"][5]["in_use_while_paused"] = await self.in_use()
        await self.end_step()

        await self.begin(6, "replay resumed")
        await self.sql(self.replica_port, "SELECT pg_wal_replay_resume()")
        lsn = await self.wait_replayed()
        check(True, f"the replica replayed the primary's WAL up to {lsn}")
        await self.wait_in_use(1, "replaying again")
        await self.from_replica(("snapshot",))
        await self.end_step()

        await self.begin(7, "a frozen replica")
        await self.from_replica(("snapshot",))
        self.freeze_replica()
        copy, _ = await self.read("snapshot")
        self.holds_everything(copy, "a snapshot subscription just after the replica froze")
        await self.wait_in_use(0, "the replica is frozen")
        copy, _ = await self.read("pull")
        self.holds_everything(copy, "an HTTP pull while the replica is frozen")
        self.thaw_replica()
        await self.wait_in_use(1, "thawed")
        await self.end_step()
        served = self.figures["steps"][7]["totals"]
        check(served["failed"] >= 1, f"a read abandoned on the frozen replica was counted as failed ({served})")

        await self.begin(8, "a stopped replica")
        await asyncio.to_thread(pg_ctl, self.replica_data, "stop", "-w", "-t", "60", "-m", "fast")
        copy, _ = await self.read("snapshot")
        self.holds_everything(copy, "a snapshot subscription just after the replica stopped")
        await self.wait_in_use(0, "the replica is stopped")
        out = await self.wait_logged(self.step_log, "replica out of reads")
        check(out, f"the server logged that the replica is out of reads ({out[0] if out else ''})")
        copy, _ = await self.read("snapshot")
        self.holds_everything(copy, "a snapshot subscription without the replica")
        copy, _ = await self.read("pull")
        self.holds_everything(copy, "an HTTP pull without the replica")
        await self.end_step()
        served = self.figures["steps"][8]["totals"]["replica"]
        check(served == 0, f"the stopped replica served no page ({served})")

        await self.begin(9, "a promoted replica")
        await asyncio.to_thread(self.start_replica)
        await self.wait_streaming()
        await self.wait_replayed()
        await self.wait_in_use(1, "started again")
        promoted_log = self.instance.log_size()
        await asyncio.to_thread(pg_ctl, self.replica_data, "promote", "-w", "-t", "60")
        await eventually("the replica to leave recovery",
                         lambda: self.sql_is(self.replica_port, "SELECT pg_is_in_recovery()", "f"), 30, 0.05)
        await self.wait_in_use(0, "promoted")
        # The look that took it out may have seen its WAL receiver stopped before recovery
        # ended ("no WAL receiver"); a later one logs the new reason.
        out = await self.wait_logged(promoted_log, "not a standby")
        check(out, f"the server logged that the promoted replica is not a standby ({out[0] if out else ''})")
        before = await self.counts()
        await self.send("N")
        copy, _ = await self.read("snapshot")
        self.holds_everything(copy, "a snapshot subscription after the promotion (N among them)")
        copy, _ = await self.read("pull")
        self.holds_everything(copy, "an HTTP pull after the promotion (N among them)")
        served = (await self.counts())["replica"] - before["replica"]
        check(served == 0, f"the promoted replica, which never had N, served no page ({served})")
        await self.end_step()

        await self.begin(10, "SIGTERM")
        seconds, code = await self.instance.terminate()
        check(code == 0, f"psync serve exits with status 0 on SIGTERM ({seconds} s)")
        self.figures["function_calls_at_end"] = await self.function_calls()
        self.figures["seconds"] = round(time.monotonic() - started, 2)

    async def from_replica(self, kinds, timeout=30):
        """Reads of each kind (`snapshot`, `pull` without a cursor), each holding every
        acknowledged message, until each kind has had a page served by the replica (a read
        whose target the replica had not replayed yet, the primary's WAL moving on under the
        server's own writes, is read from the primary: another read is made, until the
        deadline). Returns the last pull's cursor."""
        deadline = time.monotonic() + timeout
        served, cursor, attempts = set(), None, 0
        while served != set(kinds):
            if time.monotonic() > deadline:
                raise CheckFailed(f"the replica served no page to a {', '.join(sorted(set(kinds) - served))} "
                                  f"within {timeout} s ({attempts} attempts: {self.figures['steps'][self.step]['reads']})")
            attempts += 1
            for kind in kinds:
                copy, counted = await self.read(kind)
                self.holds_everything(copy, "a snapshot subscription" if kind == "snapshot" else "an HTTP pull")
                if kind == "pull":
                    cursor = copy.cursor
                if counted["replica"] > 0:
                    served.add(kind)
        self.figures["steps"][self.step]["attempts"] = attempts
        check(True, f"psync_replica_pages_total grew: the replica served the {' and the '.join(kinds)} "
                    f"({attempts} attempt{'s' if attempts > 1 else ''})")
        return cursor

    def fell_back(self, counted, what):
        check(counted["replica"] == 0, f"the replica served none of {what}'s pages ({counted['replica']})")
        fallbacks = counted["behind"] + counted["none"]
        check(fallbacks >= 1, f"{what} counted a fallback to the primary (behind {counted['behind']}, none {counted['none']})")

    def freeze_replica(self):
        """SIGSTOP the replica's postmaster first (it forks nothing more), then every process under it."""
        with open(os.path.join(self.replica_data, "postmaster.pid")) as f:
            postmaster = int(f.readline().strip())
        for pid in [postmaster] + children_of(postmaster) + children_of(postmaster):
            if pid not in self.frozen and signal_pid(pid, signal.SIGSTOP):
                self.frozen.append(pid)
        say(f"froze the replica: {len(self.frozen)} processes")

    def thaw_replica(self):
        for pid in self.frozen:
            signal_pid(pid, signal.SIGCONT)
        self.frozen = []

    def stop(self):
        self.thaw_replica()
        if self.instance:
            self.instance.kill()
        stop_postgres(self.state, self.replica_data)
        stop_postgres(self.state)


async def main_async(args):
    run = Run(args)
    try:
        await run.run()
    finally:
        if run.instance:
            if run.instance.alive():  # the server's counts where the check ended (a failure's context)
                try:
                    run.figures["at_exit"] = {**await run.counts(), "in_use": await run.in_use()}
                except Exception as error:  # noqa: BLE001 - a figure, not a check
                    run.figures["at_exit"] = f"{type(error).__name__}: {error}"
            run.figures["server_warnings"] = interesting_log_lines(run.instance.log_since(0))
        run.stop()
        print(json.dumps(run.figures, indent=1))


def main():
    check_main(CHECKER, __doc__, main_async)


if __name__ == "__main__":
    main()
