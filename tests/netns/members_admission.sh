#!/usr/bin/env bash
# drivers: one (control plane: what it checks does not depend on the I/O driver)
# Admission by certificate, refused for each reason: a root r and one good
# member, and one node per refusal, each calling r: with no certificate
# (no ca, r as a configured peer), another CA's, an expired one, one not yet
# valid, a revoked one, one of another network, and one for a different
# key. Each refused node's pings to r get no answer, r counts the refusal
# under its verdict and holds no peer for it; the good member pings r.
. "$(dirname "$0")/lib.sh"

ca_init
"$YIPCA" genkey --out "$TMP/ca2.key" >"$TMP/ca2.pub" || fail "second CA"
ca_nodes r good nc wca exp nyv rv wn km
ca_roots "$TMP/roots.txt" 10 r
now=$(date +%s)
# Another CA's certificate, with that CA configured (its own check passes).
CERT_CA=$TMP/ca2.key ca_cert wca
ROOTS_CA=$TMP/ca2.key ca_roots "$TMP/roots-ca2.txt" 10 r
sed -i -e "s/^ca=.*/ca=$(cat "$TMP/ca2.pub")/" -e "s|^roots=.*|roots=$TMP/roots-ca2.txt|" "$TMP/wca.conf"
# Expired two days ago; valid only from two days on.
ca_cert exp --not-before "@$((now - 9 * 86400))" --not-after "@$((now - 2 * 86400))"
ca_cert nyv --not-before "@$((now + 2 * 86400))" --days 30
# Another network's certificate (and root set).
CERT_NET=othernet ca_cert wn
ROOTS_NET=othernet ca_roots "$TMP/roots-other.txt" 10 r
sed -i "s|^roots=.*|roots=$TMP/roots-other.txt|" "$TMP/wn.conf"
# A certificate for another key than km's own.
gen_key stranger >/dev/null
KEY_OF=stranger ca_cert km
# rv's key is on r's revocation list.
"$YIPCA" revoke --ca-key "$TMP/ca.key" --network "$NET" --key "$(pub_of rv)" --serial 5 \
	--out "$TMP/revoked.txt" || fail "yip-ca revoke"
chmod 644 "$TMP/revoked.txt"
echo "revocations=$TMP/revoked.txt" >>"$TMP/r.conf"
# No certificate at all: not CA-gated, r configured as a peer.
cat >"$TMP/nc.conf" <<CONF
local_private=$(priv_of nc)
listen=198.18.0.$(idx_of nc):51820
device=yip0
address=10.77.0.$(idx_of nc)/24
[peer]
public_key=$(pub_of r)
endpoint=198.18.0.1:51820
allowed_ips=10.77.0.1/32
CONF

for n in r good nc wca exp nyv rv wn km; do launch_yipd "$n"; done
for n in r good nc wca exp nyv rv wn km; do wait_yipd "$n"; done
wait_ping good 10.77.0.1
ping_ok good 10.77.0.1 3 -i 0.05 >/dev/null
log "good member: admitted, pings r"

# The refused nodes and their verdicts. They all ping r at the same time
# (an unanswered run takes over a second).
REFUSED="nc:no_certificate wca:wrong_ca exp:expired nyv:not_yet_valid rv:revoked wn:wrong_network km:key_mismatch"
pingers=()
for nv in $REFUSED; do
	in_ns "${nv%%:*}" ping -n -c 3 -i 0.3 -W 1 "$(addr_of r)" >"$TMP/ping.${nv%%:*}" 2>&1 &
	pingers+=($!)
done
for p in "${pingers[@]}"; do wait "$p" || true; done

# counted: r's refusals by verdict, from one snapshot, into COUNT; true when
# every verdict of REFUSED has been counted (each node calls r at start and
# again as it retries).
declare -A COUNT=()
counted() {
	local k v nv
	COUNT=()
	while read -r k v; do COUNT[$k]=$v; done < <(yipctl_of r show --json | python3 -c '
import json, sys
for k, v in json.load(sys.stdin)["membership"]["refused"].items(): print(k, v)')
	for nv in $REFUSED; do [ "${COUNT[${nv#*:}]:-0}" -gt 0 ] || return 1; done
}
poll 10 counted 0.2 || true
for nv in $REFUSED; do
	n=${nv%%:*} verdict=${nv#*:}
	grep -q " 100% packet loss" "$TMP/ping.$n" || fail "$n reached r: $(cat "$TMP/ping.$n")"
	[ "${COUNT[$verdict]:-0}" -gt 0 ] || fail "r did not count $verdict for $n"
	log "$n refused: $verdict (r counted ${COUNT[$verdict]})"
done

# r holds only the good member; every refusal is also a not_admitted drop.
[ "$(peer_count r)" -eq 1 ] || fail "r holds $(peer_count r) peers, expected 1"
[ "$(json_get r show membership.admitted)" -eq 1 ] || fail "r admitted more than one member"
# One snapshot: the refusals by verdict add up to the not_admitted drops.
yipctl_of r show --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
by = d["membership"]["refused"]
assert sum(by.values()) == d["drops"]["not_admitted"], (by, d["drops"]["not_admitted"])
assert by["malformed"] == 0, by
' || fail "r: refusals by verdict do not add up to not_admitted"
# The nodes with a bad certificate of their own say so.
for n in exp nyv km; do
	[ "$(json_get "$n" show membership.cert_verdict)" != ok ] || fail "$n: its own certificate shows ok"
	[ "$(json_get "$n" show membership.warning)" != null ] || fail "$n: no warning about its certificate"
done
log "ok: seven refusals, each counted by its verdict; only the good member admitted"
