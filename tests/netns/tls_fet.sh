#!/usr/bin/env bash
# Every first TCP payload of yip's TLS connections passes the "fully
# encrypted traffic" exemptions of Wu et al. (USENIX Security 2023):
# 200 connections of yip's dialer to a local site (tests/lib/tls_hello.sh),
# captured by tcpdump, and tests/tls/fet.py says which rule exempts the
# first payload of each side of each connection; one not exempt fails the
# test, and so does one that does not start like TLS (the client's
# ClientHello, the server's ServerHello), whichever rule exempted it first
# (a ClientHello's first segment is mostly the ML-KEM key, whose 12-bit
# coefficients below 3329 have fewer set bits than random bytes: a few in a
# hundred come out at 3.4 or less and are exempt by popcount first). So that the check is shown able to fail: fet.py's self-check
# (known payloads, and random bytes found not exempt nearly always), and a
# control through the same capture and check, five connections whose
# first payload is random bytes, which must be found not exempt.
#
# The connections are yipd's own (hello_yipd: one yipd with N tls://
# peers at the site dials them all at start).
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/tls_hello.sh"

FET=$ROOT/tests/tls/fet.py
command -v tcpdump >/dev/null || fail "tcpdump not installed (scripts/deps.sh)"
N=200

yip_client() { hello_yipd "$1"; }

python3 "$FET" selftest >"$TMP/selftest.out" || { cat "$TMP/selftest.out"; fail "fet.py's self-check failed"; }
log "$(cat "$TMP/selftest.out")"

# yipd's frames are no HTTP request: a site that serves every connection at once.
HELLO_SITE_PY=1
hello_lab
start=$(date +%s.%N)
hello_capture_start "$TMP/fet.pcap"
yip_client "$N"

hello_capture_stop
log "$N connections in $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}') s (capture included)"
log "tcpdump: $(grep -E "captured|dropped" "$TMP/tcpdump.log" | tr "\n" " ")"
python3 "$FET" check "$TMP/fet.pcap" --min "$N" --tls >"$TMP/fet.out" || {
	cat "$TMP/fet.out"
	fail "a first payload is not exempt, or connections are missing (above)"
}
sed 's/^/    /' "$TMP/fet.out"
got=$(sed -n 's/^connections //p' "$TMP/fet.out")
[ "${got:-0}" -ge "$N" ] || fail "the capture holds ${got:-0} connections, not $N"

# The control: random first payloads, through the same capture and check.
hello_capture_start "$TMP/control.pcap"
in_ns c python3 -c '
import os, socket, sys
for _ in range(5):
    s = socket.create_connection((sys.argv[1], 443), timeout=5)
    s.sendall(os.urandom(1200))
    s.close()
' "$HELLO_SITE" || fail "the control's connections failed"
hello_capture_stop
python3 "$FET" check "$TMP/control.pcap" --min 5 >"$TMP/control.out" &&
	fail "random first payloads passed the check: it cannot fail ($(tr '\n' ' ' <"$TMP/control.out"))"
flagged=$(sed -n 's/^client NOT EXEMPT  *//p' "$TMP/control.out")
[ "${flagged:-0}" -ge 4 ] || fail "only ${flagged:-0} of 5 random first payloads were found not exempt"
log "control: $flagged of 5 random first payloads not exempt; all $N of yip's connections exempt, both sides"
