# ClientHello captures for the TLS fingerprint tests; sourced after
# tests/netns/lib.sh (it uses make_ns, link_pair, in_ns, wait_listen, poll,
# fail, PIDS and TMP).
#
# hello_lab builds two namespaces: s, the site (198.18.0.2), where
# openssl s_server answers on TCP 443 with a self-signed certificate for
# $HELLO_NAME made at run time, and c, the client (198.18.0.1). Offloads are
# off on the veth, so a capture holds wire-sized segments, as a classifier on
# a real path would see them. hello_capture_start runs tcpdump on the site's
# side of the veth; hello_client runs one client for one fresh connection
# (a new chromium process with a new profile each time, so no session is
# resumed); hello_capture_stop ends tcpdump and leaves the capture whole.
#
# With HELLO_PAGES=K (K > 0) the site serves files instead (s_server -WWW,
# one request per connection, then it closes) and issues no session
# tickets: the page a chromium run loads names K images on the site, each
# fetched on a connection of its own, every one a full handshake with a
# hello of its own, so one browser start gives K + 1 or more hellos
# (without HELLO_PAGES, -www answers a status page: two a run). With
# HELLO_SITE_PY=1 the site is tests/tls/site.py instead (the same files,
# no tickets, a thread per connection), for clients that send no request.

HELLO_NAME=${HELLO_NAME:-site.test}
HELLO_SITE=198.18.0.2
HELLO_CLIENT=198.18.0.1

hello_lab() {
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
	# -www answers a GET with a status page and closes, so a client's page
	# load ends; s_server serves connections one after another, without end.
	local mode=(-www)
	if [ "${HELLO_PAGES:-0}" -gt 0 ]; then
		mkdir -p "$TMP/www"
		{
			echo "<html><body>"
			for n in $(seq 1 "$HELLO_PAGES"); do
				echo "<img src=\"/i$n.gif\">"
				printf 'GIF89a' >"$TMP/www/i$n.gif"
			done
			echo "</body></html>"
		} >"$TMP/www/index.html"
		mode=(-WWW -num_tickets 0)
	fi
	if [ "${HELLO_SITE_PY:-0}" = 1 ]; then
		# tests/tls/site.py: a thread per connection, and one that sends no
		# request (yipd's link) dropped after 2 s; s_server would wait on it.
		mkdir -p "$TMP/www"
		[ -e "$TMP/www/index.html" ] || echo "<html><body>site</body></html>" >"$TMP/www/index.html"
		ip netns exec "$(ns s)" python3 "$ROOT/tests/tls/site.py" "$TMP/site.crt" "$TMP/site.key" \
			"$TMP/www" 443 >"$TMP/site.log" 2>&1 </dev/null &
	else
		(cd "$TMP/www" 2>/dev/null || cd "$TMP" && exec ip netns exec "$(ns s)" openssl s_server \
			-accept 443 "${mode[@]}" -quiet -cert "$TMP/site.crt" -key "$TMP/site.key" \
			>"$TMP/site.log" 2>&1 </dev/null) &
	fi
	PIDS+=($!)
	wait_listen s tcp 443
}

# hello_capture_start PCAP: tcpdump of TCP port 443 on the site's veth into
# PCAP. Immediate mode: without it packets wait in the kernel's ring for up
# to a second, and a capture stopped sooner than that after a burst of
# short connections loses them all.
hello_capture_start() {
	: >"$TMP/tcpdump.log"
	ip netns exec "$(ns s)" tcpdump -i "v${NSP}s" -s 0 -B 16384 -U --immediate-mode -w "$1" tcp port 443 \
		>"$TMP/tcpdump.log" 2>&1 &
	HELLO_TCPDUMP=$!
	PIDS+=("$HELLO_TCPDUMP")
	poll 5 'grep -q "listening on" "$TMP/tcpdump.log"' || fail "tcpdump did not start"
}

# hello_capture_stop: ends tcpdump, which writes out what it holds on SIGINT.
hello_capture_stop() {
	sleep 0.3
	kill -INT "$HELLO_TCPDUMP" 2>/dev/null || true
	wait "$HELLO_TCPDUMP" 2>/dev/null || true
}

# hello_reap: kills whatever is still running in the client's namespace
# (chromium's helper processes outlive a killed browser process) and waits
# until they are gone, zombies included (a zombie has left the namespace
# already, but it is still a chromium process until it is reaped).
hello_reap() {
	local pids
	pids=$(ip netns pids "$(ns c)" 2>/dev/null | tr '\n' ' ') || return 0
	[ -n "${pids// /}" ] || return 0
	# shellcheck disable=SC2086
	kill -9 $pids 2>/dev/null || true
	pids=${pids% }
	poll 5 '! ps -p "${pids// /,}" >/dev/null' || true
}

# hello_client KIND I: one connection from namespace c to https://$HELLO_NAME/
# by KIND (chromium, curl, openssl, or yip: this tree's build/tests/yip-tls-dial,
# the TLS client engine); I numbers the run (its profile and log). chromium
# loads /index.html when the site serves pages (HELLO_PAGES).
hello_client() {
	local kind=$1 i=$2 url="https://$HELLO_NAME:443/" rc=0
	[ "${HELLO_PAGES:-0}" -eq 0 ] || url="${url}index.html"
	case $kind in
	chromium)
		local prof="$TMP/chromium-$i"
		mkdir -p "$prof/home"
		# The resolver maps the site's name and nothing else, so the browser
		# makes no other connection; the background services it would start
		# (component updates, sync, ...) are off for the same reason. It runs
		# in a PID namespace of its own: its crash handler daemonizes, and
		# when the namespace's first process ends the kernel kills and reaps
		# every process left in it, so none outlives the run.
		in_ns c unshare --pid --fork --kill-child --mount-proc \
			env HOME="$prof/home" timeout -k 5 30 chromium --headless=new --no-sandbox \
			--disable-gpu --user-data-dir="$prof" --ignore-certificate-errors \
			--no-first-run --disable-background-networking --disable-component-update \
			--disable-sync --disable-default-apps \
			--host-resolver-rules="MAP $HELLO_NAME $HELLO_SITE, MAP * ~NOTFOUND" \
			--dump-dom "$url" >"$TMP/client-$i.log" 2>&1 || rc=$?
		;;
	curl)
		in_ns c timeout 10 curl -sk --resolve "$HELLO_NAME:443:$HELLO_SITE" "$url" \
			>"$TMP/client-$i.log" 2>&1 || rc=$?
		;;
	openssl)
		in_ns c timeout 10 openssl s_client -connect "$HELLO_SITE:443" \
			-servername "$HELLO_NAME" -alpn h2,http/1.1 </dev/null >"$TMP/client-$i.log" 2>&1 || rc=$?
		;;
	yip)
		in_ns c timeout 10 "$ROOT/build/tests/yip-tls-dial" --sni "$HELLO_NAME" \
			"$HELLO_SITE" 443 >"$TMP/client-$i.log" 2>&1 || rc=$?
		;;
	*) fail "unknown client $kind" ;;
	esac
	hello_reap
	return "$rc"
}

# hello_yipd N: N connections from namespace c to the site by yipd
# itself, with N peers at endpoint tls://site:443 (tls_sni the site's name),
# dials each once at start; the site is no yip node, so each link ends and
# is dialed again a second later. The capture keeps the first N and any
# redials; every hello in it is yipd's.
hello_yipd() {
	local i
	"$YIPD" --genkey >"$TMP/yc.key"
	{
		echo "local_private=$(sed -n 's/^private=//p' "$TMP/yc.key")"
		echo "listen=$HELLO_CLIENT:51820"
		echo "device=yip0"
		echo "address=10.77.0.1/24"
		echo "tls_sni=$HELLO_NAME"
		for i in $(seq 1 "$1"); do
			"$YIPD" --genkey >"$TMP/yp.key"
			printf '[peer]\npublic_key=%s\nendpoint=tls://%s:443\nallowed_ips=10.77.1.%s/32\n' \
				"$(sed -n 's/^public=//p' "$TMP/yp.key")" "$HELLO_SITE" "$i"
		done
	} >"$TMP/c.conf"
	chmod 600 "$TMP/c.conf"
	start_yipd c
	# Every one through its handshake: the site's first flight is captured too.
	HELLO_WANT=$1
	poll 20 '[ "$(json_get c stats datapath.tls_opened)" -ge "$HELLO_WANT" ]' 0.2 ||
		fail "yipd opened only $(json_get c stats datapath.tls_opened) of $1 TLS links"
	kill "$(pid_of c)"
	wait "$(pid_of c)" 2>/dev/null || true
}
