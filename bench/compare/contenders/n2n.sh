# shellcheck shell=bash disable=SC2034  # sourced by run.sh, which reads these variables
# n2n (Debian's 1.3 line): a supernode plus one edge in each namespace. The
# supernode runs in A next to A's edge; B's edge reaches it over the emulated
# link. The edges then talk to each other directly (TAP, Twofish).
DESC="n2n"
PEER=$TUN_B
TUN_DEV=n2${NSP}

available() {
	command -v edge >/dev/null || { echo "edge (n2n) not installed"; return 1; }
	command -v supernode >/dev/null || { echo "supernode (n2n) not installed"; return 1; }
}
version() {
	local v
	v=$(dpkg-query -W -f='${Version}' n2n 2>/dev/null)
	echo "${v:-$(edge -h 2>&1 | sed -n 's/.*n2n v\.\([^ ]*\).*/\1/p' | head -n 1)}"
}
notes() { echo "L2 (TAP), Twofish, default MTU, supernode in A"; }

up() {
	local key
	key=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
	daemon "$NS_A" supernode supernode -l 7654
	wait_listen "$NS_A" u 7654 5 || { daemons_alive; FAIL_REASON=${FAIL_REASON:-"supernode did not listen"}; return 1; }
	daemon "$NS_A" edge-a env N2N_KEY="$key" edge -d "$TUN_DEV" -a "$TUN_A" -c bench \
		-l "$UL_A:7654" -p 7655 -m 02:00:c6:13:00:01
	daemon "$NS_B" edge-b env N2N_KEY="$key" edge -d "$TUN_DEV" -a "$TUN_B" -c bench \
		-l "$UL_A:7654" -p 7655 -m 02:00:c6:13:00:02
	wait_ping "$PEER" 30
}
down() { stop_daemons; }
