#!/usr/bin/env bash
# drivers: one (control plane: yipctl ping and yipctl netcheck)
# yipctl ping and netcheck in the NAT lab (docs/control.md, docs/operations.md).
# One yip-rendezvous on the internet; a and b behind two port-restricted
# cone NATs (they punch: direct), s1 and s2 behind two symmetric NATs (they
# cannot: relayed). Then:
#   - a pings b: exit 0, a pong line "via direct" with b's NAT's outside address;
#   - s1 pings s2 (-c 3): exit 3, every pong line "via relay" and the server;
#   - a pings a key that is not its peer: exit 1 and "no such peer";
#     with b stopped, a pings b (-c 2): exit 1, no pong;
#   - netcheck on a and s1: the reflexive address is the NAT's outside
#     address, the verdict endpoint-independent for a's cone and
#     endpoint-dependent for s1's symmetric NAT; --json parses and has the
#     documented fields.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/natyip.sh"

S=203.0.113.10 WA=203.0.113.21 WB=203.0.113.22 WS1=203.0.113.24 WS2=203.0.113.25

ny_lab
ny_build natlab_public rdv "$S"
ny_build natlab_site sitea port "$WA" 10.0.1.1/24
ny_build natlab_site siteb port "$WB" 10.0.2.1/24
ny_build natlab_site sym1 symmetric "$WS1" 10.0.4.1/24
ny_build natlab_site sym2 symmetric "$WS2" 10.0.5.1/24
ny_build natlab_host sitea a
ny_build natlab_host siteb b
ny_build natlab_host sym1 s1
ny_build natlab_host sym2 s2

ny_rdv_start rdv "$S:7000"
ny_node a 10.77.0.1
ny_node b 10.77.0.2
ny_node s1 10.77.0.3
ny_node s2 10.77.0.4
ny_conf a rdv b
ny_conf b rdv a
ny_conf s1 rdv s2
ny_conf s2 rdv s1
for n in a b s1 s2; do launch_yipd "$n"; done
for n in a b s1 s2; do wait_yipd "$n"; done
wait_ping a 10.77.0.2
wait_ping s1 10.77.0.4

# ---- ping: direct
rc=0
yipctl_of a ping "$(pub_of b)" >"$TMP/ping.direct" 2>&1 || rc=$?
sed 's/^/  a> /' "$TMP/ping.direct"
[ "$rc" = 0 ] || fail "yipctl ping a -> b exited $rc, not 0 (direct)"
grep -Eq "^pong from .* via direct $WB:[0-9]+ in [0-9.]+ ms$" "$TMP/ping.direct" ||
	fail "no pong via direct $WB (b's NAT's outside address)"
grep -q "^path to .*: direct $WB:" "$TMP/ping.direct" || fail "no direct summary line"
# The same by tunnel address (an allowed IP) and by key-derived address.
yipctl_of a ping 10.77.0.2 >/dev/null || fail "ping by allowed address failed"
yipctl_of a ping "$(addr_of b)" >/dev/null || fail "ping by key-derived address failed"

# ---- ping: relayed (symmetric <-> symmetric)
rc=0
yipctl_of s1 ping -c 3 -i 0.5 "$(pub_of s2)" >"$TMP/ping.relay" 2>&1 || rc=$?
sed 's/^/  s1> /' "$TMP/ping.relay"
[ "$rc" = 3 ] || fail "yipctl ping s1 -> s2 exited $rc, not 3 (relayed only)"
n=$(grep -c "^pong from .* via relay $S:7000 (rendezvous server 0) in " "$TMP/ping.relay" || true)
[ "$n" -ge 3 ] || fail "$n pongs via relay $S:7000, want at least 3"
! grep -q "via direct" "$TMP/ping.relay" || fail "a direct pong between two symmetric NATs"

# ---- ping: not a peer, and a peer that is down
rc=0
yipctl_of a ping "$(printf '%064d' 7)" >"$TMP/ping.unknown" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "ping of a key that is no peer exited $rc, not 1"
grep -q "no such peer" "$TMP/ping.unknown" || fail "no 'no such peer': $(cat "$TMP/ping.unknown")"
rc=0
yipctl_of a ping || rc=$?
[ "$rc" = 2 ] || fail "ping without a peer exited $rc, not 2"

# ---- netcheck
nc_check() { # NODE WAN VERDICT
	local out
	out=$(yipctl_of "$1" netcheck --json) || fail "yipctl netcheck --json on $1 exited $?"
	python3 - "$2" "$3" "$out" <<'PY' || fail "$1's netcheck: $out"
import json, sys
d = json.loads(sys.argv[3])
wan, verdict = sys.argv[1:3]
for f in ("version", "device", "probed", "servers_configured", "servers_answered", "udp",
          "ipv4", "ipv6", "nat", "mapping_varies_by_dest", "relay", "preferred_relay", "servers"):
    assert f in d, "no field " + f
assert d["version"] == 1 and d["udp"] is True and d["servers_answered"] == 1, d
assert d["ipv4"].rsplit(":", 1)[0] == wan, (d["ipv4"], wan)
assert d["nat"] == verdict, (d["nat"], verdict)
assert d["mapping_varies_by_dest"] == (verdict == "endpoint-dependent")
assert d["relay"] is True and d["preferred_relay"] == "203.0.113.10:7000"
s = d["servers"][0]
for f in ("index", "address", "state", "transport", "rtt_ms", "reflexive", "alt_port",
          "reflexive_alt", "alt_rtt_ms", "relay", "pending"):
    assert f in s, "no server field " + f
assert s["state"] == "registered" and s["transport"] == "udp", s
assert isinstance(s["rtt_ms"], (int, float)) and 0 < s["rtt_ms"] < 1000, s
assert s["reflexive"] == d["ipv4"] and s["alt_port"] == 7001, s
assert (s["reflexive_alt"] != s["reflexive"]) == (verdict == "endpoint-dependent"), s
PY
}
nc_check a "$WA" endpoint-independent
nc_check s1 "$WS1" endpoint-dependent
yipctl_of a netcheck | sed 's/^/  a> /'
yipctl_of s1 netcheck >"$TMP/nc.s1" || fail "yipctl netcheck on s1 exited $?"
sed 's/^/  s1> /' "$TMP/nc.s1"
grep -q "IPv4: yes, $WS1:" "$TMP/nc.s1" || fail "s1's netcheck text has no IPv4 $WS1"

# ---- ping: the peer is down
kill "$(pid_of b)"
wait "$(pid_of b)" 2>/dev/null || true
rc=0
yipctl_of a ping -c 2 -i 0.5 "$(pub_of b)" >"$TMP/ping.down" 2>&1 || rc=$?
sed 's/^/  a> /' "$TMP/ping.down"
[ "$rc" = 1 ] || fail "ping of a stopped peer exited $rc, not 1"
! grep -q '^pong' "$TMP/ping.down" || fail "a pong from a stopped peer"
grep -q "no reply from" "$TMP/ping.down" || fail "no 'no reply' line"
log "ping: direct, relayed, unknown and down as documented; netcheck: cone and symmetric"
