#!/usr/bin/env bash
# The fast data path end to end: two yipd on a veth (which carries UDP GSO
# trains whole), each with 2 crypto worker threads. A 200 MB TCP transfer
# must arrive byte-exact, and the counters must show the offloads at work:
# TSO super-packets read and cut by the sender, segments coalesced (GRO) by
# the receiver, datagrams sent as GSO trains; nothing fails to decrypt.
# Then the same with offload=off, which must also deliver intact.
. "$(dirname "$0")/lib.sh"

two_peers
tune_tcp cubic
start_yipd a YIP_WORKERS=2
start_yipd b YIP_WORKERS=2
wait_ping a 10.77.0.2

threads=$(ls "/proc/$(pid_of a)/task" | wc -l)
log "yipd a runs $threads threads"
[ "$threads" -eq 2 ] || fail "expected 2 threads (loop + 1 worker), found $threads"

read -r secs ok < <(tcp_copy a 10.77.0.2 $((200 << 20)))
log "200 MB over TCP with offloads and workers: $secs s, sha256 match: $ok"
[ "$ok" = yes ] || fail "the file arrived corrupted or incomplete"

off_a=$(datapath a)
off_b=$(datapath b)
log "a: $off_a"
log "b: $off_b"
field() { echo "$1" | sed -n "s/.* $2 \([0-9]*\).*/\1/p"; }
[ "$(field "$off_a" tso_reads)" -gt 100 ] || fail "a read no TSO super-packets"
[ "$(field "$off_a" tso_segments)" -gt "$(field "$off_a" tso_reads)" ] ||
	fail "a's super-packets were not cut into several segments"
[ "$(field "$off_b" gro_coalesced)" -gt 1000 ] || fail "b coalesced no segments (GRO)"
trains=$(field "$off_a" udp_trains)
dgrams=$(field "$off_a" udp_train_datagrams)
[ "$dgrams" -gt $((trains * 2)) ] || fail "a sent $dgrams datagrams in $trains trains: no GSO"
# yipctl shows the same counters.
st=$(yipctl_of a stats)
val() { echo "$st" | sed -n "s/^    $1: *//p"; }
[ "$(val workers)" = 2 ] || fail "yipctl stats: workers '$(val workers)', expected 2"
[ "$(val tun_offload)" = on ] || fail "yipctl stats: tun_offload '$(val tun_offload)'"
[ "$(val tso_reads)" -gt 100 ] || fail "yipctl stats: tso_reads '$(val tso_reads)'"
[ "$(val udp_train_datagrams)" -gt 0 ] || fail "yipctl stats: no train datagrams"
for n in a b; do
	d=$(drops "$n" decrypt)
	[ "${d:-0}" -eq 0 ] || fail "$n: $d datagrams failed to decrypt"
done

log "offload=off on both ends"
for n in a b; do
	kill -TERM "$(pid_of $n)"
	wait "$(pid_of $n)" 2>/dev/null || true
	sed -i '/^\[peer\]/i offload=off' "$TMP/$n.conf"
done
start_yipd a
start_yipd b
wait_ping a 10.77.0.2
read -r secs ok < <(tcp_copy a 10.77.0.2 $((50 << 20)))
log "50 MB with offload=off: $secs s, sha256 match: $ok"
[ "$ok" = yes ] || fail "the file arrived corrupted or incomplete with offload=off"
off_a=$(datapath a)
[ "$(field "$off_a" tso_reads)" -eq 0 ] || fail "offload=off still read TSO super-packets"
log "ok"
