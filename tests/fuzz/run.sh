#!/usr/bin/env bash
# Runs every libFuzzer target in DIR for SECS seconds each, starting from its
# seed corpus in tests/fuzz/corpus/<name>/ (copied, so runs do not grow the
# repository). Any crash, leak or sanitizer report fails the run.
set -euo pipefail
dir=$(cd "${1:?usage: run.sh FUZZ_BIN_DIR SECS}" && pwd)
secs=${2:-10}
src=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/yip-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
pass=0 failed=0
for bin in "$dir"/fuzz_*; do
	[ -x "$bin" ] || continue
	name=$(basename "$bin")
	corpus="$work/$name"
	mkdir -p "$corpus"
	seeds="$src/corpus/${name#fuzz_}"
	[ -d "$seeds" ] && cp -r "$seeds"/. "$corpus"/
	if (cd "$work" && "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=0 "$corpus" >"$work/$name.log" 2>&1); then
		pass=$((pass + 1))
		runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$work/$name.log" | tail -n 1)
		echo "fuzz: ok   $name (${runs:-?} runs in ${secs}s)"
	else
		failed=$((failed + 1))
		echo "fuzz: FAIL $name"
		tail -n 40 "$work/$name.log"
	fi
done
echo "fuzz: $pass passed, $failed failed"
[ "$failed" -eq 0 ]
