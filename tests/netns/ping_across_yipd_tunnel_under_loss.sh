#!/usr/bin/env bash
# 10 % random loss each way (nftables, on yip's UDP port in both namespaces):
# at least 99 % of 500 pings at 10 ms spacing must be answered, and FEC must
# be what answered them (its counters move).
. "$(dirname "$0")/lib.sh"

two_peers
start_yipd a
start_yipd b
ping_ok a 10.77.0.2 3 -i 0.1 >/dev/null
read -r _ clean50 clean99 < <(ping_stats a 10.77.0.2 200 -i 0.01)
log "clean: RTT p50 $clean50 ms, p99 $clean99 ms"

add_loss a 10
add_loss b 10
read -r got p50 p99 < <(ping_stats a 10.77.0.2 500 -i 0.01)
dropped=$(( $(loss_dropped a) + $(loss_dropped b) ))
log "10 % loss each way: $got/500 answered, RTT p50 $p50 ms, p99 $p99 ms ($dropped datagrams dropped by nftables)"
[ "$got" -ge 495 ] || fail "only $got of 500 pings answered under 10 % loss"
[ "$dropped" -gt 50 ] || fail "the loss was not applied ($dropped dropped)"
rec=$(( $(peer_field a fec_recovered) + $(peer_field b fec_recovered) ))
[ "$rec" -gt 0 ] || fail "FEC recovered nothing, so the loss was not really repaired"
log "a: $(recovery a)"
log "ok: FEC rebuilt $rec packets"
