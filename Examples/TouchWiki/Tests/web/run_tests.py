#!/usr/bin/env python3
"""Browser end-to-end tests of TouchWiki's web app: a real `touchwiki-server` started here on a
free loopback port (embedded PostgreSQL in a temporary directory), the app at /app/ in
headless Chromium, and the `touchwiki` terminal client beside it.

    TOUCHWIKI_SERVER_BIN=… TOUCHWIKI_BIN=… python3 Tests/web/run_tests.py [test-name-substring]

(scripts/test-web.sh builds both and runs this.) Waits are on DOM conditions with a bound,
never fixed sleeps. Takes screenshots of the main views, into docs/screenshots/ with UPDATE_SCREENSHOTS=1. Prints one
line per test and ends with `N passed, N failed`; exits non-zero on any failure."""
import os
import shutil
import sys
import time
import traceback

from touchwiki_web import EXAMPLE, MailSink, Page, Server, Terminal, email, wait_for

SERVER_BIN = os.environ.get("TOUCHWIKI_SERVER_BIN", str(EXAMPLE.parents[1] / ".build-examples/debug/touchwiki-server"))
CLIENT_BIN = os.environ.get("TOUCHWIKI_BIN", str(EXAMPLE.parents[1] / ".build-examples/debug/touchwiki"))
LAPTOP = (1024, 700)
PHONE = (375, 667)


def test_two_browsers_and_a_terminal_edit_one_page(server, cleanup):
    """Ann and Bob in browsers and Carol in the terminal client share a wiki Ann made and
    gave them: a page edited on each side shows on the others live; Ann removes Carol, whose
    terminal no longer lists the wiki."""
    carol = cleanup(Terminal(CLIENT_BIN, server, email("carol")))
    carol.register()
    ann = cleanup(Page(server.origin, *LAPTOP))
    ann.open()
    ann.screenshot("sign-in.png")
    ann.register(email("ann"))
    bob = cleanup(Page(server.origin, *PHONE))
    bob.open()
    bob.register(email("bob"))

    wiki = ann.create_wiki("Team Wiki")
    ann.add_member(bob.email)
    ann.add_member(carol.email)
    ann.until_sent()
    # The server's trigger lists the wiki for Carol after Ann's write: each run syncs her list.
    wait_for(lambda: wiki in carol.run("wikis"), "the wiki in Carol's terminal", timeout=60)

    ann.edit("# Home\n\nWelcome from Ann.\n")
    ann.until(ann.shows("Welcome from Ann."), "Ann's page")
    ann.until_sent()

    bob.until(f"document.querySelector('#wikis li[data-wiki-id=\"{wiki}\"]')", "the wiki in Bob's list")
    bob.screenshot("wikis-phone.png")
    bob.open_wiki(wiki)
    bob.until(bob.shows("Welcome from Ann."), "Ann's page on Bob's phone")
    bob.edit("# Home\n\nWelcome from Ann.\n\nBob was here.\n")
    bob.until_sent()
    ann.until(ann.shows("Bob was here."), "Bob's edit live on Ann's page")

    shown = carol.run("show", wiki, "Home")
    assert "Welcome from Ann." in shown and "Bob was here." in shown, shown
    carol.write_page(wiki, "Home", "\nCarol, from the terminal.\n", append=True)
    ann.until(ann.shows("Carol, from the terminal."), "Carol's edit live on Ann's page")
    bob.until(bob.shows("Carol, from the terminal."), "Carol's edit live on Bob's phone")
    assert ann.page_text().count("Bob was here.") == 1, ann.page_text()
    ann.js("document.getElementById('members-box').open = true;")
    ann.screenshot("wiki.png")
    bob.screenshot("page-phone.png")

    ann.click(f"#members li[data-email='{carol.email}'] button")
    ann.until(f"!document.querySelector('#members li[data-email=\"{carol.email}\"]')", "Carol removed")
    ann.until_sent()
    wait_for(lambda: wiki not in carol.run("wikis"), "the wiki gone from Carol's terminal", timeout=60)
    for page in (ann, bob):
        errors = [e for e in page.console_errors() if "Content Security Policy" in e or "Refused" in e]
        assert not errors, f"the page broke its policy: {errors}"


HOSTILE = """# Hostile

<script>window.pwned = 'script'</script>

<img src="x" onerror="window.pwned = 'img'">

[click me](javascript:window.pwned='link')

[also me](JaVaScRiPt:window.pwned='link2') and <javascript:window.pwned='auto'>

<a href="javascript:window.pwned='anchor'">an anchor</a>

A [safe link](https://example.com/docs) and **bold** text.
"""


def test_hostile_markdown_renders_as_text(server, cleanup):
    """A page written in the terminal with `<script>`, `<img onerror>` and `javascript:` links
    shows in the page as the characters it holds: no element made from it but the safe link,
    no script run (checked with the page's content security policy turned off, so that only
    the renderer stands between the text and the page)."""
    carol = cleanup(Terminal(CLIENT_BIN, server, email("carol")))
    carol.register()
    ann_email = email("ann")
    wiki = carol.create("Hostile")
    carol.run("add-member", wiki, ann_email)
    carol.write_page(wiki, "Hostile", HOSTILE)

    ann = cleanup(Page(server.origin, *LAPTOP, bypass_csp=True))
    ann.open()
    ann.register(ann_email)
    ann.open_wiki(wiki)
    ann.open_page(wiki, "Hostile")
    ann.until(ann.shows("<script>window.pwned = 'script'</script>"), "the script shown as text")
    found = ann.js("""
        const content = document.getElementById('page-content');
        return {
            pwned: window.pwned === undefined ? null : String(window.pwned),
            elements: [...content.querySelectorAll('*')].map(e => e.tagName.toLowerCase()),
            links: [...content.querySelectorAll('a')].map(a => ({text: a.textContent, href: a.getAttribute('href')})),
            text: content.textContent,
        };
    """)
    assert found["pwned"] is None, f"a script from the page ran: {found['pwned']}"
    assert set(found["elements"]) <= {"h1", "p", "a", "strong"}, f"elements made from the page: {found['elements']}"
    assert found["links"] == [{"text": "safe link", "href": "https://example.com/docs"}], found["links"]
    for literal in ('<img src="x" onerror="window.pwned = \'img\'">', "[click me](javascript:window.pwned='link')",
                    "<a href=\"javascript:window.pwned='anchor'\">an anchor</a>"):
        assert literal in found["text"], f"{literal!r} not shown as written: {found['text']!r}"
    ann.screenshot("hostile.png")
    assert ann.js("return window.pwned === undefined;"), "nothing ran later either"


def test_links_are_followed_by_name_and_a_missing_page_is_written_on_follow(server, cleanup):
    """`[[Notes]]` leads to the page Notes; `[[Roadmap]]`, a page nobody wrote, is marked
    missing and opens in the editor when followed; once published it is a page the terminal
    client follows to from the same link."""
    carol = cleanup(Terminal(CLIENT_BIN, server, email("carol")))
    carol.register()
    ann = cleanup(Page(server.origin, *LAPTOP))
    ann.open()
    ann.register(email("ann"))
    wiki = ann.create_wiki("Links")
    ann.add_member(carol.email)
    ann.open_page(wiki, "Notes")
    ann.edit("# Notes\n\nThe notes.\n")
    ann.open_page(wiki, "Home")
    ann.edit("# Home\n\nSee [[Notes]] and [[Roadmap]].\n")
    ann.until("document.querySelector('#page-content a.page-link[data-page=\"Roadmap\"].missing') && "
              "document.querySelector('#page-content a.page-link[data-page=\"Notes\"]:not(.missing)')", "the links, Roadmap missing")

    ann.click("#page-content a.page-link[data-page='Notes']")
    ann.until("document.getElementById('page').dataset.page === 'Notes' && " + ann.shows("The notes."), "Notes followed")
    ann.driver.back()
    ann.until("document.getElementById('page').dataset.page === 'Home'", "back Home")
    ann.click("#page-content a.page-link[data-page='Roadmap']")
    ann.until("document.getElementById('page').dataset.page === 'Roadmap' && !document.getElementById('editor').hidden "
              "&& document.getElementById('editor-text').value === '# Roadmap\\n'", "Roadmap opened to be written")
    ann.screenshot("editor.png")
    ann.type("#editor-text", "# Roadmap\n\nShip the web app.\n")
    ann.find("#editor-publish").click()
    ann.until(ann.shows("Ship the web app."), "Roadmap written")
    ann.until_sent()
    ann.open_page(wiki, "Home")
    ann.until("document.querySelector('#page-content a.page-link[data-page=\"Roadmap\"]:not(.missing)')", "Roadmap no longer missing")

    followed = carol.run("follow", wiki, "Home", "2")
    assert "Ship the web app." in followed, followed


def test_draft_survives_reload_and_is_hidden_until_published(server, cleanup):
    """Ann's draft of a page shows in her browser (after a reload too) and nowhere else: Bob,
    who sees a page Ann published after it, still sees the old text, as does the terminal;
    once Ann publishes, Bob sees the new text."""
    ann = cleanup(Page(server.origin, *LAPTOP))
    ann.open()
    ann.register(email("ann"))
    bob = cleanup(Page(server.origin, *LAPTOP))
    bob.open()
    bob.register(email("bob"))
    wiki = ann.create_wiki("Drafts")
    ann.add_member(bob.email)
    ann.edit("# Home\n\nThe shared text.\n")
    ann.until_sent()
    bob.open_wiki(wiki)
    bob.until(bob.shows("The shared text."), "the shared text on Bob's page")

    ann.edit("# Home\n\nAnn's draft, not shared.\n", publish=False)
    ann.until("document.getElementById('page').dataset.draft === 'true' && " + ann.shows("Ann's draft, not shared."), "the draft shown")
    ann.reload()
    ann.until("document.getElementById('page').dataset.draft === 'true' && " + ann.shows("Ann's draft, not shared."), "the draft after a reload")
    ann.screenshot("draft.png")

    # A page published after the draft was saved: once Bob has it, he would have the draft too
    # had it been sent (one partition's changes arrive in order).
    ann.open_page(wiki, "Later")
    ann.edit("# Later\n\nPublished after the draft.\n")
    ann.until_sent()
    bob.open_page(wiki, "Later")
    bob.until(bob.shows("Published after the draft."), "the later page on Bob's page")
    bob.open_page(wiki, "Home")
    bob.until(bob.shows("The shared text."), "Bob's Home")
    assert "Ann's draft" not in bob.page_text(), "Bob sees Ann's draft"
    terminal = cleanup(Terminal(CLIENT_BIN, server, bob.email))
    terminal.run("login", "--email", bob.email, "--password", "correct horse battery")
    shown = terminal.run("show", wiki, "Home")
    assert "The shared text." in shown and "Ann's draft" not in shown, shown

    ann.open_page(wiki, "Home")
    ann.click("#publish")
    ann.until("document.getElementById('page').dataset.draft === 'false'", "the draft published")
    ann.until_sent()
    bob.until(bob.shows("Ann's draft, not shared."), "the published draft on Bob's page")


def test_edit_made_offline_survives_reload_and_is_stored_once(server, cleanup):
    """An edit published while the server is stopped shows as pending, is still there (and
    pending) after a reload, and once the server is back is stored once: the terminal shows
    its line once, and an edit made after it in the terminal is not overwritten when the page
    reloads and reconnects (the acknowledged write is not sent again)."""
    ann = cleanup(Page(server.origin, *LAPTOP))
    ann.open()
    ann.register(email("ann"))
    wiki = ann.create_wiki("Offline")
    ann.edit("# Home\n\nOnline text.\n")
    ann.until_sent()
    ann.until("document.body.dataset.offline === 'ready'", "the app kept for offline use (service worker, cache)")

    server.stop()
    ann.until("document.getElementById('status').dataset.status !== 'online'", "the page offline")
    ann.edit("# Home\n\nOnline text.\n\nWritten offline.\n")
    ann.until("document.getElementById('page').dataset.pending === 'true' && " + ann.shows("Written offline."), "the edit shown, pending")
    ann.until("document.getElementById('outbox').dataset.count === '1'", "one write waiting")
    ann.screenshot("pending.png")

    ann.reload()
    ann.until("document.getElementById('page').dataset.pending === 'true' && " + ann.shows("Written offline."), "the edit pending after a reload")

    server.start()
    ann.until("document.getElementById('page').dataset.pending === 'false'", "the edit acknowledged")
    ann.until_sent()
    terminal = cleanup(Terminal(CLIENT_BIN, server, ann.email))
    terminal.run("login", "--email", ann.email, "--password", "correct horse battery")
    shown = terminal.run("show", wiki, "Home")
    assert shown.count("Written offline.") == 1, shown

    terminal.write_page(wiki, "Home", "# Home\n\nReplaced in the terminal.\n")
    ann.until(ann.shows("Replaced in the terminal."), "the terminal's edit live")
    ann.reload()
    ann.until_sent()
    ann.until(ann.shows("Replaced in the terminal."), "the terminal's edit after a reload")
    shown = terminal.run("show", wiki, "Home")
    assert "Replaced in the terminal." in shown and "Written offline." not in shown, shown


def test_email_verified_in_the_page(server, cleanup):
    """A server with a mail server verifies emails: after registering, the page asks for the
    code mailed (through a real SMTP server); a wrong code is answered with its code; the
    right one hides the form, and the wiki Carol gave the address reaches the page."""
    sink = cleanup(MailSink())
    verifying = cleanup(Server(SERVER_BIN, env={"PSYNC_SMTP_URL": sink.url, "PSYNC_MAIL_FROM": "touchwiki@example.com"}))
    verifying.start()
    dana = cleanup(Page(verifying.origin, *LAPTOP))
    dana.open()
    dana_email = email("dana")
    carol = cleanup(Terminal(CLIENT_BIN, verifying, email("carol")))
    carol.register()
    carol.run("verify", sink.code_for(carol.email))
    wiki = carol.create("Verified only")
    carol.run("add-member", wiki, dana_email)

    dana.register(dana_email)
    dana.until("!document.getElementById('verify').hidden", "the code form")
    dana.screenshot("verify.png")
    code = sink.code_for(dana.email)
    dana.type("#verify-code", "AAAA-AAAA" if code != "AAAA-AAAA" else "BBBB-BBBB")
    dana.find("#verify-submit").click()
    dana.until("document.getElementById('notice').dataset.code === 'invalid_code'", "the wrong code refused with its code")
    assert not dana.js(f"return document.querySelector('#wikis li[data-wiki-id=\"{wiki}\"]');"), "the wiki before verifying"
    dana.type("#verify-code", code.lower())
    dana.find("#verify-submit").click()
    dana.until("document.getElementById('verify').hidden", "the code form gone")
    dana.open_wiki(wiki)


TESTS = [
    test_two_browsers_and_a_terminal_edit_one_page,
    test_hostile_markdown_renders_as_text,
    test_links_are_followed_by_name_and_a_missing_page_is_written_on_follow,
    test_draft_survives_reload_and_is_hidden_until_published,
    test_edit_made_offline_survives_reload_and_is_stored_once,
    test_email_verified_in_the_page,
]


class Cleanup:
    """What a test made (pages, terminal homes, servers), undone after it."""

    def __init__(self):
        self.things = []

    def __call__(self, thing):
        self.things.append(thing)
        return thing

    def run(self):
        for thing in reversed(self.things):
            try:
                thing.quit() if isinstance(thing, Page) else thing.cleanup()
            except Exception:
                pass

    def pages(self):
        return [t for t in self.things if isinstance(t, Page)]


def main():
    only = sys.argv[1] if len(sys.argv) > 1 else None
    for binary in (SERVER_BIN, CLIENT_BIN):
        if not os.access(binary, os.X_OK):
            print(f"no executable at {binary} (set TOUCHWIKI_SERVER_BIN and TOUCHWIKI_BIN, or run scripts/test-web.sh)")
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
