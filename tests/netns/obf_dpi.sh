#!/usr/bin/env bash
# The DPI oracle (docs/obfuscation.md, "Testing it"): ~6 s of traffic between
# two nodes with obf_psk (handshake, pings, a bulk TCP transfer, a rekey every
# 100 ms) captured with tcpdump, segmentation offloads off so the capture holds
# wire-sized datagrams. nDPI's ndpiReader, with and without -d, must call the
# flow Unknown with no risk (or give it a name it also gives random bytes
# of the same shape); over every captured datagram (>= 10 000) the byte
# values at each of the first 32 offsets must pass a chi-square test against
# uniform (family-wise alpha 0.001), and no length may be shared by more than
# 5 % of the handshakes (which only the key tells apart: yip-obfpeek).
# Controls, so the oracle is shown to be able to fail (once, under epoll, the
# driver does not matter to them): plain yip fails the same statistics, and
# wireguard-go on two different ports is labelled WireGuard by nDPI -d.
. "$(dirname "$0")/lib.sh"

command -v ndpiReader >/dev/null || fail "ndpiReader not installed (Debian libndpi-bin; scripts/deps.sh)"
command -v tcpdump >/dev/null || fail "tcpdump not installed"
PEEK=$ROOT/build/tests/yip-obfpeek
STATS=$ROOT/tests/lib/obf_stats.py
[ -x "$PEEK" ] || fail "$PEEK not built"
PORT_A=40123 PORT_B=40457 # ports nDPI has no guess for

two_peers
for n in a b; do
	in_ns "$n" ethtool -K "v$NSP$n" tso off gso off gro off tx-udp-segmentation off >/dev/null ||
		fail "ethtool -K on $n"
done

# capture NAME: tcpdump on a's side into $TMP/NAME.pcap until capture_stop.
capture() {
	: >"$TMP/$1.tcpdump"
	ip netns exec "$(ns a)" tcpdump -i "v${NSP}a" -w "$TMP/$1.pcap" -U -s 0 udp 2>"$TMP/$1.tcpdump" &
	TD=$!
	PIDS+=("$TD")
	local out=$TMP/$1.tcpdump
	poll 5 'grep -q "listening on" "$out"' || fail "tcpdump did not start"
}
capture_stop() {
	sleep 0.5
	kill "$TD"
	wait "$TD" 2>/dev/null || true
}

# yip_run NAME [obf]: the two nodes with fresh keys (and a fresh obf_psk),
# captured through handshakes, pings, 2 s of bulk TCP and rekeys.
yip_run() {
	local name=$1
	write_configs
	sed -i "s/^listen=198.18.0.1:51820/listen=198.18.0.1:$PORT_A/; s/^endpoint=198.18.0.2:51820/endpoint=198.18.0.2:$PORT_B/" "$TMP/a.conf"
	sed -i "s/^listen=198.18.0.2:51820/listen=198.18.0.2:$PORT_B/; s/^endpoint=198.18.0.1:51820/endpoint=198.18.0.1:$PORT_A/" "$TMP/b.conf"
	if [ "${2:-}" = obf ]; then
		PSK=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
		sed -i "/^\[peer\]/i obf_psk=$PSK" "$TMP/a.conf" "$TMP/b.conf"
	fi
	capture "$name"
	start_yipd a YIP_REKEY_INTERVAL_MS=100
	start_yipd b YIP_REKEY_INTERVAL_MS=100
	in_ns a ping -n -q -i 0.05 -c 110 10.77.0.2 >"$TMP/$name.ping" 2>&1 &
	local ping=$!
	in_ns b iperf3 -s -1 -D >/dev/null 2>&1
	sleep 1
	in_ns a iperf3 -c 10.77.0.2 -t 2 >"$TMP/$name.iperf" 2>&1 || fail "$name: iperf3 failed: $(tail -n 2 "$TMP/$name.iperf")"
	wait "$ping" || true
	grep -q " 0% packet loss" "$TMP/$name.ping" || log "$name: pings: $(grep -A1 statistics "$TMP/$name.ping" | tail -n 1)"
	HANDSHAKES=$(peer_field a handshakes)
	capture_stop
	kill "$(pid_of a)" "$(pid_of b)"
	wait "$(pid_of a)" "$(pid_of b)" 2>/dev/null || true
	log "$name: $(awk '/receiver/ { print $(NF-2), $(NF-1) }' "$TMP/$name.iperf") in bulk, $HANDSHAKES handshakes"
}

# ndpi NAME [-d]: ndpiReader's flow lines for the capture (nDPI 4.2 has no JSON).
ndpi() {
	ndpiReader -q ${2:+"$2"} -i "$TMP/$1.pcap" -v 2 2>&1 | grep -E '^[[:space:]]+[0-9]+[[:space:]]+(UDP|TCP) ' || true
}

# stat NAME KEY: one line of obf_stats' output.
stat() { sed -n "s/^$2 //p" "$TMP/$1.stats"; }

# ---- obfuscated ----
yip_run obf obf
python3 "$STATS" "$TMP/obf.pcap" "$PORT_A" "$PORT_B" --hex | "$PEEK" "$PSK" >"$TMP/obf.kinds"
python3 "$STATS" "$TMP/obf.pcap" "$PORT_A" "$PORT_B" "$TMP/obf.kinds" >"$TMP/obf.stats"
# nDPI names some flows of uniformly random bytes too: its RTP rule takes a
# single datagram whose first bytes happen to read as an RTP header (9 % of
# random flows of 40 datagrams in nDPI 4.2). So the obfuscated flow must get
# a name nDPI also gives random data of the same shape (1000 flows with its
# first 64 lengths, directions and spacing, random bytes), and that control
# must be mostly Unknown, or it would excuse anything.
python3 "$STATS" "$TMP/obf.pcap" "$PORT_A" "$PORT_B" --random-control "$TMP/random.pcap" 1000
for d in "" -d; do
	out=$(ndpi obf "$d")
	log "ndpiReader ${d:-(port guessing on)}: $out"
	[ "$(echo "$out" | grep -c .)" -eq 1 ] || fail "nDPI ${d}: expected one flow, got: $out"
	echo "$out" | grep -q "Risk" && fail "nDPI ${d} raised a risk: $out"
	names=$(ndpi random "$d" | grep -o "proto: [^]]*" | sort | uniq -c | sort -rn)
	unknown=$(echo "$names" | awk '$3 == "0/Unknown" { print $1 }')
	[ "${unknown:-0}" -ge 800 ] || fail "nDPI ${d} named most random flows: $(echo $names)"
	name=$(echo "$out" | grep -o "proto: [^]]*")
	if [ "$name" != "proto: 0/Unknown" ]; then
		echo "$names" | grep -qF "$name" ||
			fail "nDPI ${d} named the obfuscated flow as it names no random flow: $out"
		log "nDPI ${d} named it '$name', as it does random flows: $(echo $names)"
	fi
done
log "obf: $(tr '\n' ' ' <"$TMP/obf.stats")"
[ "$(stat obf datagrams)" -ge 10000 ] || fail "only $(stat obf datagrams) datagrams captured (want >= 10000)"
[ "$(stat obf bad)" -eq 0 ] || fail "$(stat obf bad) captured datagrams do not open with the key"
[ "$(stat obf handshakes)" -ge 100 ] || fail "only $(stat obf handshakes) handshake datagrams captured (want >= 100)"
[ "$(stat obf uniform)" = yes ] ||
	fail "byte values at offset $(stat obf chi2_at) are not uniform: chi2 $(stat obf chi2_max) >= $(stat obf chi2_crit)"
awk -v s="$(stat obf hs_maxshare)" 'BEGIN { exit !(s <= 0.05) }' ||
	fail "a handshake length is shared by $(stat obf hs_maxshare) of the handshakes (> 0.05)"

# ---- controls ----
if [ "${YIP_IO:-epoll}" = epoll ]; then
	yip_run plain
	python3 "$STATS" "$TMP/plain.pcap" "$PORT_A" "$PORT_B" - >"$TMP/plain.stats"
	log "plain yip: ndpiReader: $(ndpi plain)"
	log "plain yip: ndpiReader -d: $(ndpi plain -d)"
	log "plain: $(tr '\n' ' ' <"$TMP/plain.stats")"
	[ "$(stat plain datagrams)" -ge 10000 ] || fail "plain: only $(stat plain datagrams) datagrams"
	[ "$(stat plain uniform)" = no ] || fail "the chi-square test passed plain yip: it cannot fail"
	awk -v s="$(stat plain hs_maxshare)" 'BEGIN { exit !(s > 0.05) }' ||
		fail "the handshake-length check passed plain yip: it cannot fail"

	command -v wireguard-go >/dev/null && command -v wg >/dev/null ||
		fail "wireguard-go and wg are needed for the positive control (scripts/deps.sh)"
	capture wg
	umask 077
	for n in a b; do
		wg genkey >"$TMP/$n.wgkey"
		wg pubkey <"$TMP/$n.wgkey" >"$TMP/$n.wgpub"
	done
	# wg_side SELF OTHER PORT OTHER_PORT TUNNEL_IP OTHER_TUNNEL_IP OTHER_UNDERLAY
	wg_side() {
		local dev="wg$NSP$1"
		rm -f "/var/run/wireguard/$dev.sock"
		WG_PROCESS_FOREGROUND=1 ip netns exec "$(ns "$1")" wireguard-go -f "$dev" >"$TMP/wg-$1.log" 2>&1 &
		PIDS+=($!)
		poll 5 '[ -S "/var/run/wireguard/$dev.sock" ]' || fail "wireguard-go did not start on $1"
		in_ns "$1" wg set "$dev" private-key "$TMP/$1.wgkey" listen-port "$3" \
			peer "$(cat "$TMP/$2.wgpub")" endpoint "$7:$4" allowed-ips "$6/32" || fail "wg set on $1"
		in_ns "$1" ip addr add "$5/24" dev "$dev"
		in_ns "$1" ip link set "$dev" up
	}
	wg_side a b "$PORT_A" "$PORT_B" 10.78.0.1 10.78.0.2 198.18.0.2
	wg_side b a "$PORT_B" "$PORT_A" 10.78.0.2 10.78.0.1 198.18.0.1
	ping_ok a 10.78.0.2 5 -i 0.1 >/dev/null
	capture_stop
	out=$(ndpi wg -d)
	log "wireguard-go: ndpiReader -d: $out"
	echo "$out" | grep -q "WireGuard" || fail "nDPI -d did not recognise wireguard-go: the oracle cannot fail"
fi
log "ok: nDPI names obfuscated yip only as it names random bytes, with no risk; bytes uniform (chi2 max $(stat obf chi2_max) < $(stat obf chi2_crit)); handshake lengths spread (max share $(stat obf hs_maxshare))"
