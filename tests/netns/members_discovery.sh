#!/usr/bin/env bash
# drivers: one (control plane: what it checks does not depend on the I/O driver)
# Discovery by gossip: five members, r the only root; no node lists another
# as a [peer], and only r is in the root set. Each member calls r, the
# members' signed records spread through gossip inside the sessions, and
# within 10 s every pair pings by certificate address and by key-derived
# address (a packet to a member with no session yet looks its record up
# and calls it). The members' sessions with each other are direct. Then
# the root goes away and c restarts: from the records it saved in its state
# directory it finds the others again, with no root at all.
. "$(dirname "$0")/lib.sh"

NODES="r a b c d"
ca_init
ca_nodes $NODES
ca_roots "$TMP/roots.txt" 10 r
for n in $NODES; do launch_yipd "$n"; done
for n in $NODES; do wait_yipd "$n"; done
start=$(date +%s.%N)

# reach NODE DEST: one ping from NODE to DEST answered, retried until 10 s
# after start.
reach() {
	local from=$1 to=$2
	poll_since "$start" 10 'in_ns "$from" ping -n -c 1 -W 1 "$to" >/dev/null 2>&1'
}
for n in $NODES; do
	for m in $NODES; do
		[ "$n" = "$m" ] && continue
		reach "$n" "10.77.0.$(idx_of "$m")" || fail "$n cannot reach $m (10.77.0.$(idx_of "$m")) within 10 s"
		reach "$n" "$(addr_of "$m")" || fail "$n cannot reach $m ($(addr_of "$m")) within 10 s"
	done
done
took=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
log "all 20 directions ping by certificate and key-derived address, $took s after start"
# Real traffic both ways between two members that were never configured
# together, on a direct path; and every member knows every other.
ping_ok a 10.77.0.5 5 -i 0.05 >/dev/null
for n in $NODES; do
	k=$(yipctl_of "$n" members --json | python3 -c '
import json, sys
print(sum(1 for m in json.load(sys.stdin)["members"] if not m["self"] and m["connected"]))')
	[ "$k" -eq 4 ] || fail "$n is connected to $k members, expected 4: $(yipctl_of "$n" members)"
done
path=$(yipctl_of a members --json | python3 -c '
import json, sys
print([m for m in json.load(sys.stdin)["members"] if m["name"] == "node d"][0]["path"])')
case $path in direct*) ;; *) fail "a reaches d by '$path', not directly" ;; esac
# They did it by gossip: r holds the five records and the root set, and took
# the members' records from them.
yipctl_of r show --json | python3 -c '
import json, sys
g = json.load(sys.stdin)["membership"]["gossip"]
assert g["items"] >= 6 and g["accepted"] >= 4 and g["rx_messages"] > 0, g
' || fail "r's gossip counters: $(yipctl_of r show --json)"
yipctl_of r show | grep -q "gossip: .* items" || fail "yipctl show does not show gossip"
log "five members found each other from one root in $took s"

# c saves the records it holds (every 10 s when they changed).
poll 15 '[ "$(grep -c "END YIP MEMBER RECORD" "$TMP/state-c/records" 2>/dev/null || echo 0)" -ge 4 ]' ||
	fail "c did not save the others' records in its state directory"
kill "$(pid_of r)"
kill "$(pid_of c)"
wait "$(pid_of c)" 2>/dev/null || true
start_yipd c
grep -q "saved member records still valid" "$TMP/c.log" || fail "c did not read its saved records"
start=$(date +%s.%N)
for m in a b d; do
	reach c "10.77.0.$(idx_of "$m")" || fail "c, restarted with the root down, cannot reach $m"
done
reach a 10.77.0.4 || fail "a cannot reach the restarted c"
log "ok: with the root gone, restarted c reached a, b and d from its saved records in $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s"
