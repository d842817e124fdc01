# shellcheck shell=bash disable=SC2034  # sourced by run.sh, which reads these variables
# yip: build/yipd in A and B, one peer each, default settings (mtu=auto:
# 1428 on the 1500-byte underlay).
DESC="yip (build/yipd)"
PEER=$TUN_B
TUN_DEV=yip0

available() {
	[ -x "$YIPD" ] || { echo "build/yipd not built (run make)"; return 1; }
}
version() {
	local v c
	v=$("$YIPD" --version 2>/dev/null | awk '{print $NF}')
	c=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || true)
	if [ -n "$c" ] && [ -n "$(git -C "$ROOT" status --porcelain -- src 2>/dev/null | head -n 1)" ]; then
		c="$c+dirty"
	fi
	echo "$v${c:+ ($c)}"
}
notes() { echo "Noise IK; data cipher negotiated (AES-256-GCM where both CPUs have AES-NI, else ChaCha20-Poly1305); default settings; yipd as built from this tree"; }

up() {
	"$YIPD" --genkey >"$WORK/a.key"
	"$YIPD" --genkey >"$WORK/b.key"
	_yip_conf a "$UL_A" "$TUN_A" b "$UL_B" "$TUN_B"
	_yip_conf b "$UL_B" "$TUN_B" a "$UL_A" "$TUN_A"
	daemon "$NS_A" yipd-a "$YIPD" "$WORK/a.conf"
	daemon "$NS_B" yipd-b "$YIPD" "$WORK/b.conf"
	wait_ping "$PEER" 20
}
down() { stop_daemons; }

# _yip_conf SELF SELF_UL SELF_TUN OTHER OTHER_UL OTHER_TUN
_yip_conf() {
	umask 077
	cat >"$WORK/$1.conf" <<CONF
local_private=$(sed -n 's/^private=//p' "$WORK/$1.key")
listen=$2:51820
device=$TUN_DEV
address=$3/$TUN_LEN
[peer]
public_key=$(sed -n 's/^public=//p' "$WORK/$4.key")
endpoint=$5:51820
allowed_ips=$6/32
CONF
	# Variants (see yip-busy.sh) add interface settings.
	[ -z "${YIP_EXTRA_CONF:-}" ] || sed -i "/^\[peer\]/i $YIP_EXTRA_CONF" "$WORK/$1.conf"
}

# _yip_link_up SCHEME: A dials B by SCHEME://B:8443 (tls, quic), B listens
# there (listen_SCHEME, self-signed) and has no endpoint for A, so the only
# path between them is that link.
_yip_link_up() {
	"$YIPD" --genkey >"$WORK/a.key"
	"$YIPD" --genkey >"$WORK/b.key"
	_yip_conf a "$UL_A" "$TUN_A" b "$UL_B" "$TUN_B"
	_yip_conf b "$UL_B" "$TUN_B" a "$UL_A" "$TUN_A"
	sed -i "s|^endpoint=$UL_B:51820|endpoint=$1://$UL_B:8443|" "$WORK/a.conf"
	sed -i -e "/^\[peer\]/i listen_$1=$UL_B:8443" -e "/^endpoint=/d" "$WORK/b.conf"
	# YIP_QUIC_CC=bbr2|bbr|cubic: the congestion control inside the QUIC link (default: yipd's).
	if [ -n "${YIP_QUIC_CC:-}" ]; then
		sed -i "/^\[peer\]/i quic_cc=$YIP_QUIC_CC" "$WORK/a.conf" "$WORK/b.conf"
	fi
	daemon "$NS_A" yipd-a "$YIPD" "$WORK/a.conf"
	daemon "$NS_B" yipd-b "$YIPD" "$WORK/b.conf"
	wait_ping "$PEER" 20
}
