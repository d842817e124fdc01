#!/usr/bin/env bash
# 5 % random loss each way and 20 ms RTT (yip-linkem): a 50 MB file over TCP
# (CUBIC) arrives intact, and a steady stream of 20 000 UDP datagrams is at
# least 99.5 % delivered; FEC must show work. Then a burst no block's repairs
# can cover (b's input drops the next ~100 full-size datagrams from a): a
# second file arrives intact, and ARQ must have brought packets back.
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
arq0=$(peer_field b arq_recovered)
lost=$(peer_field b lost)
log "b: lost $lost on the wire, rebuilt by FEC $fec, by ARQ $arq0"
[ "${fec:-0}" -gt 0 ] || fail "FEC recovered nothing"

# At 20 ms the bulk target leaves almost nothing to ARQ under random loss
# (0-2 packets per run), so ARQ gets a loss FEC cannot repair: once a second
# transfer runs at full rate, b's input drops 150 kB of full-size datagrams
# from a in a row (about a millisecond), more than a whole 64-packet block.
# Dropped at the start instead, the burst would last many TCP timeouts.
rx() { in_ns b cat /sys/class/net/yip0/statistics/rx_bytes; }
rx0=$(rx)
tcp_copy a 10.77.0.2 $((50 << 20)) >"$TMP/copy2" &
copy=$!
poll 5 '[ $(($(rx) - rx0)) -ge $((5 << 20)) ]' 0.005 || true
in_ns b nft -f - <<EOF
table inet arqburst {
	chain input {
		type filter hook input priority filter; policy accept;
		ip saddr 198.18.0.1 udp dport 51820 meta length > 1000 quota until 150000 bytes counter drop
	}
}
EOF
wait "$copy"
read -r secs ok <"$TMP/copy2"
dropped=$(in_ns b nft list table inet arqburst | sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
arq=$(peer_field b arq_recovered)
log "50 MB with a burst of $dropped datagrams dropped at b: $secs s, sha256 match: $ok; ARQ rebuilt $((arq - arq0))"
[ "$ok" = yes ] || fail "the file sent through the burst arrived corrupted or incomplete"
[ "${dropped:-0}" -ge 64 ] || fail "the burst dropped only ${dropped:-0} datagrams (the transfer ended before it)"
[ $((arq - arq0)) -gt 0 ] || fail "ARQ recovered nothing after a burst FEC cannot cover"
log "ok"
