#!/usr/bin/env bash
# make demo: a three-node yip mesh in network namespaces. Keys and configs
# are generated, every leg is pinged over IPv4 and the key-derived IPv6
# addresses, then yipctl shows the live state while loss is injected on one
# leg so loss recovery has work to do. Everything is removed at the end.
. "$(dirname "$0")/../tests/netns/lib.sh"


say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }


say "Creating three network namespaces on one virtual switch: $(ns a), $(ns b), $(ns c)"
mesh a b c
for n in a b c; do
	echo "    node $n: wire address 198.18.0.$(idx_of "$n"), tunnel address 10.77.0.$(idx_of "$n")"
done

say "Generating a key pair per node; each key also names an IPv6 address"
for n in a b c; do
	echo "    $n: public key $(pub_of "$n") -> $(addr_of "$n")"
done

say "Node a's configuration (the private key is not shown)"
sed 's/^local_private=.*/local_private=<secret>/; s/^/    /' "$TMP/a.conf"

say "Starting a yipd in each namespace"
for n in a b c; do start_yipd "$n"; done

say "Pinging every leg of the mesh (the first packet to a peer runs the Noise handshake)"
for n in a b c; do
	for m in a b c; do
		[ "$n" = "$m" ] && continue
		v4=$(ping_ok "$n" "10.77.0.$(idx_of "$m")" 3 -i 0.05 | cut -d/ -f2)
		v6=$(ping_ok "$n" "$(addr_of "$m")" 3 -i 0.05 | cut -d/ -f2)
		printf '    %s -> %s   IPv4 %s ms   IPv6 %s ms (average round trip)\n' "$n" "$m" "$v4" "$v6"
	done
done

say "Dropping 10 % of the datagrams that reach node b (nftables), and pinging b from a"
add_loss b 10
in_ns a ping -n -q -c 300 -i 0.01 10.77.0.2 >"$TMP/lossy.ping" 2>&1 &
pinger=$!
for i in 1 2 3; do
	sleep 1
	echo
	echo "    --- yipctl show on node b, where the loss is (second $i) ---"
	yipctl_of b show | sed 's/^/    /'
done
wait "$pinger"
echo
sed -n 's/^\(.*packets transmitted.*\)$/    ping a -> b with 10 % loss: \1/p' "$TMP/lossy.ping"
del_loss b

say "Tearing down: stopping the daemons and deleting the namespaces"
echo
echo "Demo finished. 'make check' runs every test; docs/ explains configuration and protocol."
