# temporary, not committed: yip as built at 17f8d92, for the issue-11 comparison
. "$(dirname "${BASH_SOURCE[0]}")/yip.sh"
DESC="yip at 17f8d92"
up() {
	local YIPD=/work/base17/build/yipd
	"$YIPD" --genkey >"$WORK/a.key"
	"$YIPD" --genkey >"$WORK/b.key"
	_yip_conf a "$UL_A" "$TUN_A" b "$UL_B" "$TUN_B"
	_yip_conf b "$UL_B" "$TUN_B" a "$UL_A" "$TUN_A"
	daemon "$NS_A" yipd-a "$YIPD" "$WORK/a.conf"
	daemon "$NS_B" yipd-b "$YIPD" "$WORK/b.conf"
	wait_ping "$PEER" 20
}
version() { echo "17f8d92"; }
