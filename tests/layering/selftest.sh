#!/usr/bin/env bash
# Shows that scripts/layering.py catches what it is for: it builds tiny
# objects laid out as CMake would, with a file calling a file above it in
# src/peer, a cycle, an engine module calling the event loop, and one loop
# calling the other (modules that share a line of src/MODULES), and expects
# each to fail with its message; the same objects without the bad call must
# pass. Then it plants a modules file of its own to show that the order is
# the file's: a call that src/MODULES allows fails once the file puts its
# callee above its caller or leaves a module out.
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

# expect NAME WANT [PHRASE]: runs the checker on $CASE (with the modules file
# $MODS if set, else src/MODULES); WANT is ok or fail.
expect() {
	local out rc=0
	out=$(python3 "$ROOT/scripts/layering.py" "$CASE" ${MODS:+"$MODS"} 2>&1) || rc=$?
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

base peers
obj yip-os rdvloop rdvloop.c 'int rdv_loop_run(void) { return 0; }'
expect "the two loops calling neither passes" ok
obj yip-os loop run.c 'int rdv_loop_run(void); int yip_loop_run(void) { return rdv_loop_run(); }'
expect "a module calling one on its own line fails" fail \
	"loop calls rdvloop, which shares its layer: loop/run.c -> rdvloop/rdvloop.c (rdv_loop_run)"

# mods LINE...: writes a modules file of these lines as $MODS.
mods() {
	MODS="$CASE/MODULES"
	printf '%s\n' "# planted" "$@" >"$MODS"
}

base planted
obj yip-engine peer session.c 'int wire_classify(void); int session_usable(void) { return wire_classify(); }'
expect "peer calling wire passes under src/MODULES" ok
mods "engine: util" "engine: peer" "engine: wire" "os: loop"
expect "the same call fails once the file puts wire above peer" fail \
	"peer calls up into wire: peer/session.c -> wire/wire.c (wire_classify)"
mods "engine: peer" "os: loop"
expect "a module missing from the file fails" fail "module not in the declared order"
mods "engine: peer" "os: loop" "engine: wire"
expect "an engine line above the OS side fails" fail "an engine module above the OS side"
mods "engine: util crypto addr noise replay wire" "engine: peer" "os: loop"
expect "a planted file that allows every call passes" ok
unset MODS

[ $fails -eq 0 ] || exit 1
echo "layering selftest: all passed"
