#!/usr/bin/env bash
# make bench-members: N real yipd daemons (default 50) in network namespaces
# on one bridge, a CA-gated network with two roots and no [peer] blocks.
# Every node learns the others by gossip, and sends a datagram to every other
# node's certificate address every 0.5 s, which makes it call each member
# once it holds the member's record. The run measures, by polling every
# daemon's `yipctl members --json`, the time until every daemon holds every
# member's record and until it has a session with every other member (a
# full mesh); then a ping sweep confirms every one of the N x (N-1)
# directions; then the resident memory of each daemon and the gossip
# traffic at steady state. Manual (root; not part of make check):
#
#   bench/members/mesh50.sh [N]
#
# Results go to stdout; docs/benchmarks/members.md records a run.
TEST=mesh50
. "$(dirname "$0")/../../tests/netns/lib.sh"

N=${1:-50}

# N namespaces each sending to N-1 tunnel addresses need about N^2 IPv4
# neighbour entries (the kernel keeps one per destination even on a NOARP
# TUN device), and the table's limits are one for all namespaces
# (gc_thresh3, 1024 by default): past it the kernel refuses to send
# ("neighbor table overflow", ENOBUFS, counted as IpOutDiscards), and
# packets to members are lost until old entries are collected. Raised for
# the run, put back after.
NEIGH=/proc/sys/net/ipv4/neigh/default
old_t1=$(cat $NEIGH/gc_thresh1) old_t2=$(cat $NEIGH/gc_thresh2) old_t3=$(cat $NEIGH/gc_thresh3)
want_t3=$((4 * N * N + 1024))
restore_neigh() {
	echo "$old_t3" >$NEIGH/gc_thresh3
	echo "$old_t2" >$NEIGH/gc_thresh2
	echo "$old_t1" >$NEIGH/gc_thresh1
}
if [ "$old_t3" -lt "$want_t3" ]; then
	echo "$want_t3" >$NEIGH/gc_thresh3
	echo "$((want_t3 / 2))" >$NEIGH/gc_thresh2
	trap 'rc=$?; restore_neigh; (exit $rc); cleanup' EXIT
	log "neighbour table limit raised from $old_t3 to $want_t3 for the run"
fi
LIMIT=${MESH_LIMIT:-300} # seconds until every daemon must be connected to every other
NODES=""
for i in $(seq 1 "$N"); do NODES="$NODES n$i"; done
ca_init
ca_nodes $NODES
ca_roots "$TMP/roots.txt" 1 n1 n2
t0=$(date +%s.%N)
for n in $NODES; do launch_yipd "$n"; done
for n in $NODES; do wait_yipd "$n"; done
t_up=$(date +%s.%N)
log "$N daemons up in $(awk -v a="$t0" -v b="$t_up" 'BEGIN { printf "%.1f", b - a }') s"

# Traffic to every member: each node sends one small UDP datagram (to port
# 9, discard) to every other node's certificate address every 0.5 s, from
# one shell per node with no process per datagram (bash's /dev/udp, read -t
# as the timer), until the poller says the mesh is full. A datagram to a
# member with no session looks its record up and calls it; one sent before
# the record arrived by gossip is dropped (no_route) and the next round
# tries again.
senders=()
for n in $NODES; do
	dests=""
	for m in $NODES; do [ "$n" = "$m" ] || dests="$dests 10.77.0.$(idx_of "$m")"; done
	in_ns "$n" bash -c '
		exec {t}<> <(:)
		while [ ! -e "$1" ]; do
			for d in $2; do echo x 2>/dev/null >"/dev/udp/$d/9" || true; done
			read -r -t 0.5 -u "$t" _ || true
		done' sender "$TMP/mesh-full" "$dests" &
	senders+=($!)
	PIDS+=($!)
done

# The poller: every daemon's `yipctl members --json`, round after round (one
# yipctl process per daemon and round, one python process in all), until
# every daemon lists every other member (it holds its record) and is
# connected to each (a session is up); the time each daemon got there.
python3 - "$TMP" "$N" "$t_up" "$LIMIT" "$YIPCTL" >"$TMP/mesh.out" <<'PY' || true
import json, os, subprocess, sys, time
tmp, n, t_up, limit, yipctl = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
names = ["n%d" % i for i in range(1, n + 1)]
known, conn, rounds = {}, {}, 0
while len(conn) < n and time.time() - t_up < limit:
    rounds += 1
    for nm in names:
        if nm in conn:
            continue
        r = subprocess.run([yipctl, "members", "--json"], capture_output=True, text=True,
                           env=dict(os.environ, YIP_CTL_DIR="%s/ctl-%s" % (tmp, nm)))
        now = time.time() - t_up
        try:
            ms = [m for m in json.loads(r.stdout)["members"] if not m["self"]]
        except (ValueError, KeyError):
            continue
        if len(ms) >= n - 1:
            known.setdefault(nm, now)
        if sum(1 for m in ms if m["connected"]) >= n - 1:
            conn[nm] = now
    time.sleep(0.1)
open(os.path.join(tmp, "mesh-full"), "w").close()

def q(v, f):
    v = sorted(v)
    return v[min(len(v) - 1, int(f * len(v)))] if v else -1

print("rounds %d" % rounds)
print("known %d %.1f %.1f" % (len(known), q(known.values(), 0.5), max(known.values(), default=-1)))
print("connected %d %.1f %.1f" % (len(conn), q(conn.values(), 0.5), max(conn.values(), default=-1)))
print("missing " + " ".join(nm for nm in names if nm not in conn))
PY
touch "$TMP/mesh-full"
wait "${senders[@]}" 2>/dev/null || true
read -r _ k_n k_med k_max < <(grep '^known' "$TMP/mesh.out")
read -r _ c_n c_med c_max < <(grep '^connected' "$TMP/mesh.out")
log "poller: $(grep '^rounds' "$TMP/mesh.out") of $N daemons"
[ "$k_n" -eq "$N" ] || fail "only $k_n of $N daemons listed every member within $LIMIT s: $(cat "$TMP/mesh.out")"
[ "$c_n" -eq "$N" ] || fail "only $c_n of $N daemons were connected to every member within $LIMIT s: $(grep '^missing' "$TMP/mesh.out")"
log "every daemon held every member's record: median $k_med s, last $k_max s after the last daemon was up"
log "full mesh of sessions: every daemon connected to all $((N - 1)) others: median $c_med s, last $c_max s after the last daemon was up"

# The ping sweep, only to confirm: each node pings every other node once
# (ping -c 1 -W 1, up to 3 tries), all nodes at once.
t_sweep=$(date +%s.%N)
pingers=()
for n in $NODES; do
	(
		bad=0
		for m in $NODES; do
			[ "$n" = "$m" ] && continue
			for _ in 1 2 3; do
				in_ns "$n" ping -n -c 1 -W 1 "10.77.0.$(idx_of "$m")" >/dev/null 2>&1 && continue 2
			done
			bad=$((bad + 1))
		done
		echo "$bad" >"$TMP/sweep-$n"
	) &
	pingers+=($!)
done
wait "${pingers[@]}" || true # not a bare wait: the daemons are children too
unanswered=$(cat "$TMP"/sweep-* | awk '{ s += $1 } END { print s }')
[ "$unanswered" -eq 0 ] || fail "$unanswered of $((N * (N - 1))) directions did not answer a ping"
log "ping sweep: all $((N * (N - 1))) directions answered, in $(awk -v a="$t_sweep" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s ($((N * (N - 1))) ping processes)"

# Memory per daemon: resident memory (VmRSS) and what loss recovery holds
# for its peers (recovery_mem: buffers kept while a session carries data,
# released 10 s after it goes idle), min / median / max / mean over the daemons.
mem_report() {
	local n rss rec
	for n in $NODES; do
		rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$(pid_of "$n")/status")
		rec=$(yipctl_of "$n" show --json | python3 -c '
import json, sys
print(sum(p["recovery_mem"] for p in json.load(sys.stdin)["peers"]) // 1024)')
		echo "$rss $rec $n"
	done | python3 -c '
import sys
rows = [l.split() for l in sys.stdin if l.strip()]
def s(v):
    v = sorted(v)
    return "min %d KiB, median %d KiB, max %d KiB, mean %.0f KiB" % (v[0], v[(len(v) - 1) // 2], v[-1], sum(v) / len(v))
top = sorted(rows, key=lambda r: -int(r[0]))[:3]
print("RSS per daemon %s: %s (largest: %s); recovery buffers: %s" % (sys.argv[1],
      s([int(r[0]) for r in rows]), ", ".join("%s %s KiB" % (r[2], r[0]) for r in top),
      s([int(r[1]) for r in rows])))' "$1"
}
mem_report "after the mesh and the sweep"
# Gossip at steady state: bytes each daemon sends in 30 s, all of them.
gossip_tx() {
	local n
	for n in $NODES; do
		yipctl_of "$n" show --json | python3 -c '
import json, sys
print(json.load(sys.stdin)["membership"]["gossip"]["tx_bytes"])'
	done
}
g0=$(gossip_tx | awk '{ s += $1 } END { print s }')
sleep 30
g1=$(gossip_tx | awk '{ s += $1 } END { print s }')
log "gossip at steady state: $(awk -v a="$g0" -v b="$g1" -v n="$N" 'BEGIN { printf "%.0f", (b - a) / n / 30 }') bytes/s sent per daemon (mean over 30 s)"
mem_report "30 s later, idle"
for n in n1 n3; do
	yipctl_of "$n" show --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
g = j["membership"]["gossip"]
print("%s: %d peers, gossip %d items, %d neighbours, %d messages sent, %d received" % (
    sys.argv[1], len(j["peers"]), g["items"], g["neighbours"], g["tx_messages"], g["rx_messages"]))' "$n"
done
log "ok"
