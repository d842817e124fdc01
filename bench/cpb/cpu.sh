#!/usr/bin/env bash
# bench/cpb/cpu.sh: CPU time (user + system, both yipd) per byte moved, for
# a fixed TCP transfer through yip-linkem on a clean link; the kernel's
# share included, unlike bench/cpb/run.sh. Cycles per byte = seconds per
# byte x the CPU clock (from /proc/cpuinfo).
#
#   bench/cpb/cpu.sh NAME=BINARY[:CONFIG_LINES] ...     (GB=2 sets the size)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
GB=${GB:-2}
mhz=$(awk -F: '/cpu MHz/ { gsub(/ /, "", $2); print $2; exit }' /proc/cpuinfo)
echo "| build | bytes | Mbit/s | CPU s (both yipd) | CPU s per GB | cycles per byte (at ${mhz%.*} MHz) |"
echo "|---|---:|---:|---:|---:|---:|"
for spec in "$@"; do
	parse_spec "$spec"
	name=$spec_name bin=$spec_bin extra=$spec_extra
	out=$(YIPD=$(readlink -f "$bin") EXTRA="$extra" GB=$GB bash "$HERE/cpu-one.sh" 2>"${TMPDIR:-/tmp}/cpb-cpu-$name.log" | tail -n 1) || { echo "cpb: $name failed; see ${TMPDIR:-/tmp}/cpb-cpu-$name.log" >&2; continue; }
	read -r bytes secs cpu <<<"$out"
	awk -v n="$name" -v b="$bytes" -v s="$secs" -v c="$cpu" -v mhz="$mhz" 'BEGIN {
		printf "| %s | %d | %.0f | %.2f | %.2f | %.1f |\n", n, b, b * 8 / s / 1e6, c,
			c / (b / 1e9), c * mhz * 1e6 / b }'
done
