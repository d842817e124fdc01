#!/usr/bin/env bash
# bench/compare/diag/plain.sh: an independent, minimal setup to cross-check
# bench/compare's numbers. Needs root.
#
#   plain.sh [--contenders raw,yip,wireguard-go,yggdrasil] [--conditions rtt20,rtt20-loss1,rtt20-loss5]
#            [--reps 3] [--seconds 8] [--suite-sysctls]
#
# Shares nothing with the suite but build/yipd and build/yip-linkem: its
# own namespaces (fresh for every run), no sysctls beyond the inner TCP's
# congestion control (CUBIC, as the namespace default in A and B), the
# contenders started from their own minimal configurations. Per run:
#   A 10.77.0.1 ==veth== M [yip-linkem delay only] ==veth== B 10.77.0.2
# with GRO, GSO, TSO and tx-udp-segmentation off on all four veth ends, and
# random loss by an nftables `numgen random` rule on A's and B's veth
# ingress (per received IPv4 datagram, both directions); then the tunnel is
# started, one iperf3 stream runs A -> B for --seconds, and everything is
# torn down. Condition names: rttN (N ms RTT) with -lossP (P % loss each
# way), e.g. rtt20-loss5; "clean" is neither. --suite-sysctls adds the
# suite's buffer settings (net.core.rmem_max/wmem_max and the tcp_rmem/
# tcp_wmem maximum 32 MiB, tcp_no_metrics_save=1), to tell the effect of the
# settings from that of the rest of the setup.
# shellcheck disable=SC2086 # namespace, device and address names are single words
set -uo pipefail
CONTENDERS="raw yip wireguard-go yggdrasil" CONDITIONS="rtt20 rtt20-loss1 rtt20-loss5" REPS=3 SECS=8
SUITE_SYSCTLS=0
while [ $# -gt 0 ]; do
	case "$1" in
	--contenders) CONTENDERS=${2//,/ }; shift ;;
	--conditions) CONDITIONS=${2//,/ }; shift ;;
	--reps) REPS=$2; shift ;;
	--seconds) SECS=$2; shift ;;
	--suite-sysctls) SUITE_SYSCTLS=1 ;;
	-h | --help) sed -n '2,24p' "$0"; exit 0 ;;
	*) echo "plain.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
	shift
done
[ "$(id -u)" -eq 0 ] || { echo "plain.sh: needs root" >&2; exit 1; }
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
YIPD=$ROOT/build/yipd
LINKEM=$ROOT/build/yip-linkem
[ -x "$LINKEM" ] || { echo "plain.sh: build/yip-linkem is missing (make build)" >&2; exit 1; }
OUT=$ROOT/build/bench/plain-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
P=yp$$
A=${P}a M=${P}m B=${P}b
UA=10.77.0.1 UB=10.77.0.2 TA=10.78.0.1 TB=10.78.0.2

allowed=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
core_r=$(sysctl -n net.core.rmem_max) core_w=$(sysctl -n net.core.wmem_max)
teardown() {
	local n p
	for n in $A $M $B; do
		ip netns list | grep -qw "^$n" || continue
		for p in $(ip netns pids "$n" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
		ip netns del "$n" 2>/dev/null
	done
	rm -f /var/run/wireguard/${P}a.sock /var/run/wireguard/${P}b.sock
}
trap 'teardown; sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed" net.core.rmem_max=$core_r net.core.wmem_max=$core_w' EXIT
trap 'exit 130' INT TERM
# A namespace may only choose a congestion control from the allowed list.
case " $allowed " in *" cubic "*) ;; *) sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed cubic" ;; esac
[ "$SUITE_SYSCTLS" -eq 0 ] || sysctl -qw net.core.rmem_max=33554432 net.core.wmem_max=33554432

# setup DELAY_MS LOSS_PCT
setup() {
	local n dev
	for n in $A $M $B; do ip netns add $n; ip -n $n link set dev lo up; done
	ip link add va$P netns $A type veth peer name ma$P netns $M
	ip link add vb$P netns $B type veth peer name mb$P netns $M
	ip -n $A addr add $UA/24 dev va$P
	ip -n $B addr add $UB/24 dev vb$P
	for n in "$A va$P" "$M ma$P" "$M mb$P" "$B vb$P"; do
		read -r n dev <<<"$n"
		ip netns exec $n ethtool -K $dev gro off gso off tso off tx-udp-segmentation off >/dev/null
		ip -n $n link set dev $dev up
	done
	for n in $A $B; do
		ip netns exec $n sysctl -qw net.ipv4.tcp_congestion_control=cubic
		[ "$SUITE_SYSCTLS" -eq 0 ] || ip netns exec $n sysctl -qw net.ipv4.tcp_rmem="4096 131072 33554432" \
			net.ipv4.tcp_wmem="4096 16384 33554432" net.ipv4.tcp_no_metrics_save=1
	done
	ip netns exec $M "$LINKEM" ma$P mb$P ${1:+--both delay=$1ms} --stats "$W/linkem.stats" >"$W/linkem.log" 2>&1 &
	disown $! # teardown kills it; no job notices
	for _ in $(seq 50); do [ -s "$W/linkem.stats" ] && break; sleep 0.1; done
	if [ "$2" != 0 ]; then
		local thr
		thr=$(awk -v p="$2" 'BEGIN { printf "%d", p * 10000 }')
		for n in "$A va$P" "$B vb$P"; do
			read -r n dev <<<"$n"
			ip netns exec $n nft -f - <<NFT
table netdev plainloss {
	chain in {
		type filter hook ingress device "$dev" priority 0; policy accept;
		meta protocol ip numgen random mod 1000000 < $thr drop
	}
}
NFT
		done
	fi
	for _ in $(seq 50); do ip netns exec $A ping -c1 -W1 $UB >/dev/null 2>&1 && return 0; done
	return 1
}

bg() {
	local n=$1 log=$2
	shift 2
	ip netns exec $n "$@" </dev/null >"$W/$log.log" 2>&1 &
	disown $!
}
waitping() {
	for _ in $(seq 60); do ip netns exec $A ping -c1 -W1 "$1" >/dev/null 2>&1 && return 0; sleep 0.3; done
	return 1
}

up_raw() { PEER=$UB; }
up_yip() {
	local s o
	"$YIPD" --genkey >"$W/a.key"
	"$YIPD" --genkey >"$W/b.key"
	for s in a b; do
		o=b; [ $s = b ] && o=a
		local me=$UA them=$UB mt=$TA ot=$TB
		[ $s = b ] && me=$UB them=$UA mt=$TB ot=$TA
		printf 'local_private=%s\nlisten=%s:51820\ndevice=yip0\naddress=%s/24\n[peer]\npublic_key=%s\nendpoint=%s:51820\nallowed_ips=%s/32\n' \
			"$(sed -n 's/^private=//p' "$W/$s.key")" $me $mt "$(sed -n 's/^public=//p' "$W/$o.key")" $them $ot >"$W/$s.conf"
	done
	bg $A yipd-a "$YIPD" "$W/a.conf"
	bg $B yipd-b "$YIPD" "$W/b.conf"
	PEER=$TB
}
up_wireguard-go() {
	local s n dev me ot them
	for s in a b; do (umask 077 && wg genkey >"$W/$s.priv"); wg pubkey <"$W/$s.priv" >"$W/$s.pub"; done
	for s in a b; do
		if [ $s = a ]; then n=$A me=$TA ot=$TB them=$UB o=b; else n=$B me=$TB ot=$TA them=$UA o=a; fi
		dev=$P$s
		bg $n wg-$s env WG_PROCESS_FOREGROUND=1 wireguard-go -f $dev
		for _ in $(seq 50); do [ -S /var/run/wireguard/$dev.sock ] && break; sleep 0.1; done
		ip netns exec $n wg set $dev private-key "$W/$s.priv" listen-port 51820 \
			peer "$(cat "$W/$o.pub")" endpoint $them:51820 allowed-ips $ot/32
		ip -n $n addr add $me/24 dev $dev
		ip -n $n link set dev $dev mtu 1420 up
	done
	PEER=$TB
}
up_yggdrasil() {
	local s
	for s in a b; do
		yggdrasil -genconf -json >"$W/$s.gen.json"
		python3 - "$W/$s.gen.json" "$W/$s.json" $s "$UB" <<'PY'
import json, sys
src, dst, side, ub = sys.argv[1:5]
c = json.load(open(src))
c["Listen"] = ["tcp://%s:12345" % ub] if side == "b" else []
c["Peers"] = ["tcp://%s:12345" % ub] if side == "a" else []
c["MulticastInterfaces"] = []
c["AdminListen"] = "none"
c["IfName"] = "ygg" + side
json.dump(c, open(dst, "w"))
PY
	done
	bg $B ygg-b yggdrasil -useconffile "$W/b.json" -logto stdout
	for _ in $(seq 50); do ip netns exec $B ss -Hltn "sport = :12345" | grep -q . && break; sleep 0.1; done
	bg $A ygg-a yggdrasil -useconffile "$W/a.json" -logto stdout
	PEER=$(yggdrasil -useconffile "$W/b.json" -address)
}

printf 'contender,condition,run,mbps,retransmits\n' >"$OUT/plain.csv"
echo "plain setup: $REPS runs of $SECS s per cell$([ "$SUITE_SYSCTLS" -eq 0 ] || echo ", the suite's sysctls"); logs in $OUT" >&2
for c in $CONTENDERS; do
	for cond in $CONDITIONS; do
		delay=0 loss=0
		case "$cond" in
		clean) ;;
		rtt*) r=${cond#rtt}; r=${r%%-*}; delay=$(awk -v r="$r" 'BEGIN { print r / 2 }')
			case "$cond" in *-loss*) loss=${cond##*-loss} ;; esac ;;
		*) echo "plain.sh: unknown condition $cond" >&2; exit 2 ;;
		esac
		[ "$delay" = 0 ] && delay=
		for rep in $(seq 1 "$REPS"); do
			W=$OUT/$c-$cond-$rep
			mkdir -p "$W"
			teardown
			setup "$delay" "$loss" || { echo "$c $cond $rep: underlay down" >&2; continue; }
			"up_$c"
			if ! waitping "$PEER"; then
				echo "$c,$cond,$rep,,tunnel down" >>"$OUT/plain.csv"
				continue
			fi
			bg $B iperf3-s iperf3 -s -1
			for _ in $(seq 50); do ip netns exec $B ss -Hltn "sport = :5201" | grep -q . && break; sleep 0.1; done
			ip netns exec $A timeout $((SECS + 20)) iperf3 -c "$PEER" -t "$SECS" -J >"$W/iperf.json" 2>&1
			python3 - "$W/iperf.json" "$c" "$cond" "$rep" >>"$OUT/plain.csv" <<'PY'
import json, sys
p, c, cond, rep = sys.argv[1:5]
try:
    j, _ = json.JSONDecoder().raw_decode(open(p).read().lstrip())
    e = j["end"]
    print("%s,%s,%s,%.2f,%s" % (c, cond, rep, e["sum_received"]["bits_per_second"] / 1e6, e["sum_sent"].get("retransmits", "")))
except Exception:
    print("%s,%s,%s,,no result" % (c, cond, rep))
PY
			tail -n 1 "$OUT/plain.csv" >&2
		done
	done
done
teardown
python3 - "$OUT/plain.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cells = {}
for r in rows:
    cells.setdefault((r["contender"], r["condition"]), []).append(float(r["mbps"]) if r["mbps"] else None)
print("| contender | condition | median Mbit/s | min | runs |")
print("|---|---|---:|---:|---|")
for (c, cond), v in cells.items():
    ok = sorted(x for x in v if x is not None)
    med = ok[len(ok) // 2] if len(ok) % 2 else (sum(ok[len(ok) // 2 - 1:len(ok) // 2 + 1]) / 2 if ok else None)
    f = lambda x: "–" if x is None else ("%.0f" % x if x >= 100 else "%.1f" % x if x >= 10 else "%.2f" % x)
    print("| %s | %s | %s | %s | %s |" % (c, cond, f(med), f(ok[0] if ok else None), "; ".join(f(x) for x in v)))
PY
echo "csv: $OUT/plain.csv" >&2
