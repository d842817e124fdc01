#!/usr/bin/env bash
# A members-only rendezvous server and yipd's certificate: the server
# (--ca, --network) registers a and b, which are members (ca, cert), and
# refuses c, which has no certificate. a lists b as a peer without an
# endpoint; b lists nobody. a asks the server where b is, calls b at the
# address it was told, and b admits a by its certificate: they ping.
. "$(dirname "$0")/lib.sh"

RDV=${RDV:-$ROOT/build/yip-rendezvous}
[ -x "$RDV" ] || fail "$RDV not built (run make)"

ca_init
ca_nodes a b c s
(umask 077 && "$RDV" --genkey >"$TMP/server.key")
SPUB=$(sed -n 's/^public=//p' "$TMP/server.key")
mkdir -m 0700 "$TMP/ctl-s"
chown nobody "$TMP/ctl-s"
env "YIP_CTL_DIR=$TMP/ctl-s" ip netns exec "$(ns s)" "$RDV" -v --key "$TMP/server.key" \
	--listen 198.18.0.4:7000 --ca "$CA_PUB" --network "$NET" >"$TMP/rdv.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do
	grep -q "listening on" "$TMP/rdv.log" && break
	sleep 0.1
done
grep -q "listening on" "$TMP/rdv.log" || fail "yip-rendezvous did not start"

for n in a b c; do
	# No root set: the server is how they meet.
	sed -i "/^roots=/d" "$TMP/$n.conf"
	printf 'rendezvous=198.18.0.4:7000\nrendezvous_key=%s\n' "$SPUB" >>"$TMP/$n.conf"
done
# c is no member: no ca, no cert.
sed -i -e '/^ca=/d' -e '/^cert=/d' -e '/^state_dir=/d' "$TMP/c.conf"
# a knows b's key, not where it is.
printf '[peer]\npublic_key=%s\nallowed_ips=10.77.0.2/32\n' "$(pub_of b)" >>"$TMP/a.conf"
for n in a b c; do start_yipd "$n"; done

# server_state NAME: NAME's view of the server: state and why refused.
server_state() {
	yipctl_of "$1" show --json | python3 -c '
import json, sys
r = json.load(sys.stdin)["rendezvous"][0]
print(r["state"], r.get("refused"))'
}
for i in $(seq 1 50); do
	[ "$(server_state a)" = "registered None" ] && [ "$(server_state b)" = "registered None" ] &&
		[ "$(server_state c)" = "refused no_certificate" ] && break
	sleep 0.2
done
[ "$(server_state a)" = "registered None" ] || fail "a: $(server_state a)"
[ "$(server_state b)" = "registered None" ] || fail "b: $(server_state b)"
[ "$(server_state c)" = "refused no_certificate" ] || fail "c: $(server_state c)"
log "the server registered the members a and b and refused c"

wait_ping a 10.77.0.2
ping_ok a 10.77.0.2 3 -i 0.05 >/dev/null
ping_ok b 10.77.0.1 3 -i 0.05 >/dev/null
[ "$(json_get b show membership.admitted)" -eq 1 ] || fail "b did not admit a by certificate"
[ "$(yipctl_of b members --json | python3 -c '
import json, sys
print(" ".join(m["name"] + ":" + str(m["connected"]) for m in json.load(sys.stdin)["members"]))')" = "node b:None node a:True" ] ||
	fail "b's members: $(yipctl_of b members --json)"
log "ok: a found b through the members-only server; b admitted a by certificate"
