#!/usr/bin/env bash
# make install / uninstall, the systemd units and the man pages, against the
# built build/ (make check builds first):
# - make install DESTDIR=D PREFIX=/usr installs exactly scripts/install.manifest
#   (files and their modes; /etc/yip 0700 and empty) and nothing else;
# - the installed units pass systemd-analyze verify with nothing printed, and
#   systemd-analyze security --offline scores each at most 3.0;
# - yipd comes up and carries a ping with exactly the installed unit's
#   CapabilityBoundingSet and no_new_privs, and fails without CAP_NET_ADMIN
#   (so the set is both enough and checked);
# - mandoc -Tlint and scripts/mancheck.py pass;
# - make uninstall leaves only empty directories.
# drivers: one
. "$(dirname "$0")/lib.sh"

D=$TMP/destdir
log "make install DESTDIR=$D PREFIX=/usr"
make -C "$ROOT" install DESTDIR="$D" PREFIX=/usr >"$TMP/install.log" 2>&1 ||
	{ cat "$TMP/install.log"; fail "make install failed"; }
want=$(grep -v '^#' "$ROOT/scripts/install.manifest" | grep . | sort)
got=$( (cd "$D" && find . -type f -printf 'f %m %P\n' -o -type l -printf 'l %m %P\n' -o \
	-type d -empty -printf 'd %m %P\n') | awk '{printf "%s %04d /%s\n", $1, $2, $3}' | sort)
if [ "$want" != "$got" ]; then
	diff <(echo "$want") <(echo "$got") | sed 's/^/    /'
	fail "installed tree differs from scripts/install.manifest"
fi
log "  $(echo "$got" | wc -l) entries as in the manifest"
[ "$(stat -c %a "$D/etc/yip")" = 700 ] || fail "/etc/yip has mode $(stat -c %a "$D/etc/yip")"
! grep -rq "$D" "$D" || fail "DESTDIR written into an installed file"

U=$D/lib/systemd/system
log "systemd-analyze verify (ExecStart paths pointed into DESTDIR)"
mkdir "$TMP/units"
for u in yipd@.service yip-rendezvous.service; do
	sed "s|/usr/sbin/|$D/usr/sbin/|g; s|/usr/bin/|$D/usr/bin/|g" "$U/$u" >"$TMP/units/$u"
done
out=$(systemd-analyze verify --man=no "$TMP/units/yipd@.service" \
	"$TMP/units/yip-rendezvous.service" 2>&1) || fail "verify failed: $out"
[ -z "$out" ] || fail "verify printed: $out"
for u in yipd@.service yip-rendezvous.service; do
	score=$(systemd-analyze security --offline=true "$U/$u" 2>/dev/null |
		sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
	[ -n "$score" ] || fail "$u: no security score"
	log "  $u: exposure $score"
	awk -v s="$score" 'BEGIN{exit !(s <= 3.0)}' || fail "$u: exposure $score > 3.0"
done

log "yipd under the unit's capability bounding set"
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$U/yipd@.service" | tr 'A-Z' 'a-z')
[ -n "$caps" ] || fail "no CapabilityBoundingSet in the unit"
bset=-all
for c in $caps; do bset="$bset,+${c#cap_}"; done
wrap() { # wrap FILE BOUNDING: a yipd that runs with that bounding set
	printf '#!/bin/sh\nexec setpriv --no-new-privs --bounding-set=%s --inh-caps=-all %s "$@"\n' \
		"$2" "$D/usr/sbin/yipd" >"$1"
	chmod +x "$1"
}
wrap "$TMP/yipd-unit" "$bset"
wrap "$TMP/yipd-nonetadmin" "${bset/,+net_admin/}"
two_peers
start_yipd b
YIPD=$TMP/yipd-unit start_yipd a
ping_ok a 10.77.0.2 3 -i 0.2 >/dev/null
grep -q "sandbox on: running as" "$TMP/a.log" || fail "yipd did not drop privileges"
# A reload under the same capabilities: the privileged half adds a route.
echo "allowed_ips=10.66.0.0/24" >>"$TMP/a.conf"
out=$(yipctl_of a reload 2>&1) || fail "reload under the unit's capabilities: $out"
in_ns a ip route show dev yip0 | grep -q "^10.66.0.0/24" || fail "reload under the unit's capabilities added no route"
kill "$(pid_of a)"; wait "$(pid_of a)" 2>/dev/null || true
YIPD=$TMP/yipd-nonetadmin launch_yipd a
wait "$(pid_of a)" 2>/dev/null && fail "yipd without CAP_NET_ADMIN exited 0"
in_ns a ip link show yip0 >/dev/null 2>&1 && fail "yipd without CAP_NET_ADMIN made a device"
log "  up with {$caps}; refused without CAP_NET_ADMIN"

log "man pages: mandoc -Tlint, scripts/mancheck.py"
for m in "$D"/usr/share/man/man*/*; do
	out=$(mandoc -Tlint -W warning "$m" 2>&1) || fail "mandoc: $out"
	[ -z "$out" ] || fail "mandoc: $out"
done
python3 "$ROOT/scripts/mancheck.py" "$ROOT/build" >/dev/null || fail "mancheck failed"

log "make uninstall"
make -C "$ROOT" uninstall DESTDIR="$D" PREFIX=/usr >"$TMP/uninstall.log" 2>&1 ||
	{ cat "$TMP/uninstall.log"; fail "make uninstall failed"; }
left=$(find "$D" ! -type d)
[ -z "$left" ] || fail "left after uninstall: $left"
log "ok"
