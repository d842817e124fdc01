# shellcheck shell=bash disable=SC2034  # sourced by run.sh, which reads these variables
# Nebula 1.6: a throwaway CA made with nebula-cert; A is the lighthouse, B a
# node that knows A's underlay address. Firewall open for the test traffic,
# default tun MTU.
DESC="Nebula"
PEER=$TUN_B
TUN_DEV=nb${NSP}

available() {
	command -v nebula >/dev/null || { echo "nebula not installed"; return 1; }
	command -v nebula-cert >/dev/null || { echo "nebula-cert not installed"; return 1; }
}
version() { nebula -version 2>/dev/null | awk '{print $2}'; }
notes() { echo "UDP, AES-256-GCM (default), A is the lighthouse, default MTU"; }

up() {
	local d=$WORK/pki
	mkdir -p "$d"
	(
		umask 077
		nebula-cert ca -name bench-ca -duration 48h -out-crt "$d/ca.crt" -out-key "$d/ca.key" &&
			nebula-cert sign -name a -ip "$TUN_A/$TUN_LEN" -ca-crt "$d/ca.crt" -ca-key "$d/ca.key" \
				-out-crt "$d/a.crt" -out-key "$d/a.key" &&
			nebula-cert sign -name b -ip "$TUN_B/$TUN_LEN" -ca-crt "$d/ca.crt" -ca-key "$d/ca.key" \
				-out-crt "$d/b.crt" -out-key "$d/b.key"
	) >"$WORK/nebula-cert.log" 2>&1 || { FAIL_REASON="nebula-cert failed: $(tail -n 1 "$WORK/nebula-cert.log")"; return 1; }
	_nebula_conf a "$UL_A" true
	_nebula_conf b "$UL_B" false
	daemon "$NS_A" nebula-a nebula -config "$WORK/a.yml"
	daemon "$NS_B" nebula-b nebula -config "$WORK/b.yml"
	wait_ping "$PEER" 30
}
down() { stop_daemons; }

# _nebula_conf NAME UL AM_LIGHTHOUSE
_nebula_conf() {
	local d=$WORK/pki
	{
		echo "pki:"
		echo "  ca: $d/ca.crt"
		echo "  cert: $d/$1.crt"
		echo "  key: $d/$1.key"
		echo "static_host_map:"
		echo "  \"$TUN_A\": [\"$UL_A:4242\"]"
		echo "lighthouse:"
		echo "  am_lighthouse: $3"
		if [ "$3" = false ]; then
			echo "  hosts:"
			echo "    - \"$TUN_A\""
		fi
		echo "listen:"
		echo "  host: $2"
		echo "  port: 4242"
		echo "punchy:"
		echo "  punch: false"
		echo "tun:"
		echo "  dev: $TUN_DEV"
		echo "logging:"
		echo "  level: info"
		echo "firewall:"
		echo "  outbound:"
		echo "    - port: any"
		echo "      proto: any"
		echo "      host: any"
		echo "  inbound:"
		echo "    - port: any"
		echo "      proto: any"
		echo "      host: any"
	} >"$WORK/$1.yml"
}
