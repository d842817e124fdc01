#!/usr/bin/env bash
# drivers: one (control plane: the rendezvous server's REALITY front, no yipd data path)
# Whoever does not hold the REALITY front's key meets the real site behind
# it, byte for byte (docs/transports.md, "The REALITY front"). The site
# (tests/tls/realsite.py: OpenSSL, TLS 1.2 and 1.3, a certificate chain of
# about 16 KiB from a CA the test makes, answering 20 ms late: a site that
# far from the front) on one host, yip-rendezvous's front on another, a
# visitor on a third. Each probe is made straight to the site and through
# the front, and must come out the same:
#   - curl gets the same page and 256 KiB file; openssl s_client the same
#     chain (its SHA-256), over TLS 1.3 and over TLS 1.2 only;
#   - garbage, a plain HTTP request, a record header of 64 KiB, an idle
#     connection and one closed at once get the site's own answer (bytes,
#     their SHA-256, whether it closed);
#   - sealed hellos (yip-tls-dial --reality) are answered by the front: the
#     handshake completes with the front's certificate, and the time from
#     the hello to the first byte back is, median over 15 each, within
#     20 % of a spliced hello's; the front's records (a capture) are the
#     site's, type and size, from the ServerHello to the tickets;
#   - every connection ends in exactly one outcome, and none stays open.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/natyip.sh"
. "$ROOT/tests/lib/reality.sh"

reality_lab --chain 16 --delay 20 v=203.0.113.40
chain=$(stat -c %s "$TMP/site-chain.pem")
log "bad settings are refused"
err=$("$RDV" --key "$TMP/rdv.rdvkey" --listen-tcp 127.0.0.1:443 --reality-dest "$W:443" 2>&1) &&
	fail "a REALITY front without its key started"
grep -q "the REALITY front needs" <<<"$err" || fail "no key: $err"
err=$("$RDV" --reality-short-id abc 2>&1) && fail "an odd short id was taken"
grep -q "reality-short-id" <<<"$err" || fail "odd short id: $err"

reality_front --reality-short-id 07
log "the site's chain is $chain bytes of PEM"

# same WHAT ARGS...: visit.py ARGS straight to the site and through the
# front; the two lines (bytes read, closed, their SHA-256) must match.
same() {
	local what=$1 direct front
	shift
	direct=$(in_ns v python3 "$VISIT" "$W" 443 "$@")
	front=$(in_ns v python3 "$VISIT" "$S" 443 "$@")
	direct=$(sed 's/^alpn=[^ ]* //' <<<"$direct")
	front=$(sed 's/^alpn=[^ ]* //' <<<"$front")
	[ "$direct" = "$front" ] || fail "$what: through the front '$front', straight '$direct'"
	log "$what: the same ($front)"
}

log "curl and s_client through the front get the site"
reality_curl_same v "$S"
for v in -tls1_3 -tls1_2; do
	d=$(in_ns v openssl s_client "$v" -connect "$W:443" -servername www.example.com \
		-showcerts </dev/null 2>/dev/null | sed -n '/BEGIN CERT/,/END CERT/p' | sha256sum)
	f=$(in_ns v openssl s_client "$v" -connect "$S:443" -servername www.example.com \
		-showcerts </dev/null 2>/dev/null | sed -n '/BEGIN CERT/,/END CERT/p' | sha256sum)
	[ "$d" = "$f" ] && [ "$d" != "$(printf '' | sha256sum)" ] ||
		fail "s_client $v: the chain through the front differs (or none came)"
	proto=$(in_ns v openssl s_client "$v" -connect "$S:443" -servername www.example.com \
		</dev/null 2>/dev/null | sed -n 's/^New, \(TLSv[0-9.]*\),.*/\1/p' | head -n 1)
	log "s_client $v through the front: the site's chain, $proto"
done

log "what is not a sealed hello gets the site's own answer"
{ printf '\x01'; head -c 600 /dev/urandom; } >"$TMP/garbage.bin"
same "garbage" --raw --send "$TMP/garbage.bin" --wait 1
printf 'GET / HTTP/1.1\r\nHost: www.example.com\r\n\r\n' >"$TMP/http.txt"
same "plain HTTP on 443" --raw --send "$TMP/http.txt" --wait 1
{ printf '\x16\x03\x01\xff\xff'; head -c 2000 /dev/urandom; } >"$TMP/big.bin"
same "a 64 KiB record header" --raw --send "$TMP/big.bin" --wait 1
same "an idle connection" --raw --wait 1.5
same "a connection closed at once" --raw --wait 0

log "sealed hellos are the front's; spliced ones the site's: time to the first byte"
in_ns v "$DIAL" -n 15 --times --sni www.example.com "$S" 443 >"$TMP/spliced.times" ||
	fail "spliced dials failed: $(cat "$TMP/spliced.times")"
in_ns v "$DIAL" -n 15 --times --sni www.example.com --reality "$REALITY_PUB" abcd12 "$S" 443 \
	>"$TMP/sealed.times" 2>"$TMP/sealed.err" || fail "sealed dials failed: $(cat "$TMP/sealed.err")"
read -r ms_s ms_a ratio <<<"$(python3 - "$TMP/spliced.times" "$TMP/sealed.times" <<'PY'
import statistics, sys
def times(p):
    return [float(l.split("=")[1]) for l in open(p) if l.startswith("first_byte_ms=")]
s, a = times(sys.argv[1]), times(sys.argv[2])
assert len(s) == 15 and len(a) == 15, (len(s), len(a))
ms, ma = statistics.median(s), statistics.median(a)
print("%.2f %.2f %.3f" % (ms, ma, ma / ms))
PY
)" || fail "no times"
log "first byte, median of 15: spliced $ms_s ms, sealed $ms_a ms (ratio $ratio)"
awk -v r="$ratio" 'BEGIN { exit !(r >= 0.8 && r <= 1.2) }' ||
	fail "sealed hellos are answered at $ratio x the spliced ones' time, not within 20 %"
# The wrong short id: spliced, and the dial sees the site's certificate.
out=$(in_ns v "$DIAL" --sni www.example.com --reality "$REALITY_PUB" 99 "$S" 443 2>&1) &&
	fail "a dial with an unknown short id completed: $out"
grep -q "the real site answered" <<<"$out" || fail "unknown short id: $out"

log "the front's answer to a sealed hello has the site's records, size for size"
# Both sides of the front: what the visitor gets, and what the site sent
# the front for the same hello (which the front mirrored to it).
for side in v site; do
	case $side in v) host=$S ;; site) host=$W ;; esac
	ip netns exec "$(ns $side)" tcpdump -i eth0 --immediate-mode -U -n -w "$TMP/rec-$side.pcap" \
		"tcp and host $host and port 443" >"$TMP/tcpdump-$side.out" 2>&1 &
	PIDS+=($!)
	eval "TCPDUMP_$side=\$!"
	poll 5 'grep -q listening "$TMP/tcpdump-$side.out"' || fail "tcpdump in $side did not start"
done
in_ns v "$DIAL" --sni www.example.com "$S" 443 >/dev/null || fail "the spliced dial failed"
in_ns v "$DIAL" --sni www.example.com --reality "$REALITY_PUB" abcd12 "$S" 443 >/dev/null ||
	fail "the sealed dial failed"
sleep 0.5
kill "$TCPDUMP_v" "$TCPDUMP_site"
wait "$TCPDUMP_v" "$TCPDUMP_site" 2>/dev/null || true
python3 "$ROOT/tests/tls/records.py" "$TMP/rec-v.pcap" "$S" 443 >"$TMP/records-v.txt" &&
	python3 "$ROOT/tests/tls/records.py" "$TMP/rec-site.pcap" "$W" 443 >"$TMP/records-site.txt" ||
	fail "records.py failed"
[ "$(wc -l <"$TMP/records-v.txt")" = 2 ] && [ "$(wc -l <"$TMP/records-site.txt")" = 2 ] ||
	fail "not two connections in each capture: $(cat "$TMP/records-v.txt" "$TMP/records-site.txt")"
read -r _ spliced_recs <<<"$(sed -n 1p "$TMP/records-v.txt")"
read -r _ sealed_recs <<<"$(sed -n 2p "$TMP/records-v.txt")"
read -r _ site_recs <<<"$(sed -n 2p "$TMP/records-site.txt")"
log "spliced, as the visitor got it: $spliced_recs"
log "sealed, the site's answer:      $site_recs"
log "sealed, the front's answer:     $sealed_recs"
learned=$(grep -o "flight is [0-9]* encrypted records, and it sends [0-9]*" "$TMP/rdv.log" | head -n 1)
[ -n "$learned" ] || fail "the front learned nothing of the site at start: $(grep reality: "$TMP/rdv.log")"
log "the front learned at start: its $learned"
python3 - "$site_recs" "$sealed_recs" "$learned" <<'PY' ||
import sys
site, front, learned = sys.argv[1].split(), sys.argv[2].split(), sys.argv[3].split()
flight, tickets = int(learned[2]), int(learned[-1])
# The site's answer to the mirrored hello: ServerHello, ChangeCipherSpec and
# its encrypted flight (then its close, once the front closed that connection).
assert flight >= 2 and len(site) >= 2 + flight, (site, learned)
n = 2 + flight
assert front[:n] == site[:n], (site[:n], front[:n])
# Then the site's tickets, as many as it sent the front's own handshake.
assert len(front) >= n + tickets and all(r.startswith("23:") for r in front[n:n + tickets]), front
PY
	fail "the sealed answer's records are not the site's"
log "every connection has one outcome, and none is left open"
poll 5 '[ "$(rdv_get rdv reality.open)" = 0 ]' 0.2 || fail "$(rdv_get rdv reality.open) connections still open"
rdv rdv status --summary | sed -n '/REALITY front/,/yip streams/p' | sed 's/^/    /'
python3 - "$(rdv rdv status --json)" <<'PY' || fail "the outcomes do not add up"
import json, sys
r = json.loads(sys.argv[1])["reality"]
o = r["outcomes"]
total = sum(o.values())
assert total == r["accepted"] - r["refused"], (total, r["accepted"], r["refused"], o)
assert o["authenticated"] == 16 and r["yip_streams"] == 16, o
assert o["not_tls"] == 2 and o["record_too_big"] == 1 and o["early"] == 2, o
assert o["short_id"] == 1 and o["seal"] >= 17, o
# Here every early one is a visitor that left before its first record was whole.
assert r["spliced"] == total - o["authenticated"] - o["early"], r
PY
log "ok"
