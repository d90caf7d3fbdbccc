#!/usr/bin/env python3
"""An SMTP server on loopback that keeps every mail it receives, for tests and for trying
email verification by hand (docs/SECURITY.md, "Identity"):

    python3 scripts/smtp-sink.py DIR [--port N] [--user U --password P]
    psync serve --smtp-url smtp://127.0.0.1:N

Each mail is written to DIR/<n>.json ({"from", "to", "data"}), through a temporary file and a
rename, so a reader never sees half of one. Prints `listening <port>` once it accepts
connections. With --user and --password it requires AUTH (PLAIN or LOGIN) with them. With
--tls-cert and --tls-key it requires STARTTLS, or with --implicit-tls speaks TLS from the start.
Needs aiosmtpd (scripts/install-test-tools.sh)."""

import argparse
import json
import os
import signal
import socket
import ssl
import sys
import threading

import warnings

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


class Keeper:
    def __init__(self, directory):
        self.directory = directory
        self.count = 0
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            self.count += 1
            number = self.count
        record = {
            "from": envelope.mail_from,
            "to": envelope.rcpt_tos,
            "data": envelope.content.decode("utf-8", "replace"),
        }
        final = os.path.join(self.directory, "%04d.json" % number)
        with open(final + ".tmp", "w", encoding="utf-8") as out:
            json.dump(record, out)
        os.rename(final + ".tmp", final)
        return "250 OK kept"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--user")
    parser.add_argument("--password")
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--implicit-tls", action="store_true")
    arguments = parser.parse_args()
    os.makedirs(arguments.directory, exist_ok=True)
    port = arguments.port or free_port()
    options = {}
    if arguments.user is not None:
        expected = (arguments.user.encode(), (arguments.password or "").encode())

        def authenticate(server, session, envelope, mechanism, data):
            if isinstance(data, LoginPassword) and (data.login, data.password) == expected:
                return AuthResult(success=True)
            return AuthResult(success=False, handled=False)

        options = {"authenticator": authenticate, "auth_required": True, "auth_require_tls": False}
    warnings.simplefilter("ignore")  # AUTH without TLS: a loopback test sink
    extra = {}
    if arguments.tls_cert:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(arguments.tls_cert, arguments.tls_key)
        if arguments.implicit_tls:
            extra["ssl_context"] = context
        else:
            options.update({"tls_context": context, "require_starttls": True})
    controller = Controller(Keeper(arguments.directory), hostname="127.0.0.1", port=port, server_kwargs=options, **extra)
    controller.start()
    print("listening %d" % port, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    # Also stop when the test that started us goes away: its end of stdin closes, or (when
    # other children inherited that end) we are handed to another parent.
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    parent = os.getppid()
    while not stop.wait(0.5):
        if os.getppid() != parent:
            break
    controller.stop()


if __name__ == "__main__":
    main()
