#!/usr/bin/env bash
# bench/cpb/run.sh: instructions per byte of yipd's own code (callgrind),
# sender and receiver side, for a fixed TCP transfer through two yipd on a
# veth. Instruction counts do not depend on what else the machine is doing,
# so they compare builds and settings even on a shared, noisy host. They
# miss the kernel's share (system calls, the TUN and UDP stacks), which the
# comparison suite's "daemon CPU s/GB" column measures instead.
#
#   bench/cpb/run.sh NAME=BINARY[:CONFIG_LINES] ...
#   e.g. bench/cpb/run.sh old=/tmp/yipd-old new=build/yipd "new-offload-off=build/yipd:offload=off"
#
# CONFIG_LINES are interface keys added to both configs (';' separates
# several). MB (default 32) sets the transfer size. Prints a Markdown table.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
command -v valgrind >/dev/null || { echo "cpb: valgrind is missing (scripts/deps.sh)" >&2; exit 1; }
MB=${MB:-32}
echo "| build | side | inner bytes | instructions (yipd) | instructions per byte |"
echo "|---|---|---:|---:|---:|"
for spec in "$@"; do
	parse_spec "$spec"
	name=$spec_name bin=$spec_bin extra=$spec_extra
	for side in a b; do
		out=$(YIPD=$(readlink -f "$bin") EXTRA="$extra" SIDE=$side MB=$MB \
			bash "$HERE/one.sh" 2>/dev/null | tail -n 1)
		ir=${out%% *}
		bytes=${out##* }
		role=sender
		[ "$side" = b ] && role=receiver
		awk -v n="$name" -v r="$role" -v ir="$ir" -v b="$bytes" \
			'BEGIN { printf "| %s | %s | %d | %d | %.2f |\n", n, r, b, ir, ir / b }'
	done
done
