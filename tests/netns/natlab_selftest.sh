#!/usr/bin/env bash
# natlab_selftest: builds the NAT lab of tests/lib/natlab.sh and checks, with
# plain UDP probes (tests/lib/udpprobe.py, no yip), that every router behaves
# as named: mapping and filtering of each NAT behaviour, hairpinning, two hosts
# behind one NAT without it, double NAT, flushing a router's mappings, the
# conntrack timeouts, blocking, and which pairs simple hole punching with a
# rendezvous gets through. Runs no yip daemon, so run.sh runs it once.
# Needs root.
# check's conditions are single-quoted on purpose: they are eval'ed there.
# shellcheck disable=SC2016,SC2034
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$ROOT/tests/lib/natlab.sh"
NAME=natlab_selftest

if [ "$(id -u)" -ne 0 ]; then
	echo "$NAME: needs root (network namespaces, nftables)" >&2
	exit 1
fi
for tool in ip nft conntrack sysctl python3; do
	command -v "$tool" >/dev/null || {
		echo "$NAME: $tool not found (scripts/deps.sh installs it)" >&2
		exit 1
	}
done

TMP=$(mktemp -d "/tmp/$NAME.XXXXXX")
NSS=()
PIDS=()
PASS=0
FAILED=0

cleanup() {
	local rc=$? p n
	trap - EXIT
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	for n in "${NSS[@]}"; do ip netns del "$n" 2>/dev/null || true; done
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
natlab_track() { case $1 in ns) NSS+=("$2") ;; pid) PIDS+=("$2") ;; esac; }

ok() {
	echo "ok - $*"
	PASS=$((PASS + 1))
}
bad() {
	echo "FAIL - $*"
	FAILED=$((FAILED + 1))
}
# check CONDITION MESSAGE: ok or FAIL by a shell condition (eval'ed).
check() { if eval "$1"; then ok "$2"; else bad "$2"; fi; }
# build CMD...: a lab step; without the lab nothing can be checked.
build() { "$@" || { echo "$NAME: $NATLAB_ERR" >&2 && exit 1; }; }
# val FILE KEY: the first KEY=value of a probe's output.
val() { sed -n "s/^$2=//p" "$1" | head -n 1; }
# mapped FILE DEST: the reflexive address the server's endpoint DEST saw.
mapped() { sed -n "s/^mapped=$2 //p" "$1" | head -n 1; }
# oneline FILE: a probe's output on one line, for messages.
oneline() { tr '\n' ' ' <"$1"; }

# ---- the lab ---------------------------------------------------------------------
# stun has two public addresses, so probes can tell address from port
# dependence; every site has its own /24.
S1=203.0.113.10 S2=203.0.113.11
build natlab_internet "nl$$"
build natlab_public stun "$S1" "$S2"
build natlab_site --hairpin full full 203.0.113.21 10.0.1.1/24
build natlab_site addr addr 203.0.113.22 10.0.2.1/24
build natlab_site port port 203.0.113.23 10.0.3.1/24
build natlab_site sym symmetric 203.0.113.24 10.0.4.1/24
build natlab_site sym2 symmetric 203.0.113.25 10.0.5.1/24
build natlab_site port2 port 203.0.113.26 10.0.7.1/24
build natlab_double_nat cgn 203.0.113.30 home port 10.0.6.1/24
build natlab_host full f1
build natlab_host full f2
build natlab_host full f3
build natlab_host addr a1
build natlab_host port p1
build natlab_host port p2
build natlab_host sym s1
build natlab_host sym2 t1
build natlab_host port2 q1
build natlab_host home d1
build natlab_server stun "$TMP/server.log" "$S1:3478" "$S1:3479" "$S2:3478" "$S2:3479"

# ---- addresses ----------------------------------------------------------------------
seen=""
for r in full addr port sym sym2 port2 cgn home; do
	if natlab_wan_addr "$r"; then seen="$seen $r=$NATLAB_WAN"; else seen="$seen $r=none"; fi
done
want=" full=203.0.113.21 addr=203.0.113.22 port=203.0.113.23 sym=203.0.113.24 sym2=203.0.113.25"
want="$want port2=203.0.113.26 cgn=203.0.113.30 home=100.64.0.2"
check '[ "$seen" = "$want" ]' "WAN addresses read from the routers:$seen"

# ---- mapping and filtering of each behaviour -----------------------------------------
# natlab_classify: one echo to each of three endpoints (S1 two ports, S2) from
# one socket; from a fresh socket that contacted S1:3478 only, datagrams from
# S1:3479 and S2. What each router was built to do, spelled out here rather
# than taken from the library; natlab_expected must agree.
declare -A HOST=([full]=f1 [addr]=a1 [port]=p1 [sym]=s1 [home]=d1)
declare -A MAPPING=([full]=endpoint-independent [addr]=endpoint-independent
	[port]=endpoint-independent [sym]=address-and-port-dependent [home]=endpoint-independent)
declare -A FILTERING=([full]=endpoint-independent [addr]=address-dependent
	[port]=address-and-port-dependent [sym]=address-and-port-dependent
	[home]=address-and-port-dependent)
for r in full addr port sym home; do
	pub=$(natlab_public_addr "$r")
	natlab_classify "${HOST[$r]}" "$S1" "$S2" || NATLAB_CLASSIFIED="$NATLAB_ERR"
	m=$NATLAB_MAPPING f=$NATLAB_FILTERING
	ips=$(echo "$NATLAB_CLASSIFIED" | grep -o 'mapped=[^ ]* [0-9.]*' | awk '{ print $2 }' | sort -u | tr '\n' ' ')
	check '[ "$m" = "${MAPPING[$r]}" ] && [ "$ips" = "$pub " ]' \
		"$r: mapping ${m:-none} (want ${MAPPING[$r]}), seen from $pub only: $NATLAB_CLASSIFIED"
	check '[ "$f" = "${FILTERING[$r]}" ]' "$r: filtering ${f:-none} (want ${FILTERING[$r]})"
	natlab_expected "${HOST[$r]}" || NATLAB_WANT_MAPPING="$NATLAB_ERR"
	check '[ "$NATLAB_WANT_MAPPING $NATLAB_WANT_FILTERING" = "${MAPPING[$r]} ${FILTERING[$r]}" ]' \
		"$r: natlab_expected says $NATLAB_WANT_MAPPING $NATLAB_WANT_FILTERING"
done
# Two hosts behind one NAT on the same local port (as two nodes listening on
# one port): the second gets another external port, still one for all
# destinations, though the first has contacted only one of them.
natlab_probe p1 map --bind 40010 "$S1:3478" >"$TMP/same1" 2>&1 || true
natlab_probe p2 map --bind 40010 "$S1:3478" "$S1:3479" "$S2:3478" >"$TMP/same2" 2>&1 || true
m1=$(mapped "$TMP/same1" "$S1:3478") m2=$(mapped "$TMP/same2" "$S1:3478")
check '[ -n "$m1" ] && [ -n "$m2" ] && [ "$m1" != "$m2" ] &&
	[ "$(val "$TMP/same2" mapping)" = endpoint-independent ]' \
	"port-restricted, two hosts on local port 40010: first ${m1:-none}, second: $(oneline "$TMP/same2")"
# Double NAT: the carrier saw the home router's translated flows.
n=$(natlab_exec cgn conntrack -L -p udp -s 100.64.0.2 2>/dev/null | wc -l)
check '[ "$n" -ge 1 ]' "double NAT: the carrier tracks $n UDP flows from the home router's WAN 100.64.0.2"

# ---- hole punching with a rendezvous -------------------------------------------------
# Each pair runs both sides at once (a new session each); all pairs run at the
# same time, on their own sockets.
PUNCHES=()
# punch TAG A B [PORT]: starts the exchange between hosts A and B (both on
# local PORT if given); punch_wait waits for all started.
punch() {
	local tag=$1 a=$2 b=$3 port=${4:-0}
	natlab_probe "$a" punch --session "$tag" --name "$a" --peer "$b" --bind "$port" --timeout 5 \
		"$S1:3478" >"$TMP/punch.$tag.$a" 2>&1 &
	PUNCHES+=($!)
	natlab_probe "$b" punch --session "$tag" --name "$b" --peer "$a" --bind "$port" --timeout 5 \
		"$S1:3478" >"$TMP/punch.$tag.$b" 2>&1 &
	PUNCHES+=($!)
}
punch_wait() {
	local p
	for p in "${PUNCHES[@]}"; do wait "$p" || true; done
	PUNCHES=()
}
# pv TAG SIDE KEY: a value of one side's output.
pv() { val "$TMP/punch.$1.$2" "$3"; }
# outcome TAG A B: "direct" or "failed" if both sides agree, else "A:x B:y".
outcome() {
	local x y
	x=$(pv "$1" "$2" punch) y=$(pv "$1" "$3" punch)
	if [ "$x" = "$y" ]; then echo "$x"; else echo "$2:${x:-none} $3:${y:-none}"; fi
}
both() { echo "$2: $(oneline "$TMP/punch.$1.$2")| $3: $(oneline "$TMP/punch.$1.$3")"; }

build natlab_block addr home
# f3 takes external port 40020 first (see the hairpinning check).
natlab_probe f3 map --bind 40020 "$S1:3478" >"$TMP/f3" 2>&1 || true
punch hairpin f1 f2 40020
punch nohairpin p1 p2
punch portport p1 q1
punch fullsym f1 s1
punch addrsym a1 t1
punch portsym q1 s1
punch symsym s1 t1
punch blocked a1 d1
punch_wait

# Hairpinning: each side hears the other from the address it registered, the
# sender's own mapping on the WAN address. f1 and f2 use local port 40020,
# which f3 holds outside, so neither keeps it as external port, and a hairpin
# that only rewrote the address (keeping the local port) would be seen.
r=$(outcome hairpin f1 f2)
check '[ "$r" = direct ] && [ "$(pv hairpin f1 heard_from)" = "$(pv hairpin f1 peer)" ] &&
	[ "$(pv hairpin f2 heard_from)" = "$(pv hairpin f2 peer)" ] &&
	[ "$(mapped "$TMP/f3" "$S1:3478")" = 203.0.113.21:40020 ] &&
	[ "$(pv hairpin f1 peer)" != 203.0.113.21:40020 ] && [ "$(pv hairpin f2 peer)" != 203.0.113.21:40020 ]' \
	"full cone with hairpinning, two hosts via the WAN address: $r ($(both hairpin f1 f2))"
r=$(outcome nohairpin p1 p2)
check '[ "$r" = failed ] && [ "$(pv nohairpin p1 peer | cut -d: -f1)" = 203.0.113.23 ] &&
	[ "$(pv nohairpin p2 peer | cut -d: -f1)" = 203.0.113.23 ]' \
	"two hosts behind one NAT without hairpinning, via the public address: $r ($(both nohairpin p1 p2))"
r=$(outcome portport p1 q1)
check '[ "$r" = direct ] && [ "$(pv portport p1 heard_from)" = "$(pv portport p1 peer)" ] &&
	[ "$(pv portport q1 heard_from)" = "$(pv portport q1 peer)" ]' \
	"port-restricted <-> port-restricted: $r ($(both portport p1 q1))"
# The symmetric side's datagrams to the cone come from a new port: the cone
# side adopts it (same address, another port than registered).
fromsym() {
	local heard peer
	heard=$(pv "$1" "$2" heard_from) peer=$(pv "$1" "$2" peer)
	[ "$(pv "$1" "$2" adopted)" = yes ] && [ "${heard%:*}" = "${peer%:*}" ] &&
		[ "${heard#*:}" != "${peer#*:}" ] && [ "$(pv "$1" "$3" adopted)" = no ]
}
r=$(outcome fullsym f1 s1)
check '[ "$r" = direct ] && fromsym fullsym f1 s1' \
	"full cone <-> symmetric, the cone side adopting the symmetric side's new port: $r ($(both fullsym f1 s1))"
r=$(outcome addrsym a1 t1)
check '[ "$r" = direct ] && fromsym addrsym a1 t1' \
	"address-restricted <-> symmetric, the same way: $r ($(both addrsym a1 t1))"
r=$(outcome portsym q1 s1)
check '[ "$r" = failed ]' "port-restricted <-> symmetric (plain punching): $r ($(both portsym q1 s1))"
r=$(outcome symsym s1 t1)
check '[ "$r" = failed ]' "symmetric <-> symmetric: $r ($(both symsym s1 t1))"

# Blocking: the same pair fails while addr blocks the carrier's address, and
# gets through once unblocked.
r=$(outcome blocked a1 d1)
drops=$(natlab_block_drops addr)
check '[ "$r" = failed ] && [ "$drops" -gt 0 ]' \
	"address-restricted <-> double NAT, blocked at addr: $r, $drops datagrams dropped ($(both blocked a1 d1))"
build natlab_unblock addr home
punch unblocked a1 d1
punch_wait
r=$(outcome unblocked a1 d1)
check '[ "$r" = direct ] && [ "$(pv unblocked a1 heard_from | cut -d: -f1)" = 203.0.113.30 ]' \
	"address-restricted <-> double NAT, unblocked: $r ($(both unblocked a1 d1))"

# ---- flushing a router's mappings ------------------------------------------------------
# flows ROUTER PORT: how many UDP flows ROUTER tracks from local port PORT.
flows() { natlab_exec "$1" conntrack -L -p udp --sport "$2" 2>/dev/null | wc -l; }
# inbound HOST PORT FROM TO: whether the server's datagram from FROM to TO
# reaches HOST's PORT (asked for from another socket).
inbound() {
	natlab_probe "$1" inbound --bind "$2" --via "$S1:3478" --from "$3" --to "$4" >"$TMP/in" 2>&1 || true
	val "$TMP/in" received
}
# Symmetric: the flow is gone, and the next datagram gets a new random port
# (the same one again has odds of about 1 in 64000).
natlab_probe s1 map --bind 40001 "$S1:3478" >"$TMP/flush1" 2>&1 || true
m1=$(mapped "$TMP/flush1" "$S1:3478")
before=$(flows sym 40001)
build natlab_flush sym
after=$(flows sym 40001)
natlab_probe s1 map --bind 40001 "$S1:3478" >"$TMP/flush2" 2>&1 || true
m2=$(mapped "$TMP/flush2" "$S1:3478")
check '[ -n "$m1" ] && [ -n "$m2" ] && [ "$m1" != "$m2" ] && [ "$before" -ge 1 ] && [ "$after" = 0 ]' \
	"symmetric, flushed: mapping ${m1:-none} -> ${m2:-none}, flows of port 40001 $before -> $after"
# Port-restricted: the mapping (and the hole towards S1:3478) is gone.
natlab_probe p1 map --bind 40002 "$S1:3478" >"$TMP/flush3" 2>&1 || true
m=$(mapped "$TMP/flush3" "$S1:3478")
in1=$(inbound p1 40002 "$S1:3478" "${m:-0.0.0.0:1}")
build natlab_flush port
in2=$(inbound p1 40002 "$S1:3478" "${m:-0.0.0.0:1}")
check '[ -n "$m" ] && [ "$in1" = yes ] && [ "$in2" = no ]' \
	"port-restricted, flushed: S1:3478 -> ${m:-none} received before: ${in1:-?}, after: ${in2:-?}"
# Full cone: the map entry is gone too, so another address no longer gets in.
natlab_probe f1 map --bind 40003 "$S1:3478" >"$TMP/flush4" 2>&1 || true
m=$(mapped "$TMP/flush4" "$S1:3478")
in1=$(inbound f1 40003 "$S2:3478" "${m:-0.0.0.0:1}")
build natlab_flush full
in2=$(inbound f1 40003 "$S2:3478" "${m:-0.0.0.0:1}")
check '[ -n "$m" ] && [ "$in1" = yes ] && [ "$in2" = no ]' \
	"full cone, flushed: S2:3478 -> ${m:-none} received before: ${in1:-?}, after: ${in2:-?}"

# ---- conntrack timeouts ------------------------------------------------------------------
# 2 s in port2 only: a mapping is still open right away and gone after 3 s idle.
build natlab_timeouts port2 2 2
t=$(natlab_exec port2 sysctl -n net.netfilter.nf_conntrack_udp_timeout net.netfilter.nf_conntrack_udp_timeout_stream | tr '\n' ' ')
t_other=$(natlab_exec port sysctl -n net.netfilter.nf_conntrack_udp_timeout_stream)
natlab_probe q1 map --bind 40004 "$S1:3478" >"$TMP/timeout" 2>&1 || true
m=$(mapped "$TMP/timeout" "$S1:3478")
in1=$(inbound q1 40004 "$S1:3478" "${m:-0.0.0.0:1}")
sleep 3
in2=$(inbound q1 40004 "$S1:3478" "${m:-0.0.0.0:1}")
check '[ "$t" = "2 2 " ] && [ "$t_other" = 120 ] && [ -n "$m" ] && [ "$in1" = yes ] && [ "$in2" = no ]' \
	"timeouts 2/2 s in port2 (port keeps $t_other s): ${m:-none} open at once: ${in1:-?}, after 3 s idle: ${in2:-?}"

echo "$NAME: $PASS passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
