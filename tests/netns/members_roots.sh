#!/usr/bin/env bash
# drivers: one (control plane: what it checks does not depend on the I/O driver)
# A CA-gated network of three nodes built with yip-ca: r is the root; a and
# b have no [peer] blocks, only the CA's key, their certificates and the
# root set. Each calls the root, which admits it by the certificate in its
# handshake; root and members then ping each other by certificate address
# and by key-derived address, and yipctl members lists them as connected.
. "$(dirname "$0")/lib.sh"

ca_init
ca_nodes r a b
ca_roots "$TMP/roots.txt" 10 r
for n in r a b; do start_yipd "$n"; done
for n in a b; do
	wait_ping "$n" 10.77.0.1
	ping_ok "$n" 10.77.0.1 3 -i 0.05 >/dev/null
	ping_ok r "10.77.0.$(idx_of "$n")" 3 -i 0.05 >/dev/null
	ping_ok r "$(addr_of "$n")" 3 -i 0.05 >/dev/null
	log "r <-> $n: certificate and key-derived addresses ok"
done
# The root admitted both members by certificate, and no refusals.
[ "$(json_get r show membership.admitted)" -eq 2 ] ||
	fail "r admitted $(json_get r show membership.admitted) members, expected 2"
for v in no_certificate wrong_ca expired not_yet_valid revoked wrong_network key_mismatch; do
	[ "$(refused r "$v")" -eq 0 ] || fail "r refused a handshake: $v"
done
[ "$(json_get r show membership.roots_serial)" -eq 10 ] || fail "r holds the wrong root set"
# yipctl members on the root: itself and both members, connected.
yipctl_of r members --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["network"] == "testnet", d
m = {x["name"]: x for x in d["members"]}
assert set(m) == {"node r", "node a", "node b"}, m.keys()
assert m["node r"]["self"]
for n, ip in (("node a", "10.77.0.2/32"), ("node b", "10.77.0.3/32")):
    assert m[n]["connected"] is True, m[n]
    assert m[n]["addresses"] == [ip], m[n]
    assert m[n]["why_not"] is None and m[n]["path"].startswith("direct"), m[n]
' || fail "yipctl members on r: $(yipctl_of r members --json)"
# On a member, the root shows as a root with its certificate (learned from
# its answer), connected; b, found through gossip, as a member.
yipctl_of a members --json | python3 -c '
import json, sys
m = {x["name"]: x for x in json.load(sys.stdin)["members"] if not x["self"]}
assert m["node r"]["root"] and m["node r"]["connected"], m
assert "node b" in m and not m["node b"]["root"], m
' || fail "yipctl members on a: $(yipctl_of a members --json)"
yipctl_of a members | grep -q "member: node r (root)" || fail "yipctl members text on a"
log "ok: root and two members by certificate; members listed as connected"
