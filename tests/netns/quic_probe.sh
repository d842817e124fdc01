#!/usr/bin/env bash
# The QUIC listener's HTTP/3 decoy (docs/quic-decoy.md) to an independent
# HTTP/3 client: Debian's gtlsclient (ngtcp2's example client on GnuTLS)
# fetches from yip's QUIC listener over real QUIC, and
#   - GET / gets 200 and the built-in site's page, byte for byte the page
#     yip-rendezvous's TLS front serves over HTTP/1.1 (curl -k to the same
#     host), with server: nginx, a date, content-type and content-length;
#   - GET of an unknown path gets 404 and the front's 404 page, POST 405;
#   - 40 requests on one connection are all answered;
#   - b's listen_quic serves the probes while a dials b over quic:// (UDP
#     between them otherwise dropped): the answers are the same (status,
#     header fields but date, body) before a connects and while a pings b
#     through the QUIC link, and every ping arrives;
#   - b's counters: every request answered, nothing refused or malformed.
. "$(dirname "$0")/lib.sh"

RDV=${RDV:-$ROOT/build/yip-rendezvous}
[ -x "$RDV" ] || fail "$RDV not built (run make)"
for t in gtlsclient curl openssl; do
	command -v "$t" >/dev/null || fail "$t is not installed (scripts/deps.sh)"
done

mesh a b c
SRV=198.18.0.2 PROBER=c HOST=b
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
	-subj "/CN=www.example.com" -keyout "$TMP/tls.key" -out "$TMP/tls.pem" 2>/dev/null ||
	fail "openssl req failed"
chmod 600 "$TMP/tls.key"

sed -i "s|^endpoint=198.18.0.2:51820|endpoint=quic://198.18.0.2:443|" "$TMP/a.conf"
sed -i "1a listen_quic=198.18.0.2:443\ntls_cert=$TMP/tls.pem\ntls_key=$TMP/tls.key" "$TMP/b.conf"
for n in a b; do
	o=$([ "$n" = a ] && echo 198.18.0.2 || echo 198.18.0.1)
	in_ns "$n" nft -f - <<NFT
table inet yipblock {
	chain input {
		type filter hook input priority 0; policy accept;
		ip saddr $o udp dport 51820 counter drop
	}
}
NFT
done
start_yipd b

log "yip-rendezvous's TLS front (the built-in site) on TCP $SRV:443, beside the QUIC listener"
(umask 077 && "$RDV" --genkey >"$TMP/server.key")
mkdir -m 0700 "$TMP/ctl-rdv"
chown nobody "$TMP/ctl-rdv"
env "YIP_CTL_DIR=$TMP/ctl-rdv" ip netns exec "$(ns $HOST)" "$RDV" --key "$TMP/server.key" \
	--listen "$SRV:7000" --listen-tcp "$SRV:443" --tls-cert "$TMP/tls.pem" \
	--tls-key "$TMP/tls.key" >"$TMP/rdv.log" 2>&1 &
PIDS+=($!)
poll 5 'grep -q "sandbox on" "$TMP/rdv.log"' || fail "yip-rendezvous did not start"
poll 5 'in_ns $HOST ss -Hlun | grep -q "$SRV:443"' || fail "nothing listens on UDP $SRV:443"

# h3get NAME URI [ARGS...]: gtlsclient's log in $TMP/NAME.txt, the body in $TMP/NAME/.
h3get() {
	local name=$1 uri=$2
	shift 2
	mkdir -p "$TMP/$name"
	in_ns "$PROBER" timeout 20 gtlsclient --exit-on-all-streams-close --no-quic-dump \
		--no-http-dump --download="$TMP/$name" "$@" "$SRV" 443 "$uri" >"$TMP/$name.txt" 2>&1 ||
		fail "gtlsclient $uri: $(tail -n 5 "$TMP/$name.txt")"
}
# hdr NAME FIELD: the value of a response header field gtlsclient printed.
hdr() { sed -n "s/^http: stream 0x0 \\[$2: \\(.*\\)\\]\$/\\1/p" "$TMP/$1.txt" | head -n 1; }
# answer NAME: the response's header fields but date, and the body's hash.
answer() {
	sed -n 's/^http: stream 0x0 \[\([^]]*\)\]$/\1/p' "$TMP/$1.txt" | grep -v '^date: '
	cat "$TMP/$1"/* | sha256sum
}

log "GET / over HTTP/3: 200 and the front's page"
h3get root "https://www.example.com/"
grep -q "Negotiated ALPN is h3" "$TMP/root.txt" || fail "ALPN is not h3: $(grep ALPN "$TMP/root.txt")"
[ "$(hdr root :status)" = 200 ] || fail "GET /: status '$(hdr root :status)'"
[ "$(hdr root server)" = nginx ] || fail "GET /: server '$(hdr root server)'"
[ "$(hdr root content-type)" = text/html ] || fail "GET /: content-type '$(hdr root content-type)'"
date_v=$(hdr root date)
[[ $date_v =~ ^[A-Z][a-z]{2},\ [0-9]{2}\ [A-Z][a-z]{2}\ [0-9]{4}\ [0-9]{2}:[0-9]{2}:[0-9]{2}\ GMT$ ]] ||
	fail "GET /: date '$date_v'"
in_ns "$PROBER" curl -sk -o "$TMP/front.html" "https://$SRV/" || fail "curl to the TLS front failed"
[ -s "$TMP/front.html" ] || fail "the TLS front's page is empty"
cmp -s "$TMP/front.html" "$TMP/root/index.html" ||
	fail "the HTTP/3 page differs from the TLS front's: $(head -c 200 "$TMP/root/index.html")"
[ "$(hdr root content-length)" = "$(stat -c %s "$TMP/root/index.html")" ] ||
	fail "GET /: content-length $(hdr root content-length) for $(stat -c %s "$TMP/root/index.html") bytes"
log "GET /: 200, $(stat -c %s "$TMP/root/index.html") bytes, the TLS front's page; date $date_v"

log "GET /nope: 404 and the front's 404 page; POST: 405"
h3get nope "https://www.example.com/nope"
[ "$(hdr nope :status)" = 404 ] || fail "GET /nope: status '$(hdr nope :status)'"
code=$(in_ns "$PROBER" curl -sk -o "$TMP/front.404" -w '%{http_code}' "https://$SRV/nope")
[ "$code" = 404 ] || fail "the TLS front said $code to /nope"
cmp -s "$TMP/front.404" "$TMP/nope/nope" || fail "the HTTP/3 404 page differs from the front's"
h3get post "https://www.example.com/login" -m POST
[ "$(hdr post :status)" = 405 ] || fail "POST: status '$(hdr post :status)'"

log "40 requests on one connection"
h3get many "https://www.example.com/" -n 40
n200=$(grep -c '^http: stream 0x[0-9a-f]* \[:status: 200\]$' "$TMP/many.txt" || true)
[ "$n200" = 40 ] || fail "40 requests on one connection: $n200 answered 200"

log "a dials b over quic://; the probe again while a pings b through it"
start_yipd a
wait_ping a 10.77.0.2 || fail "a cannot reach b over QUIC"
[ "$(peer_field a link.kind)" = quic ] || fail "a's link to b is '$(peer_field a link.kind)', not quic"
in_ns a ping -n -c 50 -i 0.1 10.77.0.2 >"$TMP/ping.txt" 2>&1 &
pinger=$!
PIDS+=("$pinger")
h3get root2 "https://www.example.com/"
h3get nope2 "https://www.example.com/nope"
wait "$pinger" || true
got=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' "$TMP/ping.txt")
[ "${got:-0}" = 50 ] || fail "a -> b over QUIC during the probes: ${got:-0}/50 pings"
diff <(answer root) <(answer root2) >/dev/null || fail "GET / changed with a peer connected"
diff <(answer nope) <(answer nope2) >/dev/null || fail "GET /nope changed with a peer connected"
log "the same answers with a connected; 50/50 pings over QUIC meanwhile"

dp=$(datapath b)
log "b: $(grep -o 'quic_decoy_[a-z]* [0-9]*' <<<"$dp" | tr '\n' ' ')"
field() { sed -n "s/.*\\b$1 \\([0-9]*\\).*/\\1/p" <<<"$dp"; }
[ "$(field quic_decoy_requests)" = 45 ] || fail "b answered $(field quic_decoy_requests) requests, not 45"
for c in refused malformed errors; do
	[ "$(field "quic_decoy_$c")" = 0 ] || fail "quic_decoy_$c: $(field "quic_decoy_$c")"
done
log "ok"
