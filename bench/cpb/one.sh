#!/usr/bin/env bash
# One callgrind run for bench/cpb/run.sh: yipd SIDE (a sends, b receives)
# runs under callgrind; prints "INSTRUCTIONS BYTES".
. "$(dirname "$0")/../../tests/netns/lib.sh"

two_peers
. "$(dirname "$0")/lib.sh"
add_config_lines
tune_tcp cubic
cg="$TMP/callgrind.out"
for n in a b; do
	if [ "$n" = "$SIDE" ]; then
		# No sandbox under valgrind: the filter would apply to valgrind's own
		# calls, and the unprivileged user could not write the profile.
		YIP_SANDBOX=off ip netns exec "$(ns "$n")" valgrind --tool=callgrind \
			--callgrind-out-file="$cg" "$YIPD" "$TMP/$n.conf" >"$TMP/$n.log" 2>&1 &
	else
		ip netns exec "$(ns "$n")" "$YIPD" "$TMP/$n.conf" >"$TMP/$n.log" 2>&1 &
	fi
	PIDS+=($!)
	eval "PID_$n=$!"
done
for i in $(seq 1 100); do
	grep -q "device .* up" "$TMP/a.log" 2>/dev/null && grep -q "device .* up" "$TMP/b.log" 2>/dev/null && break
	sleep 0.2
done
wait_ping a 10.77.0.2
bytes=$((MB << 20))
read -r secs ok < <(tcp_copy a 10.77.0.2 "$bytes")
[ "$ok" = yes ] || fail "transfer corrupted"
pid=$(pid_of "$SIDE")
kill -TERM "$pid"
wait "$pid" 2>/dev/null || true
ir=$(sed -n 's/^totals: \([0-9]*\).*/\1/p' "$cg")
[ -n "$ir" ] || ir=$(sed -n 's/^summary: \([0-9]*\).*/\1/p' "$cg")
echo "$ir $bytes"
