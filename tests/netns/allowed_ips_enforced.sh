#!/usr/bin/env bash
# A peer may only speak for its allowed_ips: a packet from a that claims a
# source outside a's allowed_ips (here c's address, via an extra address on
# a's device) is dropped by b and counted, while a's own traffic flows.
. "$(dirname "$0")/lib.sh"

mesh a b c
for n in a b c; do start_yipd "$n"; done
ping_ok a 10.77.0.2 3 -i 0.05 >/dev/null
before=$(drops b source_not_allowed)

# Spoof: a claims c's tunnel address 10.77.0.3 toward b.
in_ns a ip addr add 10.77.0.3/32 dev yip0
out=$(in_ns a ping -n -c 5 -i 0.05 -W 1 -I 10.77.0.3 10.77.0.2 2>&1 || true)
grep -q " 0 received" <<<"$out" || fail "a spoofed packet was answered: $out"
after=$(drops b source_not_allowed)
[ $((after - before)) -ge 5 ] || fail "b counted $((after - before)) spoofed packets, expected 5"
ping_ok a 10.77.0.2 3 -i 0.05 >/dev/null
ping_ok c 10.77.0.2 3 -i 0.05 >/dev/null
log "ok: b dropped $((after - before)) packets with a forged source; real traffic unaffected"
