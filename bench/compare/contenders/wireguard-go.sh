# shellcheck shell=bash disable=SC2034  # sourced by run.sh, which reads these variables
# wireguard-go: the userspace WireGuard implementation (this kernel has no
# WireGuard module), configured with `wg` from wireguard-tools.
DESC="wireguard-go"
PEER=$TUN_B
# The UAPI socket lives in /var/run/wireguard/<device>.sock, shared by all
# namespaces: the device names must differ between A and B and between runs.
TUN_DEV=wg${NSP}a
_WG_B=wg${NSP}b

available() {
	command -v wireguard-go >/dev/null || { echo "wireguard-go not installed"; return 1; }
	command -v wg >/dev/null || { echo "wg (wireguard-tools) not installed"; return 1; }
}
version() { echo "$(wireguard-go --version 2>/dev/null | awk '{print $2}'), wg $(wg --version 2>/dev/null | awk '{print $2}')"; }
notes() { echo "Noise IK, ChaCha20-Poly1305"; }

up() {
	umask 077
	wg genkey >"$WORK/a.priv"
	wg genkey >"$WORK/b.priv"
	wg pubkey <"$WORK/a.priv" >"$WORK/a.pub"
	wg pubkey <"$WORK/b.priv" >"$WORK/b.pub"
	_wg_side "$NS_A" "$TUN_DEV" a b "$UL_B" "$TUN_A" "$TUN_B" || return 1
	_wg_side "$NS_B" "$_WG_B" b a "$UL_A" "$TUN_B" "$TUN_A" || return 1
	wait_ping "$PEER" 20
}
down() { stop_daemons; }

# _wg_side NS DEV SELF OTHER OTHER_UL SELF_TUN OTHER_TUN
_wg_side() {
	# A socket left by an earlier run's daemon would pass wait_file at once.
	rm -f "/var/run/wireguard/$2.sock"
	daemon "$1" "wireguard-go-$3" env WG_PROCESS_FOREGROUND=1 wireguard-go -f "$2"
	wait_file "/var/run/wireguard/$2.sock" 10 || { daemons_alive; FAIL_REASON=${FAIL_REASON:-"wireguard-go did not create its UAPI socket"}; return 1; }
	ip netns exec "$1" wg set "$2" private-key "$WORK/$3.priv" listen-port 51820 \
		peer "$(cat "$WORK/$4.pub")" endpoint "$5:51820" allowed-ips "$7/32" ||
		{ FAIL_REASON="wg set failed"; return 1; }
	ip netns exec "$1" ip addr add "$6/$TUN_LEN" dev "$2"
	ip netns exec "$1" ip link set "$2" mtu 1420 up
}
