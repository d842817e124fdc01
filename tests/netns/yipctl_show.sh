#!/usr/bin/env bash
# The control socket and yipctl: two daemons, each with its own socket
# directory under $TMP (so parallel runs never collide). After a ping across,
# `yipctl show` lists the peer with a recent handshake, the JSON parses and
# its counters grow with more traffic; peers, stats and show <peer> work; a
# silent client or a garbage request cannot stall the daemon; a socket left
# by a killed daemon is replaced. A clean exit removes the socket where the
# daemon's user (after the sandbox's drop to nobody) owns the directory;
# where root does, the socket stays, refusing connections, for the next
# start to replace; a directory others could write to is refused. SIGUSR1
# and shutdown log the same text as yipctl show and stats, with or without a
# control socket.
. "$(dirname "$0")/lib.sh"

YIPCTL=${YIPCTL:-$(dirname "$YIPD")/yipctl}
[ -x "$YIPCTL" ] || fail "$YIPCTL not built"

CTL_A=$TMP/ctl-a
CTL_B=$TMP/ctl-b
ctl_a() { in_ns a env YIP_CTL_DIR="$CTL_A" "$YIPCTL" "$@"; }
ctl_b() { in_ns b env YIP_CTL_DIR="$CTL_B" "$YIPCTL" "$@"; }

two_peers
start_yipd a YIP_CTL_DIR="$CTL_A"
start_yipd b YIP_CTL_DIR="$CTL_B"

log "control socket: mode 0600 in a 0700 directory"
[ -S "$CTL_A/yip0.sock" ] || fail "no socket $CTL_A/yip0.sock"
[ "$(stat -c %a "$CTL_A")" = 700 ] || fail "$CTL_A has mode $(stat -c %a "$CTL_A")"
[ "$(stat -c %a "$CTL_A/yip0.sock")" = 600 ] || fail "socket has mode $(stat -c %a "$CTL_A/yip0.sock")"

log "ping across, then yipctl show"
ping_ok a 10.77.0.2 5 -i 0.1 >/dev/null
sleep 1
out=$(ctl_a show) || fail "yipctl show failed"
echo "$out" | sed 's/^/    /'
grep -q "^interface: yip0" <<<"$out" || fail "no interface line"
grep -q "^  public key: $(pub_of a)" <<<"$out" || fail "wrong public key"
grep -q "^  listening port: 51820" <<<"$out" || fail "no listening port"
grep -q "^peer: $(pub_of b)" <<<"$out" || fail "peer b not listed"
grep -q "^  endpoint: 198.18.0.2:51820" <<<"$out" || fail "no endpoint"
grep -q "^  allowed ips: 10.77.0.2/32" <<<"$out" || fail "no allowed ips"
echo "$out" | grep -Eq "^  latest handshake: ([0-9]+ seconds?, )*[0-9]+ seconds? ago" ||
	fail "no recent handshake"
grep -q "^  transfer: .* received, .* sent" <<<"$out" || fail "no transfer line"
# The path was taken at start, a few seconds ago (not at the clock's zero).
echo "$out" | grep -Eq "^  path: direct 198.18.0.2:51820 \(for [0-9]+ seconds?\)" ||
	fail "the path's age is not a few seconds"

# snapshot FILE: yipctl show --json into FILE, checked to parse.
snapshot() {
	ctl_a show --json >"$1" || fail "yipctl show --json failed"
	python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$1" ||
		fail "yipctl show --json is not JSON: $(head -c 300 "$1")"
}

log "JSON: fields and values"
snapshot "$TMP/s1.json"
python3 - "$TMP/s1.json" "$(pub_of a)" "$(pub_of b)" "$(addr_of a)" "$(addr_of b)" <<'PY' ||
import json, sys, time
d = json.load(open(sys.argv[1]))
pa, pb, aa, ab = sys.argv[2:6]
def check(cond, what):
    if not cond:
        sys.exit("bad JSON: " + what + ": " + json.dumps(d)[:400])
check(d["device"] == "yip0", "device")
check(d["public_key"] == pa, "public_key")
check(d["listen_port"] == 51820, "listen_port")
check(d["address"] == aa, "address")
check(d["fec"] is True, "fec")
check(isinstance(d["drops"], dict) and "malformed" in d["drops"], "drops")
check(len(d["peers"]) == 1, "one peer")
p = d["peers"][0]
check(p["public_key"] == pb, "peer public_key")
check(p["endpoint"] == "198.18.0.2:51820", "endpoint")
check(p["allowed_ips"] == ["10.77.0.2/32"], "allowed_ips")
check(p["address"] == ab, "peer address")
check(p["established"] is True, "established")
check(0 < time.time() - p["latest_handshake"] < 60, "latest_handshake")
check(p["cipher"] in ("aes-256-gcm", "chacha20-poly1305"), "cipher")
check(p["rtt_ms"] is None or p["rtt_ms"] >= 0, "rtt_ms")
check(p["rx_packets"] >= 5 and p["tx_packets"] >= 5, "packet counters")
for k in ("rx_bytes", "tx_bytes", "lost", "fec_recovered", "fec_unrecovered",
          "arq_recovered", "arq_sent", "repair_bytes", "wire_bytes"):
    check(isinstance(p[k], int) and p[k] >= 0, k)
check(0 <= p["loss_estimate"] <= 1, "loss_estimate")
for c in ("default", "interactive", "bulk"):
    check(isinstance(p["fec"][c]["k"], int) and isinstance(p["fec"][c]["r"], int), "fec " + c)
PY
	fail "JSON fields"

log "counters grow with more pings"
ping_ok a 10.77.0.2 10 -i 0.05 >/dev/null
snapshot "$TMP/s2.json"
python3 - "$TMP/s1.json" "$TMP/s2.json" <<'PY' || fail "counters did not grow"
import json, sys
a = json.load(open(sys.argv[1]))["peers"][0]
b = json.load(open(sys.argv[2]))["peers"][0]
for k in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets"):
    if not b[k] > a[k]:
        sys.exit(f"{k}: {a[k]} -> {b[k]}")
    print(f"    {k}: {a[k]} -> {b[k]}")
PY

log "peers, stats, show <peer>, errors"
grep -q "^$(pub_of b)	198.18.0.2:51820	10.77.0.2/32	" <<<"$(ctl_a peers)" || fail "yipctl peers"
ctl_a stats | grep -Eq "^    malformed: +[0-9]+$" || fail "yipctl stats"
grep -q "^peer: $(pub_of a)" <<<"$(ctl_b show yip0 "$(pub_of a)")" || fail "yipctl show yip0 <peer> on b"
rc=0
err=$(ctl_a show yip0 "$(pub_of a)" 2>&1) || rc=$?
[ "$rc" -eq 1 ] && grep -q "no such peer" <<<"$err" || fail "unknown peer: rc $rc, '$err'"
rc=0
err=$(ctl_a show nosuchdev 2>&1) || rc=$?
[ "$rc" -eq 1 ] && grep -q "$CTL_A/nosuchdev.sock" <<<"$err" ||
	fail "missing daemon: rc $rc, '$err'"
rc=0
ctl_a frobnicate >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "usage error gave rc $rc"

log "hostile clients: silent, busy, garbage, oversized; the daemon keeps serving"
python3 - "$CTL_A/yip0.sock" <<'PY' || fail "hostile clients"
import json, socket, sys, time
path = sys.argv[1]
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    return s
def reply(s):
    out = b""
    while True:
        try:
            d = s.recv(65536)
        except ConnectionResetError:
            break
        if not d:
            break
        out += d
    return json.loads(out)
def ask(data):
    s = conn()
    s.sendall(data)
    try:
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    return reply(s)
silent = conn()                 # takes the one slot and sends nothing
time.sleep(0.2)
t0 = time.monotonic()
r = reply(conn())               # turned away at once
assert "busy" in r.get("error", ""), r
r = reply(silent)               # dropped after the 1 s request timeout
dt = time.monotonic() - t0
assert "timed out" in r.get("error", ""), r
assert dt < 2.5, dt
assert "error" in ask(b"\x00\xff\x1b[2J\n"), "binary request"
assert "error" in ask(b"A" * 5000), "oversized request"
assert "error" in ask(b"show zz\n"), "bad key"
assert "error" in ask(b"show\x00\n"), "NUL"
assert ask(b"stats\r\n")["device"] == "yip0", "stats"
assert ask(b"show")["device"] == "yip0", "no newline, then EOF"
print("    silent client dropped after %.2f s" % dt)
PY
ping_ok a 10.77.0.2 3 -i 0.1 >/dev/null
ctl_a show >/dev/null || fail "yipctl show after hostile clients"

# status_lines NAME N: waits until NAME's log holds N status blocks (each
# is the text of yipctl show, from its "public key" line, and of yipctl
# stats, to its last data-path line); prints block N without the log prefix.
status_lines() {
	local log=$TMP/$1.log n=$2
	poll 5 '[ "$(grep -c "status:     aqm_drops: " "$log")" -ge "$n" ]' ||
		fail "$1 logged no status block $2"
	awk -v n="$2" '/ status:   public key: /{b++} b==n && / status: /{sub(/^.* status: /, ""); print}' \
		"$TMP/$1.log"
}

log "SIGUSR1 logs the text of yipctl show and yipctl stats"
ping_ok a 10.77.0.2 3 -i 0.1 >/dev/null
# Without the lines whose numbers move with traffic and time.
want=$(ctl_a show | grep -Ev "latest handshake|transfer:|rtt:|loss:|recovery:|redundancy:|k/r:") ||
	fail "yipctl show"
want="$want
$(ctl_a stats | grep -Ev '[0-9]$')" || fail "yipctl stats"
kill -USR1 "$(pid_of a)"
got=$(status_lines a 1)
while IFS= read -r line; do
	grep -qxF -- "$line" <<<"$got" || fail "status lacks '$line' of yipctl: $got"
done <<<"$want"
for line in "^peer: $(pub_of b)$" "^  latest handshake: .* ago$" "^  transfer: .* received, .* sent" \
	"^    malformed: +[0-9]+$" "^    total: +[0-9]+$" "^    tso_segments: +[0-9]+$"; do
	echo "$got" | grep -Eq -- "$line" || fail "status lacks a line like '$line': $got"
done
echo "    $(echo "$got" | wc -l) status lines, as yipctl show and stats print them"

log "a socket left by a killed daemon is replaced; a clean exit removes it"
kill -KILL "$(pid_of b)"
wait "$(pid_of b)" 2>/dev/null || true
[ -S "$CTL_B/yip0.sock" ] || fail "killed daemon's socket vanished"
start_yipd b YIP_CTL_DIR="$CTL_B"
grep -q "removed stale control socket" "$TMP/b.log" || fail "stale socket not reported"
ctl_b show >/dev/null || fail "yipctl show on restarted b"
kill -TERM "$(pid_of b)"
wait "$(pid_of b)" 2>/dev/null || true
# $CTL_B is root's: the daemon, nobody by then, may not remove the socket.
[ -S "$CTL_B/yip0.sock" ] || fail "the socket in root's directory went away"
status=0
err=$(ctl_b show 2>&1) || status=$?
[ "$status" -eq 1 ] && grep -q "not running" <<<"$err" || fail "stale socket: $status, $err"

log "a directory of the daemon's user: a clean exit removes the socket"
mkdir -m 0700 "$TMP/ctl-nobody"
chown nobody "$TMP/ctl-nobody"
start_yipd b YIP_CTL_DIR="$TMP/ctl-nobody"
[ -S "$TMP/ctl-nobody/yip0.sock" ] || fail "no socket in the daemon user's directory"
[ "$(stat -c %U "$TMP/ctl-nobody/yip0.sock")" = root ] || fail "the socket is not root's"
YIP_CTL_DIR="$TMP/ctl-nobody" "$YIPCTL" show >/dev/null || fail "yipctl show in nobody's directory"
kill -TERM "$(pid_of b)"
wait "$(pid_of b)" 2>/dev/null || true
[ ! -e "$TMP/ctl-nobody/yip0.sock" ] || fail "socket left after a clean exit"

log "a directory others may write to is refused"
mkdir -m 0777 "$TMP/ctl-open"
start_yipd b YIP_CTL_DIR="$TMP/ctl-open"
grep -q "control socket disabled: $TMP/ctl-open has mode 0777" "$TMP/b.log" ||
	fail "b used a world-writable directory: $(grep control "$TMP/b.log")"
[ ! -e "$TMP/ctl-open/yip0.sock" ] || fail "a socket in a world-writable directory"
kill -TERM "$(pid_of b)"
wait "$(pid_of b)" 2>/dev/null || true

log "without a control socket, SIGUSR1 and shutdown still log the status"
: >"$TMP/not-a-dir"
start_yipd b YIP_CTL_DIR="$TMP/not-a-dir/ctl"
grep -q "control socket disabled" "$TMP/b.log" || fail "b opened a control socket under a file"
# From b: the restarted daemon starts the new session.
ping_ok b 10.77.0.1 3 -i 0.1 >/dev/null
kill -USR1 "$(pid_of b)"
got=$(status_lines b 1)
grep -qx "interface: yip0" <<<"$got" || fail "b's status: no interface line"
grep -qx "peer: $(pub_of a)" <<<"$got" || fail "b's status: no peer line"
echo "$got" | grep -Eq "^  transfer: .* received, .* sent" || fail "b's status: no transfer line"
echo "$got" | grep -Eq "^    aqm: +[0-9]+$" || fail "b's status: no drop counters"
kill -TERM "$(pid_of b)"
wait "$(pid_of b)" 2>/dev/null || true
got=$(status_lines b 2)
grep -qx "peer: $(pub_of a)" <<<"$got" || fail "b's shutdown status: no peer line"

log "several sockets: yipctl asks which device"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$CTL_A/zz9.sock"
rc=0
err=$(ctl_a show 2>&1) || rc=$?
[ "$rc" -eq 2 ] && grep -q "zz9" <<<"$err" || fail "several sockets: rc $rc, '$err'"
rm -f "$CTL_A/zz9.sock"
log "ok"
