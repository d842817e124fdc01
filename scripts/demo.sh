#!/usr/bin/env bash
# make demo: a three-node yip network in network namespaces, built from a
# certificate authority, one node behind a NAT. A small internet
# (tests/lib/natlab.sh) holds a rendezvous server and nodes a and b; node c
# sits behind a home router's NAT. A CA (yip-ca) certifies the three nodes
# and names a as the root; no configuration has a [peer] block or an
# endpoint=: each node calls the root, learns the others from the signed
# records that spread by gossip, and reaches them through the (members-only)
# rendezvous server. Every leg is pinged over IPv4 and the key-derived IPv6
# addresses, yipctl shows the members and how c reaches them, and then the
# live state while loss is injected on one leg so loss recovery has work to
# do. Everything is removed at the end.
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

say "A certificate authority for network 'demo' (yip-ca, offline): a certificate per node, a as the root"
YIPCA=$ROOT/build/yip-ca
CA_PUB=$("$YIPCA" genkey --out "$TMP/ca.key") || fail "yip-ca genkey"
chmod 755 "$TMP" # the daemons read their certificates again as an unprivileged user
echo "    CA public key: $CA_PUB"
i=0
for n in "${NODES[@]}"; do
	i=$((i + 1))
	"$YIPD" --cert-request <"$TMP/$n.key" >"$TMP/$n.req" || fail "yipd --cert-request $n"
	"$YIPCA" sign-cert --ca-key "$TMP/ca.key" --request "$TMP/$n.req" --network demo \
		--name "node $n" --addr "10.77.0.$i" --out "$TMP/$n.crt" >/dev/null ||
		fail "yip-ca sign-cert $n"
	chmod 644 "$TMP/$n.crt"
done
"$YIPCA" sign-roots --ca-key "$TMP/ca.key" --network demo \
	--root "$(pub_of a)@203.0.113.1:51820" --out "$TMP/roots.txt" >/dev/null || fail "yip-ca sign-roots"
chmod 644 "$TMP/roots.txt"
"$YIPCA" show "$TMP/c.crt" | sed 's/^/    /'

say "Starting yip-rendezvous on 203.0.113.10:7000, for members of network 'demo' only"
ny_rdv_start rdv 203.0.113.10:7000 --ca "$CA_PUB" --network demo
echo "    its public key: ${NY_RDV_PUB[rdv]}"

for n in "${NODES[@]}"; do
	ny_conf --line "ca=$CA_PUB" --line "cert=$TMP/$n.crt" --line "roots=$TMP/roots.txt" \
		--line "state_dir=$TMP/state-$n" "$n" rdv
	chmod 600 "$TMP/$n.conf"
done
say "Node c's configuration: the CA, its certificate, the root set and the server; no [peer] blocks"
sed 's/^local_private=.*/local_private=<secret>/; s/^/    /' "$TMP/c.conf"

say "Starting a yipd in each node"
for n in "${NODES[@]}"; do launch_yipd "$n"; done
for n in "${NODES[@]}"; do wait_yipd "$n"; done

say "Pinging every leg of the mesh (records spread by gossip; the first packet to a member calls it)"
for n in "${NODES[@]}"; do
	for m in "${NODES[@]}"; do
		[ "$n" = "$m" ] && continue
		wait_ping "$n" "${NY_IP[$m]}"
		v4=$(ping_ok "$n" "${NY_IP[$m]}" 3 -i 0.05 | cut -d/ -f2)
		v6=$(ping_ok "$n" "$(addr_of "$m")" 3 -i 0.05 | cut -d/ -f2)
		printf '    %s -> %s   IPv4 %s ms   IPv6 %s ms (average round trip)\n' "$n" "$m" "$v4" "$v6"
	done
done

say "The rendezvous server admits members only"
rdv rdv status --summary | grep -E "members only|nodes:" | sed 's/^ */    /'

say "yipctl members on node c: every member, its certificate, and how c reaches it"
yipctl_of c members | sed 's/^/    /'

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
