#!/usr/bin/env bash
# drivers: one (control plane: what it checks does not depend on the I/O driver)
# Active probing against obfuscated yip (docs/obfuscation.md): a rendezvous
# server and two nodes share an obf_psk; the nodes' sites cannot reach each
# other, so their traffic goes through the server's relay, which must carry
# it (re-wrapped both ways). A prober on the internet sends the server, and
# a prober on a's LAN sends node a: random datagrams, plain yip datagrams,
# replays of captured obfuscated datagrams (handshakes among them),
# truncated and bit-flipped copies, and the datagrams captured relay frames
# carry, cut out of them. Neither the server nor the node may answer any of
# it (tcpdump sees nothing sent to a prober), and every probe is counted
# exactly once: obf drops for whatever does not authenticate, the usual
# counters (stale_init, replay, bad_relay, ...) for authentic replays. A
# node without the key (c) gets nothing from the server either.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/natyip.sh"

S=203.0.113.10 P=203.0.113.30 C=203.0.113.40
PEEK=$ROOT/build/tests/yip-obfpeek
[ -x "$PEEK" ] || fail "$PEEK not built"
PSK=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')

ny_lab
ny_build natlab_public rdv "$S"
ny_build natlab_public p "$P"
ny_build natlab_public c "$C"
ny_build natlab_site sitea port 203.0.113.21 10.0.1.1/24
ny_build natlab_site siteb port 203.0.113.22 10.0.2.1/24
ny_build natlab_host sitea a
ny_build natlab_host sitea q
ny_build natlab_host siteb b
ny_build natlab_block sitea siteb

# Everything the server sends and receives, and everything a's LAN carries.
ip netns exec "$(ns rdv)" tcpdump -i eth0 -U -n -s 0 -w "$TMP/rdv.pcap" udp >"$TMP/td-rdv.out" 2>&1 &
TD1=$!
ip netns exec "$(ns q)" tcpdump -i eth0 -U -n -s 0 -w "$TMP/q.pcap" udp >"$TMP/td-q.out" 2>&1 &
TD2=$!
PIDS+=("$TD1" "$TD2")
poll 5 'grep -q listening "$TMP/td-rdv.out" && grep -q listening "$TMP/td-q.out"' ||
	fail "tcpdump did not start"

ny_rdv_start rdv "$S:7000" --obf-psk "$PSK"
ny_node a 10.77.0.1
ny_node b 10.77.0.2
ny_node c 10.77.0.3
ny_conf --line "obf_psk=$PSK" a rdv b
ny_conf --line "obf_psk=$PSK" b rdv a
ny_conf c rdv a # no obf_psk
start_yipd a
start_yipd b
start_yipd c

wait_ping a 10.77.0.2
ping_ok b 10.77.0.1 5 -i 0.1 >/dev/null
[ "$(ny_kind a b)" = relayed ] || fail "a's path to b is '$(ny_peer a b path)', not relayed"
relayed=$(rdv_node rdv a relay_in_dgrams)
[ "$relayed" -gt 0 ] || fail "the server relayed nothing for a"
log "a and b through the obfuscated relay: $relayed datagrams from a relayed"
# Assigned first: a failed query must fail the test, not pass as "not registered".
st=$(ny_server_state c 0)
[ "$st" != registered ] || fail "c, without the key, registered"

# payloads PCAP FILTER: the UDP payloads in PCAP matching "src dst" as
# "SRC_IP:PORT DST_IP:PORT HEX" lines.
payloads() {
	python3 - "$1" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
off = 24
while off + 16 <= len(data):
    incl = struct.unpack_from("<I", data, off + 8)[0]
    pkt = data[off + 16: off + 16 + incl]
    off += 16 + incl
    if len(pkt) < 42 or pkt[12:14] != b"\x08\x00" or pkt[23] != 17:
        continue
    ihl = (pkt[14] & 15) * 4
    ip = pkt[14:]
    src = ".".join(map(str, ip[12:16])); dst = ".".join(map(str, ip[16:20]))
    sp, dp, ulen = struct.unpack(">HHH", ip[ihl:ihl + 6])
    print("%s:%d %s:%d %s" % (src, sp, dst, dp, ip[ihl + 8: ihl + ulen].hex()))
PY
}
sleep 0.5
# The captures so far: the datagrams a's NAT sent the server, and those a sent on its LAN.
payloads "$TMP/rdv.pcap" | awk -v s="$S" '$2 ~ "^"s":" && $1 !~ "^"s":" { print $3 }' >"$TMP/to-rdv.hex"
payloads "$TMP/rdv.pcap" | awk -v c="$C" '$1 ~ "^"c":"' >"$TMP/from-c.txt"
[ -s "$TMP/from-c.txt" ] || fail "c never tried the server"
"$PEEK" "$PSK" <"$TMP/to-rdv.hex" >"$TMP/to-rdv.kinds"
log "captured to the server: $(sort "$TMP/to-rdv.kinds" | uniq -c | tr -s ' \n' ' ')"
grep -q init "$TMP/to-rdv.kinds" || fail "no Init among the captured datagrams"
A_LAN=${NATLAB_ADDR[a]}

# $TMP/probe.py DST_IP PORT... < HEX: sends every probe kind to each port;
# prints how many it sent.
cat >"$TMP/probe.py" <<'PY'
import os, random, socket, sys
dst, ports = sys.argv[1], [int(p) for p in sys.argv[2:]]
caught = [bytes.fromhex(l.split()[-1]) for l in sys.stdin if l.strip()]
random.seed(7)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 40000))
n = 0
def send(b):
    global n
    for p in ports:
        s.sendto(b, (dst, p)); n += 1
for _ in range(200):                                   # random bytes
    send(os.urandom(random.randint(1, 1400)))
send(b"\x01\0\0\0" + os.urandom(145))                  # plain yip: Init, Resp, Data
send(b"\x02\0\0\0" + os.urandom(73))
send(b"\x04\xff\0\0" + os.urandom(60))
for d in caught:                                       # replays, as they were
    send(d)
for d in caught[:40]:                                  # truncated
    send(d[:random.randint(1, len(d) - 1)])
for d in caught[:40]:                                  # one bit flipped
    i = random.randrange(len(d))
    send(d[:i] + bytes([d[i] ^ (1 << random.randrange(8))]) + d[i + 1:])
for d in caught:                                       # what a relay frame would carry
    if len(d) > 16 + 41 + 9:
        send(d[16:-9])
print(n)
PY

# c has shown it gets nothing; stopped, so its Inits do not mix with the probes' counts.
kill "$(pid_of c)"
wait "$(pid_of c)" 2>/dev/null || true
sleep 0.5

# The drop counters of the server (rdv) or node a, as JSON, and the
# difference of two such snapshots: "total N" then "reason +n" per reason.
# Drops of packets a's own kernel wrote to its TUN (an IPv6 router
# solicitation to no peer: no_route, too_big, no_endpoint, queue_full,
# handshake_timeout) are no probe's and are left out of the total.
drops_json() {
	if [ "$1" = rdv ]; then rdv rdv status --json; else yipctl_of a show --json; fi |
		python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["drops"]))'
}
drops_diff() {
	python3 - "$1" "$2" <<'PY'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
d = {k: b[k] - a.get(k, 0) for k in b if b[k] != a.get(k, 0)}
tun_side = {"no_route", "too_big", "no_endpoint", "queue_full", "handshake_timeout"}
print("total", sum(v for k, v in d.items() if k not in tun_side))
for k in sorted(d):
    print(k, d[k])
PY
}

srv0=$(drops_json rdv)
sent=$(in_ns p python3 "$TMP/probe.py" "$S" 7000 7001 <"$TMP/to-rdv.hex")
# To node a: what it received from the server (relayed datagrams among them), replayed from q.
payloads "$TMP/rdv.pcap" | awk -v s="$S" '$1 ~ "^"s":7000" { print $3 }' | head -n 200 >"$TMP/to-a.hex"
node0=$(drops_json a)
sent_a=$(in_ns q python3 "$TMP/probe.py" "$A_LAN" 51820 <"$TMP/to-a.hex")
get() { awk -v k="$2" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }' "$1"; }
# diffs: the drops since the probes began, in $TMP/srv.diff and
# $TMP/node.diff; true once they add up to the probes sent.
diffs() {
	drops_diff "$srv0" "$(drops_json rdv)" >"$TMP/srv.diff" &&
		drops_diff "$node0" "$(drops_json a)" >"$TMP/node.diff" &&
		[ "$(get "$TMP/srv.diff" total)" -eq "$sent" ] && [ "$(get "$TMP/node.diff" total)" -eq "$sent_a" ]
}
poll 5 diffs || true
log "server: $sent probes; drops: $(tr '\n' ' ' <"$TMP/srv.diff")"
log "node a: $sent_a probes; drops: $(tr '\n' ' ' <"$TMP/node.diff")"
[ "$(get "$TMP/srv.diff" total)" -eq "$sent" ] || fail "the server counted $(get "$TMP/srv.diff" total) drops for $sent probes"
[ "$(get "$TMP/srv.diff" obf)" -ge 400 ] || fail "the server counted only $(get "$TMP/srv.diff" obf) obf drops"
[ "$(get "$TMP/node.diff" total)" -eq "$sent_a" ] || fail "node a counted $(get "$TMP/node.diff" total) drops for $sent_a probes"
[ "$(get "$TMP/node.diff" obf)" -ge 200 ] || fail "node a counted only $(get "$TMP/node.diff" obf) obf drops"

kill "$TD1" "$TD2"
wait "$TD1" "$TD2" 2>/dev/null || true
to_p=$(payloads "$TMP/rdv.pcap" | awk -v p="$P" -v c="$C" '$2 ~ "^"p":" || $2 ~ "^"c":"' | wc -l)
[ "$to_p" -eq 0 ] || fail "the server answered $to_p datagrams to the prober or to c"
to_q=$(payloads "$TMP/q.pcap" | awk -v a="$A_LAN" -v q="${NATLAB_ADDR[q]}" '$1 ~ "^"a":" && $2 ~ "^"q":"' | wc -l)
[ "$to_q" -eq 0 ] || fail "node a answered $to_q datagrams to the prober"
ping_ok a 10.77.0.2 5 -i 0.1 >/dev/null
log "ok: no answer to $sent probes at the server and $sent_a at node a; all counted; c got nothing; the relay still carries a <-> b"
