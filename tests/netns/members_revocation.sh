#!/usr/bin/env bash
# drivers: one (control plane: revocation, its gossip and the sessions it ends)
# Revocation: root r and members a and b are connected (a and b found each
# other through gossip); the CA revokes a's certificate and r reads the new
# list on SIGHUP. Within 30 s r has torn a's session down and removed it,
# b has the list from r by gossip and has done the same, no one exchanges
# traffic with a, a cannot rejoin (restarted, it is refused as revoked),
# and b's session with r is untouched. An older list given afterwards is
# refused.
. "$(dirname "$0")/lib.sh"

ca_init
ca_nodes r a b
ca_roots "$TMP/roots.txt" 10 r
"$YIPCA" revoke --ca-key "$TMP/ca.key" --network "$NET" --serial 1 --out "$TMP/revoked.txt" ||
	fail "yip-ca revoke (an empty list)"
chmod 644 "$TMP/revoked.txt"
cp "$TMP/revoked.txt" "$TMP/revoked-1.txt"
echo "revocations=$TMP/revoked.txt" >>"$TMP/r.conf"
for n in r a b; do start_yipd "$n"; done
for n in a b; do
	wait_ping "$n" 10.77.0.1
	ping_ok r "10.77.0.$(idx_of "$n")" 3 -i 0.05 >/dev/null
done
[ "$(peer_count r)" -eq 2 ] || fail "r holds $(peer_count r) peers, expected 2"
wait_ping b 10.77.0.2 # a, found through gossip
ping_ok a 10.77.0.3 3 -i 0.05 >/dev/null
hs_b=$(yipctl_of r show --json | python3 -c '
import json, sys
print([p for p in json.load(sys.stdin)["peers"] if p["member"]["name"] == "node b"][0]["handshakes"])')
log "r, a and b connected"

"$YIPCA" revoke --ca-key "$TMP/ca.key" --network "$NET" --list "$TMP/revoked-1.txt" --serial 2 \
	--cert "$TMP/a.crt" --force --out "$TMP/revoked.txt" || fail "yip-ca revoke a"
start=$(date +%s)
kill -HUP "$(pid_of r)"
poll 30 '[ "$(peer_count r)" -eq 1 ]' || true
took=$(($(date +%s) - start))
[ "$(peer_count r)" -eq 1 ] || fail "r still holds a 30 s after the revocation"
[ "$took" -le 30 ] || fail "a was removed after $took s"
[ "$(json_get r show membership.removed)" -eq 1 ] || fail "r did not count the removal"
[ "$(json_get r show membership.revocations_serial)" -eq 2 ] || fail "r did not adopt list 2"
yipctl_of r members --json | python3 -c '
import json, sys
names = [m["name"] for m in json.load(sys.stdin)["members"]]
assert "node a" not in names and "node b" in names, names
' || fail "r still lists a as a member"
log "a removed by r $took s after the list arrived"
# b gets the list by gossip and drops a too, within 30 s of r's SIGHUP.
# a_members NAME: how many of NAME's members are "node a".
a_members() {
	yipctl_of "$1" members --json | python3 -c '
import json, sys
print(sum(1 for m in json.load(sys.stdin)["members"] if m["name"] == "node a"))'
}
poll 30 '[ "$(json_get b show membership.revocations_serial)" = 2 ] && [ "$(a_members b)" -eq 0 ]' ||
	true
took_b=$(($(date +%s) - start))
[ "$(json_get b show membership.revocations_serial)" = 2 ] || fail "b did not get list 2 by gossip"
[ "$took_b" -le 30 ] || fail "b dropped a after $took_b s"
out=$(in_ns b ping -n -c 2 -W 1 10.77.0.2 2>&1 || true)
grep -q " 0 received" <<<"$out" || fail "b still reaches a: $out"
log "b got the list by gossip and dropped a $took_b s after r's SIGHUP"

# No traffic between a and r any more, in either direction.
out=$(in_ns a ping -n -c 3 -i 0.3 -W 1 10.77.0.1 2>&1 || true)
grep -q " 100% packet loss" <<<"$out" || fail "a still reaches r: $out"
out=$(in_ns r ping -n -c 2 -W 1 10.77.0.2 2>&1 || true)
grep -q " 0 received" <<<"$out" || fail "r still reaches a: $out"
# b is untouched: same session, still pings.
ping_ok b 10.77.0.1 3 -i 0.05 >/dev/null
ping_ok r 10.77.0.3 3 -i 0.05 >/dev/null
[ "$(yipctl_of r show --json | python3 -c '
import json, sys
print([p for p in json.load(sys.stdin)["peers"] if p["member"]["name"] == "node b"][0]["handshakes"])')" -eq "$hs_b" ] ||
	fail "the revocation disturbed b's session"

# a cannot rejoin: restarted, its handshakes are refused as revoked.
kill "$(pid_of a)"
wait "$(pid_of a)" 2>/dev/null || true
start_yipd a
out=$(in_ns a ping -n -c 3 -i 0.3 -W 1 "$(addr_of r)" 2>&1 || true)
grep -q " 100% packet loss" <<<"$out" || fail "a rejoined: $out"
poll 10 '[ "$(refused r revoked)" -gt 0 ]' 0.2 || fail "r did not refuse a as revoked"
[ "$(peer_count r)" -eq 1 ] || fail "a got back into r's peer table"
[ "$(a_members b)" -eq 0 ] || fail "a got back into b's members"

# The older list again: refused as a rollback.
cp "$TMP/revoked-1.txt" "$TMP/revoked.txt"
kill -HUP "$(pid_of r)"
poll 5 '[ "$(json_get r show membership.revocations_refused_older)" -eq 1 ]' || true
[ "$(json_get r show membership.revocations_refused_older)" -eq 1 ] || fail "r took an older list"
[ "$(json_get r show membership.revocations_serial)" -eq 2 ] || fail "r went back to list 1"
log "ok: revoked member torn down by r in $took s and by b (gossip) in $took_b s, refused on rejoining; older list refused"
