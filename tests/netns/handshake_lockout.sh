#!/usr/bin/env bash
# drivers: one (control plane: what it checks does not depend on the I/O driver)
# A node whose only way to its server is to initiate (b has no endpoint for
# a) must connect while a third host tries to lock it out (docs/security.md,
# "Attacks considered"). The attack of the outside review: b allowed one
# costly Init per peer per 50 ms and renewed that limiter before the Init
# authenticated, so an Init naming a every 50 ms, from one address and well
# inside that address's budget, had every real Init of a's refused
# (rate_limited). Two such attacks, from the forger's namespace f
# (tests/lib/forger.sh) while a restarts:
#   1. a captured genuine Init of a's, replayed every 50 ms (b refuses each
#      as stale_init, and used to renew the limiter first);
#   2. that replay, and Inits with a valid mac1 claiming a's key but made
#      without its private key (yip-initflood --inits named) every 50 ms
#      from a second address: they fail to authenticate (handshake_failed).
# Each time a must have its session, and carry a ping, within 5 s of
# starting; b must never answer the attacker, and must refuse no real Init
# of a's as rate_limited.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/forger.sh"

two_peers
# b learns where a is only from a's Inits.
sed -i '/^endpoint=198.18.0.1/d' "$TMP/b.conf"
forger_ns
start_yipd b
start_yipd a

in_ns b tcpdump -i "v${NSP}b" --immediate-mode -U -n -w "$TMP/init.pcap" \
	'udp dst port 51820 and src host 198.18.0.1' >"$TMP/tcpdump.out" 2>&1 &
TCPDUMP=$!
PIDS+=($TCPDUMP)
poll 5 'grep -q listening "$TMP/tcpdump.out"' || fail "tcpdump did not start: $(cat "$TMP/tcpdump.out")"
ping_ok a 10.77.0.2 3 -i 0.1 >/dev/null
sleep 0.3
kill "$TCPDUMP"
wait "$TCPDUMP" 2>/dev/null || true
pcap_pick "$TMP/init.pcap" "$TMP/init.bin" 1 198.18.0.1 || fail "no Init of a's in the capture"
log "captured an Init of a's ($(stat -c %s "$TMP/init.bin") bytes)"

# replayer SECS: sends the captured Init to b every 50 ms from 10.201.0.1
# (an address of f's) for SECS seconds; counts what comes back in
# $TMP/replay.answers.
replayer() {
	in_ns f python3 - "$TMP/init.bin" "$1" "$TMP/replay.answers" <<'PY' &
import socket, sys, time
init = open(sys.argv[1], "rb").read()
end = time.monotonic() + float(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.201.0.1", 40000))
s.setblocking(False)
answers = 0
nxt = time.monotonic()
while time.monotonic() < end:
    s.sendto(init, ("198.18.0.2", 51820))
    nxt += 0.05
    while True:
        try:
            s.recv(2048)
            answers += 1
        except BlockingIOError:
            break
    time.sleep(max(0.0, nxt - time.monotonic()))
open(sys.argv[3], "w").write("%d\n" % answers)
PY
	REPLAY_PID=$!
	PIDS+=("$REPLAY_PID")
}

# restart_a LABEL: stops a, starts it again, and fails unless a's session
# is up and a ping crosses within 5 s of its start.
restart_a() {
	local t0 t1 rl0
	kill "$(pid_of a)"
	wait "$(pid_of a)" 2>/dev/null || true
	sleep 1 # the attack runs on its own for a second
	rl0=$(drops b rate_limited)
	t0=$(date +%s.%N)
	start_yipd a
	poll 5 'in_ns a ping -n -q -c 1 -W 1 10.77.0.2 >/dev/null 2>&1' ||
		fail "$1: a got no ping through to b within 5 s of starting" \
			"(b: rate_limited +$(($(drops b rate_limited) - rl0)), stale_init $(drops b stale_init)," \
			"handshake_failed $(drops b handshake_failed))"
	t1=$(date +%s.%N)
	[ "$(established a)" -ge 1 ] || fail "$1: a has no session with b"
	[ "$(($(drops b rate_limited) - rl0))" -eq 0 ] ||
		fail "$1: b refused $(($(drops b rate_limited) - rl0)) Inits as rate_limited"
	log "$1: a connected and pinged $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s after starting"
}

# 1. The replay alone.
st0=$(drops b stale_init)
replayer 6
restart_a "replayed Init every 50 ms"
wait "$REPLAY_PID" || fail "the replayer failed"
[ "$(cat "$TMP/replay.answers")" -eq 0 ] || fail "b answered the replayer $(cat "$TMP/replay.answers") times"
st=$(($(drops b stale_init) - st0))
[ "$st" -ge 40 ] || fail "b refused only $st replays as stale_init (the replayer sent about 120)"

# 2. The replay and forged Inits claiming a's key, from a second address.
hf0=$(drops b handshake_failed)
replayer 6
forger_start "$TMP/forged" --inits named --name "$(pub_of a)" --rate 20 --batch 1 --secs 6 \
	--src-base 10.201.0.2 --sources 1
restart_a "replayed and forged Inits every 50 ms each"
wait "$REPLAY_PID" || fail "the replayer failed"
wait "$FORGER_PID" || fail "the forger failed: $(cat "$TMP/forged.log")"
[ "$(cat "$TMP/replay.answers")" -eq 0 ] || fail "b answered the replayer $(cat "$TMP/replay.answers") times"
hf=$(($(drops b handshake_failed) - hf0))
log "forger: $(cat "$TMP/forged"); b refused $hf forged Inits (handshake_failed)"
[ "$hf" -ge 40 ] || fail "b refused only $hf forged Inits as handshake_failed (the forger sent about 120)"
ping_ok a 10.77.0.2 5 -i 0.1 >/dev/null
log "ok"
