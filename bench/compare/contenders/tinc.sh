# shellcheck shell=bash disable=SC2034  # sourced by run.sh, which reads these variables
# tinc 1.0: router mode, A connects to B (meta connection over TCP, data over
# UDP), RSA keys generated at run time. Cipher and digest are tinc 1.0's
# defaults (Blowfish-CBC, SHA-1) unless the OpenSSL in use cannot do Blowfish,
# in which case AES-256-CBC and SHA-256 (see notes in the results).
DESC="tinc"
PEER=$TUN_B
TUN_DEV=tn${NSP}
_TINC_CIPHER=

available() { command -v tincd >/dev/null || { echo "tincd not installed"; return 1; }; }
version() { tincd --version 2>/dev/null | awk 'NR == 1 {print $3}'; }
notes() {
	if [ -n "$_TINC_CIPHER" ]; then echo "router mode, UDP, $_TINC_CIPHER"
	else echo "router mode, UDP, default cipher/digest"; fi
}

up() {
	_tinc_node a "$UL_A" "$TUN_A" b
	_tinc_node b "$UL_B" "$TUN_B" ""
	cp "$WORK/a/hosts/a" "$WORK/b/hosts/a"
	cp "$WORK/b/hosts/b" "$WORK/a/hosts/b"
	_tinc_start && return 0
	# OpenSSL 3 keeps Blowfish in its legacy provider; tinc 1.0 cannot load it
	# there. Fall back to a cipher every OpenSSL has.
	if grep -qiE "blowfish|cipher|EVP" "$WORK"/tincd-*.log 2>/dev/null; then
		stop_daemons
		_TINC_CIPHER="Cipher=aes-256-cbc, Digest=sha256 (Blowfish unavailable in OpenSSL 3)"
		for n in a b; do
			printf 'Cipher = aes-256-cbc\nDigest = sha256\n' >>"$WORK/a/hosts/$n"
			printf 'Cipher = aes-256-cbc\nDigest = sha256\n' >>"$WORK/b/hosts/$n"
		done
		_tinc_start
	else
		return 1
	fi
}
down() { stop_daemons; }

_tinc_start() {
	daemon "$NS_A" tincd-a tincd -c "$WORK/a" -D --pidfile="$WORK/a/pid" --logfile="$WORK/a/tinc.log"
	daemon "$NS_B" tincd-b tincd -c "$WORK/b" -D --pidfile="$WORK/b/pid" --logfile="$WORK/b/tinc.log"
	wait_ping "$PEER" 20 && return 0
	cat "$WORK/a/tinc.log" "$WORK/b/tinc.log" >>"$WORK/tincd-a.log" 2>/dev/null
	return 1
}

# _tinc_node NAME UL TUN CONNECT_TO
_tinc_node() {
	local d=$WORK/$1
	mkdir -p "$d/hosts"
	{
		echo "Name = $1"
		echo "Interface = $TUN_DEV"
		echo "Mode = router"
		echo "AddressFamily = ipv4"
		echo "BindToAddress = $2"
		[ -n "$4" ] && echo "ConnectTo = $4"
	} >"$d/tinc.conf"
	{
		echo "Address = $2"
		echo "Port = 655"
		echo "Subnet = $3/32"
	} >"$d/hosts/$1"
	printf '#!/bin/sh\nip addr add %s/%s dev "$INTERFACE"\nip link set "$INTERFACE" up\n' \
		"$3" "$TUN_LEN" >"$d/tinc-up"
	chmod +x "$d/tinc-up"
	tincd -c "$d" -K 2048 </dev/null >"$d/genkey.log" 2>&1
}
