#!/usr/bin/env bash
# drivers: one (control plane: certificates in obfuscated handshakes; obf_dpi covers the data path)
# A CA-gated network with obf_psk: r is the root, a and b have no [peer]
# blocks. Their handshakes carry certificates (Inits of 149 to 917 bytes),
# which the obfuscation envelopes must hold. Each member calls r, which
# admits it by the certificate inside the obfuscated Init; b's record
# reaches a by gossip, and a calls b directly. Pings cross every pair.
# Everything captured on the wire opens with the key (nothing is plain or
# foreign), and every Init and Resp captured carries a certificate.
. "$(dirname "$0")/lib.sh"

command -v tcpdump >/dev/null || fail "tcpdump not installed"
PEEK=$ROOT/build/tests/yip-obfpeek
STATS=$ROOT/tests/lib/obf_stats.py
[ -x "$PEEK" ] || fail "$PEEK not built"

ca_init
ca_nodes r a b
ca_roots "$TMP/roots.txt" 10 r
PSK=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
for n in r a b; do echo "obf_psk=$PSK" >>"$TMP/$n.conf"; done

# Everything a sends and receives, from before its first handshake, one
# datagram per captured packet (no segmentation offloads on any sender).
for n in r a b; do
	in_ns "$n" ethtool -K "v$n$NSP" tso off gso off gro off tx-udp-segmentation off >/dev/null ||
		fail "ethtool -K on $n"
done
: >"$TMP/cap.tcpdump"
ip netns exec "$(ns a)" tcpdump -i "va$NSP" -w "$TMP/a.pcap" -U -s 0 udp 2>"$TMP/cap.tcpdump" &
TD=$!
PIDS+=("$TD")
poll 5 'grep -q "listening on" "$TMP/cap.tcpdump"' || fail "tcpdump did not start"

for n in r a b; do start_yipd "$n"; done
grep -q "obfuscation on" "$TMP/a.log" || fail "a did not turn obfuscation on: $(head -n 5 "$TMP/a.log")"
for n in a b; do
	wait_ping "$n" 10.77.0.1
	ping_ok "$n" 10.77.0.1 10 -i 0.05 >/dev/null
	ping_ok r "10.77.0.$(idx_of "$n")" 10 -i 0.05 >/dev/null
done
# a finds b by gossip through r (b's record), and calls it.
wait_ping a 10.77.0.3
ping_ok a 10.77.0.3 20 -i 0.05 >/dev/null
ping_ok b 10.77.0.2 20 -i 0.05 >/dev/null
ping_ok a "$(addr_of b)" 5 -i 0.05 >/dev/null
path=$(yipctl_of a members --json | python3 -c '
import json, sys
print([m for m in json.load(sys.stdin)["members"] if m["name"] == "node b"][0]["path"])')
case $path in direct*) ;; *) fail "a reaches b by '$path', not directly" ;; esac
log "r, a and b ping each other by certificate address through obfuscated sessions"

# r admitted both members by the certificates in their (obfuscated) Inits,
# refused none, and no node dropped anything as not authentic.
[ "$(json_get r show membership.admitted)" -eq 2 ] ||
	fail "r admitted $(json_get r show membership.admitted) members, expected 2"
for v in no_certificate wrong_ca expired not_yet_valid revoked wrong_network key_mismatch; do
	[ "$(refused r "$v")" -eq 0 ] || fail "r refused a handshake: $v"
done
for n in r a b; do
	[ "$(drops "$n" obf)" -eq 0 ] || fail "$n dropped $(drops "$n" obf) datagrams as not authentic"
	yipctl_of "$n" show | grep -q "obfuscation: on" || fail "yipctl show on $n: obfuscation not on"
done

sleep 0.5
kill "$TD"
wait "$TD" 2>/dev/null || true
python3 "$STATS" "$TMP/a.pcap" 51820 51820 --hex >"$TMP/a.hex"
"$PEEK" --lengths "$PSK" <"$TMP/a.hex" >"$TMP/a.kinds"
total=$(grep -c . "$TMP/a.kinds")
bad=$(grep -c '^bad' "$TMP/a.kinds" || true)
inits=$(grep -c '^init ' "$TMP/a.kinds" || true)
resps=$(grep -c '^resp ' "$TMP/a.kinds" || true)
[ "$total" -ge 100 ] || fail "only $total datagrams captured at a"
[ "$bad" -eq 0 ] || fail "$bad of $total datagrams at a do not open with the key: $(paste -d ' ' "$TMP/a.kinds" "$TMP/a.hex" | awk '$1 == "bad" { print NR ": " length($2) / 2 " bytes, " substr($2, 1, 32) }' | head -n 5)"
[ "$inits" -ge 2 ] && [ "$resps" -ge 2 ] || fail "captured $inits Inits and $resps Resps at a, expected 2 each or more"
# Bare handshakes are 149 (Init) and 77 (Resp) bytes: each one here is longer.
awk '$1 == "init" && $2 <= 149 || $1 == "resp" && $2 <= 77 { exit 1 }' "$TMP/a.kinds" ||
	fail "a handshake without a certificate: $(grep -E '^(init|resp)' "$TMP/a.kinds" | sort | uniq -c)"
sizes=$(grep -E '^(init|resp) ' "$TMP/a.kinds" | awk '{ print $2 }' | sort -n | uniq | tr '\n' ' ')
log "ok: $total datagrams at a, all authentic; $inits Inits and $resps Resps, all with a certificate (plain lengths $sizes)"
