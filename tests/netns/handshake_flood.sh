#!/usr/bin/env bash
# A handshake flood at b (docs/protocol.md, "Cookies"; docs/security.md)
# while a and b carry one TCP stream and a ping through their tunnel.
#
# A forger in its own namespace f (tests/lib/forger.sh) runs yip-initflood
# at RATE Inits a second (default 100 000; 0: as fast as one core lets it):
# Inits with a valid mac1 (a third random, a
# third from unknown keys, a third naming a, b's configured peer, for which
# b pays both Diffie-Hellmans before the payload fails), from SOURCES
# addresses that f owns. For the first COOKIE_SRCS of them the forger takes
# b's Cookie replies and sends valid mac2s, so those Inits meet b's
# per-source budget; the rest are answered with Cookies.
#
# The forger has one CPU to itself and everything else (both yipds, iperf3,
# ping) the other CPUs: an attacker's CPU is not the victim's, and the
# kernel's per-CPU receive backlog, which the forger's sends fill (veth
# delivers on the sender's CPU), would otherwise drop the tunnel's packets
# before any yipd saw them. TCP is paced to TCP_RATE Mbit/s, a rate the
# tunnel's CPUs carry with room to spare, so that what is measured is
# whether the flood takes that room from the tunnel (as Diffie-Hellman for
# every Init would: one X25519 costs more than a datagram's whole trip), not
# the price of a core's worth of extra datagrams in the kernel; unpaced, TCP
# would lose whatever CPU b's kernel spends on the flood's datagrams, with or
# without cookies. The baseline is the same stream in the BEFORE seconds
# before the flood; the flood then lasts SECS seconds.
#
# Why a fixed rate: how fast one core forges depends on how busy the
# machine is (65 000 to 410 000 a second on the 2-core development VM).
# yipd drops a forged Init after a mac1 and a mac2 check and answers at most
# YIP_COOKIE_RATE of them with a Cookie. Measured here: at 150 000 a second
# TCP kept 101 % (b's yipd at 56 % of a core), at 200 000 83 % (71 %), at
# 220 000 to 320 000 nothing: the one CPU left to both yipds, iperf3 and
# ping is full and b's socket overflows (docs/security.md). 100 000 a second is well past
# every budget (cookies above 100 Inits a second, 20 per source) and what
# this test asserts the tunnel survives.
#
# Required: TCP's throughput under the flood (from its first second on) is
# >= 90 % of the baseline; < 1 % of the pings sent under the flood are
# lost; b counts Cookies (under_load) and budget refusals (rate_limited),
# found no mac1 wrong, and did Diffie-Hellman for no more forged Inits than
# its budgets allow. The flood's rate and yipd b's CPU time are logged.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/forger.sh"

SOURCES=${FLOOD_SOURCES:-1024}
COOKIE_SRCS=${FLOOD_COOKIE_SRCS:-32}
TCP_RATE=${FLOOD_TCP_RATE:-100} # Mbit/s
BEFORE=${FLOOD_BEFORE:-4}       # seconds
SECS=${FLOOD_SECS:-10}          # seconds of flood
RATE=${FLOOD_RATE:-100000}      # forged Inits a second; 0: as fast as one core can
command -v iperf3 >/dev/null || fail "iperf3 not installed (scripts/deps.sh)"
ncpu=$(nproc)
[ "$ncpu" -ge 2 ] || fail "needs two CPUs: one for the forger, one for the tunnel"
FCPU=$((ncpu - 1))    # the forger's
TCPUS=0-$((ncpu - 2)) # everything else's

two_peers
forger_ns
# The Cookies to the sources that do not use them are dropped as they reach
# f, before its IP layer (an nftables ingress hook): they leave b through a
# veth, which delivers on the sending CPU, and b's CPU should no more pay
# for the attacker's receive path than it would behind a real NIC.
bits=0
while [ $((1 << bits)) -le "$COOKIE_SRCS" ]; do bits=$((bits + 1)); done
in_ns f nft -f - <<NFT
table netdev forger {
	chain in {
		type filter hook ingress device "f$NSP" priority 0;
		ip daddr 10.201.0.0/16 ip daddr != ${FORGER_NET%.*}.0/$((32 - bits)) drop
	}
}
NFT
start_yipd a
start_yipd b
taskset -a -p -c "$TCPUS" "$(pid_of a)" >/dev/null
taskset -a -p -c "$TCPUS" "$(pid_of b)" >/dev/null
wait_ping a 10.77.0.2
# The flood meets yipd as it runs by default: in its sandbox.
grep -q '^Seccomp:[[:space:]]*2' "/proc/$(pid_of b)/status" || fail "yipd b runs without its seccomp filter"

# counters: b's drop counters as one "name value ..." line.
counters() {
	yipctl_of b show --json | python3 -c '
import json, sys
print(" ".join("%s %s" % kv for kv in json.load(sys.stdin)["drops"].items()))'
}
# delta BEFORE AFTER NAME: how much counter NAME grew; fails if either
# snapshot lacks it (a renamed counter would otherwise read as 0 and pass
# the checks for none).
delta() {
	local a b
	a=$(sed -n "s/.*\b$3 \([0-9][0-9]*\).*/\1/p" <<<"$1")
	b=$(sed -n "s/.*\b$3 \([0-9][0-9]*\).*/\1/p" <<<"$2")
	[ -n "$a" ] && [ -n "$b" ] || fail "no drop counter $3 in yipctl show --json of b"
	echo $((b - a))
}

# One TCP stream from a to b (iperf3) and a ping every 10 ms run all along;
# b's delivered bytes (yip0's rx_bytes) and yipd b's CPU time are sampled
# every 5 ms (by a sampler on the forger's CPU). After BEFORE seconds the
# forger starts.
total=$((BEFORE + SECS + 2))
ip netns exec "$(ns b)" taskset -c "$FCPU" python3 - "$(pid_of b)" "$total" >"$TMP/samples" <<'PY' &
import sys, time
pid, secs = sys.argv[1], float(sys.argv[2])
print("offset", time.time_ns() - time.monotonic_ns())
end = time.monotonic() + secs
while time.monotonic() < end:
    with open("/sys/class/net/yip0/statistics/rx_bytes") as f:
        rx = int(f.read())
    with open("/proc/%s/stat" % pid) as f:
        st = f.read().rsplit(")", 1)[1].split()
    print(time.monotonic_ns(), rx, int(st[11]) + int(st[12]))
    time.sleep(0.005)
PY
sampler=$!
PIDS+=("$sampler")
in_ns a taskset -c "$TCPUS" ping -D -n -i 0.01 -W 1 -w "$total" 10.77.0.2 >"$TMP/ping" 2>&1 &
pinger=$!
PIDS+=("$pinger")
ip netns exec "$(ns b)" taskset -c "$TCPUS" iperf3 -s -1 -B 10.77.0.2 >"$TMP/iperf3-server" 2>&1 &
PIDS+=($!)
wait_listen b tcp 5201
# A stalled stream can stall iperf3's control connection too: the time
# limit ends it, and the samples tell what got through.
in_ns a timeout $((total + 10)) taskset -c "$TCPUS" iperf3 -c 10.77.0.2 -t "$total" \
	-b "${TCP_RATE}M" --connect-timeout 3000 >"$TMP/iperf3" 2>&1 &
tcp=$!
PIDS+=("$tcp")

sleep "$BEFORE"
C0=$(counters)
forger_start "$TMP/flood" --name "$(pub_of a)" --src-base "$FORGER_NET" --sources "$SOURCES" \
	--cookies "$COOKIE_SRCS" --secs "$SECS" --rate "$RATE"
taskset -p -c "$FCPU" "$FORGER_PID" >/dev/null
wait "$FORGER_PID" || fail "the forger failed: $(cat "$TMP/flood.log")"
C1=$(counters)
wait "$sampler"
wait "$pinger" || true
wait "$tcp" || log "iperf3 did not finish cleanly: $(tail -n 3 "$TMP/iperf3" | tr '\n' ' ')"
kill -0 "$(pid_of b)" 2>/dev/null || fail "yipd b died"

# The baseline: the BEFORE seconds but the first half second (the stream's
# start); the flood: from its first second (b's socket then holds only what
# came under the flood) to its end.
python3 - "$TMP/flood" "$TMP/samples" "$TMP/ping" "$(getconf CLK_TCK)" "$BEFORE" \
	>"$TMP/result" <<'PY' || fail "could not analyse the run"
import re, sys
flood, samples, pings, hz, before = sys.argv[1:4] + [int(sys.argv[4]), float(sys.argv[5])]
w = open(flood).read().split()
f = {w[i]: float(w[i + 1]) for i in range(0, len(w) - 1, 2)}
t, rx, cpu = [], [], []
for line in open(samples):
    w = line.split()
    if w[0] == "offset":
        offset = int(w[1])
    else:
        t.append(int(w[0])); rx.append(int(w[1])); cpu.append(int(w[2]))
def at(ns):                             # index of the last sample at or before ns
    lo, hi = 0, len(t) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if t[mid] <= ns: lo = mid
        else: hi = mid - 1
    return lo
def window(a, b):                       # Mbit/s, % of a core
    i, j = at(a), at(b)
    d = (t[j] - t[i]) / 1e9
    return 8 * (rx[j] - rx[i]) / d / 1e6, 100 * (cpu[j] - cpu[i]) / hz / d
# When each ping was sent (reply time minus RTT, monotonic clock); lost ones
# when their sequence number says, by a straight line through the others.
got = {}
for line in open(pings):
    m = re.match(r"\[(\d+\.\d+)\].*icmp_seq=(\d+).*time=([\d.]+) ms", line)
    if m:
        got[int(m.group(2))] = int(float(m.group(1)) * 1e9) - offset - int(float(m.group(3)) * 1e6)
seqs = sorted(got)
n = len(seqs); mx = sum(seqs) / n; my = sum(got[s] for s in seqs) / n
slope = sum((s - mx) * (got[s] - my) for s in seqs) / sum((s - mx) ** 2 for s in seqs)
sent_at = {s: got.get(s, my + slope * (s - mx)) for s in range(1, seqs[-1] + 1)}
def pings_in(a, b):
    sent = [s for s, ts in sent_at.items() if a <= ts < b]
    return len(sent), sum(1 for s in sent if s in got)
start, end = int(f["start"]), int(f["end"])
tb, cb = window(start - int((before - 0.5) * 1e9), start)
pbs, pbg = pings_in(start - int((before - 0.5) * 1e9), start)
tf, cf = window(start + 1000000000, end)
pfs, pfg = pings_in(start + 1000000000, end)
print("RESULT ratio %.0f tcp_flood %.0f tcp_before %.0f rate %.0f cpu_flood %.0f cpu_before %.0f"
      " ping_sent %d ping_got %d bping_sent %d bping_got %d cookies %d"
      % (100 * tf / tb, tf, tb, f["rate"], cf, cb, pfs, pfg, pbs, pbg, f["cookies"]))
PY
res=$(sed -n 's/^RESULT //p' "$TMP/result")
get() { awk -v k="$1" '{ for (i = 1; i < NF; i += 2) if ($i == k) print $(i + 1) }' <<<"$res"; }
ratio=$(get ratio)
log "TCP paced to $TCP_RATE Mbit/s carried $(get tcp_before) Mbit/s before the flood and" \
	"$(get tcp_flood) Mbit/s under it: $ratio %. The forger sent $(get rate) Inits/s from one" \
	"core ($SOURCES sources, $COOKIE_SRCS with cookies; it opened $(get cookies) Cookies)." \
	"yipd b used $(get cpu_before) % of a core before the flood, $(get cpu_flood) % under it." \
	"Pings answered: $(get bping_got) of $(get bping_sent) before, $(get ping_got) of" \
	"$(get ping_sent) under the flood"
awk -v i="$(get rate)" 'BEGIN { exit !(i >= 10000) }' ||
	fail "the forger reached only $(get rate) Inits/s: not a flood"

# What b counted.
declare -A D
for c in under_load rate_limited handshake_failed unknown_peer bad_mac1; do D[$c]=$(delta "$C0" "$C1" "$c"); done
log "b's drops during the flood: under_load ${D[under_load]}, rate_limited ${D[rate_limited]}," \
	"handshake_failed ${D[handshake_failed]}, unknown_peer ${D[unknown_peer]}, bad_mac1 ${D[bad_mac1]}"
[ "${D[bad_mac1]}" -eq 0 ] || fail "b found the mac1 of ${D[bad_mac1]} forged Inits wrong"
[ "${D[under_load]}" -gt 1000 ] || fail "b answered only ${D[under_load]} Inits with a Cookie"
[ "${D[rate_limited]}" -gt 1000 ] || fail "b refused only ${D[rate_limited]} Inits over a budget"
# Forged Inits that reached Noise: b's cookies worked for the forger, and its
# budgets held: at most 100 before b sees the load (twice, for the edge of
# its one-second window), and per cookie source its budget's burst (40) and
# 20 a second.
dh=$((D[handshake_failed] + D[unknown_peer]))
bound=$((200 + COOKIE_SRCS * (40 + 20 * (SECS + 1))))
[ "$dh" -gt 0 ] || fail "no forged Init reached Noise: the forger's mac2s did not work"
[ "$dh" -le "$bound" ] || fail "b did Diffie-Hellman for $dh forged Inits; its budgets allow $bound"
log "b did Diffie-Hellman for $dh forged Inits (its budgets allow $bound)"

[ "$ratio" -ge 90 ] || fail "TCP kept $ratio % of its throughput under the Init flood (< 90 %)"
ps=$(get ping_sent) pg=$(get ping_got)
[ $((pg * 100)) -gt $((ps * 99)) ] || fail "ping lost more than 1 % under the Init flood ($pg of $ps answered)"
ping_ok a 10.77.0.2 10 -i 0.05 >/dev/null
log "ok"
