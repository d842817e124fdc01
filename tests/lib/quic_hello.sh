# QUIC Initial captures for the QUIC tests; sourced after tests/netns/lib.sh
# (it uses make_ns, link_pair, in_ns, wait_listen, poll, fail, PIDS and TMP)
# and tests/lib/tls_hello.sh (hello_reap).
#
# quic_lab builds two namespaces: s, the site (198.18.0.2), where Debian's
# gtlsserver (ngtcp2-server) answers HTTP/3 on UDP 443 with a self-signed
# certificate for $HELLO_NAME made at run time, and c, the client
# (198.18.0.1). quic_capture_start runs tcpdump of UDP 443 on the site's
# side of the veth; quic_chromium runs one fresh chromium (new profile)
# forced onto QUIC for https://$HELLO_NAME/; quic_capture_stop ends tcpdump.

HELLO_NAME=${HELLO_NAME:-site.test}
HELLO_SITE=198.18.0.2
HELLO_CLIENT=198.18.0.1

quic_lab() {
	local n
	make_ns c
	make_ns s
	link_pair c s "$HELLO_CLIENT" "$HELLO_SITE"
	for n in c s; do
		in_ns "$n" ethtool -K "v$NSP$n" gro off gso off tso off >/dev/null ||
			fail "ethtool could not turn off the offloads of v$NSP$n"
	done
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/CN=$HELLO_NAME" -addext "subjectAltName=DNS:$HELLO_NAME" \
		-keyout "$TMP/site.key" -out "$TMP/site.crt" >/dev/null 2>&1 ||
		fail "openssl could not make the site's certificate"
	mkdir -p "$TMP/www"
	echo "<html><body>site</body></html>" >"$TMP/www/index.html"
	ip netns exec "$(ns s)" gtlsserver --quiet --htdocs="$TMP/www" "$HELLO_SITE" 443 \
		"$TMP/site.key" "$TMP/site.crt" >"$TMP/gtlsserver.log" 2>&1 </dev/null &
	PIDS+=($!)
	wait_listen s udp 443
}

# quic_capture_start PCAP: tcpdump of UDP port 443 on the site's veth.
quic_capture_start() {
	: >"$TMP/tcpdump.log"
	ip netns exec "$(ns s)" tcpdump -i "v${NSP}s" -s 0 -B 16384 -U --immediate-mode -w "$1" \
		udp port 443 >"$TMP/tcpdump.log" 2>&1 &
	QUIC_TCPDUMP=$!
	PIDS+=("$QUIC_TCPDUMP")
	poll 5 'grep -q "listening on" "$TMP/tcpdump.log"' || fail "tcpdump did not start"
}

quic_capture_stop() {
	sleep 0.3
	kill -INT "$QUIC_TCPDUMP" 2>/dev/null || true
	wait "$QUIC_TCPDUMP" 2>/dev/null || true
}

# quic_chromium I: one chromium run forced onto QUIC to the site (run I:
# its profile and log). The site's name maps to its address and nothing
# else resolves, as hello_client does for TCP.
quic_chromium() {
	local i=$1 prof="$TMP/chromium-q$1" rc=0
	mkdir -p "$prof/home"
	in_ns c unshare --pid --fork --kill-child --mount-proc \
		env HOME="$prof/home" timeout -k 5 20 chromium --headless=new --no-sandbox \
		--disable-gpu --user-data-dir="$prof" --ignore-certificate-errors \
		--enable-quic --origin-to-force-quic-on="$HELLO_NAME:443" \
		--no-first-run --disable-background-networking --disable-component-update \
		--disable-sync --disable-default-apps \
		--host-resolver-rules="MAP $HELLO_NAME $HELLO_SITE, MAP * ~NOTFOUND" \
		--dump-dom "https://$HELLO_NAME/index.html" >"$TMP/chromium-q$i.log" 2>&1 || rc=$?
	hello_reap
	return "$rc"
}
