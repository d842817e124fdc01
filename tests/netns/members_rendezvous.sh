#!/usr/bin/env bash
# drivers: one (control plane: admission and revocation at a members-only server)
# A members-only rendezvous server and yipd's certificate: the server
# (--ca, --network) registers a and b, which are members (ca, cert), and
# refuses c, which has no certificate. a lists b as a peer without an
# endpoint; b lists nobody. a asks the server where b is, calls b at the
# address it was told, and b admits a by its certificate: they ping.
# Then the CA revokes b: on SIGHUP the server reads its revocation list
# again (inside its sandbox, as nobody), drops b at once and refuses it as
# revoked when it registers again, while a stays; a list older than the one
# in force is refused.
. "$(dirname "$0")/lib.sh"

RDV=${RDV:-$ROOT/build/yip-rendezvous}
[ -x "$RDV" ] || fail "$RDV not built (run make)"

ca_init
ca_nodes a b c s
(umask 077 && "$RDV" --genkey >"$TMP/server.key")
SPUB=$(sed -n 's/^public=//p' "$TMP/server.key")
mkdir -m 0700 "$TMP/ctl-s"
chown nobody "$TMP/ctl-s"
"$YIPCA" revoke --ca-key "$TMP/ca.key" --network "$NET" --serial 1 --out "$TMP/revoked-1.txt" ||
	fail "yip-ca revoke (an empty list)"
chmod 644 "$TMP/revoked-1.txt"
cp "$TMP/revoked-1.txt" "$TMP/revoked.txt"
env "YIP_CTL_DIR=$TMP/ctl-s" ip netns exec "$(ns s)" "$RDV" -v --key "$TMP/server.key" \
	--listen 198.18.0.4:7000 --ca "$CA_PUB" --network "$NET" --revocations "$TMP/revoked.txt" \
	>"$TMP/rdv.log" 2>&1 &
RDV_PID=$!
PIDS+=($RDV_PID)
poll 5 'grep -q "listening on" "$TMP/rdv.log"' || fail "yip-rendezvous did not start"

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
poll 10 '[ "$(server_state a)" = "registered None" ] && [ "$(server_state b)" = "registered None" ] &&
	[ "$(server_state c)" = "refused no_certificate" ]' 0.2 || true
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
log "a found b through the members-only server; b admitted a by certificate"

# rdv_get KEY: one top-level value of the server's status --json.
rdv_get() {
	YIP_CTL_DIR="$TMP/ctl-s" "$RDV" status --json | python3 -c '
import json, sys
print(json.load(sys.stdin).get(sys.argv[1]))' "$1"
}
[ "$(rdv_get revocations_serial)" = 1 ] || fail "server: revocation list $(rdv_get revocations_serial)"
"$YIPCA" revoke --ca-key "$TMP/ca.key" --network "$NET" --list "$TMP/revoked-1.txt" --serial 2 \
	--cert "$TMP/b.crt" --force --out "$TMP/revoked.new" || fail "yip-ca revoke b"
chmod 644 "$TMP/revoked.new"
mv "$TMP/revoked.new" "$TMP/revoked.txt"
evicted=$(rdv_get evicted)
kill -HUP "$RDV_PID"
poll 5 '[ "$(rdv_get revocations_serial)" = 2 ]' || fail "the server did not take list 2 on SIGHUP"
[ "$(rdv_get evicted)" -eq $((evicted + 1)) ] || fail "the server dropped $(($(rdv_get evicted) - evicted)) nodes, not b alone"
poll 20 '[ "$(server_state b)" = "refused revoked" ]' || fail "b after its revocation: $(server_state b)"
[ "$(server_state a)" = "registered None" ] || fail "a after b's revocation: $(server_state a)"
kill -0 "$RDV_PID" || fail "yip-rendezvous died reading its list in the sandbox"
log "b revoked: the server dropped it on SIGHUP and refuses it; a stays registered"

# A rollback to list 1 would admit b again: refused, list 2 stays.
cp "$TMP/revoked-1.txt" "$TMP/revoked.txt"
kill -HUP "$RDV_PID"
poll 5 'grep -q "older than the 2 in force" "$TMP/rdv.log"' ||
	fail "the server did not answer the second SIGHUP"
[ "$(rdv_get revocations_serial)" = 2 ] || fail "the server went back to list $(rdv_get revocations_serial)"
kill -0 "$RDV_PID" || fail "yip-rendezvous died"
log "ok: an older list is refused; list 2 stays in force"
