# Shared by bench/cpb/*.sh; sourced.

# parse_spec NAME=BINARY[:KEY=VALUE;...]: sets spec_name, spec_bin and
# spec_extra (the configuration lines, ';'-separated, or empty).
parse_spec() {
	local rest=${1#*=}
	spec_name=${1%%=*}
	spec_bin=${rest%%:*}
	spec_extra=
	if [ "$rest" != "$spec_bin" ]; then spec_extra=${rest#*:}; fi
}

# add_config_lines: puts the interface keys in $EXTRA into a's and b's
# configurations (call after two_peers or linked_peers).
add_config_lines() {
	local n l lines
	[ -n "${EXTRA:-}" ] || return 0
	IFS=';' read -ra lines <<<"$EXTRA"
	for n in a b; do
		for l in "${lines[@]}"; do sed -i "/^\[peer\]/i $l" "$TMP/$n.conf"; done
	done
}
