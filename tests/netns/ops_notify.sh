#!/usr/bin/env bash
# drivers: one
# systemd notification and logging (docs/operations.md). A stand-in for the
# service manager (tests/lib/notify_listen.py) listens on NOTIFY_SOCKET:
# yipd sends READY=1 with MAINPID and a STATUS line, and at that moment
# `yipctl show` already answers; STATUS follows the peers ("1/1 peers up, 1
# direct" once a ping went across); WATCHDOG=1 comes at twice the rate
# WATCHDOG_USEC asks; SIGHUP gives RELOADING=1 then READY=1; SIGTERM gives
# STOPPING=1. Logging: with JOURNAL_STREAM naming its stderr every line
# starts with a syslog priority and has no timestamp; log_format=json makes
# every line a JSON object; `yipctl log` shows and sets the level at run
# time. yip-rendezvous: READY (on an abstract socket), STATUS, STOPPING,
# --log-format json.
. "$(dirname "$0")/lib.sh"

LISTEN=$ROOT/tests/lib/notify_listen.py
RDV=${RDV:-$(dirname "$YIPD")/yip-rendezvous}
[ -x "$RDV" ] || fail "$RDV not built"
N=$TMP/notify.out

# msgs [SINCE]: the datagrams received (after unix time SINCE).
msgs() { awk -v t="${1:-0}" '$1 > t' "$N"; }
count() { msgs "${2:-0}" | grep -c -- "$1" || true; }

two_peers
start_yipd b

log "yipd with NOTIFY_SOCKET (a path) and WATCHDOG_USEC=1s"
python3 "$LISTEN" "$TMP/notify.sock" "$N" env "YIP_CTL_DIR=$TMP/ctl-a" "$YIPCTL" show &
PIDS+=($!)
poll 3 '[ -S "$TMP/notify.sock" ] && grep -q LISTENING "$N"' || fail "listener did not start"
start_yipd a NOTIFY_SOCKET="$TMP/notify.sock" WATCHDOG_USEC=1000000
poll 3 'grep -q "CMD-RC=" "$N"' || fail "no READY=1 (got: $(cat "$N"))"
sed 's/^/    /' "$N"
grep -q "CMD-RC=0" "$N" || fail "yipctl show did not answer when READY=1 came: $(grep CMD-RC "$N")"
ready=$(grep -m1 "READY=1" "$N")
grep -q "MAINPID=[0-9]" <<<"$ready" || fail "READY without MAINPID: $ready"
grep -Eq "STATUS=[0-9]+/1 peers up, [0-9]+ direct" <<<"$ready" || fail "READY without a STATUS: $ready"
# MAINPID is yipd's own pid (ip netns exec execs it).
mainpid=$(sed -n 's/.*MAINPID=\([0-9]*\).*/\1/p' <<<"$ready")
[ "$(cat /proc/"$mainpid"/comm 2>/dev/null)" = yipd ] || fail "MAINPID $mainpid is not yipd"

log "STATUS follows the peers"
ping_ok a 10.77.0.2 3 -i 0.2 >/dev/null
poll 4 'grep -q "STATUS=1/1 peers up, 1 direct" "$N"' || fail "no STATUS 1/1 up, 1 direct: $(grep STATUS "$N")"

log "WATCHDOG=1 at about 2/s"
t0=$EPOCHREALTIME
sleep 3
t1=$EPOCHREALTIME
wd=$(awk -v a="$t0" -v b="$t1" '$1 > a && $1 <= b && /WATCHDOG=1/' "$N" | wc -l)
log "  $wd WATCHDOG=1 in 3 s"
[ "$wd" -ge 3 ] && [ "$wd" -le 12 ] || fail "$wd watchdog pings in 3 s (want 3 to 12)"

log "SIGHUP: RELOADING=1, then READY=1"
t0=$EPOCHREALTIME
kill -HUP "$(pid_of a)"
poll 3 'msgs $t0 | grep -q "READY=1"' || fail "no READY=1 after SIGHUP: $(msgs "$t0")"
msgs "$t0" | grep -v WATCHDOG | sed 's/^/    /'
first=$(msgs "$t0" | grep -v WATCHDOG | head -n 1)
grep -q "RELOADING=1|MONOTONIC_USEC=[0-9]" <<<"$first" || fail "RELOADING=1 did not come first: $first"
yipctl_of a show >/dev/null || fail "yipctl show failed after the reload"

log "yipctl log: shows and sets the level"
[ "$(yipctl_of a log)" = "log level: debug" ] || fail "yipctl log: $(yipctl_of a log)"
[ "$(yipctl_of a log info)" = "log level: info" ] || fail "yipctl log info failed"
[ "$(yipctl_of a log --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["log_level"])')" = info ] ||
	fail "yipctl log --json"
if yipctl_of a log loud 2>/dev/null; then fail "yipctl log loud was accepted"; fi
# Debug lines: SIGUSR1's status is info; a rekey (forced by a handshake from
# b's restart) logs at debug. Simplest real debug source: b restarts and
# handshakes again, which a logs at debug ("answered handshake").
lines_info=$(wc -l <"$TMP/a.log")
kill "$(pid_of b)"; wait "$(pid_of b)" 2>/dev/null || true
start_yipd b
ping_ok b 10.77.0.1 2 -i 0.2 >/dev/null
tail -n +$((lines_info + 1)) "$TMP/a.log" | grep -q " debug " && fail "debug lines at level info"
yipctl_of a log debug >/dev/null || fail "yipctl log debug failed"
lines_dbg=$(wc -l <"$TMP/a.log")
kill "$(pid_of b)"; wait "$(pid_of b)" 2>/dev/null || true
start_yipd b
ping_ok b 10.77.0.1 2 -i 0.2 >/dev/null
poll 3 'tail -n +$((lines_dbg + 1)) "$TMP/a.log" | grep -q " debug "' ||
	fail "no debug line after yipctl log debug"

log "SIGTERM: STOPPING=1"
t0=$EPOCHREALTIME
kill "$(pid_of a)"; wait "$(pid_of a)" 2>/dev/null || true
msgs "$t0" | grep -q "STOPPING=1" || fail "no STOPPING=1: $(msgs "$t0")"

log "journald: JOURNAL_STREAM = stderr's dev:inode"
: >"$TMP/a.log"
start_yipd a JOURNAL_STREAM="$(stat -c %d:%i "$TMP/a.log")"
ping_ok a 10.77.0.2 2 -i 0.2 >/dev/null
kill "$(pid_of a)"; wait "$(pid_of a)" 2>/dev/null || true
sed -n 1,3p "$TMP/a.log" | sed 's/^/    /'
grep -q '^<6>yipd .*device yip0 up' "$TMP/a.log" || fail "no <6> start line"
grep -q '^<7>' "$TMP/a.log" || fail "no <7> debug line"
bad=$(grep -v '^<[3467]>' "$TMP/a.log" | head -n 3 || true)
[ -z "$bad" ] || fail "lines without a priority prefix: $bad"
grep -Eq '^<[0-9]>[0-9]{4}-[0-9]{2}-' "$TMP/a.log" && fail "a timestamp under journald"
log "  a JOURNAL_STREAM naming another file: today's shape"
: >"$TMP/a.log"
start_yipd a JOURNAL_STREAM="$(stat -c %d:%i "$TMP/b.conf")"
kill "$(pid_of a)"; wait "$(pid_of a)" 2>/dev/null || true
grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z info  yipd ' "$TMP/a.log" || fail "not the text shape: $(head -n 2 "$TMP/a.log")"
grep -q '^<' "$TMP/a.log" && fail "priority prefixes for a stream that is not stderr"

log "log_format=json: every line a JSON object"
sed -i "1i log_format=json" "$TMP/a.conf"
: >"$TMP/a.log"
start_yipd a
ping_ok a 10.77.0.2 2 -i 0.2 >/dev/null
kill "$(pid_of a)"; wait "$(pid_of a)" 2>/dev/null || true
python3 - "$TMP/a.log" <<'PY' || fail "log_format=json: $(head -n 3 "$TMP/a.log")"
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
assert len(lines) >= 3, lines
for l in lines:
    o = json.loads(l)
    assert set(o) == {"ts", "level", "msg"}, o
    assert o["level"] in ("error", "warn", "info", "debug"), o
assert any(json.loads(l)["msg"].startswith("yipd ") for l in lines)
print("    %d lines, all JSON" % len(lines))
PY

log "yip-rendezvous: READY on an abstract socket, STATUS, STOPPING, --log-format json"
(umask 077 && "$RDV" --genkey >"$TMP/rdv.key")
NR=$TMP/notify-rdv.out
ip netns exec "$(ns b)" python3 "$LISTEN" "@yip-notify-$NSP" "$NR" &
PIDS+=($!)
poll 3 'grep -q LISTENING "$NR" 2>/dev/null' || fail "abstract listener did not start"
env YIP_CTL_DIR="$TMP/ctl-rdv" NOTIFY_SOCKET="@yip-notify-$NSP" WATCHDOG_USEC=1000000 \
	ip netns exec "$(ns b)" "$RDV" --listen 198.18.0.2:3478 --key "$TMP/rdv.key" --log-format json \
	>"$TMP/rdv.log" 2>&1 &
rpid=$!
PIDS+=($rpid)
poll 3 'grep -q "READY=1" "$NR"' || fail "yip-rendezvous: no READY=1: $(cat "$NR")"
grep -m1 READY=1 "$NR" | grep -q "STATUS=0 nodes registered, 0 relaying" ||
	fail "yip-rendezvous READY without STATUS: $(grep READY "$NR")"
env YIP_CTL_DIR="$TMP/ctl-rdv" "$RDV" status --summary >/dev/null || fail "yip-rendezvous status failed"
poll 3 '[ "$(grep -c WATCHDOG=1 "$NR")" -ge 2 ]' || fail "yip-rendezvous: no WATCHDOG=1"
kill "$rpid"; wait "$rpid" 2>/dev/null || true
grep -q "STOPPING=1" "$NR" || fail "yip-rendezvous: no STOPPING=1"
sed 's/^/    /' "$NR" | grep -v WATCHDOG
python3 -c '
import json, sys
ls = open(sys.argv[1]).read().splitlines()
assert ls and all(json.loads(l)["msg"] is not None for l in ls)' "$TMP/rdv.log" ||
	fail "yip-rendezvous --log-format json: $(head -n 3 "$TMP/rdv.log")"
log "ok"
