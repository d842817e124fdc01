#!/usr/bin/env bash
# A peer may only speak for its allowed_ips: a packet from a that claims a
# source outside a's allowed_ips (here c's address, via an extra address on
# a's device) is dropped by b and counted, while a's own traffic flows.
# Whether a spoofed echo request got through is seen in b itself (an
# nftables counter on what b's kernel receives from yip0 with c's source):
# b's reply would go to c, so a never sees an answer either way. c's real
# pings must move that counter, or it could not have seen anything.
. "$(dirname "$0")/lib.sh"

mesh a b c
for n in a b c; do start_yipd "$n"; done
in_ns b nft -f - <<NFT
table inet yipspoof {
	chain input {
		type filter hook input priority 0; policy accept;
		iifname "yip0" ip saddr 10.77.0.3 icmp type echo-request counter
	}
}
NFT
# from_c: echo requests from 10.77.0.3 that b's kernel received on yip0.
from_c() { in_ns b nft list table inet yipspoof | sed -n 's/.*counter packets \([0-9]*\).*/\1/p'; }
ping_ok a 10.77.0.2 3 -i 0.05 >/dev/null
before=$(drops b source_not_allowed)

# Spoof: a claims c's tunnel address 10.77.0.3 toward b.
in_ns a ip addr add 10.77.0.3/32 dev yip0
in_ns a ping -n -c 5 -i 0.05 -W 1 -I 10.77.0.3 10.77.0.2 >/dev/null 2>&1 || true
after=$(drops b source_not_allowed)
[ $((after - before)) -ge 5 ] || fail "b counted $((after - before)) spoofed packets, expected 5"
spoofed=$(from_c)
[ "$spoofed" = 0 ] || fail "b's kernel received $spoofed echo requests from 10.77.0.3 while only a sent them"
ping_ok a 10.77.0.2 3 -i 0.05 >/dev/null
ping_ok c 10.77.0.2 3 -i 0.05 >/dev/null
real=$(from_c)
[ "$real" -ge 3 ] || fail "b's counter saw $real of c's 3 echo requests: it cannot see what it checks"
log "ok: b dropped $((after - before)) packets with a forged source, none reached its kernel;" \
	"real traffic unaffected (c's $real echo requests counted)"
