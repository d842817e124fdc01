# shellcheck shell=bash disable=SC2034  # sourced by run.sh, which reads these variables
# OpenVPN 2.6: UDP, point-to-point TLS mode (A is the TLS server, B the
# client), AES-256-GCM data channel, throwaway EC certificates made with
# openssl at run time. No kernel DCO module here, so --disable-dco.
DESC="OpenVPN"
PEER=$TUN_B
TUN_DEV=ov${NSP}

available() {
	command -v openvpn >/dev/null || { echo "openvpn not installed"; return 1; }
	command -v openssl >/dev/null || { echo "openssl not installed"; return 1; }
}
version() { openvpn --version 2>/dev/null | awk 'NR == 1 {print $2}'; }
notes() { echo "UDP, TLS p2p, AES-256-GCM, userspace data channel, default MTU settings"; }

up() {
	_ovpn_certs >"$WORK/openssl.log" 2>&1 || { FAIL_REASON="openssl could not make the certificates"; return 1; }
	_ovpn_conf a server "$UL_A" "$UL_B" "$TUN_A" "$TUN_B"
	_ovpn_conf b client "$UL_B" "$UL_A" "$TUN_B" "$TUN_A"
	daemon "$NS_A" openvpn-a openvpn --config "$WORK/a.conf"
	daemon "$NS_B" openvpn-b openvpn --config "$WORK/b.conf"
	wait_ping "$PEER" 30
}
down() { stop_daemons; }

_ovpn_certs() {
	local d=$WORK/pki n
	mkdir -p "$d"
	umask 077
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj /CN=bench-ca -keyout "$d/ca.key" -out "$d/ca.crt" || return 1
	for n in a b; do
		local eku=serverAuth
		[ "$n" = b ] && eku=clientAuth
		printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyAgreement\nextendedKeyUsage=%s\n' \
			"$eku" >"$d/$n.ext"
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-subj "/CN=bench-$n" -keyout "$d/$n.key" -out "$d/$n.csr" || return 1
		openssl x509 -req -in "$d/$n.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
			-days 2 -extfile "$d/$n.ext" -out "$d/$n.crt" || return 1
	done
}

# _ovpn_conf SELF ROLE SELF_UL OTHER_UL SELF_TUN OTHER_TUN
_ovpn_conf() {
	local d=$WORK/pki other=server
	[ "$2" = server ] && other=client
	{
		echo "dev $TUN_DEV"
		echo "dev-type tun"
		echo "proto udp4"
		echo "local $3"
		echo "lport 1194"
		echo "remote $4 1194"
		echo "ifconfig $5 $6"
		echo "tls-$2"
		[ "$2" = server ] && echo "dh none"
		echo "remote-cert-tls $other"
		echo "ca $d/ca.crt"
		echo "cert $d/$1.crt"
		echo "key $d/$1.key"
		echo "data-ciphers AES-256-GCM"
		echo "disable-dco"
		echo "keepalive 10 60"
		echo "verb 3"
	} >"$WORK/$1.conf"
}
