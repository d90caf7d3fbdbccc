#!/usr/bin/env python3
"""Browser tests of the PartitionSync JavaScript SDK: real headless Chromium (Selenium and
chromedriver) against a real `psync serve` started here on a free loopback port, behind
scripts/devserver.mjs (one origin for the pages and the server).

    PSYNC_BIN=/path/to/psync python3 test/browser/run_tests.py [test-name-substring]

Waits are on conditions with a bound (the client's waitUntil), never fixed sleeps. Prints one
line per test and ends with `N passed, N failed`; exits non-zero on any failure."""
import atexit
import json
from pathlib import Path
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
import uuid

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PSYNC_BIN = os.environ.get("PSYNC_BIN", str(Path(__file__).resolve().parents[4] / ".build" / "debug" / "psync"))
WAIT = 30  # seconds: the bound of every wait


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def screenshot_folder(example):
    """Where an example's browser tests take their screenshots: the README's pictures in
    `example`/docs/screenshots only when asked (UPDATE_SCREENSHOTS=1); otherwise a temporary
    folder removed at exit, so a test run leaves the checkout as it was."""
    if os.environ.get("UPDATE_SCREENSHOTS") == "1":
        return Path(example) / "docs" / "screenshots"
    folder = Path(tempfile.mkdtemp(prefix=f"{Path(example).name.lower()}-screenshots-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def wait_for(condition, what, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except Exception:
            pass
        time.sleep(0.1)  # polling an external process's readiness, not synchronizing the SDK
    raise AssertionError(f"timed out waiting for {what}")


class PSync:
    """A `psync serve` process (or an application's server, `binary`) on a fixed loopback port
    and data directory, stoppable and restartable; `env` adds to its environment."""

    def __init__(self, binary=None, env=None, prefix="psync-js-"):
        self.binary = binary or PSYNC_BIN
        self.env = env or {}
        self.port = free_port()
        self.base = tempfile.mkdtemp(prefix=prefix)
        os.chmod(self.base, 0o777)
        self.data = os.path.join(self.base, "pg")
        self.process = None
        self.log = open(os.path.join(self.base, "server.log"), "ab")

    def start(self):
        env = dict(os.environ)
        env.update({
            "PSYNC_DATA_DIR": self.data,
            "PSYNC_METRICS_PUBLIC": "true",
            "PSYNC_REGISTRATIONS_PER_ADDRESS": "1000",
            "LOG_LEVEL": os.environ.get("PSYNC_TEST_LOG_LEVEL", "warning"),
        })
        env.update(self.env)
        self.process = subprocess.Popen([self.binary, "serve", "--host", "127.0.0.1", "--port", str(self.port)],
                                        env=env, stdout=self.log, stderr=self.log)
        wait_for(lambda: urllib.request.urlopen(f"{self.origin}/ready", timeout=2).status == 200,
                 "the server to be ready", timeout=180)

    @property
    def origin(self):
        return f"http://127.0.0.1:{self.port}"

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def metric(self, name):
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5).read().decode()
        total = 0.0
        found = False
        for line in text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                total += float(line.rsplit(" ", 1)[1])
                found = True
        return total if found else None

    def cleanup(self):
        self.stop()
        self.log.close()
        if os.environ.get("PSYNC_KEEP_LOGS"):
            print(f"# server log: {self.base}/server.log")
        else:
            shutil.rmtree(self.base, ignore_errors=True)


class Browser:
    def __init__(self, origin):
        options = Options()
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                    "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                    "--disable-backgrounding-occluded-windows"):
            options.add_argument(arg)
        service = Service(shutil.which("chromedriver") or "/usr/bin/chromedriver")
        self.driver = webdriver.Chrome(service=service, options=options)
        self.driver.set_script_timeout(WAIT + 15)
        self.origin = origin

    def open_page(self, new_tab=False):
        if new_tab:
            self.driver.switch_to.new_window("tab")
        self.driver.get(f"{self.origin}/test/browser/page.html")
        WebDriverWait(self.driver, WAIT).until(lambda d: d.title == "ready")
        return self.driver.current_window_handle

    def js(self, body, *args):
        """Runs `body` (an async function body with `args`, `harness`, `sdk` in scope) in the current tab."""
        script = """
            const done = arguments[arguments.length - 1];
            const args = Array.from(arguments).slice(0, -1);
            const harness = window.harness, sdk = window.sdk;
            (async () => { %s })().then(
                (v) => done({ ok: v === undefined ? null : v }),
                (e) => done({ error: String((e && e.stack) || e) }));
        """ % body
        result = self.driver.execute_async_script(script, *args)
        if result is None:
            raise AssertionError("the page returned nothing")
        if "error" in result:
            raise AssertionError(result["error"])
        return result["ok"]

    def until(self, source):
        return self.js("return harness.until(args[0], args[1]);", source, WAIT * 1000)

    def quit(self):
        self.driver.quit()


def store_name():
    return "t-" + uuid.uuid4().hex[:12]


def email():
    return f"u-{uuid.uuid4().hex[:12]}@example.com"


def register(browser, store, address=None):
    """Opens a client on `store` in the current tab and registers a new user; returns the user id."""
    return browser.js("""
        await harness.open(args[0]);
        return await harness.client.register(args[1], 'correct horse battery');
    """, store, address or email())


# ---------------------------------------------------------------------------------------------
# The tests. Each gets a fresh browser (tabs of one browser share storage, as in real life).


def test_snapshot_and_live_change_between_two_clients(server, browser):
    """Ann and Bob, each with a client of their own, open all-users: each snapshot holds the
    other's Chatster; Bob's new display name reaches Ann's client live."""
    ann_tab = browser.open_page()
    ann = register(browser, store_name())
    browser.js("await harness.client.openPartition('all-users=all-the-users');")
    browser.until(f"(await client.objects('all-users=all-the-users')).some(o => o.id === '{ann}')")

    bob_tab = browser.open_page(new_tab=True)
    bob = register(browser, store_name())
    browser.js("await harness.client.openPartition('all-users=all-the-users');")
    browser.until(f"client.isUpToDate('all-users=all-the-users') && (await client.objects('all-users=all-the-users')).some(o => o.id === '{ann}')")
    browser.js("""await harness.client.write(`user=${args[0]}`, [{op: 'set', collection: 'User', id: args[0], path: 'userPreferences.displayName', value: 'Bobby'}]);""", bob)

    browser.driver.switch_to.window(ann_tab)
    browser.until(f"(await client.objects('all-users=all-the-users')).some(o => o.id === '{bob}' && o.body.displayName === 'Bobby')")


def test_offline_write_survives_reload_and_is_applied_exactly_once(server, browser):
    """Three increments written while the server is stopped show at once, survive a reload of
    the page, and are applied exactly once when the server returns (an increment applied
    twice would show)."""
    store = store_name()
    browser.open_page()
    me = register(browser, store)
    partition = f"user={me}"
    room = "c-" + uuid.uuid4().hex[:10]
    browser.js("await harness.client.openPartition(args[0]);", partition)
    browser.until(f"client.isUpToDate('{partition}') && (await client.objects('{partition}')).length === 1")
    browser.js("""await harness.client.write(args[0], [{op: 'arrayAppend', collection: 'User', id: args[1], path: 'conversations',
                   value: {id: args[2], displayName: 'Room', unreadCount: 0, members: []}}]);""", partition, me, room)
    browser.until("(await client.unacknowledgedWrites()) === 0")

    server.stop()
    browser.until("client.status === 'offline'")
    browser.js("""
        const path = sdk.Path.field('conversations').where('id', args[2]).field('unreadCount').toString();
        for (let i = 0; i < 3; i++) await harness.client.write(args[0], [{op: 'increment', collection: 'User', id: args[1], path, by: 1}]);
    """, partition, me, room)
    count = f"(await client.objects('{partition}'))[0].body.conversations.find(c => c.id === '{room}').unreadCount"
    browser.until(f"{count} === 3")

    browser.driver.refresh()
    WebDriverWait(browser.driver, WAIT).until(lambda d: d.title == "ready")
    browser.js("await harness.open(args[0]); await harness.client.openPartition(args[1]);", store, partition)
    assert browser.js(f"return (await harness.client.unacknowledgedWrites());") == 3, "the queue survived the reload"
    browser.until(f"{count} === 3")

    server.start()
    browser.until(f"client.status === 'online' && (await client.unacknowledgedWrites()) === 0 && client.isUpToDate('{partition}')")
    browser.until(f"{count} === 3")
    on_server = browser.js("""
        const objects = await harness.serverObjects(args[0]);
        return objects[0].body.conversations.find(c => c.id === args[1]).unreadCount;
    """, partition, room)
    assert on_server == 3, f"the server counted {on_server} increments"


def test_rejected_write_is_rolled_back(server, browser):
    """A write the server refuses (RChat forbids changing a userName) shows at once, is then
    reverted to the server's state and reported with its code."""
    browser.open_page()
    me = register(browser, store_name())
    partition = f"user={me}"
    browser.js("await harness.client.openPartition(args[0]);", partition)
    browser.until(f"client.isUpToDate('{partition}') && (await client.objects('{partition}')).length === 1")
    original = browser.js("return (await harness.client.objects(args[0]))[0].body.userName;", partition)
    request_id = browser.js("""return await harness.client.write(args[0], [{op: 'set', collection: 'User', id: args[1], path: 'userName', value: 'mallory'}]);""", partition, me)
    browser.until(f"events.some(e => e.type === 'rejected' && e.requestId === '{request_id}' && e.code === 'validation_failed')")
    browser.until(f"(await client.objects('{partition}'))[0].body.userName === '{original}' && (await client.unacknowledgedWrites()) === 0")


def test_two_tabs_share_one_websocket_without_duplicate_uploads(server, browser):
    """Two tabs of one store: one leads and holds the only WebSocket; the other's writes go
    through it; every write is uploaded once; when the leader closes, the other takes over."""
    store = store_name()
    first = browser.open_page()
    me = register(browser, store)
    partition = f"user={me}"
    room = "c-" + uuid.uuid4().hex[:10]
    browser.js("await harness.client.openPartition(args[0]);", partition)
    # The server's trigger makes the User record after registration: wait until it has arrived.
    browser.until(f"client.status === 'online' && client.isUpToDate('{partition}') && (await client.objects('{partition}')).length === 1")
    browser.js("""await harness.client.write(args[0], [{op: 'arrayAppend', collection: 'User', id: args[1], path: 'conversations',
                   value: {id: args[2], displayName: 'Room', unreadCount: 0, members: []}}]);""", partition, me, room)
    browser.until("(await client.unacknowledgedWrites()) === 0")

    second = browser.open_page(new_tab=True)
    info = browser.js("return await harness.open(args[0]);", store)
    assert info["leader"] is False, "the second tab follows"
    browser.js("await harness.client.openPartition(args[0]);", partition)
    browser.until(f"client.status === 'online' && client.userId === '{me}'")

    increment = """
        const path = sdk.Path.field('conversations').where('id', args[2]).field('unreadCount').toString();
        for (let i = 0; i < 5; i++) await harness.client.write(args[0], [{op: 'increment', collection: 'User', id: args[1], path, by: 1}]);
    """
    browser.js(increment, partition, me, room)                  # in the follower
    browser.driver.switch_to.window(first)
    browser.js(increment, partition, me, room)                  # in the leader
    count = f"(await client.objects('{partition}'))[0].body.conversations.find(c => c.id === '{room}').unreadCount"
    browser.until(f"(await client.unacknowledgedWrites()) === 0 && {count} === 10")
    browser.driver.switch_to.window(second)
    browser.until(f"{count} === 10")
    assert browser.js("return harness.client.session === null;"), "the follower has no session"

    sessions = server.metric("psync_sessions")
    assert sessions == 1, f"one WebSocket for both tabs, the server counts {sessions}"
    browser.driver.switch_to.window(first)
    sent = browser.js("return harness.client.session.sent;")
    assert sent["upload"] == 11, f"every write uploaded once by the leader: {sent}"

    browser.driver.close()                                      # the leader goes
    browser.driver.switch_to.window(second)
    browser.until("client.leader && client.status === 'online'")
    browser.js(increment, partition, me, room)
    browser.until(f"(await client.unacknowledgedWrites()) === 0 && {count} === 15")
    on_server = browser.js("""
        const objects = await harness.serverObjects(args[0]);
        return objects[0].body.conversations.find(c => c.id === args[1]).unreadCount;
    """, partition, room)
    assert on_server == 15, f"the server counted {on_server}"
    wait_for(lambda: server.metric("psync_sessions") == 1, "one session after the handover")


def test_blob_upload_and_download_with_digest_check(server, browser):
    """A photo attached and referenced from the User record is uploaded before the write; another
    client of the same user downloads it through the partition, checks its digest, caches it."""
    first = browser.open_page()
    address = email()
    me = register(browser, store_name(), address)
    partition = f"user={me}"
    browser.js("await harness.client.openPartition(args[0]);", partition)
    # The server's trigger makes the User record after registration: wait until it has arrived.
    browser.until(f"client.isUpToDate('{partition}') && (await client.objects('{partition}')).length === 1")
    digest = browser.js("""
        const bytes = new Uint8Array(200000);
        for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + 7) % 251;
        const reference = await harness.client.attach(bytes, 'image/png');
        await harness.client.write(args[0], [{op: 'set', collection: 'User', id: args[1], path: 'userPreferences.avatarImage',
            value: {_id: 'a-1', date: '2026-11-25T12:00:00.000Z', picture: reference}}]);
        return reference['@blob'];
    """, partition, me)
    browser.until(f"(await client.unacknowledgedWrites()) === 0 && client.isUpToDate('{partition}')")

    # Another device of the same user (its own store): reads the reference, downloads the bytes.
    browser.open_page(new_tab=True)
    result = browser.js("""
        await harness.open(args[3]);
        await harness.client.login(args[2], 'correct horse battery');
        await harness.client.openPartition(args[0]);
        await harness.until(`client.isUpToDate('${args[0]}')`);
        const user = (await harness.client.objects(args[0]))[0];
        const reference = user.body.userPreferences.avatarImage.picture;
        const blob = await harness.client.blob(reference, args[0]);
        const bytes = new Uint8Array(await blob.arrayBuffer());
        let ok = bytes.length === 200000;
        for (let i = 0; ok && i < bytes.length; i++) ok = bytes[i] === (i * 31 + 7) % 251;
        const digest = await sdk.digestOf(bytes);
        const cached = await harness.client.store.blobRecord(reference['@blob']);
        let refused = null;
        try {
            await harness.client.blob({ '@blob': 'sha256:' + '0'.repeat(64), length: 3, contentType: 'image/png' }, args[0]);
        } catch (e) { refused = e.code; }
        return { ok, digest, type: blob.type, cached: cached !== null, refused };
    """, partition, me, address, store_name())
    assert result["ok"], "the bytes came back whole"
    assert result["digest"] == digest and result["type"] == "image/png" and result["cached"], result
    assert result["refused"] == "not_found", result


def test_wiped_store_recovers_from_the_server(server, browser):
    """The database deleted under a running client (as clearing site data does): the client
    says so (`storeReset`), keeps its credentials and open partitions, downloads them anew and
    goes on writing. Deleted while the page was away: the next start says so too."""
    store = store_name()
    browser.open_page()
    me = register(browser, store)
    partition = f"user={me}"
    browser.js("await harness.client.openPartition(args[0]);", partition)
    browser.until(f"client.isUpToDate('{partition}') && (await client.objects('{partition}')).length === 1")
    browser.js("""
        await new Promise((resolve, reject) => {
            const request = indexedDB.deleteDatabase(args[0]);
            request.onsuccess = resolve;
            request.onerror = () => reject(request.error);
        });
    """, store)
    browser.until("events.some(e => e.type === 'storeReset')")
    browser.until(f"client.isUpToDate('{partition}') && (await client.objects('{partition}')).length === 1")
    browser.js("""await harness.client.write(args[0], [{op: 'set', collection: 'User', id: args[1], path: 'userPreferences.displayName', value: 'Again'}]);""", partition, me)
    browser.until(f"(await client.unacknowledgedWrites()) === 0 && (await client.objects('{partition}'))[0].body.userPreferences.displayName === 'Again'")

    browser.driver.refresh()
    WebDriverWait(browser.driver, WAIT).until(lambda d: d.title == "ready")
    browser.js("""
        await new Promise((resolve) => { const r = indexedDB.deleteDatabase(args[0]); r.onsuccess = resolve; r.onerror = resolve; });
        await harness.open(args[0]);
    """, store)
    browser.until("events.some(e => e.type === 'storeReset') && client.userId === null")


def test_client_md_example_runs(server, browser):
    """The JavaScript block of docs/CLIENT.md, taken out of the document as it stands
    (test/docs/extract.mjs) and run as a module of a page of the server's origin, importing the
    SDK from the server's /sdk/js/: it registers, opens the user's partition and writes the
    name, which its output shows once the server has it; a change written by another client
    (another store, another WebSocket) then shows in its output, live."""
    subprocess.run(["node", os.path.join(ROOT, "test", "docs", "extract.mjs")], check=True, capture_output=True)
    browser.driver.get(f"{browser.origin}/test/docs/example.html?block=1")
    WebDriverWait(browser.driver, WAIT).until(lambda d: d.title != "loading")
    assert browser.driver.title == "done", browser.driver.title
    output = "return document.querySelector('output')?.textContent ?? '';"
    WebDriverWait(browser.driver, WAIT).until(lambda d: d.execute_script(output) == '{"displayName":"Ann"} (0 unsent)')
    example = browser.driver.current_window_handle

    browser.open_page(new_tab=True)
    browser.js("""
        await harness.open(args[0]);
        const userId = await harness.client.login('ann@example.com', 'correct horse battery');
        const mine = await harness.client.openPartition(`user=${userId}`);
        await harness.client.waitUntil(async () => (await mine.object('User', userId))?.body.userPreferences?.displayName === 'Ann', 20000);
        await mine.write([{op: 'set', collection: 'User', id: userId, path: 'userPreferences.displayName', value: 'Ann from elsewhere'}]);
        await harness.until('(await client.unacknowledgedWrites()) === 0');
    """, store_name())
    browser.driver.switch_to.window(example)
    WebDriverWait(browser.driver, WAIT).until(lambda d: d.execute_script(output) == '{"displayName":"Ann from elsewhere"} (0 unsent)')



TESTS = [
    test_snapshot_and_live_change_between_two_clients,
    test_offline_write_survives_reload_and_is_applied_exactly_once,
    test_rejected_write_is_rolled_back,
    test_two_tabs_share_one_websocket_without_duplicate_uploads,
    test_blob_upload_and_download_with_digest_check,
    test_wiped_store_recovers_from_the_server,
    test_client_md_example_runs,
]


def main():
    only = sys.argv[1] if len(sys.argv) > 1 else None
    if not os.access(PSYNC_BIN, os.X_OK):
        print(f"no psync binary at {PSYNC_BIN} (set PSYNC_BIN)")
        print("0 passed, 1 failed")
        return 1
    server = PSync()
    devserver = None
    passed = failed = 0
    try:
        server.start()
        dev_port = free_port()
        devserver = subprocess.Popen(["node", os.path.join(ROOT, "scripts", "devserver.mjs"), "--port", str(dev_port), "--backend", str(server.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        origin = f"http://127.0.0.1:{dev_port}"
        wait_for(lambda: urllib.request.urlopen(origin + "/test/browser/page.html", timeout=2).status == 200, "the dev server")
        for test in TESTS:
            if only and only not in test.__name__:
                continue
            if server.process is None:
                server.start()
            browser = Browser(origin)
            started = time.monotonic()
            try:
                test(server, browser)
                passed += 1
                print(f"PASS {test.__name__} ({time.monotonic() - started:.1f}s)", flush=True)
            except Exception:
                failed += 1
                print(f"FAIL {test.__name__} ({time.monotonic() - started:.1f}s)", flush=True)
                traceback.print_exc()
                try:
                    print("# page events:", json.dumps(browser.js("return harness.events;"))[:2000])
                except Exception:
                    pass
            finally:
                browser.quit()
    except Exception:
        failed += 1
        traceback.print_exc()
    finally:
        if devserver:
            devserver.terminate()
            devserver.wait()
        server.cleanup()
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
