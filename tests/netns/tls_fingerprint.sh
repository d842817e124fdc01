#!/usr/bin/env bash
# yip's ClientHello beside chromium's, captured in the same run against the
# same local site (tests/lib/tls_hello.sh: openssl s_server in namespace s,
# the clients in c). chromium loads a page of 24 images, each on a
# connection of its own (a full handshake each, no tickets), so one browser
# start gives some 25 hellos; yip's side makes 24 connections
# (yip_client). tests/tls/hello.py compares the two captures field by
# field: the same JA4, cipher suites, extension set and count, supported
# groups, key-share groups and lengths (a well-formed ML-KEM-768 key, the
# hybrid's X25519 half not the x25519 share), signature algorithms, ALPN,
# ALPS, supported versions, certificate compression, trust anchors, ECH
# GREASE's shape and GREASE at every place chromium has it; and the
# extension order differs between at least 19 of 20 consecutive
# connections on each side. nDPI's ndpiReader must give yip's flows the
# same protocol, risk set and browser guess as chromium's. A short table
# (field, chromium, yip) is printed.
#
# yip's side is yipd's own TLS link (its dials do not depend on the I/O
# driver, but the link is yipd's data path: both drivers run it).
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/tls_hello.sh"
trap 'rc=$?; set +e; hello_reap; (exit $rc); cleanup' EXIT

HELLO=$ROOT/tests/tls/hello.py
for c in chromium tcpdump ndpiReader; do
	command -v "$c" >/dev/null || fail "$c not installed (scripts/deps.sh)"
done
N_YIP=24

# yip_client N: N connections' hellos from namespace c: yipd's own dials
# (hello_yipd, tests/lib/tls_hello.sh).
yip_client() { hello_yipd "$1"; }

# ndpi PCAP: nDPI's verdicts over the capture's flows, one line each of
# flows, proto, risk and browser (the distinct values joined by " | ").
ndpi() {
	ndpiReader -q -i "$1" -v 2 2>&1 | python3 -c '
import re, sys
flows = [l for l in sys.stdin if re.match(r"\s+\d+\s+TCP ", l)]
def of(f):
    b = re.findall(r"\[([^]]*)\]", f)
    proto = [x[7:] for x in b if x.startswith("proto: ")]
    risk = [x[6:] for x in b if x.startswith("Risk: ")]
    guess = [x for x in b if x in ("Chrome", "Firefox", "Safari", "Edge", "Opera")]
    return proto[0] if proto else "-", risk[0] if risk else "none", guess[0] if guess else "-"
v = [of(f) for f in flows]
print("flows %d" % len(v))
for i, k in enumerate(("proto", "risk", "browser")):
    print("%s %s" % (k, " | ".join(sorted({x[i] for x in v})) or "-"))
'
}

HELLO_PAGES=24
# yipd's frames are no HTTP request: a site that serves every connection at once.
HELLO_SITE_PY=1
hello_lab
start=$(date +%s.%N)
hello_capture_start "$TMP/chromium.pcap"
hello_client chromium 1 || log "chromium exited $? (its hellos are what counts)"
hello_capture_stop
mid=$(date +%s.%N)
hello_capture_start "$TMP/yip.pcap"
yip_client "$N_YIP"
hello_capture_stop
log "chromium's page load $(awk -v s="$start" -v e="$mid" 'BEGIN{printf "%.1f", e-s}') s, yip's $N_YIP connections $(awk -v s="$mid" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}') s (captures included)"

# Field by field: the table, and every required row the same on both sides.
rows="ja4,cipher_suites,extension set,extension count,supported_groups,key_share"
rows="$rows,X25519MLKEM768 share,signature_algorithms,alpn,alps,supported_versions"
rows="$rows,compress_certificate,trust_anchors set,ech (kdf aead enc),psk_modes"
rows="$rows,ec_point_formats,legacy_version,record_version,session_id_len,padding"
rows="$rows,grease ext bodies,positions fixed,grease at cipher_suites,grease at extension first"
rows="$rows,grease at extension last,grease at supported_groups,grease at key_share"
rows="$rows,grease at supported_versions,grease at signature_algorithms"
rows="$rows,grease key_share == supported_groups,grease ext first == last"
shown="connections,$rows,record lengths,order differs from previous"
# At least 20 hellos a side, all parsed, and the extension order new
# between at least 19 of 20 consecutive connections on each side.
python3 "$HELLO" compare "$TMP/chromium.pcap" "$TMP/yip.pcap" --names chromium,yip \
	--rows "$shown" --require "$rows" --min-hellos 20 --orders 19/20 >"$TMP/compare.out" || {
	cat "$TMP/compare.out"
	fail "yip's hellos differ from chromium's (above)"
}
got=$(grep -A1 '^connections' "$TMP/compare.out" | tail -1 | sed -n 's/^ *\([0-9]*\) (0 unparsed).*/\1/p')
[ "${got:-0}" -ge "$N_YIP" ] ||
	fail "the capture does not hold yip's $N_YIP connections: $(grep -A1 '^connections' "$TMP/compare.out")"

# nDPI: the same protocol, risks and browser guess for yip's flows as for chromium's.
ndpi "$TMP/chromium.pcap" >"$TMP/ndpi-chromium.out"
ndpi "$TMP/yip.pcap" >"$TMP/ndpi-yip.out"
# The table: hello.py's rows (yip's value under chromium's where they
# differ; ~ marks counts of random choices, not compared), then nDPI's.
{
	cat "$TMP/compare.out"
	w=$(head -1 "$TMP/compare.out" | awk '{ print index($0, "  same") - 1 }')
	paste <(sed 's/ /\t/' "$TMP/ndpi-chromium.out") <(sed 's/^[^ ]* //' "$TMP/ndpi-yip.out") |
		awk -F'\t' -v w="$w" '{
			same = $1 == "flows" ? "~" : $2 == $3 ? "yes" : "NO"
			printf "%-*s  %-4s  %s\n", w, "nDPI " $1, same, $2
			if ($2 != $3) printf "%-*s        %s\n", w, "", $3 }'
} | sed 's/^/    /'
n=$(sed -n 's/^flows //p' "$TMP/ndpi-yip.out")
[ "$n" -eq "$got" ] || fail "nDPI saw $n of yip's $got flows"
for k in proto risk browser; do
	a=$(sed -n "s/^$k //p" "$TMP/ndpi-chromium.out") b=$(sed -n "s/^$k //p" "$TMP/ndpi-yip.out")
	[ "$a" = "$b" ] || fail "nDPI's $k: chromium '$a', yip '$b'"
	case "$a" in *" | "*) fail "nDPI's $k is not one value over chromium's flows: $a" ;; esac
done
log "yip's ClientHello matches chromium's: $(sed -n 's/^ja4 *yes *//p' "$TMP/compare.out")"
