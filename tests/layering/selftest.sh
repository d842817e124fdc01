#!/usr/bin/env bash
# Shows that scripts/layering.py catches what it is for: it builds tiny
# objects laid out as CMake would, with a file calling a file above it in
# src/peer, a cycle, and an engine module calling the event loop, and
# expects each to fail with its message; the same objects without the bad
# call must pass.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/yip-layering.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0

# obj TARGET MODULE FILE CODE: compiles CODE as T/<case>/CMakeFiles/TARGET.dir/src/MODULE/FILE.o
obj() {
	local dir="$CASE/CMakeFiles/$1.dir/src/$2"
	mkdir -p "$dir"
	printf '%s\n' "$4" >"$dir/$3.c"
	cc -c -o "$dir/$3.o" "$dir/$3.c"
	rm "$dir/$3.c"
}

# expect NAME WANT [PHRASE]: runs the checker on $CASE; WANT is ok or fail.
expect() {
	local out rc=0
	out=$(python3 "$ROOT/scripts/layering.py" "$CASE" 2>&1) || rc=$?
	if [ "$2" = ok ] && [ $rc -eq 0 ]; then
		echo "ok - $1"
	elif [ "$2" = fail ] && [ $rc -eq 1 ] && [[ $out == *"$3"* ]]; then
		echo "ok - $1: $(echo "$out" | head -n 1)"
	else
		echo "FAIL - $1: exit $rc: $out"
		fails=$((fails + 1))
	fi
}

base() {
	CASE="$T/$1"
	obj yip-engine peer frame.c 'int frame_wall(void) { return 1; }'
	obj yip-engine wire wire.c 'int wire_classify(void) { return 2; }'
	obj yip-os loop loop.c 'int wire_classify(void); int loop_run(void) { return wire_classify(); }'
}

base clean
obj yip-engine peer session.c 'int session_usable(void) { return 0; }'
expect "downward calls pass" ok

base upward
obj yip-engine peer session.c 'int frame_wall(void); int session_usable(void) { return frame_wall(); }'
expect "a call to a file above it fails" fail "peer calls a file above it: peer/session.c -> peer/frame.c (frame_wall)"

base cycle
obj yip-engine peer session.c 'int frame_wall(void); int session_usable(void) { return frame_wall(); }'
obj yip-engine peer frame.c 'int session_usable(void); int frame_wall(void) { return session_usable(); }'
expect "a cycle fails" fail "cycle in peer"

base module
obj yip-engine peer session.c 'int loop_run(void); int session_usable(void) { return loop_run(); }'
expect "an engine module calling the loop fails" fail "peer calls up into loop"

base unmapped
obj yip-engine peer stray.c 'int stray(void) { return 0; }'
expect "an object whose source is gone is ignored" ok

[ $fails -eq 0 ] || exit 1
echo "layering selftest: all passed"
