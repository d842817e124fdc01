#!/usr/bin/env bash
# drivers: one (control plane: what it checks does not depend on the I/O driver)
# Endpoints given as host names (names from a hosts file of the test's own:
# ip netns exec puts /etc/netns/NS/hosts in place of /etc/hosts).
#   - The family listen= can reach wins: with listen on IPv4, a name with an
#     IPv6 address first (a usable one: RFC 6724 would put it first) resolves
#     to its IPv4 address, and the tunnel works. A name with IPv6 addresses
#     only is a file:line error (exit 2), not a tunnel that never comes up.
#   - Names are resolved again while the daemon runs, over DNS (a stub name
#     server in a's namespace, tests/lib/dnsstub.py): a peer whose name
#     first pointed where nobody is is reached once the name points at it,
#     without a restart, with the sandbox on.
. "$(dirname "$0")/lib.sh"

two_peers
in_ns a ip addr add 2001:db8:77::1/64 dev "v${NSP}a" nodad
in_ns b ip addr add 2001:db8:77::2/64 dev "v${NSP}b" nodad

HOSTS_DIR=/etc/netns/$(ns a)
made_etc_netns=no
[ -d /etc/netns ] || made_etc_netns=yes
mkdir -p "$HOSTS_DIR"
# Removes the hosts directory, then lib.sh's cleanup with the test's status
# (set +e first: under errexit the (exit $rc) would end the trap early).
trap 'rc=$?; set +e; rm -rf "$HOSTS_DIR"; [ $made_etc_netns = no ] || rmdir /etc/netns 2>/dev/null; (exit $rc); cleanup' EXIT
# hosts LINES...: rewrites a's hosts file in place (the bind mount follows the inode).
hosts() { printf '%s\n' "$@" >"$HOSTS_DIR/hosts"; }

log "listen=IPv4 and a name with an IPv6 address first"
hosts "2001:db8:77::2 dual.yip.test" "198.18.0.2 dual.yip.test"
first=$(in_ns a getent ahosts dual.yip.test | awk 'NR == 1 {print $1}')
log "getaddrinfo's first answer for dual.yip.test in a: $first"
# The premise: were IPv4 first, a would end up at 198.18.0.2 whether or not
# yipd picks the family listen= can reach, and the check below would show nothing.
[ "$first" = 2001:db8:77::2 ] || fail "dual.yip.test does not resolve IPv6 first in a (first: '$first')"
sed -i 's/^endpoint=.*/endpoint=dual.yip.test:51820/' "$TMP/a.conf"
start_yipd a
start_yipd b
ping_ok a 10.77.0.2 3 -i 0.2 >/dev/null
[ "$(peer_field a endpoint)" = "198.18.0.2:51820" ] || fail "a's endpoint: $(peer_field a endpoint)"
kill -TERM "$(pid_of a)"
wait "$(pid_of a)" || true

log "a name with IPv6 addresses only is an error"
hosts "2001:db8:77::2 v6only.yip.test"
sed -i 's/^endpoint=.*/endpoint=v6only.yip.test:51820/' "$TMP/a.conf"
status=0
err=$(ip netns exec "$(ns a)" "$YIPD" "$TMP/a.conf" 2>&1) || status=$?
[ "$status" -eq 2 ] || fail "v6-only name: exit status $status ($err)"
grep -q "a.conf:[0-9]*: endpoint: cannot resolve 'v6only.yip.test' to an IPv4 address" <<<"$err" ||
	fail "v6-only name: $err"

log "a name resolved again over DNS: first to where nobody is, then to b"
hosts "127.0.0.1 localhost"
echo "nameserver 127.0.0.1" >"$HOSTS_DIR/resolv.conf"
echo 198.18.0.9 >"$TMP/peerb.addr"
ip netns exec "$(ns a)" python3 "$ROOT/tests/lib/dnsstub.py" peerb.yip.test "$TMP/peerb.addr" \
	>"$TMP/dns.log" 2>&1 &
PIDS+=($!)
poll 3 '[ "$(in_ns a getent hosts peerb.yip.test | awk "{print \$1}")" = 198.18.0.9 ]' ||
	fail "the DNS stub does not answer for peerb.yip.test"
sed -i 's/^endpoint=.*/endpoint=peerb.yip.test:51820/' "$TMP/a.conf"
start_yipd a YIP_RESOLVE_INTERVAL_MS=300
in_ns a ping -n -q -c 2 -W 1 10.77.0.2 >/dev/null 2>&1 && fail "a reached b through 198.18.0.9"
[ "$(peer_field a endpoint)" = "198.18.0.9:51820" ] || fail "a's endpoint: $(peer_field a endpoint)"
echo 198.18.0.2 >"$TMP/peerb.addr"
poll 3 'grep -q "peerb.yip.test:51820 now resolves to 198.18.0.2:51820" "$TMP/a.log"' ||
	fail "a did not resolve the name again"
# 20 pings of up to a second each.
poll 2 'in_ns a ping -n -q -c 1 -W 1 10.77.0.2 >/dev/null 2>&1' ||
	fail "no ping from a to b after the name moved"
[ "$(peer_field a endpoint)" = "198.18.0.2:51820" ] || fail "a's endpoint: $(peer_field a endpoint)"
log "ok: a followed the name to b"
