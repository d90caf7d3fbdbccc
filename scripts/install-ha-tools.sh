#!/usr/bin/env bash
# Installs what the high-availability harness (scripts/ha/) runs, idempotently and pinned:
#   - from Debian 12: etcd (server and etcdctl) and HAProxy, pinned to their upstream release
#     (any Debian revision of it, so a security update does not break the pin), and
#     python3-venv; PostgreSQL 15's server binaries if they are missing (README.md);
#   - from PyPI, in a virtual environment at .build-ha-venv/ made with Debian's python3 (the
#     postgres user runs Patroni from it, and cannot reach a Python under /root): Patroni
#     with its etcd3 support, psycopg2, and httpx and websockets for the failover probe, every
#     package pinned in scripts/ha/requirements.txt.
# Patroni comes from PyPI, not Debian: Debian 12's patroni 3.0.2 lets a primary whose Patroni
# stalled longer than the leader TTL write its leader key over the new primary's, which then
# demotes and rewinds away its acknowledged writes (docs/ha-findings.md, "Harness").
# Then: scripts/ha/check-cluster.sh, or scripts/ha/cluster.py start DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

ETCD_VERSION='3.4.23-4*'
HAPROXY_VERSION='2.6.12-1*'
venv=.build-ha-venv

# installed version of a Debian package, or nothing
installed() { dpkg-query -W -f='${db:Status-Status} ${Version}\n' "$1" 2>/dev/null | awk '$1 == "installed" { print $2 }'; }
# whether the installed version matches a pin like '3.4.23-4*'
matches() { local v; v=$(installed "$1"); [ -n "$v" ] && [[ "$v" == $2 ]]; }

wanted=()
matches etcd-server "$ETCD_VERSION" || wanted+=("etcd-server=$ETCD_VERSION")
matches etcd-client "$ETCD_VERSION" || wanted+=("etcd-client=$ETCD_VERSION")
matches haproxy "$HAPROXY_VERSION" || wanted+=("haproxy=$HAPROXY_VERSION")
[ -n "$(installed python3-venv)" ] || wanted+=(python3-venv)
[ -x /usr/lib/postgresql/15/bin/postgres ] || wanted+=(postgresql-15)
if [ ${#wanted[@]} -gt 0 ]; then
    sudo_=(); [ "$(id -u)" -eq 0 ] || sudo_=(sudo)
    "${sudo_[@]}" apt-get update -qq
    # Debian's packages would start etcd and HAProxy as system services on ports the harness
    # uses; a policy-rc.d that refuses (unless the machine has one) keeps them stopped.
    policy=/usr/sbin/policy-rc.d made_policy=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | "${sudo_[@]}" tee "$policy" >/dev/null
        "${sudo_[@]}" chmod 755 "$policy"; made_policy=1
    fi
    status=0
    DEBIAN_FRONTEND=noninteractive "${sudo_[@]}" apt-get install -y -q --no-install-recommends "${wanted[@]}" || status=$?
    if [ "$made_policy" -eq 1 ]; then "${sudo_[@]}" rm -f "$policy"; fi
    [ "$status" -eq 0 ] || exit "$status"
fi

if [ ! -x "$venv/bin/python" ]; then /usr/bin/python3 -m venv "$venv"; fi
if ! "$venv/bin/pip" freeze --disable-pip-version-check 2>/dev/null | sort | cmp -s - <(grep -v '^#' scripts/ha/requirements.txt | sed 's/\[etcd3\]//' | sort); then
    "$venv/bin/pip" install -q --disable-pip-version-check -r scripts/ha/requirements.txt
fi

echo "etcd $(installed etcd-server), haproxy $(installed haproxy), $("$venv/bin/patroni" --version), psql $(/usr/lib/postgresql/15/bin/postgres --version | awk '{print $3}')"
