#!/usr/bin/env bash
# A yip QUIC Initial beside chromium's, captured in the same run against the
# same local HTTP/3 server (tests/lib/quic_hello.sh: Debian's gtlsserver in
# namespace s, the clients in c). chromium 156 is forced onto QUIC
# (N_CHROMIUM fresh runs). yip's side twice: tests/tls/quic_dial.c, yip's TLS
# client engine in QUIC mode under ngtcp2 (N_YIP handshakes, each of which
# must complete), and yipd itself, a node with N_YIP peers at
# endpoint = quic://site:443 (tls_sni the site's name), each dialed through
# src/quic with quic_tls_yip (the site is no yip node: each link's Noise
# handshake then goes unanswered). Both yip captures must pass every check
# below against chromium's.
#
# What must hold:
# - tshark decrypts every yip Initial and shows SNI $HELLO_NAME and ALPN h3;
# - tests/tls/quic_initial.py (its own CRYPTO reassembly and hello parser)
#   finds the same shape on both sides: DCID and SCID lengths, token, the
#   hello's cipher suites, extension set and count, groups, key shares,
#   signature algorithms, versions, ALPN, ALPS, certificate compression, PSK
#   modes, ECH GREASE shape, trust anchors, no session id, the set of
#   transport parameter ids and their values, one GREASE TP, the
#   version_information length, the hello over as many Initials, every
#   client datagram of the same size and none below 1200 bytes, and the
#   CRYPTO data framed as chromium frames it (fragments out of order, PING
#   and PADDING between them) and its packet-number lengths (1 byte, then
#   2): yip-quic-dial's first-flight rewrite;
# - nDPI's ndpiReader calls every flow of both QUIC, and gives yip's flows
#   no risk chromium's flows do not also get.
# Printed, not required: the first packet number (ngtcp2 starts at 0, chromium at
# 1), what nDPI makes of the SNI (4.2 cannot reassemble out-of-order CRYPTO,
# so it names none for either side).
#
# yipd's QUIC link is its data path: both drivers run it.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/tls_hello.sh"
. "$ROOT/tests/lib/quic_hello.sh"
trap 'rc=$?; set +e; hello_reap; (exit $rc); cleanup' EXIT

for c in chromium tcpdump ndpiReader tshark gtlsserver; do
	command -v "$c" >/dev/null || fail "$c not installed (scripts/deps.sh)"
done
DIAL=$ROOT/build/tests/yip-quic-dial
[ -x "$DIAL" ] || fail "$DIAL not built (make; it needs libngtcp2-crypto-gnutls-dev)"
INITIAL=$ROOT/tests/tls/quic_initial.py
N_CHROMIUM=${N_CHROMIUM:-2}
N_YIP=${N_YIP:-3}

# ndpi PCAP: one line per flow: proto|sni|risk.
ndpi() {
	ndpiReader -q -i "$1" -v 2 2>&1 | python3 -c '
import re, sys
for l in sys.stdin:
    if not re.match(r"\s+\d+\s+UDP ", l):
        continue
    b = re.findall(r"\[([^]]*)\]", l)
    proto = [x[7:] for x in b if x.startswith("proto: ")]
    sni = [x[14:] for x in b if x.startswith("Hostname/SNI: ")]
    risk = [x[6:].strip() for x in b if x.startswith("Risk: ")]
    print("%s|%s|%s" % (proto[0] if proto else "-", sni[0] if sni else "-",
                        risk[0] if risk else "none"))
'
}

quic_lab
quic_capture_start "$TMP/chromium.pcap"
for i in $(seq 1 "$N_CHROMIUM"); do
	quic_chromium "$i" || log "chromium run $i exited $? (its Initials are what counts)"
done
quic_capture_stop
quic_capture_start "$TMP/yip.pcap"
for i in $(seq 1 "$N_YIP"); do
	in_ns c timeout 10 "$DIAL" --sni "$HELLO_NAME" "$HELLO_SITE" 443 >"$TMP/dial-$i.log" 2>&1 ||
		fail "yip-quic-dial run $i: $(cat "$TMP/dial-$i.log")"
	grep -q '^connected alpn=h3 cipher=' "$TMP/dial-$i.log" || fail "run $i: $(cat "$TMP/dial-$i.log")"
	# Both Initials of the hello framed as chromium frames them.
	[ "$(sed -n 's/.* chaos=\([0-9]*\).*/\1/p' "$TMP/dial-$i.log")" -ge 2 ] ||
		fail "run $i: the first flight was not rewritten: $(cat "$TMP/dial-$i.log")"
	log "yip run $i: $(cat "$TMP/dial-$i.log")"
done
quic_capture_stop
# The same engine through src/quic's client (quic_tls_yip behind its TLS
# seam) completes a handshake too; outside the capture: src/quic sends its
# own packet sizes and does not rewrite the first flight.
in_ns c timeout 10 "$DIAL" --conn on --sni "$HELLO_NAME" "$HELLO_SITE" 443 >"$TMP/dial-conn.log" 2>&1 ||
	fail "yip-quic-dial --conn on: $(cat "$TMP/dial-conn.log")"
grep -q '^connected alpn=h3 cipher=.* via=quic_conn$' "$TMP/dial-conn.log" ||
	fail "src/quic with quic_tls_yip: $(cat "$TMP/dial-conn.log")"
log "src/quic + quic_tls_yip: $(cat "$TMP/dial-conn.log")"

# yipd's own dials.
"$YIPD" --genkey >"$TMP/yc.key"
{
	echo "local_private=$(sed -n 's/^private=//p' "$TMP/yc.key")"
	echo "listen=$HELLO_CLIENT:51820"
	echo "device=yip0"
	echo "address=10.77.0.1/24"
	echo "tls_sni=$HELLO_NAME"
	for i in $(seq 1 "$N_YIP"); do
		"$YIPD" --genkey >"$TMP/yp.key"
		printf '[peer]\npublic_key=%s\nendpoint=quic://%s:443\nallowed_ips=10.77.1.%s/32\n' \
			"$(sed -n 's/^public=//p' "$TMP/yp.key")" "$HELLO_SITE" "$i"
	done
} >"$TMP/c.conf"
chmod 600 "$TMP/c.conf"
quic_capture_start "$TMP/yipd.pcap"
start_yipd c
# Every peer's first dial (the first flight and the server's answer).
poll 15 '[ "$(python3 "$INITIAL" json "$TMP/yipd.pcap" 2>/dev/null | grep -c "\"client\"")" -ge "$N_YIP" ]' 0.5 ||
	true
sleep 1
kill "$(pid_of c)"
wait "$(pid_of c)" 2>/dev/null || true
quic_capture_stop

# check NAME: NAME.pcap's Initials against chromium's.
check() {
	# tshark decrypts yip's Initials: SNI and ALPN h3 in every hello.
	tshark -r "$TMP/$1.pcap" -Y 'tls.handshake.type == 1' -T fields \
		-e tls.handshake.extensions_server_name -e tls.handshake.extensions_alpn_str \
		>"$TMP/tshark-$1.out" 2>/dev/null || fail "tshark could not read the capture"
	log "tshark on $1's hellos: $(sort "$TMP/tshark-$1.out" | uniq -c | tr -s ' \t\n' ' ')"
	[ "$(grep -c . "$TMP/tshark-$1.out")" -ge "$N_YIP" ] ||
		fail "tshark decoded $(grep -c . "$TMP/tshark-$1.out") $1 hellos, fewer than $N_YIP"
	if grep -qv "^$HELLO_NAME	h3\$" "$TMP/tshark-$1.out"; then
		fail "a yip hello without SNI $HELLO_NAME and ALPN h3: $(cat "$TMP/tshark-$1.out")"
	fi

	# The shape, field by field.
	rows="dcid_len,scid_len,token_len,udp_payload,hello_packets,session_id_len,ciphers,ext_set"
	rows="$rows,ext_count,sni,alpn,alps,groups,key_share,sigalgs,versions,compress_certificate"
	rows="$rows,psk_modes,ech_shape,trust_anchors,tp_ids,tp_grease,tp_values,version_information_len"
	rows="$rows,frame_kinds,pn_len"
	python3 "$INITIAL" compare "$TMP/chromium.pcap" "$TMP/$1.pcap" --names chromium,"$1" \
		--require "$rows" >"$TMP/compare-$1.out" || {
		cat "$TMP/compare-$1.out"
		fail "yip's QUIC Initial differs from chromium's in a required row"
	}
	cat "$TMP/compare-$1.out"
	[ "$(python3 "$INITIAL" json "$TMP/chromium.pcap" | grep -c '"client"')" -ge "$N_CHROMIUM" ] ||
		fail "fewer than $N_CHROMIUM chromium connections captured"

	# nDPI: QUIC for every flow; yip's risks a subset of chromium's.
	ndpi "$TMP/chromium.pcap" >"$TMP/ndpi-chromium.out"
	ndpi "$TMP/$1.pcap" >"$TMP/ndpi-$1.out"
	log "nDPI chromium: $(sort "$TMP/ndpi-chromium.out" | uniq -c | tr -s ' \n' ' ')"
	log "nDPI $1: $(sort "$TMP/ndpi-$1.out" | uniq -c | tr -s ' \n' ' ')"
	[ "$(grep -c . "$TMP/ndpi-$1.out")" -ge "$N_YIP" ] || fail "nDPI saw fewer than $N_YIP yip flows"
	[ -s "$TMP/ndpi-chromium.out" ] || fail "nDPI saw no chromium flow"
	if grep -v '^[0-9]*/QUIC|' "$TMP/ndpi-chromium.out" "$TMP/ndpi-$1.out"; then
		fail "a flow nDPI does not call QUIC"
	fi
	python3 - "$TMP/ndpi-chromium.out" "$TMP/ndpi-$1.out" <<-'PY' || fail "nDPI gives yip's flows a risk chromium's do not get"
	import re, sys
	def risks(p):
	    out = set()
	    for l in open(p):
	        r = l.rstrip("\n").split("|")[2]
	        if r != "none":
	            out |= {x.strip() for x in re.split(r"\*\*", r) if x.strip()}
	    return out
	c, y = risks(sys.argv[1]), risks(sys.argv[2])
	print("risks chromium %s, yip %s" % (sorted(c) or "none", sorted(y) or "none"))
	sys.exit(0 if y <= c else 1)
	PY
}

check yip
check yipd
log "ok"
