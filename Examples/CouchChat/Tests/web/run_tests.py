#!/usr/bin/env python3
"""Browser end-to-end tests of CouchChat's web app: a real `couchchat-server` started here on a
free loopback port (embedded PostgreSQL in a temporary directory), the app at /app/ in
headless Chromium, and the `couchchat` terminal client beside it.

    COUCHCHAT_SERVER_BIN=… COUCHCHAT_BIN=… python3 Tests/web/run_tests.py [test-name-substring]

(scripts/test-web.sh builds both and runs this.) Waits are on DOM conditions with a bound,
never fixed sleeps. Takes screenshots of the main views, into docs/screenshots/ with UPDATE_SCREENSHOTS=1. Prints one
line per test and ends with `N passed, N failed`; exits non-zero on any failure."""
import hashlib
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

from couchchat_web import EXAMPLE, MailSink, Page, Server, Terminal, email, png

SERVER_BIN = os.environ.get("COUCHCHAT_SERVER_BIN", str(EXAMPLE.parents[1] / ".build-examples/debug/couchchat-server"))
CLIENT_BIN = os.environ.get("COUCHCHAT_BIN", str(EXAMPLE.parents[1] / ".build-examples/debug/couchchat"))
LAPTOP = (1024, 640)
PHONE = (375, 667)


def test_two_browsers_and_a_terminal_chat_in_one_room(server, cleanup):
    """Ann and Bob in browsers and Carol in the terminal client share a room: each sees the
    others' messages; Bob's room list marks the room unread until he opens it."""
    carol = cleanup(Terminal(CLIENT_BIN, server, email("carol")))
    carol.run("register", "--email", carol.email, "--password", "correct horse battery")
    carol.run("accept", "--anyone")

    ann = cleanup(Page(server.origin, *LAPTOP))
    ann.open()
    ann.screenshot("sign-in.png")
    ann.register(email("ann"))
    bob = cleanup(Page(server.origin, *PHONE))
    bob.open()
    bob.register(email("bob"))
    bob.accept_invitations_from_anyone("Bob")

    room = ann.create_room("Team", [bob.email, carol.email])
    ann.until(f"document.querySelector('#people li.member[data-email=\"{bob.email}\"]') && "
              f"document.querySelector('#people li.member[data-email=\"{carol.email}\"]')", "the friend bot letting Bob and Carol in")
    ann.send("hello from Ann")
    ann.until_sent()

    bob.until(f"document.querySelector('#rooms li[data-room-id=\"{room}\"]')?.dataset.unread === '1'", "the room unread in Bob's list")
    bob.screenshot("rooms-phone.png")
    bob.open_room(room)
    bob.until_message("hello from Ann")
    bob.until(f"document.querySelector('#rooms li[data-room-id=\"{room}\"]')?.dataset.unread === '0'", "the room read")
    bob.send("hi Ann, Bob here")
    bob.until_sent()
    ann.until_message("hi Ann, Bob here")

    carol.run("send", room, "hey both, from the terminal")
    ann.until_message("hey both, from the terminal", f"item.dataset.author === {carol.email!r}")
    bob.until_message("hey both, from the terminal")
    output = carol.run("read", room)
    assert "3 message(s)" in output, output
    assert f"{ann.email}: hello from Ann" in output and f"{bob.email}: hi Ann, Bob here" in output, output
    ann.screenshot("room.png")
    bob.screenshot("room-phone.png")
    for page in (ann, bob):
        errors = [e for e in page.console_errors() if "Content Security Policy" in e or "Refused" in e]
        assert not errors, f"the page broke its policy: {errors}"


def test_message_written_offline_is_pending_survives_reload_and_is_delivered_once(server, cleanup):
    """A message written while the server is stopped shows as pending, is still pending after a
    reload, and once the server is back is delivered exactly once."""
    ann = cleanup(Page(server.origin, *LAPTOP))
    ann.open()
    ann.register(email("ann"))
    room = ann.create_room("Offline")
    ann.until_sent()
    ann.until("document.body.dataset.offline === 'ready'", "the app kept for offline use (service worker, cache)")

    server.stop()
    ann.until("document.getElementById('status').dataset.status !== 'online'", "the page offline")
    ann.send("written offline")
    ann.until_message("written offline", "item.dataset.pending === 'true'")
    ann.until("document.getElementById('outbox').dataset.count === '1'", "one write waiting")
    ann.screenshot("pending.png")

    ann.reload()
    ann.open_room(room)
    ann.until_message("written offline", "item.dataset.pending === 'true'")

    server.start()
    ann.until_message("written offline", "item.dataset.pending === 'false'")
    ann.until_sent()

    terminal = cleanup(Terminal(CLIENT_BIN, server, ann.email))
    terminal.run("login", "--email", ann.email, "--password", "correct horse battery")
    output = terminal.run("read", room)
    assert "1 message(s)" in output and output.count("written offline") == 1, output


def test_photos_go_both_ways_byte_identical(server, cleanup):
    """A photo sent from the page is saved byte-identical by the terminal client; one sent from
    the terminal is shown in the page with the same bytes."""
    carol = cleanup(Terminal(CLIENT_BIN, server, email("carol")))
    carol.run("register", "--email", carol.email, "--password", "correct horse battery")
    carol.run("accept", "--anyone")
    ann = cleanup(Page(server.origin, *LAPTOP, bypass_csp=True))
    ann.open()
    ann.register(email("ann"))
    room = ann.create_room("Pictures", [carol.email])
    ann.until(f"document.querySelector('#people li.member[data-email=\"{carol.email}\"]')", "Carol let in")

    work = Path(tempfile.mkdtemp(prefix="couchchat-photos-"))
    cleanup.paths.append(work)
    web_photo = work / "from-web.png"
    web_photo.write_bytes(png(160, 90, 11))
    ann.send("a picture from the web", web_photo)
    ann.until_message("a picture from the web", "item.querySelector('img.photo')?.dataset.loaded === 'true'")
    ann.until_sent()
    sent = ann.message("a picture from the web")
    assert sent["photo"]["digest"] == "sha256:" + hashlib.sha256(web_photo.read_bytes()).hexdigest(), sent

    saved = work / "saved"
    carol.run("read", room, "--save-photos", str(saved))
    copy = saved / f"{sent['chatId']}.png"
    assert copy.read_bytes() == web_photo.read_bytes(), "the terminal saved the web's picture byte for byte"

    terminal_photo = work / "from-terminal.png"
    terminal_photo.write_bytes(png(120, 120, 200))
    carol.run("send", room, "a picture from the terminal", "--photo", str(terminal_photo))
    ann.until_message("a picture from the terminal", "item.querySelector('img.photo')?.dataset.loaded === 'true'")
    shown = ann.driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const item = [...document.querySelectorAll('#messages li')].find(li => li.querySelector('.text')?.textContent === arguments[0]);
        const image = item.querySelector('img.photo');
        fetch(image.src).then(r => r.arrayBuffer()).then(b => done({bytes: Array.from(new Uint8Array(b)), width: image.naturalWidth}),
                                                        e => done({error: String(e)}));
    """, "a picture from the terminal")
    assert "error" not in shown, shown
    assert bytes(shown["bytes"]) == terminal_photo.read_bytes(), "the page shows the terminal's picture byte for byte"
    assert shown["width"] == 120, f"the picture decoded: {shown['width']} px wide"
    ann.screenshot("photos.png")


def test_rejected_write_is_shown_with_its_code_and_rolled_back(server, cleanup):
    """Bob, a member but not an owner, invites someone: the page shows it at once, the server
    refuses it (`validation_failed`: only owners change a room), and the page shows the code
    and puts the room back as it was."""
    ann = cleanup(Page(server.origin, *LAPTOP))
    ann.open()
    ann.register(email("ann"))
    bob = cleanup(Page(server.origin, *LAPTOP))
    bob.open()
    bob.register(email("bob"))
    bob.accept_invitations_from_anyone("Bobby")
    room = ann.create_room("Owners only", [bob.email])
    ann.until(f"document.querySelector('#people li.member[data-email=\"{bob.email}\"]')", "Bob let in")

    bob.open_room(room)
    dave = email("dave")
    # Record whether Dave ever showed as invited: the optimistic write, before its refusal.
    bob.js("""
        const invited = `#people li.invited[data-email="${arguments[0]}"]`;
        window.seenInvited = false;
        new MutationObserver(() => {
            if (document.querySelector(invited)) window.seenInvited = true;
        }).observe(document.getElementById('people'), {childList: true, subtree: true});
    """, dave)
    bob.type("#invite-email", dave)
    bob.find("#invite button[type=submit]").click()
    bob.until("document.getElementById('notice').dataset.code === 'validation_failed' && !document.getElementById('notice').hidden",
              "the refusal shown with its code")
    bob.until(f"!document.querySelector('#people li[data-email=\"{dave}\"]')", "the invitation rolled back")
    bob.until_sent()
    assert bob.js("return window.seenInvited;"), "the invitation showed at once, before the server answered"
    assert "only an owner" in bob.js("return document.getElementById('notice-text').textContent;")
    bob.screenshot("rejected.png")
    ann.until(f"!document.querySelector('#people li[data-email=\"{dave}\"]')", "Ann's room unchanged")


def test_member_leaves_a_room(server, cleanup):
    """Bob leaves Ann's room from the page: it goes from his list, and Ann sees him gone."""
    ann = cleanup(Page(server.origin, *LAPTOP))
    ann.open()
    ann.register(email("ann"))
    bob = cleanup(Page(server.origin, *LAPTOP))
    bob.open()
    bob.register(email("bob"))
    bob.accept_invitations_from_anyone("Bob")
    room = ann.create_room("Leaving", [bob.email])
    ann.until(f"document.querySelector('#people li.member[data-email=\"{bob.email}\"]')", "Bob let in")
    bob.open_room(room)
    bob.find("#leave").click()
    bob.until(f"!document.querySelector('#rooms li[data-room-id=\"{room}\"]')", "the room gone from Bob's list")
    ann.until(f"!document.querySelector('#people li[data-email=\"{bob.email}\"]')", "Bob gone from Ann's room")


def test_email_verified_in_the_page(server, cleanup):
    """A server with a mail server verifies emails: after registering, the page asks for the
    code mailed (through a real SMTP server) and nobody can invite the user, whose profile does
    not exist yet; a wrong code is answered with its code; the right one makes the profile."""
    sink = cleanup(MailSink())
    verifying = cleanup(Server(SERVER_BIN, env={"PSYNC_SMTP_URL": sink.url, "PSYNC_MAIL_FROM": "couchchat@example.com"}))
    verifying.start()
    dana = cleanup(Page(verifying.origin, *LAPTOP))
    dana.open()
    dana.register(email("dana"))
    dana.until("!document.getElementById('verify').hidden", "the code form")
    dana.screenshot("verify.png")
    code = sink.code_for(dana.email)

    dana.type("#verify-code", "AAAA-AAAA" if code != "AAAA-AAAA" else "BBBB-BBBB")
    dana.find("#verify-submit").click()
    dana.until("document.getElementById('notice').dataset.code === 'invalid_code'", "the wrong code refused with its code")
    dana.type("#verify-code", code.lower())
    dana.find("#verify-submit").click()
    dana.until("document.getElementById('verify').hidden", "the code form gone")
    # Verified: the server makes the profile now, and the user may say who invites them.
    dana.accept_invitations_from_anyone("Dana")


TESTS = [
    test_two_browsers_and_a_terminal_chat_in_one_room,
    test_message_written_offline_is_pending_survives_reload_and_is_delivered_once,
    test_photos_go_both_ways_byte_identical,
    test_rejected_write_is_shown_with_its_code_and_rolled_back,
    test_member_leaves_a_room,
    test_email_verified_in_the_page,
]


class Cleanup:
    """What a test made (pages, terminal homes, folders), undone after it."""

    def __init__(self):
        self.things = []
        self.paths = []

    def __call__(self, thing):
        self.things.append(thing)
        return thing

    def run(self):
        import shutil
        for thing in reversed(self.things):
            try:
                thing.quit() if isinstance(thing, Page) else thing.cleanup()
            except Exception:
                pass
        for path in self.paths:
            shutil.rmtree(path, ignore_errors=True)

    def pages(self):
        return [t for t in self.things if isinstance(t, Page)]


def main():
    only = sys.argv[1] if len(sys.argv) > 1 else None
    for binary in (SERVER_BIN, CLIENT_BIN):
        if not os.access(binary, os.X_OK):
            print(f"no executable at {binary} (set COUCHCHAT_SERVER_BIN and COUCHCHAT_BIN, or run scripts/test-web.sh)")
            print("0 passed, 1 failed")
            return 1
    server = Server(SERVER_BIN)
    passed = failed = 0
    try:
        server.start()
        for test in TESTS:
            if only and only not in test.__name__:
                continue
            if server.process is None:
                server.start()
            cleanup = Cleanup()
            started = time.monotonic()
            try:
                test(server, cleanup)
                passed += 1
                print(f"PASS {test.__name__} ({time.monotonic() - started:.1f}s)", flush=True)
            except Exception:
                failed += 1
                print(f"FAIL {test.__name__} ({time.monotonic() - started:.1f}s)", flush=True)
                traceback.print_exc()
                for page in cleanup.pages():
                    try:
                        print(f"# {page.email} console:", page.console_errors()[:10])
                    except Exception:
                        pass
            finally:
                cleanup.run()
    except Exception:
        failed += 1
        traceback.print_exc()
    finally:
        server.cleanup()
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
