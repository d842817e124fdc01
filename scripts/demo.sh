#!/usr/bin/env bash
# make demo: two network namespaces joined by a virtual cable, a yipd in
# each, an encrypted tunnel between them, pings across it, live status, and
# a clean teardown. Needs root.
. "$(dirname "$0")/../tests/netns/lib.sh"

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

say "Creating two network namespaces ($(ns a), $(ns b)) joined by a veth cable"
two_peers
echo "    $(ns a): 198.18.0.1    $(ns b): 198.18.0.2   (the 'internet' between them)"

say "Generating a key pair for each node (yipd --genkey)"
echo "    a: public key $(pub_of a)  -> address $(addr_of a)"
echo "    b: public key $(pub_of b)  -> address $(addr_of b)"

say "Configuration of node a ($TMP/a.conf, private key elided)"
sed 's/^local_private=.*/local_private=<secret>/; s/^/    /' "$TMP/a.conf"

say "Starting yipd in both namespaces"
start_yipd a
start_yipd b
in_ns a ip -brief addr show dev yip0 | sed 's/^/    a: /'
in_ns b ip -brief addr show dev yip0 | sed 's/^/    b: /'

say "Pinging b's tunnel address 10.77.0.2 from a (the first packet triggers the Noise handshake)"
in_ns a ping -n -c 5 -i 0.2 10.77.0.2 | sed 's/^/    /'
grep -h "handshake completed" "$TMP/a.log" | sed 's/^/    a: /'

say "Pinging a's key-derived IPv6 address from b"
in_ns b ping -n -c 3 -i 0.2 "$(addr_of a)" | sed 's/^/    /'

say "Live status of node a (SIGUSR1), refreshed every second while traffic flows"
in_ns a ping -n -q -c 30 -i 0.1 10.77.0.2 >/dev/null &
pinger=$!
for _ in 1 2 3; do
	sleep 1
	status a | sed 's/^.*status: /    /'
	echo
done
wait "$pinger"

say "Comparing round-trip time: tunnel vs bare cable"
echo "    tunnel: $(ping_ok a 10.77.0.2 20 -i 0.05)"
echo "    cable:  $(ping_ok a 198.18.0.2 20 -i 0.05)"

say "Tearing down: stopping both daemons and deleting the namespaces"
echo
echo "Demo finished. Next: 'make check' runs every test; docs/configuration.md explains the config."
