#!/usr/bin/env bash
# Peers over a QUIC link (docs/transports.md): a dials b's listen_quic
# (endpoint = quic://...); every other UDP datagram between them is dropped
# by nftables, so yip's datagrams can only travel in QUIC DATAGRAM frames.
# Ping and a byte-exact 20 MB transfer a -> b; then 5 % random loss each way
# on the QUIC port: steady UDP through the tunnel must arrive with at most
# 0.5 % loss (FEC and ARQ stay on over QUIC) and ping p99 stay within twice
# the clean one (plus 1 ms, for sub-millisecond RTTs).
. "$(dirname "$0")/lib.sh"

QPORT=4433
two_peers
for n in a b; do
	in_ns "$n" ethtool -K "v$NSP$n" gro off gso off tso off tx-udp-segmentation off >/dev/null ||
		fail "ethtool could not turn off the offloads of v$NSP$n"
done
sed -i "s|^endpoint=198.18.0.2:51820|endpoint=quic://198.18.0.2:$QPORT|" "$TMP/a.conf"
sed -i "1a listen_quic=198.18.0.2:$QPORT\nmtu=auto" "$TMP/b.conf"
sed -i "1a mtu=auto" "$TMP/a.conf"
# QUIC_CC=bbr|cubic: another congestion control than the default (docs/transports.md).
if [ -n "${QUIC_CC:-}" ]; then
	for n in a b; do sed -i "1a quic_cc=$QUIC_CC" "$TMP/$n.conf"; done
fi
# Only the QUIC flow passes: a accepts UDP from b's QUIC port, b UDP to it.
in_ns a nft -f - <<NFT
table inet yipblock {
	chain input {
		type filter hook input priority 0; policy accept;
		ip saddr 198.18.0.2 udp sport != $QPORT counter drop
	}
}
NFT
in_ns b nft -f - <<NFT
table inet yipblock {
	chain input {
		type filter hook input priority 0; policy accept;
		ip saddr 198.18.0.1 udp dport != $QPORT counter drop
	}
}
NFT
start_yipd a
start_yipd b

log "ping a -> b over QUIC"
wait_ping a 10.77.0.2 15 || { yipctl_of a show; fail "a cannot reach b over QUIC"; }
ping_ok b 10.77.0.1 5 -i 0.1 >/dev/null
[ "$(peer_field a link.kind)" = quic ] || { yipctl_of a show; fail "a's link to b is not quic"; }
[ "$(peer_field a link.tls_version)" = QUICv1 ] || fail "a's QUIC link is not QUICv1"
[ "$(peer_field b link.kind)" = quic ] || fail "b's link to a is not quic"
[ "$(peer_field b link.accepted)" = yes ] || { yipctl_of b show; fail "b does not show its link from a as accepted"; }
yipctl_of a show | grep -q "over quic (QUICv1" || { yipctl_of a show; fail "yipctl show does not say the link"; }
log "a: $(yipctl_of a show | grep -m1 'over quic')"
mtu=$(in_ns a cat /sys/class/net/yip0/mtu)
log "tunnel MTU over QUIC (mtu=auto): $mtu"

log "20 MB a -> b over QUIC"
tune_tcp
read -r secs ok < <(tcp_copy a 10.77.0.2 $((20 << 20)))
[ "$ok" = yes ] || fail "the transfer over QUIC did not arrive intact"
log "20 MB over QUIC in $secs s, sha256 match: $ok"

read -r _ c50 c99 < <(ping_stats a 10.77.0.2 200 -i 0.01)
log "clean: RTT p50 $c50 ms, p99 $c99 ms"
clean_udp=$(udp_stream a 10.77.0.2 2000 400 1000)
log "clean: $clean_udp/2000 UDP datagrams through the tunnel"

# 5 % random loss each way, on the QUIC flow only.
in_ns a nft -f - <<NFT
table inet yiploss {
	chain input {
		type filter hook input priority 0; policy accept;
		udp sport $QPORT numgen random mod 100 < 5 counter drop
	}
}
NFT
in_ns b nft -f - <<NFT
table inet yiploss {
	chain input {
		type filter hook input priority 0; policy accept;
		udp dport $QPORT numgen random mod 100 < 5 counter drop
	}
}
NFT
got=$(udp_stream a 10.77.0.2 4000 400 1000)
read -r pgot p50 p99 < <(ping_stats a 10.77.0.2 300 -i 0.01)
dropped=$(( $(loss_dropped a) + $(loss_dropped b) ))
log "5 % loss each way: $got/4000 UDP datagrams arrived; $pgot/300 pings, RTT p50 $p50 ms, p99 $p99 ms ($dropped QUIC packets dropped by nftables)"
log "a: $(recovery a); loss_congested $(peer_field a loss_congested), arq_congested $(peer_field a arq_congested)"
log "b: $(recovery b)"
[ "$dropped" -gt 100 ] || fail "the loss was not applied ($dropped dropped)"
[ "$got" -ge 3980 ] || fail "only $got of 4000 UDP datagrams arrived at 5 % loss (more than 0.5 % lost)"
awk -v p="$p99" -v c="$c99" 'BEGIN { exit !(p <= 2 * c + 1) }' ||
	fail "ping p99 $p99 ms at 5 % loss is more than twice the clean $c99 ms (+1 ms)"
rec=$(( $(peer_field a fec_recovered) + $(peer_field b fec_recovered) ))
[ "$rec" -gt 0 ] || fail "FEC recovered nothing: the loss was not repaired by yip"

# UDP outside QUIC really was dropped.
d=$(in_ns b nft list table inet yipblock | sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
log "b dropped $d non-QUIC UDP datagrams from a"
log "ok"
