#!/usr/bin/env bash
# Long fuzzing runs: every libFuzzer target in DIR until RUNS executions or
# SECS seconds, whichever comes first, JOBS at a time under nice, each from
# a copy of its seed corpus in tests/fuzz/corpus/<name>/.
#
#   tests/fuzz/long.sh [DIR [RUNS [SECS [JOBS [OUT [NAME...]]]]]]
#
# Defaults: build-fuzz/fuzz, 10000000 runs, 3600 s, 1 at a time, output in
# OUT=/tmp/yip-fuzz-long, every fuzz_* in DIR in name order; given NAMEs
# (fuzz_wire ...), only those, in that order. Build the fuzzers first (make
# fuzz). Each target's log, grown corpus and any crash input stay in
# OUT/<name>/; OUT/results.md gets one table row per target run into OUT so
# far (also by earlier calls): executions, seconds, CPU seconds, exec/s,
# crashes. Exits non-zero if any target crashed, leaked or tripped a
# sanitizer. Not part of make check.
#
# With UNTIL set (seconds since the epoch) the whole run ends by then: each
# target, as it starts, gets at most SECS and at most its share of the time
# left (time left * JOBS / targets not yet started, never past UNTIL), so
# targets that reach RUNS early leave more to those after them. Order the
# targets fastest first.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(cd "${1:-$root/build-fuzz/fuzz}" && pwd)
runs=${2:-10000000}
secs=${3:-3600}
jobs=${4:-1}
out=${5:-/tmp/yip-fuzz-long}
shift $(($# < 5 ? $# : 5))
mkdir -p "$out"
bins=()
if [ $# -gt 0 ]; then
	for name in "$@"; do
		[ -x "$dir/$name" ] || {
			echo "long.sh: no fuzzer $dir/$name" >&2
			exit 2
		}
		bins+=("$dir/$name")
	done
else
	bins=("$dir"/fuzz_*)
fi

# one BIN: runs the fuzzer BIN and writes OUT/<its name>/row.
one() {
	local bin=$1 limit=$2 name work seeds rc start end execs crashes cpu
	name=$(basename "$bin")
	work="$out/$name"
	rm -rf "$work"
	mkdir -p "$work/corpus" "$work/crashes"
	echo "$limit" >"$work/limit"
	seeds="$root/tests/fuzz/corpus/${name#fuzz_}"
	[ -d "$seeds" ] && cp -r "$seeds"/. "$work/corpus"/
	start=$(date +%s)
	rc=0
	# Its own session, so its own scheduler autogroup, niced too: nice alone
	# works only inside one autogroup, and a campaign started from another
	# session took a third of the machine from benchmarks run beside it.
	(cd "$work" && setsid -w sh -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec nice -n 19 "$@"' \
		fuzz "$bin" -runs="$runs" -max_total_time="$limit" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$work/crashes/" corpus >"$work/log" 2>&1) || rc=$?
	end=$(date +%s)
	# CPU the fuzzer got (this subshell's children: user + system), which
	# is less than the seconds when the machine is busy.
	times >"$work/times" # not in a pipe: a subshell's times would be its own
	cpu=$(sed -n 2p "$work/times" | awk '{
		n = split($1 " " $2, t, " "); s = 0
		for (i = 1; i <= n; i++) { split(t[i], p, "m"); s += p[1] * 60 + p[2] }
		printf "%d", s }')
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
	crashes=$(find "$work/crashes" -type f | wc -l)
	printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$name" "${execs:-?}" "$((end - start))" "$cpu" \
		"$([ -n "$execs" ] && echo $((execs / (end - start > 0 ? end - start : 1))) || echo '?')" \
		"$crashes" "$([ "$rc" -eq 0 ] && echo ok || echo "exit $rc")" >"$work/row"
	cat "$work/row"
}

left=${#bins[@]}
for bin in "${bins[@]}"; do
	[ -x "$bin" ] || continue
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
	limit=$secs
	if [ -n "${UNTIL:-}" ]; then
		rest=$((UNTIL - $(date +%s)))
		share=$((rest * jobs / left))
		[ "$share" -gt "$rest" ] && share=$rest
		[ "$share" -lt "$limit" ] && limit=$share
		[ "$limit" -lt 1 ] && limit=1
	fi
	left=$((left - 1))
	one "$bin" "$limit" &
done
wait
{
	echo "| fuzzer | executions | seconds | CPU s | exec/s | crash inputs | result |"
	echo "|---|---:|---:|---:|---:|---:|---|"
	cat "$out"/fuzz_*/row
} >"$out/results.md"
cat "$out/results.md"
! grep -q 'exit ' "$out/results.md"
