#!/usr/bin/env bash
# The Debian package: make deb (dpkg-buildpackage -us -uc -b in a copy of
# the tree, then lintian --fail-on warning) succeeds, the .deb holds exactly
# scripts/install.manifest (plus what debhelper adds under /usr/share/doc
# and /usr/share/lintian; man pages gzipped), /etc/yip 0700, and its
# postinst creates the user (systemd-sysusers) and enables and starts no
# unit. Skipped (passes) without debhelper. About 2 minutes on 2 cores.
# drivers: one
. "$(dirname "$0")/lib.sh"

if ! command -v dh >/dev/null || ! command -v lintian >/dev/null; then
	log "debhelper or lintian not installed: skipped"
	exit 0
fi
log "make deb"
make -C "$ROOT" deb DEB_OUT="$TMP/deb" >"$TMP/deb.log" 2>&1 ||
	{ tail -30 "$TMP/deb.log"; fail "make deb failed (or lintian found warnings)"; }
deb=$(ls "$TMP"/deb/yip_*.deb)
want=$(grep -v '^#' "$ROOT/scripts/install.manifest" | grep . |
	sed 's|^\(f .* /usr/share/man/.*\)$|\1.gz|' | sort)
got=$(dpkg-deb -c "$deb" | awk '{ t = substr($1, 1, 1); p = substr($6, 2)
	if (t == "-") t = "f"; print t, $1, p }' | sort)
# files as f MODE PATH, the empty directory /etc/yip as d
gotm=$(echo "$got" | awk '$1 == "f" && $3 !~ "^/usr/share/(doc|lintian)/" { print $3 }' | sort)
wantm=$(echo "$want" | awk '$1 == "f" { print $3 }' | sort)
[ "$gotm" = "$wantm" ] || { diff <(echo "$wantm") <(echo "$gotm"); fail ".deb differs from the manifest"; }
echo "$got" | grep -q '^d drwx------ /etc/yip/$' || fail "/etc/yip is not 0700 in the .deb"
dpkg-deb -e "$deb" "$TMP/ctrl"
grep -q 'systemd-sysusers' "$TMP/ctrl/postinst" || fail "postinst does not create the user"
! grep -qE 'deb-systemd-invoke|systemctl' "$TMP/ctrl/postinst" "$TMP/ctrl/prerm" 2>/dev/null ||
	fail "a maintainer script starts, stops or restarts a unit"
[ "$(grep -n systemd-sysusers "$TMP/ctrl/postinst" | head -1 | cut -d: -f1)" -lt \
	"$(grep -n systemd-tmpfiles "$TMP/ctrl/postinst" | head -1 | cut -d: -f1)" ] ||
	fail "postinst runs tmpfiles (chown to yip) before sysusers creates yip"
log "ok: $(basename "$deb"), $(echo "$gotm" | wc -l) files as in the manifest, lintian clean"
