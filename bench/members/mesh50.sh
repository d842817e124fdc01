#!/usr/bin/env bash
# make bench-members: N real yipd daemons (default 50) in network namespaces
# on one bridge, a CA-gated network with two roots and no [peer] blocks.
# Every node learns the others by gossip; the run measures the time until
# every node has pinged every other node once by certificate address (a
# full mesh of N x (N-1) directions), the resident memory of each daemon
# then, and the gossip traffic. Manual (root; not part of make check):
#
#   bench/members/mesh50.sh [N]
#
# Results go to stdout; docs/benchmarks/members.md records a run.
TEST=mesh50
. "$(dirname "$0")/../../tests/netns/lib.sh"

N=${1:-50}
LIMIT=${MESH_LIMIT:-300} # seconds until every direction must have answered
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

# Each node pings every other node until one echo comes back (at most LIMIT s
# in all), all nodes at once; each writes the time it finished.
pingers=()
for n in $NODES; do
	(
		for m in $NODES; do
			[ "$n" = "$m" ] && continue
			dest="10.77.0.$(idx_of "$m")"
			until in_ns "$n" ping -n -c 1 -W 1 "$dest" >/dev/null 2>&1; do
				awk -v s="$t_up" -v e="$(date +%s.%N)" -v l="$LIMIT" 'BEGIN { exit !(e - s > l) }' &&
					{ echo "fail $m" >"$TMP/done-$n"; exit 1; }
			done
		done
		date +%s.%N >"$TMP/done-$n"
	) &
	pingers+=($!)
done
wait "${pingers[@]}" || true # not a bare wait: the daemons are children too
fails=$(cat "$TMP"/done-* | grep -c fail || true)
last=$(cat "$TMP"/done-* | sort -n | tail -n 1)
[ "$fails" -eq 0 ] || fail "$fails nodes did not reach every other node within $LIMIT s:" \
	"$(grep -H fail "$TMP"/done-* | sed 's|.*/done-||' | head -n 10 | tr '\n' ' ')"
full=$(awk -v a="$t_up" -v b="$last" 'BEGIN { printf "%.1f", b - a }')
log "full mesh: all $((N * (N - 1))) directions answered $full s after the last daemon was up"

# Memory and gossip, per daemon.
rss=()
for n in $NODES; do rss+=("$(awk '/^VmRSS/ { print $2 }' "/proc/$(pid_of "$n")/status")"); done
printf '%s\n' "${rss[@]}" | sort -n | awk '{ a[NR] = $1; s += $1 } END {
	printf "RSS per daemon: min %d KiB, median %d KiB, max %d KiB, mean %.0f KiB\n", a[1], a[int((NR + 1) / 2)], a[NR], s / NR }'
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
for n in n1 n3; do
	yipctl_of "$n" show --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
g = j["membership"]["gossip"]
print("%s: %d peers, gossip %d items, %d neighbours, %d messages sent, %d received" % (
    sys.argv[1], len(j["peers"]), g["items"], g["neighbours"], g["tx_messages"], g["rx_messages"]))' "$n"
done
log "ok"
