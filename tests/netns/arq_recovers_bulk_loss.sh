#!/usr/bin/env bash
# 5 % random loss each way and 20 ms RTT (yip-linkem): a 50 MB file over TCP
# (CUBIC) arrives intact, and a steady stream of 20 000 UDP datagrams is at
# least 99.5 % delivered. FEC and ARQ counters must both show work.
. "$(dirname "$0")/lib.sh"

linked_peers "delay=10ms,loss=5%"
tune_tcp cubic
start_yipd a
start_yipd b
# Pings first, as on any link in use: the loss reports teach the sender
# what the link does before the bulk transfer starts.
in_ns a ping -q -c 200 -i 0.01 10.77.0.2 >/dev/null || true

read -r secs ok < <(tcp_copy a 10.77.0.2 $((50 << 20)))
log "50 MB over TCP (CUBIC, 20 ms RTT, 5 % loss each way): $secs s, sha256 match: $ok"
[ "$ok" = yes ] || fail "the file arrived corrupted or incomplete"

got=$(udp_stream a 10.77.0.2 20000 2000 1200)
log "UDP: $got of 20000 datagrams delivered"
[ "$got" -ge 19900 ] || fail "only $got of 20000 UDP datagrams delivered (need 99.5 %)"

fec=$(peer_field b fec_recovered)
arq=$(peer_field b arq_recovered)
lost=$(peer_field b lost)
log "b: lost $lost on the wire, rebuilt by FEC $fec, by ARQ $arq"
[ "${fec:-0}" -gt 0 ] || fail "FEC recovered nothing"
# Bulk FEC aims at about 3 failed blocks in 1000 and leaves those to ARQ:
# 6-25 packets came back by ARQ in seven runs of this test.
[ "${arq:-0}" -gt 0 ] || fail "ARQ recovered nothing"
log "ok"
