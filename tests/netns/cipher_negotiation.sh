#!/usr/bin/env bash
# The data cipher is negotiated in the handshake. Two yipd on a veth:
#  1. a on `auto`, b pinned to chacha20-poly1305: both report ChaCha20-Poly1305
#     and a 20 MB TCP transfer arrives byte-exact;
#  2. both on `auto`: AES-256-GCM where the CPU has AES instructions (else
#     ChaCha20-Poly1305), again byte-exact, with nothing failing to decrypt;
#  3. a pinned to aes-256-gcm, b to chacha20-poly1305: no session, no
#     traffic, and b counts the refused handshakes.
. "$(dirname "$0")/lib.sh"

cipher_of() { # cipher_of NAME: the cipher NAME's daemon reports for its peer
	yipctl_of "$1" show --json |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["peers"][0]["cipher"])'
}

restart() { # restart NAME CIPHER: yipd NAME again with cipher=CIPHER
	local n=$1 pid
	eval "pid=\${PID_$n:-}"
	if [ -n "$pid" ]; then
		kill -TERM "$pid"
		wait "$pid" 2>/dev/null || true
	fi
	sed -i '/^cipher=/d' "$TMP/$n.conf"
	sed -i "/^\[peer\]/i cipher=$2" "$TMP/$n.conf"
	start_yipd "$n"
}

transfer() { # transfer WHAT: 20 MB a -> b must arrive intact, nothing undecryptable
	local secs ok d n
	read -r secs ok < <(tcp_copy a 10.77.0.2 $((20 << 20)))
	log "$1: 20 MB in $secs s, sha256 match: $ok"
	[ "$ok" = yes ] || fail "$1: the file arrived corrupted or incomplete"
	for n in a b; do
		d=$(drops "$n" decrypt)
		[ "${d:-0}" -eq 0 ] || fail "$1: $n: $d datagrams failed to decrypt"
	done
}

if grep -qw aes /proc/cpuinfo && grep -qw pclmulqdq /proc/cpuinfo; then
	fast=aes-256-gcm
else
	fast=chacha20-poly1305
fi
log "this CPU's fastest cipher: $fast"

two_peers
tune_tcp cubic
restart a auto
restart b chacha20-poly1305
wait_ping a 10.77.0.2
for n in a b; do
	c=$(cipher_of "$n")
	[ "$c" = chacha20-poly1305 ] || fail "auto against chacha20-poly1305: $n reports '$c'"
done
grep -q "cipher: chacha20-poly1305" <<<"$(yipctl_of a show)" || fail "yipctl show does not name the cipher"
transfer "chacha20-poly1305"

restart b auto
# b restarted: a notices the dead session and handshakes again.
wait_ping a 10.77.0.2
for n in a b; do
	c=$(cipher_of "$n")
	[ "$c" = "$fast" ] || fail "auto on both ends: $n reports '$c', expected $fast"
done
transfer "$fast"

if [ "$fast" = aes-256-gcm ]; then
	restart a aes-256-gcm
	restart b chacha20-poly1305
	if in_ns a ping -c 3 -i 0.5 -W 1 10.77.0.2 >/dev/null 2>&1; then
		fail "aes-256-gcm against chacha20-poly1305 passed traffic"
	fi
	refused=$(drops b handshake_failed)
	log "aes-256-gcm only against chacha20-poly1305 only: b refused $refused handshakes"
	[ "${refused:-0}" -ge 1 ] || fail "b counted no refused handshake"
	grep -q "no data cipher in common" "$TMP/b.log" || fail "b did not say why it refused"
	c=$(cipher_of a)
	[ "$c" = None ] || fail "a reports cipher '$c' without a session"
fi
log "ok"
