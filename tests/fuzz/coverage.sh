#!/usr/bin/env bash
# Line coverage of the engine (src/peer, src/fec, src/wire, src/rendezvous,
# src/membership, src/obf) reached by the fuzzers' corpus.
#
#   tests/fuzz/coverage.sh [BUILD_DIR [SECS]]     (make fuzz-coverage)
#
# Builds every fuzzer with clang's source-based coverage (no sanitizers) in
# BUILD_DIR (default build-cov), grows each one's corpus from its seeds in
# tests/fuzz/corpus/<name>/ for SECS seconds (default 60; 0 runs the seeds
# only), then runs every fuzzer once over its grown corpus with profiling
# on, merges the profiles and prints llvm-cov's per-file report for those
# directories and one total line per directory. The grown corpora are left
# in BUILD_DIR/corpus/ for a look (or for copying interesting inputs into
# the seed corpus). Not part of make check.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build-cov}
secs=${2:-60}
dirs=(src/peer src/fec src/wire src/rendezvous src/membership src/obf)
cd "$root"

# The LLVM tools that match the compiler: llvm-profdata-14 for clang 14.
major=$(clang -dumpversion | cut -d. -f1)
tool() {
	if command -v "$1-$major" >/dev/null; then
		echo "$1-$major"
	elif command -v "$1" >/dev/null; then
		echo "$1"
	else
		echo "coverage: $1 not found (Debian package llvm-$major; scripts/deps.sh installs it)" >&2
		exit 1
	fi
}
profdata=$(tool llvm-profdata)
cov=$(tool llvm-cov)

flags="-fprofile-instr-generate -fcoverage-mapping"
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DYIP_FUZZ=ON \
	-DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
# Only the fuzzers: without a sanitizer runtime the other programs lack
# the symbols -fsanitize=fuzzer-no-link refers to.
targets=()
for src in tests/fuzz/fuzz_*.c; do
	targets+=("$(basename "$src" .c)")
done
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >/dev/null

prof="$build/profiles"
rm -rf "$prof" "$build/corpus"
mkdir -p "$prof" "$build/corpus"
bins=()
for name in "${targets[@]}"; do
	bin="$build/fuzz/$name"
	corpus="$build/corpus/$name"
	mkdir -p "$corpus"
	seeds="tests/fuzz/corpus/${name#fuzz_}"
	[ -d "$seeds" ] && cp -r "$seeds"/. "$corpus"/
	if [ "$secs" -gt 0 ]; then
		# Growing the corpus; its profile is not the one reported.
		LLVM_PROFILE_FILE=/dev/null "$bin" -max_total_time="$secs" -timeout=10 \
			-rss_limit_mb=2048 -print_final_stats=0 "$corpus" >"$build/$name.log" 2>&1 ||
			{
				echo "coverage: $name failed while growing its corpus:" >&2
				tail -n 30 "$build/$name.log" >&2
				exit 1
			}
	fi
	# Every input of the corpus once, with profiling.
	LLVM_PROFILE_FILE="$prof/$name.profraw" "$bin" -runs=0 "$corpus" >>"$build/$name.log" 2>&1
	echo "coverage: $name: $(find "$corpus" -type f | wc -l) inputs"
	bins+=("$bin")
done

"$profdata" merge -sparse "$prof"/*.profraw -o "$prof/merged.profdata"
# llvm-cov takes one binary, then -object for each further one.
args=("${bins[0]}")
for b in "${bins[@]:1}"; do
	args+=(-object "$b")
done
args+=(-instr-profile "$prof/merged.profdata")
"$cov" report "${args[@]}" "${dirs[@]}"
echo
"$cov" export -summary-only "${args[@]}" "${dirs[@]}" |
	python3 -c '
import json, sys
dirs = sys.argv[1:]
tot = {d: [0, 0] for d in dirs}
for f in json.load(sys.stdin)["data"][0]["files"]:
    for d in dirs:
        if "/" + d + "/" in f["filename"]:
            lines = f["summary"]["lines"]
            tot[d][0] += lines["covered"]
            tot[d][1] += lines["count"]
for d in dirs:
    c, n = tot[d]
    print("coverage: %-9s lines %5d of %5d  %5.1f %%" % (d, c, n, 100.0 * c / n if n else 0))
' "${dirs[@]}"
