#!/usr/bin/env python3
"""Counts the Swift Testing tests (`@Test` functions) of the package and its examples, and how
many of them run without PostgreSQL, per test module.

A test counts as needing PostgreSQL when its body uses what starts one (a test database or
server, a server process, the embedded cluster, a client harness that starts a server) or calls
a function of its own file that does. It reads the sources as text: a parameterized test counts
once, and a helper of another file is seen only through the names above.

    python3 scripts/count-tests.py        # per module, then the total
    python3 scripts/count-tests.py -v     # and every test, DB or MEM
"""
import collections
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STARTS_POSTGRES = re.compile(
    r"TestDatabase|TestServer|TestPostgres|ServerProcess|PostgresClient|ObjectStore\(|EmbeddedPostgres|BuiltExecutable"
    r"|ClientHarness|TriggerHarness\.(service|running)|withServer|withDatabase|startServer|\bpsync\(|[A-Za-z]+Harness\.with\b"
)
CHUNK_START = re.compile(
    r"\n(?=\s*(?:@Test|(?:(?:static|private|fileprivate|package|public|mutating|nonisolated|override)\s+)*func\s))"
)


def chunks(text):
    """The file cut into functions, each `@Test` attribute kept with the function it marks."""
    merged = []
    for part in CHUNK_START.split(text):
        if merged and re.match(r"\s*@Test", merged[-1]) and not re.search(r"func\s", merged[-1]):
            merged[-1] += "\n" + part
        else:
            merged.append(part)
    return merged


def main():
    files = sorted(
        glob.glob(ROOT + "/Tests/**/*.swift", recursive=True)
        + glob.glob(ROOT + "/Examples/*/Tests/**/*.swift", recursive=True)
    )
    tests = []  # (module, file, name, needs PostgreSQL)
    for path in files:
        relative = os.path.relpath(path, ROOT)
        module = relative.split("/")[1]
        parts = chunks(open(path, encoding="utf-8").read())
        helpers = {}
        for part in parts:
            name = re.search(r"func\s+([A-Za-z_][A-Za-z0-9_]*)", part)
            if name and not re.match(r"\s*@Test", part):
                helpers.setdefault(name.group(1), []).append(part)
        # The file's own functions that start PostgreSQL, directly or through one another.
        starting = set()
        changed = True
        while changed:
            changed = False
            for name, bodies in helpers.items():
                if name not in starting and any(
                    STARTS_POSTGRES.search(body) or any(re.search(r"\b" + re.escape(other) + r"\(", body) for other in starting)
                    for body in bodies
                ):
                    starting.add(name)
                    changed = True
        for part in parts:
            if not re.match(r"\s*@Test", part):
                continue
            name = re.search(r"func\s+([A-Za-z_][A-Za-z0-9_]*)", part)
            needs = bool(STARTS_POSTGRES.search(part)) or any(re.search(r"\b" + re.escape(h) + r"\(", part) for h in starting)
            tests.append((module, relative, name.group(1) if name else "?", needs))
    per_module = collections.Counter(t[0] for t in tests)
    without = collections.Counter(t[0] for t in tests if not t[3])
    for module in sorted(per_module):
        print(f"{module:28} {per_module[module]:4} tests, {without[module]:4} without PostgreSQL")
    total, pure = len(tests), sum(without.values())
    print(f"total {total}, without PostgreSQL {pure} ({pure / total:.0%})")
    if "-v" in sys.argv:
        for module, relative, name, needs in tests:
            print("DB " if needs else "MEM", relative, name)


if __name__ == "__main__":
    main()
