#!/usr/bin/env bash
# Runs every network-namespace test (tests/netns/*.sh but this file and
# lib.sh), each under a time limit, and prints a summary. Needs root.
set -uo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" -ne 0 ]; then
	echo "netns: these tests need root (network namespaces and TUN devices)." >&2
	echo "netns: run 'make check' as root; they are not skipped." >&2
	exit 1
fi
pass=0 failed=0 failures=""
# Every test runs under each event-loop driver (yipd reads YIP_IO); tests
# that start no yipd (none of start_yipd, launch_yipd or hello_yipd, which
# tests/lib/tls_hello.sh has), and control-plane tests (a "# drivers: one"
# line), run under the first only.
ios=${NETNS_IO:-epoll uring}
first_io=${ios%% *}
for io in $ios; do
	for t in "$dir"/*.sh; do
		name=$(basename "$t" .sh)
		case "$name" in lib | run) continue ;; esac
		if [ -n "${NETNS_ONLY:-}" ] && [ "$name" != "$NETNS_ONLY" ]; then continue; fi
		if [ "$io" != "$first_io" ] &&
			{ ! grep -q -e start_yipd -e launch_yipd -e hello_yipd "$t" ||
				grep -q '^# drivers: one' "$t"; }; then
			continue
		fi
		start=$(date +%s.%N)
		if YIP_IO=$io timeout 300 bash "$t"; then
			pass=$((pass + 1))
			printf 'netns: ok   %-34s (%.1f s)\n' "$name [$io]" "$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{print e-s}')"
		else
			failed=$((failed + 1))
			failures="$failures $name[$io]"
			printf 'netns: FAIL %s\n' "$name [$io]"
		fi
	done
done
echo "netns: $pass passed, $failed failed"
[ "$failed" -eq 0 ] || { echo "netns: failed:$failures"; exit 1; }
