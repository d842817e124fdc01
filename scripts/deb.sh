#!/usr/bin/env bash
# make deb: dpkg-buildpackage -us -uc -b in a copy of the tree (the tracked
# files plus uncommitted changes), so this tree stays clean; the .deb, the
# .buildinfo and .changes land in OUT; then lintian --fail-on warning.
set -euo pipefail
out=${1:?usage: deb.sh OUTDIR}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/yip-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/yip"
(cd "$root" && git ls-files -z --cached --others --exclude-standard |
	xargs -0 cp --parents -P -t "$work/yip" 2>/dev/null) ||
	(cd "$root" && git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
		[ -e "$f" ] || [ -L "$f" ] && cp --parents -P "$f" "$work/yip/"; done)
(cd "$work/yip" && DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-parallel=2}" \
	dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1) ||
	{ tail -40 "$work/build.log" >&2; echo "deb: dpkg-buildpackage failed" >&2; exit 1; }
cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/
echo "deb: $(cd "$out" && ls ./*.deb)"
lintian --fail-on warning "$work"/*.changes
