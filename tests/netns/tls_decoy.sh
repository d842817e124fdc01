#!/usr/bin/env bash
# drivers: one (control plane: the rendezvous server's TLS front, no yipd data path)
# yip-rendezvous's TLS front answers everything that is not a yip node like
# the web server behind it. On a bridge of v (visitors, 198.18.0.1), s (the
# server: UDP 7000, TLS on TCP 443, sandboxed) and d (the decoy, python's
# http.server on 198.18.0.3:8080):
#   - curl -k through the front gets exactly the decoy's bytes (a page and a
#     256 KiB file, compared with curl straight to the decoy); a client that
#     offers h2 and http/1.1 gets http/1.1;
#   - openssl s_client sees the front's certificate (its SHA-256 fingerprint
#     is the PEM's);
#   - a node's first frame (a real Init, tests/lib/rdvframe.c) gets the
#     server's Resp in the stream; the same frame again on a new connection
#     (a replayed first record) gets what the decoy gives those bytes;
#   - garbage, and the node's captured TCP bytes replayed raw, get no yip
#     answer: the TLS handshake fails and the connection closes;
#   - an idle visitor gets what an idle connection to the decoy gets;
#   - the counters say each: tls_failed, yip_streams, decoy reasons;
#   - without --decoy, the built-in site answers (200, 404, HEAD, keep-alive,
#     400 for garbage), and the server still runs in its sandbox.
. "$(dirname "$0")/lib.sh"

RDV=${RDV:-$ROOT/build/yip-rendezvous}
FRAME=$ROOT/build/tests/yip-rdvframe
VISIT=$ROOT/tests/tls/visit.py
[ -x "$RDV" ] || fail "$RDV not built (run make)"
[ -x "$FRAME" ] || fail "$FRAME not built (run make)"
for t in curl openssl tcpdump python3; do
	command -v "$t" >/dev/null || fail "$t is not installed (scripts/deps.sh)"
done

bridge_nodes v s d
FRONT=198.18.0.2
DECOY=198.18.0.3:8080

(umask 077 && "$RDV" --genkey >"$TMP/server.key")
SPUB=$(sed -n 's/^public=//p' "$TMP/server.key")
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
	-subj "/CN=www.example.com" -keyout "$TMP/tls.key" -out "$TMP/tls.pem" 2>/dev/null ||
	fail "openssl req failed"
chmod 600 "$TMP/tls.key"

log "the decoy: python3 -m http.server on $DECOY"
mkdir "$TMP/www"
printf '<!DOCTYPE html>\n<title>decoy %s</title>\n<p>the decoy page</p>\n' "$NSP" \
	>"$TMP/www/index.html"
head -c 262144 /dev/urandom >"$TMP/www/big.bin"
ip netns exec "$(ns d)" python3 -m http.server 8080 --bind 198.18.0.3 --directory "$TMP/www" \
	>"$TMP/decoy.out" 2>&1 &
PIDS+=($!)
poll 5 'in_ns v curl -s -o /dev/null "http://$DECOY/"' || fail "the decoy does not answer"

mkdir -m 0700 "$TMP/ctl-s"
chown nobody "$TMP/ctl-s"
# start_server ARGS...: the server with a TLS front on $FRONT:443.
start_server() {
	env "YIP_CTL_DIR=$TMP/ctl-s" ip netns exec "$(ns s)" "$RDV" --key "$TMP/server.key" \
		--listen "$FRONT:7000" --listen-tcp "$FRONT:443" --tls-cert "$TMP/tls.pem" \
		--tls-key "$TMP/tls.key" "$@" >"$TMP/rdv.log" 2>&1 &
	RDV_PID=$!
	PIDS+=("$RDV_PID")
	poll 5 'grep -q "sandbox on" "$TMP/rdv.log"' ||
		fail "yip-rendezvous did not start: $(cat "$TMP/rdv.log")"
	grep -q "TLS front on TCP $FRONT:443" "$TMP/rdv.log" || fail "the start log names no front"
}
rdv() { YIP_CTL_DIR="$TMP/ctl-s" "$RDV" "$@"; }
# front NAME...: counters of the front in `status --json` (tls_front.NAME;
# "drops.X": the engine's drop X), on one line.
front() {
	rdv status --summary --json | python3 -c '
import json, sys
top = json.load(sys.stdin)
out = []
for name in sys.argv[1:]:
    v = top if name.startswith("drops.") else top["tls_front"]
    for k in name.split("."):
        v = v[k]
    out.append(str(v))
print(" ".join(out))' "$@" || fail "no $* in the status"
}
visit() { in_ns v python3 "$VISIT" "$FRONT" 443 "$@"; }
field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }

log "bad settings: the front needs its certificate and key"
err=$("$RDV" --key "$TMP/server.key" --listen-tcp 127.0.0.1:443 2>&1) && fail "no certificate: started"
grep -q "listen_tcp needs tls_cert and tls_key" <<<"$err" || fail "no certificate: $err"
err=$("$RDV" --key "$TMP/server.key" --decoy 127.0.0.1:80 2>&1) && fail "decoy alone: started"
grep -q "they need listen_tcp" <<<"$err" || fail "decoy alone: $err"
err=$("$RDV" --key "$TMP/server.key" --listen-tcp 127.0.0.1:443 --tls-cert "$TMP/none.pem" \
	--tls-key "$TMP/tls.key" --sandbox off 2>&1) && fail "missing certificate file: started"
grep -q "TLS front" <<<"$err" || fail "missing certificate file: $err"

start_server --decoy "$DECOY"

log "curl through the front gets the decoy's exact bytes"
in_ns v curl -s -o "$TMP/direct.html" "http://$DECOY/"
in_ns v curl -sk -o "$TMP/front.html" "https://$FRONT/"
cmp -s "$TMP/direct.html" "$TMP/front.html" || fail "the page through the front differs"
in_ns v curl -s -o "$TMP/direct.bin" "http://$DECOY/big.bin"
in_ns v curl -sk -o "$TMP/front.bin" "https://$FRONT/big.bin"
cmp -s "$TMP/www/big.bin" "$TMP/front.bin" || fail "the 256 KiB file through the front differs"
in_ns v curl -s -o "$TMP/direct.404" -w '%{http_code}' "http://$DECOY/nowhere" >"$TMP/direct.code"
in_ns v curl -sk -o "$TMP/front.404" -w '%{http_code}' "https://$FRONT/nowhere" >"$TMP/front.code"
[ "$(cat "$TMP/front.code")" = "$(cat "$TMP/direct.code")" ] || fail "a missing page: $(cat "$TMP/front.code")"
cmp -s "$TMP/direct.404" "$TMP/front.404" || fail "the decoy's 404 page differs through the front"
# Offered h2 and http/1.1, curl speaks HTTP/1 (the decoy's own version: python answers 1.0).
version=$(in_ns v curl -sk --http2 -o /dev/null -w '%{http_version}' "https://$FRONT/")
direct=$(in_ns v curl -s -o /dev/null -w '%{http_version}' "http://$DECOY/")
[ "$version" = "$direct" ] || fail "curl offering h2 got HTTP $version, the decoy speaks $direct"
out=$(visit --alpn h2,http/1.1 --wait 0.2)
[ "$(field alpn "$out")" = http/1.1 ] || fail "ALPN h2,http/1.1: $out"

log "openssl s_client sees the front's certificate"
want=$(openssl x509 -in "$TMP/tls.pem" -noout -fingerprint -sha256)
got=$(in_ns v openssl s_client -connect "$FRONT:443" -servername www.example.com </dev/null 2>/dev/null |
	openssl x509 -noout -fingerprint -sha256)
[ -n "$want" ] && [ "$got" = "$want" ] || fail "s_client: '$got', the PEM: '$want'"

log "a node's first frame is answered in the stream; the same frame again gets the decoy"
"$FRAME" "$SPUB" >"$TMP/frame.bin"
ip netns exec "$(ns v)" tcpdump -i "vv$NSP" --immediate-mode -U -n -w "$TMP/node.pcap" \
	"tcp and dst host $FRONT and dst port 443" >"$TMP/tcpdump.out" 2>&1 &
TCPDUMP=$!
PIDS+=($TCPDUMP)
poll 5 'grep -q listening "$TMP/tcpdump.out"' || fail "tcpdump did not start"
out=$(visit --send "$TMP/frame.bin" --wait 0.5)
kill "$TCPDUMP"
wait "$TCPDUMP" 2>/dev/null || true
# A Resp (77 bytes, type 2) in a frame: 4d00 02...
[ "$(field bytes "$out")" = 79 ] && [ "$(field first "$out" | cut -c1-6)" = 4d0002 ] ||
	fail "the node's Init got no Resp in the stream: $out"
[ "$(front yip_streams)" = 1 ] || fail "yip_streams $(front yip_streams), wanted 1"
# The same frame again, and an empty line (so that the decoy answers at
# once rather than wait for the rest of a request); the decoy's answer to
# those bytes straight.
{ cat "$TMP/frame.bin"; printf '\r\n\r\n'; } >"$TMP/replay-frame.bin"
direct=$(in_ns v python3 "$VISIT" 198.18.0.3 8080 --raw --send "$TMP/replay-frame.bin" --wait 0.5)
out=$(visit --send "$TMP/replay-frame.bin" --wait 0.5)
[ "$(field sha256 "$out")" = "$(field sha256 "$direct")" ] && [ "$(field bytes "$out")" -gt 0 ] ||
	fail "the replayed first frame: $out; the decoy straight: $direct"
got=$(front decoy_reasons.not_authenticated drops.stale_init)
[ "$got" = "1 1" ] || fail "not_authenticated, the engine's stale_init: $got, wanted 1 1"

log "garbage and the node's raw TCP bytes replayed get no yip answer"
failed0=$(front tls_failed)
head -c 600 /dev/urandom >"$TMP/garbage.bin"
out=$(visit --raw --send "$TMP/garbage.bin" --wait 1)
[ "$(field closed "$out")" = yes ] || fail "garbage: the connection stayed open: $out"
case $(field first "$out") in "" | 15*) ;; *) fail "garbage got more than an alert: $out" ;; esac
# What the node sent, byte for byte (ClientHello, Finished, the frame), in a new connection.
python3 - "$TMP/node.pcap" "$TMP/replay.bin" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
off, out, flow = 24, [], None
while off + 16 <= len(data):
    incl = struct.unpack_from("<I", data, off + 8)[0]
    pkt = data[off + 16:off + 16 + incl]
    off += 16 + incl
    if len(pkt) < 34 or pkt[12:14] != b"\x08\x00":
        continue
    ihl = (pkt[14] & 15) * 4
    tcp = pkt[14 + ihl:]
    sport = struct.unpack_from(">H", tcp, 0)[0]
    payload = tcp[(tcp[12] >> 4) * 4:]
    total = struct.unpack_from(">H", pkt, 16)[0]
    payload = payload[:max(0, total - ihl - (tcp[12] >> 4) * 4)]
    if flow is None:
        flow = sport
    if sport == flow and payload:
        out.append(payload)
open(sys.argv[2], "wb").write(b"".join(out))
PY
[ "$(stat -c %s "$TMP/replay.bin")" -gt 300 ] || fail "the capture holds no handshake"
out=$(visit --raw --send "$TMP/replay.bin" --wait 1)
[ "$(field closed "$out")" = yes ] || fail "the raw replay: the connection stayed open: $out"
grep -q "4d0002" <<<"$(field first "$out")" && fail "the raw replay got a Resp: $out"
case $(field first "$out") in "" | 15* | 16*) ;; *) fail "the raw replay got: $out" ;; esac
poll 3 '[ "$(front tls_failed yip_streams)" = "$((failed0 + 2)) 1" ]' 0.2 ||
	fail "tls_failed and yip_streams: $(front tls_failed yip_streams), wanted $((failed0 + 2)) 1"

log "an idle visitor gets what an idle connection to the decoy gets"
idle0=$(front decoy_reasons.idle)
direct=$(in_ns v python3 "$VISIT" 198.18.0.3 8080 --raw --wait 1)
out=$(visit --wait 1)
[ "$(field bytes "$out")" = "$(field bytes "$direct")" ] &&
	[ "$(field closed "$out")" = "$(field closed "$direct")" ] ||
	fail "idle: through the front $out, straight $direct"
poll 3 '[ "$(front decoy_reasons.idle open)" = "$((idle0 + 1)) 0" ]' 0.2 ||
	fail "the idle visitor was not counted, or connections are still open: $(front decoy_reasons.idle open)"

rdv status --summary | sed -n '/TLS front/,/decoy streams/p' | sed 's/^/    /'
# 11 connections: curl 4 times (not_frame), the ALPN check, s_client and the
# idle visitor (idle), the node and its replayed frame, garbage and the raw replay.
got=$(front tcp_accepted tls_failed tls_timeouts yip_streams decoy_streams \
	decoy_reasons.not_frame decoy_reasons.not_authenticated decoy_reasons.idle decoy_failed)
[ "$got" = "11 2 0 1 8 4 1 3 0" ] ||
	fail "accepted, tls_failed, timeouts, yip, decoy (not_frame, not_authenticated, idle), unreachable: $got, wanted 11 2 0 1 8 4 1 3 0"
# A yipd node registering over tls:// to this front goes here once yipd's
# config takes rendezvous = tls://HOST:PORT: its registration and a relayed
# ping, with the front's yip_streams and frames counted.

log "without --decoy: the built-in site"
kill "$RDV_PID"
wait "$RDV_PID" 2>/dev/null || true
start_server
code=$(in_ns v curl -sk -D "$TMP/site.hdr" -o "$TMP/site.html" -w '%{http_code}' "https://$FRONT/")
[ "$code" = 200 ] && grep -q "<h1>Home</h1>" "$TMP/site.html" || fail "the site's page: $code"
grep -qi "^Server: nginx" "$TMP/site.hdr" || fail "no nginx Server header: $(cat "$TMP/site.hdr")"
[ "$(in_ns v curl -sk -o /dev/null -w '%{http_code}' "https://$FRONT/wp-login.php")" = 404 ] ||
	fail "the site does not answer 404"
[ "$(in_ns v curl -sk -I -o /dev/null -w '%{http_code} %{size_download}' "https://$FRONT/")" = "200 0" ] ||
	fail "HEAD"
[ "$(in_ns v curl -sk -o /dev/null -o /dev/null -w '%{num_connects}\n' "https://$FRONT/" \
	"https://$FRONT/index.html" | paste -sd+ | bc)" = 1 ] || fail "two requests took two connections"
# A request in two pieces: the site waits for the rest.
printf 'GET / HTTP/1.1\r\nHost: www.example.com\r\n' >"$TMP/half1.req"
printf '\r\n' >"$TMP/half2.req"
out=$(visit --send "$TMP/half1.req" --send "$TMP/half2.req" --wait 0.5)
[ "$(field first "$out")" = "$(printf 'HTTP/1.1 200 OK\r' | xxd -p)" ] || fail "a request in two pieces: $out"
printf 'HELLO THERE\r\n\r\n' >"$TMP/bad.req"
out=$(visit --send "$TMP/bad.req" --wait 1)
[ "$(field first "$out")" = "$(printf 'HTTP/1.1 400 Bad' | xxd -p)" ] && [ "$(field closed "$out")" = yes ] ||
	fail "garbage HTTP: $out"
# GET, 404, HEAD, two on one connection, one in two pieces, the 400: 7
# requests on 6 connections.
[ "$(front site_requests decoy_reasons.not_frame)" = "7 6" ] ||
	fail "site requests and not_frame visitors: $(front site_requests decoy_reasons.not_frame), wanted 7 6"
kill -0 "$RDV_PID" 2>/dev/null || fail "yip-rendezvous died (its sandbox?)"
log "ok"
