#!/usr/bin/env bash
# drivers: one (control plane: what it checks does not depend on the I/O driver)
# Checks that yipd refuses broken configuration files: exit status exactly 2,
# and a "file:line: message" on stderr naming what is wrong. yipd checks the
# configuration before it touches any device, so this needs neither root nor
# a network namespace; it lives here with the other end-to-end tests.
#
# Usage: tests/netns/bad_config_rejected.sh   (YIPD=path/to/yipd to override)
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
YIPD=${YIPD:-$repo_root/build/yipd}

if [[ ! -x $YIPD ]]; then
	echo "bad_config_rejected: $YIPD is not an executable (build first, or set YIPD)" >&2
	exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# X25519 key pairs from RFC 7748, section 6.1 (test keys, never use them).
priv=77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a
pub=8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a
bob=de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f
carol=c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0

passed=0
failed=0

# expect NAME WHERE PHRASE: runs yipd on $work/NAME.conf and checks that it
# exits with status 2 and that stderr holds both WHERE and PHRASE.
expect() {
	local name=$1 where=$2 phrase=$3
	local file="$work/$name.conf" status=0 stderr

	# A config that is wrongly accepted would start the daemon; do not wait for it.
	stderr=$(timeout --kill-after=2 10 "$YIPD" "$file" 2>&1 >/dev/null) || status=$?
	if [[ $status -eq 2 && $stderr == *"$where"* && $stderr == *"$phrase"* ]]; then
		echo "ok - $name: $where $phrase"
		passed=$((passed + 1))
	else
		echo "FAIL - $name: wanted status 2 and '$where' ... '$phrase';" \
			"got status $status and: $stderr"
		failed=$((failed + 1))
	fi
}

cat >"$work/no_equals.conf" <<EOF
local_private=$priv
mtu 1400
EOF
expect no_equals "no_equals.conf:2:" "no '='"

cat >"$work/typo_key.conf" <<EOF
local_private=$priv
[peer]
public_key=$bob
endpiont=192.0.2.1:51820
EOF
expect typo_key "typo_key.conf:4:" "unknown key 'endpiont' (did you mean 'endpoint'?)"

cat >"$work/peer_key_outside.conf" <<EOF
local_private=$priv
public_key=$bob
EOF
expect peer_key_outside "peer_key_outside.conf:2:" "'public_key' belongs in a [peer] block"

cat >"$work/interface_key_inside.conf" <<EOF
local_private=$priv
[peer]
public_key=$bob
mtu=1400
EOF
expect interface_key_inside "interface_key_inside.conf:4:" "'mtu' is an interface key"

cat >"$work/duplicate_key.conf" <<EOF
local_private=$priv
listen=0.0.0.0:51820
listen=0.0.0.0:51821
EOF
expect duplicate_key "duplicate_key.conf:3:" "duplicate key 'listen' (first set on line 2)"

cat >"$work/short_key.conf" <<EOF
# a truncated key
local_private=${priv:0:63}
EOF
expect short_key "short_key.conf:2:" "expected 64 hex digits, got 63"

cat >"$work/bad_hex.conf" <<EOF
local_private=${priv:0:10}zz${priv:12}
EOF
expect bad_hex "bad_hex.conf:1:" "character 11 is not a hex digit"

cat >"$work/zero_key.conf" <<EOF
local_private=0000000000000000000000000000000000000000000000000000000000000000
EOF
expect zero_key "zero_key.conf:1:" "local_private is all zeros"

cat >"$work/public_mismatch.conf" <<EOF
local_private=$priv
local_public=$bob
EOF
expect public_mismatch "public_mismatch.conf:2:" "local_public does not match local_private"

cat >"$work/host_bits.conf" <<EOF
local_private=$priv
[peer]
public_key=$bob
allowed_ips=10.9.0.0/24, 10.10.0.1/16
EOF
expect host_bits "host_bits.conf:4:" "host bits set in '10.10.0.1/16' (did you mean 10.10.0.0/16?)"

cat >"$work/endpoint_no_port.conf" <<EOF
local_private=$priv
[peer]
public_key=$bob
endpoint=192.0.2.1
EOF
expect endpoint_no_port "endpoint_no_port.conf:4:" "missing port"

cat >"$work/bad_port.conf" <<EOF
local_private=$priv
[peer]
public_key=$bob
endpoint=[2001:db8::1]:65536
EOF
expect bad_port "bad_port.conf:4:" "bad port '65536'"

cat >"$work/bad_mtu.conf" <<EOF
local_private=$priv
mtu=576
EOF
expect bad_mtu "bad_mtu.conf:2:" "mtu 576 is out of range (1280..9000)"

cat >"$work/kind.conf" <<EOF
local_private=$priv
device_kind=tup
EOF
expect kind "kind.conf:2:" "device_kind 'tup' is not valid (valid values: tun, tap)"

cat >"$work/unknown_section.conf" <<EOF
[Interface]
local_private=$priv
EOF
expect unknown_section "unknown_section.conf:1:" "unknown section '[Interface]'"

cat >"$work/no_private.conf" <<EOF
listen=0.0.0.0:51820
[peer]
public_key=$bob
EOF
expect no_private "no_private.conf: missing local_private" "missing local_private"

cat >"$work/peer_without_key.conf" <<EOF
local_private=$priv
[peer]
endpoint=192.0.2.1:51820

[peer]
public_key=$bob
EOF
expect peer_without_key "peer_without_key.conf:2:" "[peer] block has no public_key"

cat >"$work/same_peer_twice.conf" <<EOF
local_private=$priv
[peer]
public_key=$bob
[peer]
public_key=$bob
EOF
expect same_peer_twice "same_peer_twice.conf:4:" "same as the [peer] on line 2"

cat >"$work/peer_is_self.conf" <<EOF
local_private=$priv
[peer]
public_key=$pub
EOF
expect peer_is_self "peer_is_self.conf:2:" "our own public key"

cat >"$work/shared_prefix.conf" <<EOF
local_private=$priv
[peer]
public_key=$bob
allowed_ips=10.9.0.0/24
[peer]
public_key=$carol
allowed_ips=10.9.0.0/24
EOF
expect shared_prefix "shared_prefix.conf:5:" "allowed_ips 10.9.0.0/24 is also in the [peer] on line 2"

printf 'local_private=%s\nmtu=1400\0\n' "$priv" >"$work/nul_byte.conf"
expect nul_byte "nul_byte.conf:2:" "NUL byte"

{
	echo "local_private=$priv"
	printf '#%.0s' {1..5000}
	echo
} >"$work/long_line.conf"
expect long_line "long_line.conf:2:" "longer than 4096 characters"

echo "bad_config_rejected: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
