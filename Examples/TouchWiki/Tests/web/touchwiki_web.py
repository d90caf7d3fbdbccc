"""The pieces of TouchWiki's browser tests: a real `touchwiki-server` (embedded PostgreSQL in a
temporary directory, a free loopback port, stoppable and restartable), the `touchwiki`
terminal client, and a headless Chromium page of the web app driven through its DOM.

Every wait is on a condition with a bound (WAIT seconds), never a fixed sleep."""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parents[1]
REPOSITORY = HERE.parents[3]

# The SDK's browser tests' helpers (a free port, a bounded wait on an external process, a server).
_spec = importlib.util.spec_from_file_location("sdk_browser_tests", REPOSITORY / "Clients/js/test/browser/run_tests.py")
_sdk = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_sdk)
# The README's pictures only with UPDATE_SCREENSHOTS=1, otherwise a temporary folder.
SCREENSHOTS = _sdk.screenshot_folder(EXAMPLE)
wait_for = _sdk.wait_for

WAIT = 60  # seconds: the bound of every wait
PASSWORD = "correct horse battery"


def email(name):
    return f"{name}-{uuid.uuid4().hex[:8]}@example.com"


class Server(_sdk.PSync):
    """`touchwiki-server serve` on a fixed port and data directory, stoppable and restartable
    (the SDK's test server, with TouchWiki's binary); `env` adds to its environment."""

    def __init__(self, binary, env=None):
        super().__init__(binary=binary, env={"PSYNC_BCRYPT_COST": "4", **(env or {})}, prefix="touchwiki-web-")


class MailSink:
    """PartitionSync's SMTP sink (scripts/smtp-sink.py, on aiosmtpd) on a free loopback port:
    the mails a server sends, kept for the test to read."""

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix="touchwiki-mail-")
        self.process = subprocess.Popen([sys.executable, str(REPOSITORY / "scripts/smtp-sink.py"), self.directory],
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
    """One user of the `touchwiki` terminal client, with a home of its own."""

    def __init__(self, binary, server, address=None):
        self.binary = binary
        self.server = server
        self.email = address or email("term")
        self.home = tempfile.mkdtemp(prefix="touchwiki-term-")
        self.files = tempfile.mkdtemp(prefix="touchwiki-text-")

    def run(self, *arguments, editor=None, ok=True):
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOUCHWIKI_") and k not in ("EDITOR", "VISUAL")}
        if editor:
            env["EDITOR"] = editor
        result = subprocess.run([self.binary, *arguments, "--server", self.server.origin, "--home", self.home, "--wait", "10"],
                                env=env, capture_output=True, text=True, timeout=WAIT * 2)
        if ok and result.returncode != 0:
            raise AssertionError(f"touchwiki {' '.join(arguments)} exited {result.returncode}: {result.stdout}{result.stderr}")
        return result.stdout

    def register(self):
        self.run("register", "--email", self.email, "--password", PASSWORD)

    def create(self, title):
        output = self.run("create", title)
        found = re.search(r"\(([0-9a-f-]{36})\)", output)
        assert found, output
        return found.group(1)

    def write_page(self, wiki, page, text, append=False):
        """Edits a page with an "editor" that writes `text` into it (or appends it), then publishes it."""
        path = os.path.join(self.files, uuid.uuid4().hex + ".md")
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        output = self.run("edit", wiki, page, editor=f"cat {path} >>" if append else f"cp {path}")
        assert "Saved your draft" in output, output
        self.run("publish", wiki, page)

    def cleanup(self):
        shutil.rmtree(self.home, ignore_errors=True)
        shutil.rmtree(self.files, ignore_errors=True)


class Page:
    """The web app in its own headless Chromium (its own IndexedDB: one person's browser)."""

    def __init__(self, origin, width=1024, height=700, bypass_csp=False):
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
            # The page's policy would block an inline script or handler that got into the page:
            # without it, markup made from a page's text would run, and the test would see it.
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
            notice = self.driver.execute_script("return document.getElementById('notice-text')?.textContent;")
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
        self.until("!document.getElementById('home').hidden", "the wikis after registering")
        self.until(f"document.getElementById('me').textContent === {address!r}", "the user's email in the bar")

    def until_sent(self):
        self.until("document.getElementById('outbox').dataset.count === '0' && document.getElementById('status').dataset.status === 'online'",
                   "every write acknowledged")

    def create_wiki(self, title):
        self.type("#new-wiki-title", title)
        self.find("#new-wiki button[type=submit]").click()
        self.until(f"document.getElementById('wiki-title').textContent === {title!r} && !document.getElementById('wiki').hidden",
                   f"wiki {title} open")
        return self.js("return document.getElementById('wiki').dataset.wikiId;")

    def open_wiki(self, wiki_id):
        self.until(f"document.querySelector('#wikis li[data-wiki-id=\"{wiki_id}\"] a')", f"wiki {wiki_id} in the list")
        # The list is drawn again on every change: click in the page, not through a held element.
        self.js("document.querySelector(`#wikis li[data-wiki-id='${arguments[0]}'] a`).click();", wiki_id)
        self.until(f"document.getElementById('wiki').dataset.wikiId === {wiki_id!r} && !document.getElementById('wiki').hidden",
                   f"wiki {wiki_id} open")

    def open_page(self, wiki_id, name):
        """Goes to a page by its address (as a bookmark or a reload would)."""
        self.js("location.hash = `#/w/${encodeURIComponent(arguments[0])}/p/${encodeURIComponent(arguments[1])}`;", wiki_id, name)
        self.until(f"document.getElementById('page').dataset.page === {name!r}", f"page {name} shown")

    def click(self, selector):
        """Clicks the element `selector` finds now (the page draws its parts again on every
        change, so an element held from before may be gone)."""
        self.until(f"document.querySelector({selector!r})", f"{selector} in the page")
        self.js("document.querySelector(arguments[0]).click();", selector)

    def add_member(self, address):
        self.js("document.getElementById('members-box').open = true;")
        self.type("#member-email", address)
        self.find("#add-member button[type=submit]").click()
        self.until(f"document.querySelector('#members li.member[data-email=\"{address}\"]')", f"{address} a member")

    def edit(self, text, publish=True):
        """Opens the open page in the editor, writes `text` in place of its text, then publishes
        it (or saves it as a draft)."""
        self.find("#edit").click()
        self.until("!document.getElementById('editor').hidden", "the editor")
        self.type("#editor-text", text)
        self.find("#editor-publish" if publish else "#save-draft").click()
        self.until("document.getElementById('editor').hidden", "the editor closed")

    def shows(self, text):
        """A JavaScript condition: the page's rendered text contains `text`."""
        return f"document.getElementById('page-content').textContent.includes({text!r})"

    def page_text(self):
        return self.js("return document.getElementById('page-content').textContent;")

    def screenshot(self, name):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.driver.save_screenshot(str(SCREENSHOTS / name))

    def console_errors(self):
        return [entry["message"] for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]

    def quit(self):
        self.driver.quit()
