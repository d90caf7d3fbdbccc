"""The pieces of CouchChat's browser tests: a real `couchchat-server` (embedded PostgreSQL in a
temporary directory, a free loopback port, stoppable and restartable), the `couchchat`
terminal client, and a headless Chromium page of the web app driven through its DOM.

Every wait is on a condition with a bound (WAIT seconds), never a fixed sleep."""
import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import urllib.request
import uuid
import zlib
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parents[1]
REPOSITORY = HERE.parents[3]

# The SDK's browser tests' helpers (a free port, a bounded wait on an external process).
_spec = importlib.util.spec_from_file_location("sdk_browser_tests", REPOSITORY / "Clients/js/test/browser/run_tests.py")
_sdk = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_sdk)
# The README's pictures only with UPDATE_SCREENSHOTS=1, otherwise a temporary folder.
SCREENSHOTS = _sdk.screenshot_folder(EXAMPLE)
free_port, wait_for = _sdk.free_port, _sdk.wait_for

WAIT = 60  # seconds: the bound of every wait
PASSWORD = "correct horse battery"


def email(name):
    return f"{name}-{uuid.uuid4().hex[:8]}@example.com"


class Server(_sdk.PSync):
    """`couchchat-server serve` on a fixed port and data directory, stoppable and restartable
    (the SDK's test server, with CouchChat's binary); `env` adds to its environment."""

    def __init__(self, binary, env=None):
        super().__init__(binary=binary, env={"PSYNC_BCRYPT_COST": "4", **(env or {})}, prefix="couchchat-web-")


class MailSink:
    """PartitionSync's SMTP sink (scripts/smtp-sink.py, on aiosmtpd) on a free loopback port:
    the mails a server sends, kept for the test to read."""

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix="couchchat-mail-")
        script = EXAMPLE.parents[1] / "scripts/smtp-sink.py"
        self.process = subprocess.Popen([sys.executable, str(script), self.directory],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline().strip()
        assert line.startswith("listening "), f"the SMTP sink did not start: {line!r}"
        self.port = int(line.split()[1])

    @property
    def url(self):
        return f"smtp://127.0.0.1:{self.port}"

    def code_for(self, address):
        """The verification code in the newest mail to `address`, once it has come."""
        def newest():
            for name in sorted(os.listdir(self.directory), reverse=True):
                if name.endswith(".json"):
                    with open(os.path.join(self.directory, name), encoding="utf-8") as mail:
                        record = json.load(mail)
                    if address in record["to"]:
                        # In the body only: a header (a Message-ID, a date) may hold digits that look like a code.
                        body = re.split(r"\r?\n\r?\n", record["data"], maxsplit=1)[-1]
                        found = re.search(r"\b([A-Z2-9]{4}-[A-Z2-9]{4})\b", body)
                        if found:
                            return found.group(1)
            return None
        wait_for(lambda: newest() is not None, f"a verification mail to {address}", timeout=30)
        return newest()

    def cleanup(self):
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


class Terminal:
    """One user of the `couchchat` terminal client, with a home of its own."""

    def __init__(self, binary, server, address=None):
        self.binary = binary
        self.server = server
        self.email = address or email("term")
        self.home = tempfile.mkdtemp(prefix="couchchat-term-")

    def run(self, *arguments, ok=True):
        env = {k: v for k, v in os.environ.items() if not k.startswith("COUCHCHAT_")}
        result = subprocess.run([self.binary, *arguments, "--server", self.server.origin, "--home", self.home, "--wait", "10"],
                                env=env, capture_output=True, text=True, timeout=WAIT * 2)
        if ok and result.returncode != 0:
            raise AssertionError(f"couchchat {' '.join(arguments)} exited {result.returncode}: {result.stdout}{result.stderr}")
        return result.stdout

    def cleanup(self):
        shutil.rmtree(self.home, ignore_errors=True)


class Page:
    """The web app in its own headless Chromium (its own IndexedDB: one person's browser)."""

    def __init__(self, origin, width=1024, height=640, bypass_csp=False):
        options = Options()
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", f"--window-size={width},{height}",
                    "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                    "--disable-backgrounding-occluded-windows", "--hide-scrollbars", "--force-device-scale-factor=1"):
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        service = Service(shutil.which("chromedriver") or "/usr/bin/chromedriver")
        self.driver = webdriver.Chrome(service=service, options=options)
        self.driver.set_script_timeout(WAIT)
        if width < 500:
            # Headless windows are at least 500 px wide: a phone's viewport is emulated.
            self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": True})
        if bypass_csp:
            # Only to read a picture's bytes back from its blob: URL (connect-src forbids it).
            self.driver.execute_cdp_cmd("Page.setBypassCSP", {"enabled": True})
        self.origin = origin
        self.email = None

    def open(self):
        self.driver.get(f"{self.origin}/app/")
        self.until("document.body.dataset.ready === 'true'", "the app to start")

    def reload(self):
        self.driver.refresh()
        self.until("document.body.dataset.ready === 'true'", "the app to start again")

    def until(self, condition, what):
        """Waits until the JavaScript expression `condition` holds in the page."""
        try:
            WebDriverWait(self.driver, WAIT, poll_frequency=0.1).until(lambda d: d.execute_script(f"return !!({condition});"))
        except Exception as error:
            notice = self.driver.execute_script("return document.getElementById('notice-text').textContent;")
            raise AssertionError(f"timed out waiting for {what} ({condition}); notice: {notice!r}") from error

    def js(self, source, *arguments):
        return self.driver.execute_script(source, *arguments)

    def find(self, selector):
        return self.driver.find_element(By.CSS_SELECTOR, selector)

    def type(self, selector, text):
        field = self.find(selector)
        field.clear()
        field.send_keys(text)

    def register(self, address):
        self.email = address
        self.type("#email", address)
        self.type("#password", PASSWORD)
        self.find("#register").click()
        self.until("!document.getElementById('chat').hidden", "the chat view after registering")
        self.until(f"document.getElementById('me').textContent === {address!r}", "the user's email in the bar")

    def accept_invitations_from_anyone(self, nick):
        self.find("#profile-button").click()
        self.until("!document.getElementById('profile').hidden", "the profile")
        # The profile is made by the server at registration: wait for it to arrive.
        self.until("document.getElementById('profile').dataset.known === 'true'", "the profile from the server")
        self.type("#nick", nick)
        checkbox = self.find("#accept-anyone")
        if not checkbox.is_selected():
            checkbox.click()
        self.find("#profile-save").click()
        self.until("document.getElementById('profile-save').dataset.saved === 'true'", "the profile saved")
        self.until_sent()

    def until_sent(self):
        self.until("document.getElementById('outbox').dataset.count === '0' && document.getElementById('status').dataset.status === 'online'",
                   "every write acknowledged")

    def create_room(self, title, invitees=()):
        self.type("#new-room-title", title)
        self.type("#new-room-invitees", ", ".join(invitees))
        self.find("#new-room button[type=submit]").click()
        self.until(f"document.getElementById('room-title').textContent === {title!r} && !document.getElementById('room').hidden",
                   f"room {title} open")
        return self.js("return document.getElementById('room').dataset.roomId;")

    def open_room(self, room_id):
        self.until(f"document.querySelector('#rooms li[data-room-id=\"{room_id}\"]')", f"room {room_id} in the list")
        # The list is drawn again on every change: click in the page, not through a held element.
        self.js("document.querySelector(`#rooms li[data-room-id='${arguments[0]}']`).click();", room_id)
        self.until(f"document.getElementById('room').dataset.roomId === {room_id!r} && !document.getElementById('room').hidden",
                   f"room {room_id} open")

    def send(self, text, photo=None):
        self.type("#message", text)
        if photo:
            self.find("#photo").send_keys(str(photo))
        self.find("#send").click()
        self.until(f"[...document.querySelectorAll('#messages li .text')].some(t => t.textContent === {text!r})", f"message {text!r} shown")

    def message(self, text):
        """`{pending, author, photo: {digest, loaded}}` of the message with this text, or None."""
        return self.js("""
            const item = [...document.querySelectorAll('#messages li')].find(li => li.querySelector('.text')?.textContent === arguments[0]);
            if (!item) return null;
            const image = item.querySelector('img.photo');
            return {pending: item.dataset.pending === 'true', author: item.dataset.author, chatId: item.dataset.chatId,
                    photo: image ? {digest: image.dataset.digest, loaded: image.dataset.loaded === 'true'} : null};
        """, text)

    def until_message(self, text, condition="true"):
        self.until(f"""(() => {{
            const item = [...document.querySelectorAll('#messages li')].find(li => li.querySelector('.text')?.textContent === {text!r});
            return item && ({condition});
        }})()""", f"message {text!r} ({condition})")

    def screenshot(self, name):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.driver.save_screenshot(str(SCREENSHOTS / name))

    def console_errors(self):
        return [entry["message"] for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]

    def quit(self):
        self.driver.quit()


def png(width, height, seed):
    """A valid PNG of a gradient (8-bit RGB): a picture both clients can show, different per seed."""
    rows = b"".join(
        b"\x00" + b"".join(bytes(((x * 255 // width + seed) % 256, (y * 255 // height) % 256, (seed * 37) % 256)) for x in range(width))
        for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
