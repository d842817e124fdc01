#!/usr/bin/env bash
# make demo: a three-node yip mesh in network namespaces, one node behind a
# NAT. A small internet (tests/lib/natlab.sh) holds a rendezvous server and
# nodes a and b; node c sits behind a home router's NAT. No configuration
# has an endpoint=: the nodes find each other through the server. Every leg
# is pinged over IPv4 and the key-derived IPv6 addresses, yipctl shows how
# c reaches its peers, and then the live state while loss is injected on
# one leg so loss recovery has work to do. Everything is removed at the end.
. "$(dirname "$0")/../tests/netns/lib.sh"
. "$ROOT/tests/lib/natyip.sh"


say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

NODES=(a b c)
say "Building a small internet in network namespaces (prefix $NSP)"
ny_lab
ny_build natlab_public rdv 203.0.113.10
ny_build natlab_public a 203.0.113.1
ny_build natlab_public b 203.0.113.2
ny_build natlab_site home port 203.0.113.30 192.168.1.1/24
ny_build natlab_host home c
echo "    rendezvous server: 203.0.113.10 (public)"
echo "    node a: 203.0.113.1 (public), node b: 203.0.113.2 (public)"
echo "    node c: 192.168.1.2, behind a home router that NATs it to 203.0.113.30 (port-restricted)"

say "Generating a key pair per node; each key also names an IPv6 address"
i=0
for n in "${NODES[@]}"; do
	i=$((i + 1))
	ny_node "$n" "10.77.0.$i"
	echo "    $n: public key $(pub_of "$n") -> $(addr_of "$n"), tunnel address 10.77.0.$i"
done

say "Starting yip-rendezvous on 203.0.113.10:7000"
ny_rdv_start rdv 203.0.113.10:7000
echo "    its public key: ${NY_RDV_PUB[rdv]}"

for n in "${NODES[@]}"; do
	peers=()
	for m in "${NODES[@]}"; do [ "$m" = "$n" ] || peers+=("$m"); done
	ny_conf "$n" rdv "${peers[@]}"
done
say "Node c's configuration: the server, and peers by public key alone (no endpoint=)"
sed 's/^local_private=.*/local_private=<secret>/; s/^/    /' "$TMP/c.conf"

say "Starting a yipd in each node"
for n in "${NODES[@]}"; do launch_yipd "$n"; done
for n in "${NODES[@]}"; do wait_yipd "$n"; done

say "Pinging every leg of the mesh (the server introduces the nodes; the first packet runs the handshake)"
for n in "${NODES[@]}"; do
	for m in "${NODES[@]}"; do
		[ "$n" = "$m" ] && continue
		wait_ping "$n" "${NY_IP[$m]}"
		v4=$(ping_ok "$n" "${NY_IP[$m]}" 3 -i 0.05 | cut -d/ -f2)
		v6=$(ping_ok "$n" "$(addr_of "$m")" 3 -i 0.05 | cut -d/ -f2)
		printf '    %s -> %s   IPv4 %s ms   IPv6 %s ms (average round trip)\n' "$n" "$m" "$v4" "$v6"
	done
done

say "yipctl show on node c, behind the NAT: 'path' says how each peer is reached"
# A moment for the paths to settle on direct ones.
for _ in $(seq 1 25); do
	[ "$(ny_kind c a)/$(ny_kind c b)" = direct/direct ] && break
	sleep 0.2
done
yipctl_of c show | sed 's/^/    /'

say "Dropping 10 % of the datagrams that reach node b (nftables), and pinging b from a"
add_loss b 10
in_ns a ping -n -q -c 200 -i 0.01 10.77.0.2 >"$TMP/lossy.ping" 2>&1 &
pinger=$!
for i in 1 2; do
	sleep 1
	echo
	echo "    --- yipctl show on node b, where the loss is (second $i) ---"
	yipctl_of b show | sed 's/^/    /'
done
wait "$pinger"
echo
sed -n 's/^\(.*packets transmitted.*\)$/    ping a -> b with 10 % loss: \1/p' "$TMP/lossy.ping"
del_loss b

say "Tearing down: stopping the daemons and the server, deleting the namespaces"
echo
echo "Demo finished. 'make check' runs every test; docs/ explains configuration, protocol and NAT traversal."
