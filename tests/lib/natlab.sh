# shellcheck shell=bash disable=SC2034  # sourced; callers read the names set here
# tests/lib/natlab.sh: nodes behind real NATs, emulated with nftables in router
# namespaces, for NAT-traversal tests. Sourced, not run.
# tests/netns/natlab_selftest.sh checks every behaviour built here with plain
# UDP probes (tests/lib/udpprobe.py), before any test relies on it.
#
#   public hosts ─┐                      ┌─ lan0 (bridge) ─ LAN hosts
#                 ├─ br0 in "inet" ─ wan0 [router: nft NAT]
#   routers' wan0 ┘                      └─ (a carrier router's lan0 is
#                                            the bridge its home routers'
#                                            wan0 join: double NAT)
#
# Names. Every namespace is PREFIX (given to natlab_internet) followed by the
# name the caller gives it ("inet" is the internet's own); natlab_ns NAME
# prints it. Inside a namespace the
# interfaces are always the same: eth0 on a host, wan0 and lan0 on a router,
# br0 in the internet namespace "inet"; the bridge ports are p1, p2, ...
#
# Addresses (TEST-NET and shared address space only):
#   - internet: 203.0.113.0/24, all on one link, no router and no default
#     route (every public address is on-link); the bridge has no address;
#   - a site's LAN: the router's lan0 address and prefix the caller gives
#     (say 10.0.1.1/24); its hosts get the following addresses in order
#     (10.0.1.2, 10.0.1.3, ...) unless given one; their default route is
#     the router;
#   - a carrier LAN (double NAT): 100.64.0.1/10 on the carrier router's
#     lan0, home routers' wan0 from 100.64.0.2 on.
#
# NAT behaviours (RFC 4787 terms), chosen by name per router, UDP only:
#   full       endpoint-independent mapping and filtering (EIM + EIF): masquerade
#              plus a map from external port to internal address and port,
#              learned after SNAT (so it holds the port conntrack chose);
#   addr       address-restricted cone (EIM + ADF): full, plus a set of the
#              remote addresses each internal address and port has sent to;
#              inbound from others is dropped;
#   port       port-restricted cone (EIM + APDF): plain masquerade;
#   symmetric  address-and-port-dependent mapping (APDM + APDF):
#              masquerade random, a new external port for each destination.
# full, addr and port keep a host's local port as external port when it is
# free; of two LAN hosts on one local port (two nodes behind one NAT), the
# second gets another port, the same for every destination (Linux 6.18 gives
# a new flow from a known source its existing external port). The maps of
# full and addr hold UDP only: TCP through them is translated as by port.
# Every router has the same filter table: WAN input that conntrack does not
# know is dropped (an accepted early punch packet would create an entry for
# the router itself, and the later SNAT would then pick another port: a
# port-restricted NAT would behave as symmetric), forwarding from lan0 is
# accepted, forwarding from wan0 only for known flows (and, for full and addr,
# for flows the map DNATed). --hairpin (full only) also lets LAN hosts reach
# each other through the WAN address: the packet is DNATed with the same map
# and SNATed to the sender's own external address and port.
#
# The NAT's state is conntrack's: its UDP timeouts are per namespace
# (net.netfilter.nf_conntrack_udp_timeout for unreplied flows, 30 s by
# default, and _udp_timeout_stream, 120 s); an nft "ct timeout" object does
# not change them. The maps of full and addr expire after the stream timeout
# the router was built with, refreshed by every outgoing datagram.
#
# Registry, for the caller to read: NATLAB_KIND[NAME] (public, router or
# host), NATLAB_ADDR[NAME] (a public host's address, a router's WAN address,
# a host's LAN address), NATLAB_NAT[ROUTER] (its behaviour), NATLAB_UP[NAME]
# (a router's upstream: inet or its carrier router; a host's router).
#
# Errors: every function checks every step and returns non-zero at the first
# failure with the reason in NATLAB_ERR (commands' own messages go to
# stderr). Cleanup stays with the caller: natlab_track is called before a
# namespace is created (`natlab_track ns NAMESPACE`) and after a process is
# started (`natlab_track pid PID`); the default does nothing, and a caller
# redefines it after sourcing this file.
#
# Functions (each documented where it is defined):
#   natlab_internet PREFIX                          the internet bridge
#   natlab_public NAME ADDR...                      a host on the internet
#   natlab_site [OPTS] NAME NAT WAN_ADDR LAN_CIDR   a router and its LAN
#   natlab_host ROUTER NAME [ADDR]                  a host on a router's LAN
#   natlab_double_nat CARRIER CARRIER_WAN HOME NAT LAN_CIDR [CARRIER_NAT]
#   natlab_ns NAME / natlab_exec NAME CMD...        namespace name, run in it
#   natlab_public_addr NAME                         NAME's address on the internet
#   natlab_wan_addr ROUTER                          reads wan0's address
#   natlab_timeouts ROUTER UNREPLIED STREAM         conntrack UDP timeouts
#   natlab_flush ROUTER                             forget every mapping
#   natlab_block / natlab_unblock ROUTER PEER       drop UDP to and from PEER
#   natlab_block_drops ROUTER                       what the block dropped
#   natlab_server NAME LOG ADDR:PORT...             starts udpprobe.py server
#   natlab_probe NAME ARGS...                       runs udpprobe.py in NAME
#   natlab_classify HOST ADDR1 ADDR2 [PORT1 PORT2]  HOST's NAT, as probed
#   natlab_expected HOST                            ... and as built
#
# Needs ip (iproute2), nft (nftables), conntrack (conntrack-tools), sysctl,
# python3.

NATLAB_PROBE=${NATLAB_PROBE:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/udpprobe.py}
# The interpreter itself, not a wrapper script in PATH (pyenv's shims cost
# a tenth of a second or more per start, and tests start many probes).
NATLAB_PYTHON=${NATLAB_PYTHON:-$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null || echo python3)}
NATLAB_ERR=
NATLAB_P=
NATLAB_WAN=
NATLAB_SERVER_PID=
NATLAB_MAPPING=''
NATLAB_FILTERING=''
NATLAB_CLASSIFIED=''
NATLAB_WANT_MAPPING=''
NATLAB_WANT_FILTERING=''
declare -gA NATLAB_KIND=() NATLAB_ADDR=() NATLAB_NAT=() NATLAB_UP=()
declare -gA NATLAB_LAN=() NATLAB_LEN=() NATLAB_NEXT=() NATLAB_PORTS=()

natlab_track() { :; }

# natlab_ns NAME: prints the namespace of NAME.
natlab_ns() { echo "$NATLAB_P$1"; }

# natlab_exec NAME CMD...: runs CMD in the namespace of NAME.
natlab_exec() {
	local n=$1
	shift
	ip netns exec "$NATLAB_P$n" "$@"
}

# _natlab_fail MESSAGE: sets NATLAB_ERR, returns 1.
_natlab_fail() {
	NATLAB_ERR=$*
	return 1
}

# _natlab_ns NAME: creates the namespace of NAME with loopback up, IPv6 off
# (no router solicitations or DAD on the links) and bridged IPv4 kept out of
# netfilter (br_netfilter, where loaded, defaults to passing bridged frames
# through the IP hooks, which would conntrack and filter LAN-internal traffic).
_natlab_ns() {
	local ns=$NATLAB_P$1
	[ -z "${NATLAB_KIND[$1]:-}" ] || _natlab_fail "natlab: $1 already exists" || return 1
	natlab_track ns "$ns"
	ip netns add "$ns" && ip -n "$ns" link set dev lo up &&
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
			net.ipv6.conf.default.disable_ipv6=1 ||
		_natlab_fail "natlab: could not create namespace $ns" || return 1
	if [ -e /proc/sys/net/bridge/bridge-nf-call-iptables ]; then
		ip netns exec "$ns" sysctl -qw net.bridge.bridge-nf-call-iptables=0 ||
			_natlab_fail "natlab: could not turn off bridge-nf-call-iptables in $ns" || return 1
	fi
}

# _natlab_attach BRIDGE_NAME NAME IFNAME: a veth from NAME's namespace
# (IFNAME, up) to a new port of the bridge of BRIDGE_NAME (inet: br0, a
# router: lan0).
_natlab_attach() {
	local up=$1 n=$2 ifname=$3 br=lan0 port
	[ "$up" = inet ] && br=br0
	port=p$((${NATLAB_PORTS[$up]:-0} + 1))
	NATLAB_PORTS[$up]=${port#p}
	ip link add "$ifname" netns "$NATLAB_P$n" type veth peer name "$port" netns "$NATLAB_P$up" &&
		ip -n "$NATLAB_P$up" link set dev "$port" master "$br" up &&
		ip -n "$NATLAB_P$n" link set dev "$ifname" up ||
		_natlab_fail "natlab: could not link $n to the bridge of $up" || return 1
}

# _natlab_ip2int ADDR / _natlab_int2ip N: dotted quad <-> integer.
_natlab_ip2int() {
	local a b c d
	IFS=. read -r a b c d <<<"$1"
	echo $(((a << 24) | (b << 16) | (c << 8) | d))
}
_natlab_int2ip() { echo "$((($1 >> 24) & 255)).$((($1 >> 16) & 255)).$((($1 >> 8) & 255)).$(($1 & 255))"; }

# _natlab_next ROUTER: sets _NATLAB_NEXT to the next free address of
# ROUTER's LAN (router address + 1, + 2, ...), within its prefix.
_natlab_next() {
	local r=$1 base k len net last
	base=$(_natlab_ip2int "${NATLAB_LAN[$r]}")
	len=${NATLAB_LEN[$r]}
	k=${NATLAB_NEXT[$r]}
	net=$((base & ~((1 << (32 - len)) - 1) & 0xffffffff))
	last=$((net + (1 << (32 - len)) - 2))
	[ $((base + k)) -le "$last" ] || _natlab_fail "natlab: the LAN of $r is full" || return 1
	NATLAB_NEXT[$r]=$((k + 1))
	_NATLAB_NEXT=$(_natlab_int2ip $((base + k)))
}

# natlab_internet PREFIX
#   Starts a lab: PREFIX (short, unique per run, say "n$$") begins every
#   namespace name. Creates the namespace "inet" with the bridge br0, the
#   203.0.113.0/24 link that public hosts and routers' wan0 join.
natlab_internet() {
	NATLAB_P=$1
	_natlab_ns inet || return 1
	ip -n "$NATLAB_P"inet link add br0 type bridge &&
		ip -n "$NATLAB_P"inet link set dev br0 up ||
		_natlab_fail "natlab: could not create the internet bridge" || return 1
	NATLAB_KIND[inet]=internet
}

# natlab_public NAME ADDR...
#   A host on the internet (a rendezvous or relay server, a node with a
#   public address): eth0 on br0 with each ADDR/24 (203.0.113.x; several give
#   one host several public addresses, as a NAT classification needs).
#   NATLAB_ADDR[NAME] is the first.
natlab_public() {
	local n=$1 a
	shift
	[ "${NATLAB_KIND[inet]:-}" = internet ] || _natlab_fail "natlab: call natlab_internet first" || return 1
	[ $# -ge 1 ] || _natlab_fail "natlab_public $n: no address" || return 1
	_natlab_ns "$n" && _natlab_attach inet "$n" eth0 || return 1
	for a in "$@"; do
		ip -n "$NATLAB_P$n" addr add "$a/24" dev eth0 ||
			_natlab_fail "natlab_public $n: could not add $a" || return 1
	done
	NATLAB_KIND[$n]=public NATLAB_ADDR[$n]=$1 NATLAB_UP[$n]=inet
}

# _natlab_rules NAT WAN LAN_NET TIMEOUT HAIRPIN: prints the nft ruleset of a
# router (see the top of this file).
_natlab_rules() {
	local nat=$1 wan=$2 lan=$3 t=$4 hairpin=$5 dnat=''
	case $nat in full | addr) dnat='iifname "wan0" ct status dnat accept' ;; esac
	cat <<NFT
table inet filter {
	chain input {
		type filter hook input priority filter; policy drop;
		iif "lo" accept
		ct state established,related accept
		iifname "lan0" accept
	}
	chain forward {
		type filter hook forward priority filter; policy drop;
		ct state established,related accept
		iifname "lan0" accept
		$dnat
	}
}
NFT
	case $nat in
	port | symmetric)
		local random=''
		[ "$nat" = symmetric ] && random=random
		cat <<NFT
table ip nat {
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "wan0" masquerade $random
	}
}
NFT
		return 0
		;;
	esac
	# full and addr: the external port -> internal address . port map.
	cat <<NFT
table ip nat {
	map fullcone {
		type inet_service : ipv4_addr . inet_service; flags timeout; timeout ${t}s;
	}
	chain prerouting {
		type nat hook prerouting priority dstnat; policy accept;
		iifname "wan0" ip daddr $wan meta l4proto udp dnat ip to udp dport map @fullcone
	}
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "wan0" masquerade
	}
	chain learn {
		type filter hook postrouting priority srcnat + 10; policy accept;
		oifname "wan0" meta l4proto udp ct status snat ct direction original \
			update @fullcone { ct reply proto-dst : ct original ip saddr . ct original proto-src }
	}
}
NFT
	if [ "$nat" = addr ]; then
		cat <<NFT
table ip nat {
	set contacted {
		type ipv4_addr . inet_service . ipv4_addr; flags timeout; timeout ${t}s;
	}
	chain learn {
		oifname "wan0" meta l4proto udp ct status snat ct direction original \
			update @contacted { ct original ip saddr . ct original proto-src . ct original ip daddr }
	}
	chain adf {
		type filter hook forward priority filter - 5; policy accept;
		iifname "wan0" ct state new ct status dnat ip daddr . udp dport . ip saddr != @contacted drop
	}
}
NFT
	fi
	if [ "$hairpin" = 1 ]; then
		# LAN -> own WAN address: DNAT by the same map; on the way back out
		# of lan0, SNAT to the sender's external port (the hairpin map,
		# internal address . port -> external port), or just to the WAN
		# address for a sender that has no mapping yet. (Linux 6.18 already
		# gives a plain "snat to WAN" the source's existing external port;
		# the map states it rather than relying on that.)
		cat <<NFT
table ip nat {
	map hairpin {
		type ipv4_addr . inet_service : inet_service; flags timeout; timeout ${t}s;
	}
	chain learn {
		oifname "wan0" meta l4proto udp ct status snat ct direction original \
			update @hairpin { ct original ip saddr . ct original proto-src : ct reply proto-dst }
	}
	chain prerouting {
		iifname "lan0" ip daddr $wan meta l4proto udp dnat ip to udp dport map @fullcone
	}
	chain postrouting {
		oifname "lan0" ip saddr $lan ct status dnat meta l4proto udp snat ip to $wan : ip saddr . udp sport map @hairpin
		oifname "lan0" ip saddr $lan ct status dnat meta l4proto udp snat ip to $wan
	}
}
NFT
	fi
}

# natlab_site [--hairpin] [--udp-timeout S] [--udp-stream-timeout S]
#             [--on CARRIER] NAME NAT WAN_ADDR LAN_CIDR
#   A site: the router namespace NAME with wan0 (WAN_ADDR) on the internet,
#   or with --on on the LAN of the router CARRIER (then its default route is
#   CARRIER's lan0 address), and lan0, a bridge with LAN_CIDR (the router's
#   own address and prefix, say 10.0.1.1/24) that natlab_host attaches hosts
#   to; ip_forward on, ICMP redirects off, and the filter and NAT rules of
#   NAT (full, addr, port or symmetric; see the top of this file).
#   --hairpin: hairpinning (full only). --udp-timeout/--udp-stream-timeout:
#   conntrack's UDP timeouts in this router (default the kernel's 30 and
#   120 s); the stream timeout also bounds the map entries of full and addr.
natlab_site() {
	local hairpin=0 ut='' st='' on=inet
	while [ $# -gt 4 ]; do
		case $1 in
		--hairpin) hairpin=1 && shift ;;
		--udp-timeout) ut=$2 && shift 2 ;;
		--udp-stream-timeout) st=$2 && shift 2 ;;
		--on) on=$2 && shift 2 ;;
		*) _natlab_fail "natlab_site: unknown option $1"; return 2 ;;
		esac
	done
	[ $# -eq 4 ] || _natlab_fail "natlab_site: want NAME NAT WAN_ADDR LAN_CIDR" || return 2
	local n=$1 nat=$2 wan=$3 lan=$4 len=24 gw='' laddr llen lnet
	case $nat in full | addr | port | symmetric) ;; *)
		_natlab_fail "natlab_site $n: unknown NAT behaviour '$nat' (full, addr, port, symmetric)"
		return 2
		;;
	esac
	[ "$hairpin" = 0 ] || [ "$nat" = full ] ||
		_natlab_fail "natlab_site $n: hairpinning is built for full cone only" || return 2
	if [ "$on" = inet ]; then
		[ "${NATLAB_KIND[inet]:-}" = internet ] || _natlab_fail "natlab: call natlab_internet first" || return 1
	else
		[ "${NATLAB_KIND[$on]:-}" = router ] || _natlab_fail "natlab_site $n: $on is not a router" || return 1
		len=${NATLAB_LEN[$on]} gw=${NATLAB_LAN[$on]}
	fi
	laddr=${lan%/*} llen=${lan#*/}
	[ "$laddr" != "$lan" ] || _natlab_fail "natlab_site $n: LAN_CIDR '$lan' has no prefix length" || return 2
	lnet=$(_natlab_int2ip $(($(_natlab_ip2int "$laddr") & ~((1 << (32 - llen)) - 1) & 0xffffffff)))
	_natlab_ns "$n" && _natlab_attach "$on" "$n" wan0 || return 1
	ip netns exec "$NATLAB_P$n" sysctl -qw net.ipv4.ip_forward=1 \
		net.ipv4.conf.all.send_redirects=0 net.ipv4.conf.default.send_redirects=0 &&
		ip -n "$NATLAB_P$n" addr add "$wan/$len" dev wan0 &&
		ip -n "$NATLAB_P$n" link add lan0 type bridge &&
		ip -n "$NATLAB_P$n" addr add "$lan" dev lan0 &&
		ip -n "$NATLAB_P$n" link set dev lan0 up ||
		_natlab_fail "natlab_site $n: could not set up its interfaces" || return 1
	if [ -n "$gw" ]; then
		ip -n "$NATLAB_P$n" route add default via "$gw" dev wan0 ||
			_natlab_fail "natlab_site $n: could not route via $gw" || return 1
	fi
	_natlab_rules "$nat" "$wan" "$lnet/$llen" "${st:-120}" "$hairpin" |
		ip netns exec "$NATLAB_P$n" nft -f - ||
		_natlab_fail "natlab_site $n: nft refused the $nat rule set" || return 1
	NATLAB_KIND[$n]=router NATLAB_ADDR[$n]=$wan NATLAB_NAT[$n]=$nat NATLAB_UP[$n]=$on
	NATLAB_LAN[$n]=$laddr NATLAB_LEN[$n]=$llen NATLAB_NEXT[$n]=1
	_natlab_block_table "$n" || return 1
	if [ -n "$ut$st" ]; then
		natlab_timeouts "$n" "${ut:-30}" "${st:-120}" || return 1
	fi
}

# natlab_host ROUTER NAME [ADDR]
#   A host on ROUTER's LAN: eth0 with ADDR (default: the next free address)
#   and the router's lan0 address as default route. NATLAB_ADDR[NAME] is
#   its address.
natlab_host() {
	local r=$1 n=$2 a=${3:-}
	[ "${NATLAB_KIND[$r]:-}" = router ] || _natlab_fail "natlab_host $n: $r is not a router" || return 1
	if [ -z "$a" ]; then
		_natlab_next "$r" || return 1
		a=$_NATLAB_NEXT
	fi
	_natlab_ns "$n" && _natlab_attach "$r" "$n" eth0 || return 1
	ip -n "$NATLAB_P$n" addr add "$a/${NATLAB_LEN[$r]}" dev eth0 &&
		ip -n "$NATLAB_P$n" route add default via "${NATLAB_LAN[$r]}" dev eth0 ||
		_natlab_fail "natlab_host $n: could not set address $a" || return 1
	NATLAB_KIND[$n]=host NATLAB_ADDR[$n]=$a NATLAB_UP[$n]=$r
}

# natlab_double_nat CARRIER CARRIER_WAN HOME NAT LAN_CIDR [CARRIER_NAT]
#   Carrier-grade double NAT: the router CARRIER (CARRIER_NAT, default port)
#   with wan0 CARRIER_WAN on the internet and lan0 100.64.0.1/10, and the
#   home router HOME (NAT, LAN_CIDR) whose wan0 takes the carrier LAN's next
#   address (100.64.0.2 for the first). natlab_site --on CARRIER adds more
#   home routers, with other options.
natlab_double_nat() {
	local c=$1 cwan=$2 h=$3 nat=$4 lan=$5 cnat=${6:-port}
	natlab_site "$c" "$cnat" "$cwan" 100.64.0.1/10 && _natlab_next "$c" &&
		natlab_site --on "$c" "$h" "$nat" "$_NATLAB_NEXT" "$lan"
}

# natlab_public_addr NAME: prints the address NAME's traffic has on the
# internet: a public host's own, a router's WAN address or, behind a
# carrier, the carrier's; a LAN host's router's.
natlab_public_addr() {
	local n=$1
	while [ "${NATLAB_KIND[$n]:-}" = host ] ||
		{ [ "${NATLAB_KIND[$n]:-}" = router ] && [ "${NATLAB_UP[$n]}" != inet ]; }; do
		n=${NATLAB_UP[$n]}
	done
	[ -n "${NATLAB_ADDR[$n]:-}" ] || _natlab_fail "natlab: no such host or router: $1" || return 1
	echo "${NATLAB_ADDR[$n]}"
}

# natlab_wan_addr ROUTER: sets NATLAB_WAN to the IPv4 address on ROUTER's
# wan0, read from its namespace (not from the registry).
natlab_wan_addr() {
	NATLAB_WAN=$(ip -n "$NATLAB_P$1" -4 -o addr show dev wan0 2>/dev/null | awk '{ sub("/.*", "", $4); print $4; exit }')
	[ -n "$NATLAB_WAN" ] || _natlab_fail "natlab_wan_addr: $1 has no wan0 address" || return 1
}

# natlab_timeouts ROUTER UNREPLIED STREAM: conntrack's UDP timeouts in
# ROUTER, in seconds: for flows that have seen no reply, and for flows with
# traffic both ways. They apply to existing entries at their next packet.
natlab_timeouts() {
	ip netns exec "$NATLAB_P$1" sysctl -qw "net.netfilter.nf_conntrack_udp_timeout=$2" \
		"net.netfilter.nf_conntrack_udp_timeout_stream=$3" ||
		_natlab_fail "natlab_timeouts: could not set the UDP timeouts of $1" || return 1
}

# natlab_flush ROUTER: forgets every mapping, as a NAT reboot does: flushes
# ROUTER's conntrack table and the maps and sets full and addr keep. A host's
# next datagram gets a new mapping (with symmetric, a new random port).
natlab_flush() {
	local r=$1 m
	ip netns exec "$NATLAB_P$r" conntrack -F >/dev/null 2>&1 ||
		_natlab_fail "natlab_flush: conntrack -F failed in $r (is conntrack installed?)" || return 1
	for m in "map fullcone" "set contacted" "map hairpin"; do
		ip netns exec "$NATLAB_P$r" nft list "${m% *}" ip nat "${m#* }" >/dev/null 2>&1 || continue
		ip netns exec "$NATLAB_P$r" nft flush "${m% *}" ip nat "${m#* }" ||
			_natlab_fail "natlab_flush: could not flush ${m#* } in $r" || return 1
	done
}

# _natlab_block_table ROUTER: the table natlab_block fills: UDP from or to an
# address of its set "peers" is dropped before conntrack sees it (priority
# raw), so a blocked datagram leaves no mapping behind.
_natlab_block_table() {
	ip netns exec "$NATLAB_P$1" nft -f - <<'NFT' || _natlab_fail "natlab: could not add the block table to $1" || return 1
table ip natlab_block {
	set peers { type ipv4_addr; }
	chain prerouting {
		type filter hook prerouting priority raw; policy accept;
		meta l4proto udp ip saddr @peers counter drop
		meta l4proto udp ip daddr @peers counter drop
	}
}
NFT
}

# natlab_block ROUTER PEER / natlab_unblock ROUTER PEER: drops (or lets
# through again) every UDP datagram ROUTER forwards or receives from or to
# PEER's internet address (natlab_public_addr of a name; or an address), in
# both directions: blocking one router of a pair cuts the direct path between
# two sites, and leaves their paths to anything else (a relay) alone.
natlab_block() {
	local a
	a=$(_natlab_peer_addr "$2") || _natlab_fail "natlab_block: no such name: $2" || return 1
	ip netns exec "$NATLAB_P$1" nft add element ip natlab_block peers "{ $a }" ||
		_natlab_fail "natlab_block: could not block $a at $1" || return 1
}
natlab_unblock() {
	local a
	a=$(_natlab_peer_addr "$2") || _natlab_fail "natlab_unblock: no such name: $2" || return 1
	ip netns exec "$NATLAB_P$1" nft delete element ip natlab_block peers "{ $a }" ||
		_natlab_fail "natlab_unblock: $a is not blocked at $1" || return 1
}
_natlab_peer_addr() {
	case $1 in
	*.*.*.*) echo "$1" ;;
	*) natlab_public_addr "$1" ;;
	esac
}

# natlab_block_drops ROUTER: prints how many datagrams natlab_block has
# dropped at ROUTER.
natlab_block_drops() {
	ip netns exec "$NATLAB_P$1" nft list chain ip natlab_block prerouting |
		awk '/counter packets/ { for (i = 1; i < NF; i++) if ($i == "packets") s += $(i + 1) } END { print s + 0 }'
}

# natlab_server NAME LOG ADDR:PORT...: starts udpprobe.py's echo and
# rendezvous server in the public host NAME on each ADDR:PORT (addresses of
# NAME), its output in LOG; sets NATLAB_SERVER_PID and waits (up to 5 s)
# until every endpoint is bound.
natlab_server() {
	local n=$1 log=$2 ready _
	shift 2
	ready=$log.ready
	rm -f "$ready"
	# Not through a shell function: $! must be the server itself.
	ip netns exec "$NATLAB_P$n" "$NATLAB_PYTHON" "$NATLAB_PROBE" server --ready "$ready" "$@" </dev/null >"$log" 2>&1 &
	NATLAB_SERVER_PID=$!
	natlab_track pid "$NATLAB_SERVER_PID"
	for _ in $(seq 1 100); do
		[ -e "$ready" ] && return 0
		kill -0 "$NATLAB_SERVER_PID" 2>/dev/null || break
		sleep 0.05
	done
	_natlab_fail "natlab_server: the server in $n did not start: $(tail -n 1 "$log")"
}

# natlab_probe NAME ARGS...: runs udpprobe.py ARGS in NAME's namespace
# (map, filter, inbound, punch; see the top of tests/lib/udpprobe.py).
natlab_probe() {
	local n=$1
	shift
	ip netns exec "$NATLAB_P$n" "$NATLAB_PYTHON" "$NATLAB_PROBE" "$@"
}

# natlab_classify HOST ADDR1 ADDR2 [PORT1 PORT2]
#   Classifies the NAT (or NATs) between HOST and the internet with
#   udpprobe.py, against a natlab_server bound to ADDR1:PORT1, ADDR1:PORT2
#   and ADDR2:PORT1 (ports default 3478 and 3479): sets NATLAB_MAPPING and
#   NATLAB_FILTERING to the RFC 4787 names udpprobe.py prints
#   (endpoint-independent, address-dependent, address-and-port-dependent)
#   and NATLAB_CLASSIFIED to both probes' output on one line, for messages.
#   Fails if a probe got no answer or no control datagram.
natlab_classify() {
	local h=$1 a1=$2 a2=$3 p1=${4:-3478} p2=${5:-3479} tmp pid rc=0
	tmp=$(mktemp -d) || _natlab_fail "natlab_classify: mktemp failed" || return 1
	natlab_probe "$h" map "$a1:$p1" "$a1:$p2" "$a2:$p1" >"$tmp/map" 2>&1 &
	pid=$!
	natlab_probe "$h" filter "$a1:$p1" "$a1:$p2" "$a2:$p1" >"$tmp/filter" 2>&1 || rc=1
	wait "$pid" || rc=1
	NATLAB_MAPPING=$(sed -n 's/^mapping=//p' "$tmp/map")
	NATLAB_FILTERING=$(sed -n 's/^filtering=//p' "$tmp/filter")
	NATLAB_CLASSIFIED=$(cat "$tmp/map" "$tmp/filter" | tr '\n' ' ')
	rm -rf "$tmp"
	[ "$rc" = 0 ] || _natlab_fail "natlab_classify $h: a probe failed: $NATLAB_CLASSIFIED" || return 1
}

# natlab_expected HOST: sets NATLAB_WANT_MAPPING and NATLAB_WANT_FILTERING to
# what natlab_classify should find for HOST, from the behaviours of the
# routers between it and the internet: the mapping is address-and-port-
# dependent if one of them is symmetric, else endpoint-independent; the
# filtering is the strictest of theirs (a carrier's filter applies to what
# reaches the home router, the home router's to the rest).
natlab_expected() {
	local n=$1 rank=0 r
	NATLAB_WANT_MAPPING=endpoint-independent
	[ "${NATLAB_KIND[$n]:-}" = host ] || _natlab_fail "natlab_expected: $n is not a LAN host" || return 1
	n=${NATLAB_UP[$n]}
	while [ "$n" != inet ]; do
		case ${NATLAB_NAT[$n]} in
		full) r=0 ;;
		addr) r=1 ;;
		port) r=2 ;;
		symmetric) r=2 NATLAB_WANT_MAPPING=address-and-port-dependent ;;
		esac
		[ "$r" -le "$rank" ] || rank=$r
		n=${NATLAB_UP[$n]}
	done
	case $rank in
	0) NATLAB_WANT_FILTERING=endpoint-independent ;;
	1) NATLAB_WANT_FILTERING=address-dependent ;;
	2) NATLAB_WANT_FILTERING=address-and-port-dependent ;;
	esac
}
