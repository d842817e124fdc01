# shellcheck shell=bash disable=SC2034  # sourced; callers read the names set here
# tests/lib/reality.sh: a "real site" and REALITY keys for the
# tests/netns/reality_*.sh tests. Sourced after tests/netns/lib.sh.
#
#   reality_site HOST ADDR [CHAIN_KB [DELAY_MS]]   the test CA, a certificate
#       for www.example.com (with CHAIN_KB: a chain of intermediates about
#       that long), and tests/tls/realsite.py on ADDR:443 in HOST (answering
#       DELAY_MS late); its log $TMP/site.log,
#       its files in $TMP/www (index.html, big.bin), the CA $TMP/ca.pem
#   reality_keys                        $TMP/reality.key; REALITY_PUB
#   reality_curl_same HOST FRONT        curl in HOST, through FRONT and to the
#       site straight, gets the same page, file and certificate
#   reality_cert_sha HOST ADDR          the SHA-256 of the chain ADDR:443 shows
#   reality_lab [--chain KB] [--delay MS] HOST=ADDR...   the NAT lab's internet
#       with the front's host rdv ($S), the site's ($W, reality_site's site),
#       the other hosts named, and the REALITY keys
#   reality_front [OPTS...]             yip-rendezvous in rdv: UDP $S:7000, the
#       REALITY front on $S:443 for the site (short id abcd12, name
#       www.example.com), OPTS added
#
# Sourced after tests/lib/natyip.sh. yip-tls-dial is $DIAL, the visitor
# script $VISIT.

SITE_ADDR=
S=203.0.113.10
W=203.0.113.30
DIAL=$ROOT/build/tests/yip-tls-dial
VISIT=$ROOT/tests/tls/visit.py
[ -x "$DIAL" ] || fail "$DIAL not built (run make)"
for t in curl openssl python3; do
	command -v "$t" >/dev/null || fail "$t is not installed (scripts/deps.sh)"
done

reality_lab() {
	local kb=0 delay=0 h
	while :; do
		case $1 in
		--chain) kb=$2 ;;
		--delay) delay=$2 ;;
		*) break ;;
		esac
		shift 2
	done
	ny_lab
	ny_build natlab_public rdv "$S"
	ny_build natlab_public site "$W"
	for h in "$@"; do ny_build natlab_public "${h%%=*}" "${h#*=}"; done
	reality_site site "$W" "$kb" "$delay"
	reality_keys
}

reality_front() {
	ny_rdv_start rdv "$S:7000" --listen-tcp "$S:443" --reality-dest "$W:443" \
		--reality-private-key "$TMP/reality.key" --reality-short-id abcd12 \
		--reality-server-name www.example.com "$@"
}

reality_site() {
	local host=$1 addr=$2 kb=${3:-0} delay=${4:-0} i prev=ca
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
		-subj "/CN=yip test CA" -keyout "$TMP/ca.key" -out "$TMP/ca.pem" 2>/dev/null ||
		fail "openssl req (CA) failed"
	: >"$TMP/chain.pem"
	# Intermediates, each carrying about 2 KiB of comment, until the chain is kb KiB.
	for ((i = 0; i < kb / 2; i++)); do
		openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
			-subj "/CN=yip test intermediate $i" -keyout "$TMP/int$i.key" \
			-out "$TMP/int$i.csr" 2>/dev/null || fail "openssl req (intermediate) failed"
		printf 'basicConstraints=critical,CA:true\nnsComment=%s\n' \
			"$(head -c 1500 /dev/urandom | base64 -w0)" >"$TMP/int$i.ext"
		openssl x509 -req -in "$TMP/int$i.csr" -CA "$TMP/$prev.pem" -CAkey "$TMP/$prev.key" \
			-CAcreateserial -days 30 -extfile "$TMP/int$i.ext" -out "$TMP/int$i.pem" 2>/dev/null ||
			fail "openssl x509 (intermediate) failed"
		cat "$TMP/int$i.pem" "$TMP/chain.pem" >"$TMP/chain.new" && mv "$TMP/chain.new" "$TMP/chain.pem"
		prev=int$i
	done
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=www.example.com" \
		-keyout "$TMP/site.key" -out "$TMP/site.csr" 2>/dev/null || fail "openssl req (site) failed"
	printf 'subjectAltName=DNS:www.example.com\n' >"$TMP/site.ext"
	openssl x509 -req -in "$TMP/site.csr" -CA "$TMP/$prev.pem" -CAkey "$TMP/$prev.key" \
		-CAcreateserial -days 30 -extfile "$TMP/site.ext" -out "$TMP/site.pem" 2>/dev/null ||
		fail "openssl x509 (site) failed"
	cat "$TMP/site.pem" "$TMP/chain.pem" >"$TMP/site-chain.pem"
	mkdir -p "$TMP/www"
	printf '<!DOCTYPE html>\n<title>the real site %s</title>\n<p>a real page</p>\n' "$NSP" \
		>"$TMP/www/index.html"
	head -c 262144 /dev/urandom >"$TMP/www/big.bin"
	: >"$TMP/site.log"
	ip netns exec "$(ns "$host")" python3 "$ROOT/tests/tls/realsite.py" "$TMP/site-chain.pem" \
		"$TMP/site.key" "$TMP/www" "$addr" 443 "$TMP/site.log" "$delay" >"$TMP/site.out" 2>&1 &
	PIDS+=($!)
	SITE_ADDR=$addr
	poll 5 'in_ns "$host" curl -s --cacert "$TMP/ca.pem" --resolve "www.example.com:443:$addr" \
		-o /dev/null https://www.example.com/' 0.2 ||
		fail "the site does not answer: $(cat "$TMP/site.out")"
}

reality_keys() {
	(umask 077 && "$RDV" --reality-genkey >"$TMP/reality.key")
	REALITY_PUB=$(sed -n 's/^public=//p' "$TMP/reality.key")
	[ ${#REALITY_PUB} = 64 ] || fail "--reality-genkey printed no public key"
}

# reality_cert_sha HOST ADDR: the SHA-256 of the certificates s_client in HOST is shown at ADDR:443.
reality_cert_sha() {
	in_ns "$1" openssl s_client -connect "$2:443" -servername www.example.com -showcerts \
		</dev/null 2>/dev/null | sed -n '/BEGIN CERT/,/END CERT/p' | sha256sum | cut -d' ' -f1
}

reality_curl_same() {
	local host=$1 front=$2 f
	for f in index.html big.bin; do
		in_ns "$host" curl -s --cacert "$TMP/ca.pem" --resolve "www.example.com:443:$front" \
			-o "$TMP/front.$f" "https://www.example.com/$f" || fail "curl through the front: $f"
		cmp -s "$TMP/www/$f" "$TMP/front.$f" || fail "$f through the front differs from the site's"
	done
	[ "$(reality_cert_sha "$host" "$front")" = "$(reality_cert_sha "$host" "$SITE_ADDR")" ] ||
		fail "the certificates through the front differ from the site's"
}
