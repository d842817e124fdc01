#!/usr/bin/env bash
# drivers: one (control plane: what it checks does not depend on the I/O driver)
# What an attacker on the internet can try against a rendezvous server and
# its nodes, and that each attempt fails and is counted. a (behind a full
# cone, so anyone can send to it) and b (port-restricted) list each other;
# eve, on a public address, runs a yipd of her own that lists b, and sends
# forged datagrams.
#   - A captured Init of a's, replayed to the server from eve's address: the
#     server refuses it (stale_init, once per replay) and still has a at a's
#     address.
#   - eve registers: under her own key, at her own address; nobody else's
#     entry moves.
#   - Forged introductions: Ctrl datagrams not sealed with a's session with
#     the server, sent to a from the server's address (spoofed, raw socket)
#     and from eve's: decrypt; a replayed genuine one: replay; one for no
#     session: unknown_index. a's candidates stay what they were.
#   - Forged relay deliveries (Relay, dir 1) with a wrong token, from the
#     server's address and from eve's: bad_relay; a Relay to the server with
#     a wrong token: relay_token there.
#   - eve looks up b, who does not list her: the server answers UNKNOWN (and
#     counts it), eve gets no path and never learns b's address.
# Through all of it a and b keep pinging each other directly.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/natyip.sh"

S=203.0.113.10 EVE=203.0.113.66

ny_lab
ny_build natlab_public rdv "$S"
ny_build natlab_public eve "$EVE"
ny_build natlab_site full full 203.0.113.21 10.0.1.1/24
ny_build natlab_site port port 203.0.113.22 10.0.2.1/24
ny_build natlab_host full a
ny_build natlab_host port b

# send.py MODE SRC_PORT DST_IP DST_PORT FILE [COUNT]: sends FILE's bytes as
# one UDP datagram (COUNT times, 50 ms apart), from SRC_PORT of the
# namespace's address: "udp" from a bound socket, "raw" from a raw socket
# (no socket needs to own SRC_PORT, so a datagram can leave from the port a
# running server listens on).
cat >"$TMP/send.py" <<'PY'
import socket, struct, sys, time
mode, sport, dst, dport, path = sys.argv[1:6]
count = int(sys.argv[6]) if len(sys.argv) > 6 else 1
data = open(path, "rb").read()
if mode == "udp":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", int(sport)))
    send = lambda: s.sendto(data, (dst, int(dport)))
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
    hdr = struct.pack("!HHHH", int(sport), int(dport), 8 + len(data), 0)  # no checksum
    send = lambda: s.sendto(hdr + data, (dst, 0))
for i in range(count):
    send()
    time.sleep(0.05)
PY
# make.py KIND OUT [ARG]: writes a forged datagram.
cat >"$TMP/make.py" <<'PY'
import os, sys
kind, out = sys.argv[1], sys.argv[2]
def ctrl(index):  # 7 0 0 0, receiver index, a counter never used, 40 bytes of noise and a tag
    return b"\x07\0\0\0" + index + (1 << 40).to_bytes(8, "little") + os.urandom(57)
if kind == "ctrl":            # for the session whose index ARG holds (hex)
    d = ctrl(bytes.fromhex(sys.argv[3]))
elif kind == "ctrl-noindex":  # for no session
    d = ctrl(os.urandom(4))
elif kind == "relay-from":    # a relay delivery to a node, a random token
    d = b"\x08\x01\0\0" + os.urandom(12) + ctrl(os.urandom(4))
elif kind == "relay-to":      # a relay request to the server, a random token, ARG's relay id
    d = b"\x08\0\0\0" + os.urandom(8) + int(sys.argv[3]).to_bytes(4, "little") + ctrl(os.urandom(4))
open(out, "wb").write(d)
PY
# capture NAME IFACE FILTER PCAP: tcpdump in NAME's namespace; sets CAPTURE.
capture() {
	ip netns exec "$(ns "$1")" tcpdump -i "$2" --immediate-mode -U -n -w "$4" "$3" >"$4.out" 2>&1 &
	CAPTURE=$!
	PIDS+=("$CAPTURE")
	local out=$4.out
	poll 5 'grep -q listening "$out"' || fail "tcpdump in $1 did not start"
}

ny_rdv_start rdv "$S:7000"
ny_node a 10.77.0.1
ny_node b 10.77.0.2
ny_node eve 10.77.0.9
ny_conf a rdv b
ny_conf b rdv a
ny_conf eve rdv b

# a's Init to the server, and what the server sends a (seen behind a's NAT).
capture rdv eth0 "udp dst port 7000 and udp[8] = 1" "$TMP/init.pcap"
CAP_INIT=$CAPTURE
capture a eth0 "udp src port 7000 and udp[8] = 7" "$TMP/ctrl.pcap"
CAP_CTRL=$CAPTURE
start_yipd a
start_yipd b
wait_ping a 10.77.0.2
ny_wait_direct a b
sleep 0.3
kill "$CAP_INIT" "$CAP_CTRL"
wait "$CAP_INIT" "$CAP_CTRL" 2>/dev/null || true
A_PUB=$(natlab_public_addr a)
pcap_pick "$TMP/init.pcap" "$TMP/init.bin" 1 "$A_PUB" || fail "no Init from a captured"
pcap_pick "$TMP/ctrl.pcap" "$TMP/ctrl.bin" 7 || fail "no Ctrl to a captured"
A_AT=$(rdv_node rdv a address)
A_RELAY_ID=$(rdv_node rdv a relay_id)
A_INDEX=$(python3 -c 'import sys; print(open(sys.argv[1], "rb").read()[4:8].hex())' "$TMP/ctrl.bin")
CANDS=$(ny_peer a b candidates | python3 -c 'import json, sys; print(" ".join(sorted(c["path"] for c in json.load(sys.stdin))))')
log "a is at $A_AT for the server; its session there has index $A_INDEX; its candidates for b: $CANDS"

# snapshot: a's drop counters, the server's drop counters and counters, as
# "name value" lines.
snapshot() {
	yipctl_of a show --json | python3 -c '
import json, sys
for k, v in json.load(sys.stdin)["drops"].items(): print("a." + k, v)'
	rdv rdv status --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
for k, v in d["drops"].items(): print("rdv." + k, v)
for k, v in d["counters"].items(): print("rdv." + k, v)'
}
snapshot >"$TMP/before"
# moved: the counters that changed since $TMP/before, "name+delta" on one
# line. Not a's no_route: the kernel's router solicitations on yip0 (a few
# seconds apart after it comes up) are TUN packets for no peer. Once eve
# runs, not the lookups and UNKNOWNs her yipd asks for every 2 s (checked
# at the end).
moved() {
	snapshot >"$TMP/after"
	join "$TMP/before" "$TMP/after" |
		awk -v skip="${EVE_ASKS:-}" '$3 != $2 && $1 != "a.no_route" &&
			!(skip && $1 ~ /^rdv\.(lookups|unknowns)$/) { printf "%s+%d ", $1, $3 - $2 }'
}

log "a's Init replayed to the server 5 times from eve's address"
in_ns eve python3 "$TMP/send.py" udp 40000 "$S" 7000 "$TMP/init.bin" 5
poll 5 '[ "$(moved)" = "rdv.stale_init+5 " ]' || true
m=$(moved)
[ "$m" = "rdv.stale_init+5 " ] || fail "the server, for 5 replayed Inits: $m (want rdv.stale_init+5 only)"
[ "$(rdv_node rdv a address)" = "$A_AT" ] || fail "the server moved a to $(rdv_node rdv a address)"
log "refused: $m; a still at $A_AT"

log "eve registers with her own key"
start_yipd eve
poll 10 '[ "$(rdv_node rdv eve registered)" = True ]' 0.2 || true
[ "$(rdv_node rdv eve address)" = "$EVE:51820" ] || fail "eve's entry: $(rdv_node rdv eve address)"
# b's entry must still be there ("missing" is not "not at eve's"), and a
# failed query must fail the test: the addresses are assigned first.
a_at=$(rdv_node rdv a address)
b_at=$(rdv_node rdv b address)
[ "$a_at" = "$A_AT" ] && [ "$b_at" != missing ] && [ "$b_at" != "$EVE:51820" ] ||
	fail "eve moved someone: a at $a_at, b at $b_at"
holders=$(rdv rdv status --json | python3 -c '
import json, sys
print(sum(1 for n in json.load(sys.stdin)["nodes"] if n["address"].startswith(sys.argv[1] + ":")))' "$EVE")
[ "$holders" = 1 ] || fail "$holders server entries at eve's address"
log "eve is a node of her own at $EVE:51820; a and b are where they were"
EVE_ASKS=1
snapshot >"$TMP/before"

log "forged introductions to a: from the server's address, from eve's, a replay, no session"
python3 "$TMP/make.py" ctrl "$TMP/forged1.bin" "$A_INDEX"
python3 "$TMP/make.py" ctrl "$TMP/forged2.bin" "$A_INDEX"
python3 "$TMP/make.py" ctrl-noindex "$TMP/forged3.bin"
in_ns rdv python3 "$TMP/send.py" raw 7000 "${A_AT%:*}" "${A_AT#*:}" "$TMP/forged1.bin"
in_ns eve python3 "$TMP/send.py" udp 40001 "${A_AT%:*}" "${A_AT#*:}" "$TMP/forged2.bin"
in_ns rdv python3 "$TMP/send.py" raw 7000 "${A_AT%:*}" "${A_AT#*:}" "$TMP/ctrl.bin"
in_ns eve python3 "$TMP/send.py" udp 40001 "${A_AT%:*}" "${A_AT#*:}" "$TMP/forged3.bin"
poll 5 '[ "$(moved)" = "a.unknown_index+1 a.replay+1 a.decrypt+2 " ]' || true
m=$(moved)
[ "$m" = "a.unknown_index+1 a.replay+1 a.decrypt+2 " ] ||
	fail "a, for 2 forged, 1 replayed and 1 unaddressed Ctrl: $m"
log "dropped and counted: $m"
snapshot >"$TMP/before"

log "forged relay deliveries to a (wrong token) from the server's address and eve's; a relay to the server with a wrong token"
python3 "$TMP/make.py" relay-from "$TMP/relay1.bin"
python3 "$TMP/make.py" relay-to "$TMP/relay2.bin" "$A_RELAY_ID"
in_ns rdv python3 "$TMP/send.py" raw 7000 "${A_AT%:*}" "${A_AT#*:}" "$TMP/relay1.bin"
in_ns eve python3 "$TMP/send.py" udp 40002 "${A_AT%:*}" "${A_AT#*:}" "$TMP/relay1.bin"
in_ns eve python3 "$TMP/send.py" udp 40002 "$S" 7000 "$TMP/relay2.bin"
poll 5 '[ "$(moved)" = "a.bad_relay+2 rdv.relay_token+1 " ]' || true
m=$(moved)
[ "$m" = "a.bad_relay+2 rdv.relay_token+1 " ] ||
	fail "for 2 forged relay deliveries and 1 relay request: $m (want a.bad_relay+2 rdv.relay_token+1)"
log "dropped and counted: $m"

cands=$(ny_peer a b candidates | python3 -c 'import json, sys; print(" ".join(sorted(c["path"] for c in json.load(sys.stdin))))')
[ "$cands" = "$CANDS" ] || fail "a's candidates for b changed: $cands (were $CANDS)"
[ "$(ny_server_state a 0)" = registered ] || fail "a is no longer registered"
ping_ok a 10.77.0.2 10 -i 0.05 >/dev/null
ping_ok b 10.77.0.1 10 -i 0.05 >/dev/null
[ "$(ny_kind a b)/$(ny_kind b a)" = direct/direct ] || fail "a and b are no longer direct"
log "a's candidates for b unchanged, a registered, a and b still ping directly"

log "eve asks for b, who does not list her"
poll 10 '[ "$(rdv_node rdv eve unknowns)" -ge 1 ] && [ "$(json_get eve show rendezvous.0.unknowns)" -ge 1 ]' 0.2 ||
	fail "no UNKNOWN for eve's lookup: server $(rdv_node rdv eve unknowns), eve $(json_get eve show rendezvous.0.unknowns)"
[ "$(json_get b show rendezvous.0.asks)" -ge 1 ] || fail "the server never asked b"
if in_ns eve ping -n -c 2 -W 1 10.77.0.2 >/dev/null 2>&1; then fail "eve reached b"; fi
[ "$(ny_peer eve b path)" = null ] && [ "$(ny_peer eve b candidates)" = "[]" ] &&
	[ "$(ny_peer eve b established)" = no ] ||
	fail "eve has a way to b: path $(ny_peer eve b path), candidates $(ny_peer eve b candidates)"
B_PUB=$(natlab_public_addr b)
if yipctl_of eve show --json | grep -q -e "$B_PUB" -e "${NATLAB_ADDR[b]}"; then
	fail "b's address ($B_PUB or ${NATLAB_ADDR[b]}) appears in eve's yipctl show"
fi
[ "$(rdv_node rdv eve intros)" = 0 ] || fail "the server introduced eve to someone"
log "eve got UNKNOWN ($(rdv_node rdv eve unknowns) times; server unknowns $(rdv_get rdv counters.unknowns))," \
	"b was asked $(json_get b show rendezvous.0.asks) times and refused; eve has no path to b and no address of b's"
log "ok"
