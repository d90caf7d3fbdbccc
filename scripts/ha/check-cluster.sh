#!/usr/bin/env bash
# scripts/ha/check-cluster.sh [--sync] [--base-port N] [--keep]: a smoke check of the HA harness.
# Starts a three-node cluster (scripts/ha/cluster.py) in a temporary folder, writes through
# HAProxy with psql as the role `psync` while a writer (writer.py) inserts a row every 0.05 s, then
# does a switchover and a SIGKILL of the primary's postmaster; after each it checks that a new
# primary is elected, that writes through HAProxy succeed again and that the cluster becomes
# whole (the old primary streaming from the new one). Prints, per fault, the seconds without a
# primary (the longest gap between two acknowledged writes) and the seconds until writes were
# acknowledged again; at the end, the acknowledged writes missing from the new primary. That
# must be none with --sync (Patroni's synchronous_mode); without it a lost tail is reported.
# Stops the cluster, also on failure, and removes the folder (kept on failure or with --keep,
# for its logs and writes.log).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
sync_flag=() base_port=${PSYNC_HA_BASE_PORT:-25400} keep=0
while [ $# -gt 0 ]; do
    case $1 in
        --sync) sync_flag=(--sync); shift ;;
        --base-port) base_port=$2; shift 2 ;;
        --keep) keep=1; shift ;;
        *) echo "usage: $0 [--sync] [--base-port N] [--keep]" >&2; exit 2 ;;
    esac
done

bash "$root/scripts/install-ha-tools.sh" >/dev/null
cluster() { python3 "$here/cluster.py" "$@"; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

dir=$(mktemp -d /tmp/psync-ha-check-XXXXXX)
writer_pid= ok=0
cleanup() {
    [ -n "$writer_pid" ] && { touch "$dir/stop-writer"; wait "$writer_pid" 2>/dev/null || true; }
    cluster stop "$dir" 2>/dev/null || true
    if [ "$ok" -eq 1 ] && [ "$keep" -eq 0 ]; then rm -rf "$dir"; elif [ "$ok" -eq 1 ]; then echo "kept $dir"; else echo "check-cluster: FAILED; logs kept in $dir/logs" >&2; fi
}
trap cleanup EXIT

echo "== starting a 3-node cluster in $dir (base port $base_port${sync_flag:+, synchronous mode})"
started=$(now)
cluster start "$dir" --base-port "$base_port" "${sync_flag[@]}" >"$dir/start.json"
url=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["database_url"])' "$dir/cluster.json")
echo "cluster up in $(elapsed "$started" "$(now)") s; primary $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["primary"])' "$dir/start.json")"

export PGCONNECT_TIMEOUT=2 PGOPTIONS='-c statement_timeout=3000'
q() { psql "$url" -X -At -q -v ON_ERROR_STOP=1 -c "$1"; }
q "CREATE TABLE smoke (id integer PRIMARY KEY, node integer NOT NULL, at timestamptz NOT NULL DEFAULT now())" >/dev/null
[ "$(q "INSERT INTO smoke (id, node) VALUES (0, inet_server_port()) RETURNING id")" = 0 ] || { echo "first write failed" >&2; exit 1; }
echo "a write through HAProxy (port $((base_port + 2))) as psync: ok"

# The writer: one INSERT every 0.05 s through HAProxy on one connection (reconnecting after an
# error), each attempt logged with its time, outcome and the port of the server that took it.
"$root/.build-ha-venv/bin/python" "$here/writer.py" --url "$url" --log "$dir/writes.log" --stop-file "$dir/stop-writer" &
writer_pid=$!

# waits (at most 60 s) for the writer to log a write acknowledged after time $1 by a server
# other than port $2; prints its time
acked_after() {
    local since=$1 old_port=${2:-0} deadline t
    deadline=$(( $(date +%s) + 60 ))
    while :; do
        t=$(awk -v s="$since" -v p="$old_port" '$2 == "ok" && $1 > s && $4 != p { print $1; exit }' "$dir/writes.log" 2>/dev/null || true)
        [ -n "$t" ] && { echo "$t"; return 0; }
        [ "$(date +%s)" -lt "$deadline" ] || { echo "no write acknowledged by a new primary within 60 s" >&2; return 1; }
        kill -0 "$writer_pid" || { echo "the writer died" >&2; return 1; }
        sleep 0.1
    done
}
# the longest gap between two acknowledged writes from $1 - 1 s to $2
longest_gap() {
    awk -v a="$1" -v b="$2" '$2 == "ok" && $1 >= a - 1 && $1 <= b { if (p) { g = $1 - p; if (g > m) m = g } p = $1 } END { printf "%.2f", m }' "$dir/writes.log"
}
port_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["nodes"][sys.argv[2]]["pg_port"])' "$dir/cluster.json" "$1"; }

acked_after "$(now)" >/dev/null
summary=()

fault() {  # fault NAME COMMAND...: runs a fault, then checks and times the recovery
    local name=$1; shift
    local old new t0 t_ack t_whole
    old=$(cluster status "$dir" | python3 -c 'import json,sys; print(json.load(sys.stdin)["primary"])')
    t0=$(now)
    "$@" >"$dir/$name.json"
    new=$(cluster wait-primary "$dir" --other-than "$old" --timeout 60 | python3 -c 'import json,sys; print(json.load(sys.stdin)["primary"])')
    t_ack=$(acked_after "$t0" "$(port_of "$old")")
    cluster wait-healthy "$dir" --timeout 120 >/dev/null
    t_whole=$(now)
    local line
    line="$name: $old -> $new; $(longest_gap "$t0" "$t_ack") s without a primary (longest gap between acknowledged writes); the new primary acknowledged its first write $(elapsed "$t0" "$t_ack") s after the fault began; the cluster was whole again (old primary streaming) after $(elapsed "$t0" "$t_whole") s"
    echo "$line"
    summary+=("$line")
}

echo "== switchover"
fault switchover cluster switchover "$dir"
echo "== SIGKILL of the primary's postmaster"
fault kill-primary cluster kill-primary "$dir"

touch "$dir/stop-writer"; wait "$writer_pid"; writer_pid=
acked=$(awk '$2 == "ok" { n++ } END { print n + 0 }' "$dir/writes.log")
failed=$(awk '$2 == "fail" { n++ } END { print n + 0 }' "$dir/writes.log")
awk '$2 == "ok" { print $3 }' "$dir/writes.log" | sort -n >"$dir/acked.txt"
q "SELECT id FROM smoke WHERE id > 0 ORDER BY id" | sort -n >"$dir/stored.txt"
lost=$(comm -23 "$dir/acked.txt" "$dir/stored.txt" | wc -l)
[ "$(q "SELECT 1")" = 1 ] || { echo "the last write failed" >&2; exit 1; }
echo "== writer: $acked writes acknowledged, $failed refused or failed, $lost acknowledged writes missing after the faults"
if [ "$lost" -ne 0 ]; then
    if [ ${#sync_flag[@]} -gt 0 ]; then
        echo "acknowledged writes lost in synchronous mode: $(comm -23 "$dir/acked.txt" "$dir/stored.txt" | tr '\n' ' ')" >&2
        exit 1
    fi
    echo "(asynchronous replication: the lost tail was $(comm -23 "$dir/acked.txt" "$dir/stored.txt" | tr '\n' ' '))"
fi
echo "== timings"
printf '%s\n' "${summary[@]}"
ok=1
echo "check-cluster: ok"
