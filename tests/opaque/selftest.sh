#!/usr/bin/env bash
# Shows that scripts/opaque.py catches what it is for: in a tiny tree laid
# out like src/, a file of src/loop that includes peer/state.h (or
# peer/internal.h), or touches a field of struct yip_device with peer.h
# alone, must fail; one that uses peer.h's functions, and a file of src/peer
# that includes state.h, must pass.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/yip-opaque.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0

API='#include "peer/peer.h"
unsigned mtu(const struct yip_device *d);
unsigned mtu(const struct yip_device *d) { return yip_device_mtu(d); }'

# tree CASE MODULE CODE: a tree T/CASE with src/MODULE/f.c holding CODE and
# src/ctl/api.c using the API, and their compile commands as CMake would
# record them.
tree() {
	CASE="$T/$1"
	mkdir -p "$CASE/src/$2" "$CASE/src/ctl" "$CASE/build"
	printf '%s\n' "$3" >"$CASE/src/$2/f.c"
	printf '%s\n' "$API" >"$CASE/src/ctl/api.c"
	local cc="cc -std=c11 -D_GNU_SOURCE -I$ROOT/src -Wall -Wextra -Werror -c"
	cat >"$CASE/build/compile_commands.json" <<JSON
[{"directory": "$CASE", "file": "src/$2/f.c", "command": "$cc -o f.o src/$2/f.c"},
 {"directory": "$CASE", "file": "src/ctl/api.c", "command": "$cc -o api.o src/ctl/api.c"}]
JSON
}

# expect NAME WANT: runs the check on $CASE; WANT is ok or fail.
expect() {
	local out rc=0
	out=$(python3 "$ROOT/scripts/opaque.py" "$CASE/build" "$CASE" 2>&1) || rc=$?
	if [ "$2" = ok ] && [ $rc -eq 0 ]; then
		echo "ok - $1"
	elif [ "$2" = fail ] && [ $rc -eq 1 ] && [[ $out == *"reaches into the engine's state"* ]]; then
		echo "ok - $1: $(echo "$out" | head -n 1)"
	else
		echo "FAIL - $1: exit $rc: $out"
		fails=$((fails + 1))
	fi
}

# A file that reads a field of the device after including HEADER.
field() {
	printf '#include "%s"\n%s\n%s\n' "$1" 'unsigned mtu(const struct yip_device *d);' \
		'unsigned mtu(const struct yip_device *d) { return d->mtu; }'
}

tree api loop "$API"
expect "the API passes" ok
tree state loop "$(field peer/state.h)"
expect "src/loop including peer/state.h fails" fail
tree internal loop "$(field peer/internal.h)"
expect "src/loop including peer/internal.h fails" fail
tree field loop "$(field peer/peer.h)"
expect "a field read through peer.h alone fails" fail
tree engine peer "$(field peer/state.h)"
expect "src/peer itself is not checked" ok

[ $fails -eq 0 ] || exit 1
echo "opaque selftest: all passed"
