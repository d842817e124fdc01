# shellcheck shell=bash disable=SC2034  # sourced by run.sh, which reads these variables
# yip from another build, for comparing two builds in one run (e.g. a change
# against its base): YIPD_OTHER=/path/to/yipd, default settings as yip.sh.
# shellcheck source=yip.sh
. "$(dirname "${BASH_SOURCE[0]}")/yip.sh"
DESC="yip, another build (\$YIPD_OTHER)"
YIPD=${YIPD_OTHER:-}

available() {
	[ -n "$YIPD" ] || { echo "YIPD_OTHER is not set"; return 1; }
	[ -x "$YIPD" ] || { echo "$YIPD: not executable"; return 1; }
}
version() {
	local v c
	v=$("$YIPD" --version 2>/dev/null | awk '{print $NF}')
	c=$(git -C "$(dirname "$YIPD")/.." rev-parse --short HEAD 2>/dev/null || true)
	echo "$v${c:+ ($c)} at $YIPD"
}
notes() { echo "as yip, with the yipd at \$YIPD_OTHER"; }
