#!/usr/bin/env bash
# yip-ca end to end, the real binaries: a CA key, a member's request from
# yipd --cert-request, certificates, root sets, revocation lists; show and
# verify with every verdict the command line can reach and its exit status;
# bad input refused with exit status 2 and a message naming what is wrong.
# Needs neither root nor a network; ctest runs it (make unit, make unit-asan).
#
# Usage: tests/cli/yip_ca.sh [BUILD_DIR]   (default build/)
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$repo_root/build}" && pwd)
CA="$build/yip-ca"
YIPD="$build/yipd"
for b in "$CA" "$YIPD"; do
	[[ -x $b ]] || {
		echo "yip_ca: $b is not an executable (build first)" >&2
		exit 1
	}
done

work=$(mktemp -d /tmp/yip-ca-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"

passed=0
failed=0
ok() {
	echo "ok - $1"
	passed=$((passed + 1))
}
bad() {
	echo "FAIL - $1"
	failed=$((failed + 1))
}

# run WANT_STATUS NAME CMD...: runs CMD, keeps stdout in $out and stderr in
# $err, and checks the exit status.
run() {
	local want=$1 name=$2 status=0
	shift 2
	out=$("$@" 2>"$work/stderr") || status=$?
	err=$(cat "$work/stderr")
	if [[ $status -eq $want ]]; then
		ok "$name (exit $status)"
	else
		bad "$name: wanted exit $want, got $status; stdout: $out; stderr: $err"
	fi
}

# has NAME TEXT PHRASE: TEXT holds PHRASE.
has() {
	if [[ $2 == *"$3"* ]]; then
		ok "$1"
	else
		bad "$1: wanted '$3' in: $2"
	fi
}

# refused NAME PHRASE CMD...: exit status 2 and PHRASE on stderr.
refused() {
	local name=$1 phrase=$2
	shift 2
	run 2 "$name" "$@"
	has "$name: says what is wrong" "$err" "$phrase"
}

# json FILE EXPR: a field of `yip-ca show --json FILE` (a Python expression on j).
json() {
	"$CA" show --json "$1" | python3 -c 'import json, sys; j = json.load(sys.stdin); print('"$2"')'
}

# RFC 7748's test private keys (never use them).
alice_priv=77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a
bob_priv=5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb
alice_pub=$(echo "$alice_priv" | "$YIPD" --pubkey)
bob_pub=$(echo "$bob_priv" | "$YIPD" --pubkey)

# ---- keys ----------------------------------------------------------------------------
run 0 "genkey --out" "$CA" genkey --out ca.key
ca_pub=$out
has "genkey prints the public key" "$(cat ca.key)" "ca_public=$ca_pub"
[[ $(stat -c %a ca.key) == 600 ]] && ok "the key file is 0600" || bad "ca.key is $(stat -c %a ca.key)"
refused "genkey does not replace a key" "ca.key exists; not replacing it (--force to replace)" \
	"$CA" genkey --out ca.key
[[ $(grep ca_public ca.key) == "ca_public=$ca_pub" ]] && ok "the refused genkey left the key alone" ||
	bad "ca.key changed"
chmod 644 ca.key
cp ca.key ca.key.orig
run 0 "genkey --force" "$CA" genkey --out ca.key --force
[[ $(stat -c %a ca.key) == 600 ]] && ok "a replaced key file is 0600 again" || bad "mode $(stat -c %a ca.key)"
mv ca.key.orig ca.key
run 0 "pubkey" "$CA" pubkey ca.key
[[ $out == "$ca_pub" ]] && ok "pubkey of the key file" || bad "pubkey: $out"
run 0 "genkey to stdout" "$CA" genkey
has "genkey to stdout prints both keys" "$out" "ca_private="
"$CA" genkey --out other-ca.key >/dev/null

# ---- a member's request ----------------------------------------------------------------
echo "$alice_priv" | "$YIPD" --cert-request >alice.req
has "yipd --cert-request" "$(cat alice.req)" "-----BEGIN YIP CERTIFICATE REQUEST-----"
run 0 "show a request" "$CA" show alice.req
has "show: the request's key" "$out" "member key:  $alice_pub"
has "show: the request checks itself" "$out" "check:       ok: valid"
echo "private=$bob_priv" | "$YIPD" --cert-request >bob.req
refused "cert-request of a bad key" "expected 64 hex digits" \
	sh -c "echo nonsense | '$YIPD' --cert-request"

# ---- certificates ----------------------------------------------------------------------
run 0 "sign-cert from a request" "$CA" sign-cert --ca-key ca.key --request alice.req \
	--network example --name "alice laptop" --addr 10.1.0.5 --addr fd00:1::/64 \
	--group admins --out alice.crt
has "the certificate file starts with a summary" "$(head -n 1 alice.crt)" \
	'# yip certificate: "alice laptop" in network example'
run 0 "show a certificate" "$CA" show alice.crt
has "show: name" "$out" "name:        alice laptop"
has "show: prefixes" "$out" "prefixes:    10.1.0.5/32, fd00:1::/64"
has "show: groups" "$out" "groups:      admins"
has "show: default validity" "$out" "(expires in 365 days)"
has "show: not checked without --ca" "$out" "not checked (give --ca KEY)"
run 0 "show --ca" "$CA" show alice.crt --ca "$ca_pub"
has "show --ca says it is valid" "$out" "check:       ok: valid"
run 0 "show --ca another CA" "$CA" show alice.crt --ca other-ca.key
has "show --ca another CA says so" "$out" "check:       wrong_ca"
[[ $(json alice.crt 'j["public_key"], j["name"], j["prefixes"], j["expires_in_days"]') == \
	"$alice_pub alice laptop ['10.1.0.5/32', 'fd00:1::/64'] 365" ]] &&
	ok "show --json" || bad "show --json: $(json alice.crt 'j')"

run 0 "verify: ok" "$CA" verify --ca "$ca_pub" --network example alice.crt
[[ $out == ok ]] && ok "verify prints ok" || bad "verify printed '$out'"
run 0 "verify with the CA key file" "$CA" verify --ca ca.key --network example alice.crt
run 1 "verify: another CA" "$CA" verify --ca other-ca.key --network example alice.crt
[[ $out == wrong_ca ]] && ok "verify prints wrong_ca" || bad "printed '$out'"
has "verify explains wrong_ca" "$err" "does not verify under the CA key given"
run 1 "verify: another network" "$CA" verify --ca ca.key --network other alice.crt
[[ $out == wrong_network ]] && ok "verify prints wrong_network" || bad "printed '$out'"
run 1 "verify: a certificate for another key" "$CA" verify --ca ca.key --network example \
	--peer-key "$bob_pub" alice.crt
[[ $out == key_mismatch ]] && ok "verify prints key_mismatch" || bad "printed '$out'"
run 0 "verify: the key it is for" "$CA" verify --ca ca.key --network example \
	--peer-key "$alice_pub" alice.crt

# Time: an expired certificate, one not yet valid, and the 300 s skew at both ends.
run 0 "sign-cert: dates" "$CA" sign-cert --ca-key ca.key --key "$alice_pub" \
	--sign-key "$(json alice.crt 'j["signing_key"]')" --network example --name old \
	--addr 10.1.0.5/32 --not-before 2020-01-01 --not-after 2020-06-01T12:00:00Z --out old.crt
has "show: expired" "$("$CA" show old.crt)" "valid until: 2020-06-01T12:00:00Z (expired "
run 1 "verify: expired" "$CA" verify --ca ca.key --network example old.crt
[[ $out == expired ]] && ok "verify prints expired" || bad "printed '$out'"
na=$(json old.crt 'j["not_after_unix"]')
nb=$(json old.crt 'j["not_before_unix"]')
run 0 "verify: 299 s after not_after" "$CA" verify --ca ca.key --network example \
	--at "@$((na + 299))" old.crt
run 1 "verify: 300 s after not_after" "$CA" verify --ca ca.key --network example \
	--at "@$((na + 300))" old.crt
run 0 "verify: 300 s before not_before" "$CA" verify --ca ca.key --network example \
	--at "@$((nb - 300))" old.crt
run 1 "verify: 301 s before not_before" "$CA" verify --ca ca.key --network example \
	--at "@$((nb - 301))" old.crt
[[ $out == not_yet_valid ]] && ok "verify prints not_yet_valid" || bad "printed '$out'"
run 0 "sign-cert: in the future" "$CA" sign-cert --ca-key ca.key --request bob.req \
	--network example --name bob --addr 10.1.0.6 --not-before 2099-01-01 --days 10 --out future.crt
run 1 "verify: not yet valid" "$CA" verify --ca ca.key --network example future.crt
[[ $out == not_yet_valid ]] && ok "verify prints not_yet_valid" || bad "printed '$out'"

# ---- revocation --------------------------------------------------------------------------
run 0 "sign-cert: bob" "$CA" sign-cert --ca-key ca.key --request bob.req --network example \
	--name bob --addr 10.1.0.6 --days 30 --out bob.crt
run 0 "revoke a certificate" "$CA" revoke --ca-key ca.key --network example --cert alice.crt \
	--serial 100 --out rev1.txt
run 1 "verify: revoked by hash" "$CA" verify --ca ca.key --network example \
	--revocations rev1.txt alice.crt
[[ $out == revoked ]] && ok "verify prints revoked" || bad "printed '$out'"
run 0 "verify: another certificate is not revoked" "$CA" verify --ca ca.key --network example \
	--revocations rev1.txt bob.crt
run 0 "revoke a key, keeping the list" "$CA" revoke --ca-key ca.key --network example \
	--list rev1.txt --key "$bob_pub" --out rev2.txt
[[ $(json rev2.txt 'j["serial"] > 100, len(j["revoked"])') == "True 2" ]] &&
	ok "the new list has the old entry, the new one and a higher serial" ||
	bad "rev2: $(json rev2.txt 'j')"
run 1 "verify: revoked by key" "$CA" verify --ca ca.key --network example \
	--revocations rev2.txt bob.crt
[[ $out == revoked ]] && ok "verify prints revoked" || bad "printed '$out'"
run 0 "show a revocation list" "$CA" show rev2.txt --ca ca.key
has "show: revoked entries" "$out" "revoked:     2"
refused "revoke: a serial not above the old one" "is not above rev2.txt's serial" \
	"$CA" revoke --ca-key ca.key --network example --list rev2.txt --serial 100
refused "revoke: another CA's list" "rev2.txt: wrong_ca" \
	"$CA" revoke --ca-key other-ca.key --network example --list rev2.txt
refused "revoke: another CA's certificate" "not a certificate of this CA for network example" \
	"$CA" revoke --ca-key other-ca.key --network example --cert alice.crt
refused "verify: a revocation list of another CA" "wrong_ca" \
	"$CA" verify --ca other-ca.key --network example --revocations rev2.txt bob.crt

# ---- root sets ----------------------------------------------------------------------------
run 0 "sign-roots" "$CA" sign-roots --ca-key ca.key --network example --serial 7 \
	--root "$alice_pub@192.0.2.1:51820,[2001:db8::1]:51820" --root "$bob_pub@198.51.100.2:443" \
	--out roots.txt
run 0 "verify a root set" "$CA" verify --ca ca.key --network example roots.txt
run 1 "verify a root set: another CA" "$CA" verify --ca other-ca.key --network example roots.txt
run 0 "show a root set" "$CA" show roots.txt
has "show: a root and its addresses" "$out" "$alice_pub 192.0.2.1:51820, [2001:db8::1]:51820"
printf '# the roots\n%s 192.0.2.1:51820 [2001:db8::1]:51820\n\n%s 198.51.100.2:443\n' \
	"$alice_pub" "$bob_pub" >roots.in
run 0 "sign-roots --roots FILE" "$CA" sign-roots --ca-key ca.key --network example \
	--roots roots.in --out roots2.txt
s2=$(json roots2.txt 'j["serial"]')
(( s2 > 1000000000 )) && ok "the default serial is the time" || bad "serial $s2"
[[ $(json roots2.txt 'len(j["roots"]), j["roots"][0]["endpoints"]') == \
	"2 ['192.0.2.1:51820', '[2001:db8::1]:51820']" ]] && ok "the roots file" ||
	bad "roots2: $(json roots2.txt 'j')"
printf '%s 0.0.0.0:51820\n' "$alice_pub" >wild.in
refused "sign-roots: a wildcard address" "wild.in:1: 0.0.0.0:51820 is not an address a node can send to" \
	"$CA" sign-roots --ca-key ca.key --network example --roots wild.in
refused "sign-roots: no port" "missing port" \
	"$CA" sign-roots --ca-key ca.key --network example --root "$alice_pub@192.0.2.1"
refused "sign-roots: no address" "expected KEY@IP:PORT" \
	"$CA" sign-roots --ca-key ca.key --network example --root "$alice_pub"
refused "sign-roots: a root twice" "listed twice" \
	"$CA" sign-roots --ca-key ca.key --network example --root "$alice_pub@192.0.2.1:1" \
	--root "$alice_pub@192.0.2.2:1"

# ---- bad input ---------------------------------------------------------------------------
sign() { "$CA" sign-cert --ca-key ca.key --network example --name x "$@"; }
refused "--addr with host bits" "host bits set in '10.1.0.5/24' (did you mean 10.1.0.0/24?)" \
	sign --request alice.req --addr 10.1.0.5/24
refused "--addr twice" "--addr '10.1.0.5/32' given twice" \
	sign --request alice.req --addr 10.1.0.5 --addr 10.1.0.5/32
refused "no --addr" "at least one --addr" sign --request alice.req
refused "a bad network name" "a network name is 1 to 63 characters" \
	sign --request alice.req --addr 10.1.0.5 --network Example
refused "a bad member name" "a member name is 1 to 63 printable ASCII" \
	"$CA" sign-cert --ca-key ca.key --network example --name " x" --request alice.req --addr 10.0.0.1
refused "a group twice" "--group 'a' given twice" \
	sign --request alice.req --addr 10.1.0.5 --group a --group a
refused "--days and --not-after" "--days or --not-after, not both" \
	sign --request alice.req --addr 10.1.0.5 --days 3 --not-after 2030-01-01
refused "a bad date" "expected YYYY-MM-DD" sign --request alice.req --addr 10.1.0.5 \
	--not-after 2030-1-1
refused "a date that does not exist" "no such date" sign --request alice.req --addr 10.1.0.5 \
	--not-after 2030-02-30
refused "ending before it starts" "would end before it starts" sign --request alice.req \
	--addr 10.1.0.5 --not-before 2030-01-01 --not-after 2029-01-01
refused "a certificate instead of a request" "this is a certificate, not a certificate request" \
	sign --request alice.crt --addr 10.1.0.5
# A request whose member key was swapped for Bob's: its self-signature fails.
python3 - alice.req "$bob_pub" >forged.req <<'EOF'
import base64, sys
lines = open(sys.argv[1]).read().split("\n")
body = "".join(l for l in lines if l and not l.startswith(("#", "-----")))
raw = bytearray(base64.b64decode(body))
raw[6:38] = bytes.fromhex(sys.argv[2])
print("-----BEGIN YIP CERTIFICATE REQUEST-----")
print(base64.b64encode(bytes(raw)).decode())
print("-----END YIP CERTIFICATE REQUEST-----")
EOF
refused "a forged request" "self-signature does not verify" sign --request forged.req --addr 10.1.0.5
refused "--request and --key" "not both" sign --request alice.req --key "$bob_pub" \
	--sign-key "$(json alice.crt 'j["signing_key"]')" --addr 10.1.0.5
refused "a sign key that is no Ed25519 key" "--sign-key: not an Ed25519 public key" \
	sign --key "$bob_pub" --sign-key "$(printf 'ff%.0s' {1..32})" --addr 10.1.0.5
refused "a short key" "--key: expected 64 hex digits, got 6" sign --key abcdef --addr 10.1.0.5
head -n 5 alice.crt >cut.crt
refused "a file cut short" "cut.crt: no -----END YIP CERTIFICATE----- line" "$CA" show cut.crt
sed '5s/^./!/' alice.crt >garbled.crt
refused "not base64" "garbled.crt: line 5: not base64 ('!' in column 1)" "$CA" show garbled.crt
echo "hello" >hello.txt
refused "not an object" "hello.txt: line 1: expected a line like -----BEGIN YIP CERTIFICATE-----" \
	"$CA" show hello.txt
echo "private=$alice_priv" >node.key
refused "a node key as the CA key" "node.key:1: 'private=' is a yip node key" \
	sign --request alice.req --addr 10.1.0.5 --ca-key node.key
refused "a missing file" "cannot read nowhere.crt" "$CA" show nowhere.crt
refused "an unknown command" "unknown command 'sing-cert'" "$CA" sing-cert
refused "verify without --network" "--ca and --network are needed" "$CA" verify --ca ca.key alice.crt
refused "--ca that is no key" "is neither a public key (64 hex digits) nor a CA key file" \
	"$CA" verify --ca nothing --network example alice.crt
refused "--out over an existing file" "alice.crt exists" sign --request alice.req \
	--addr 10.1.0.5 --out alice.crt

echo "yip_ca: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
