#!/usr/bin/env bash
# drivers: one (control plane: root set versions and certificate renewal)
# Root sets are versioned: a member keeps the newest it has seen in its
# state directory and refuses an older one, at a restart as on SIGHUP; a
# newer one is adopted on SIGHUP, and the member connects to the root it
# adds, without dropping the session it has. Renewing its certificate on
# SIGHUP keeps the session too, and clears the expiry warning.
. "$(dirname "$0")/lib.sh"

ca_init
ca_nodes r s a
# a's certificate expires in 3 days: it warns.
ca_cert a --days 3
ca_roots "$TMP/roots.txt" 10 r
start_yipd r
start_yipd s
start_yipd a
wait_ping a 10.77.0.1
[ "$(json_get a show membership.roots_serial)" -eq 10 ] || fail "a did not adopt roots 10"
[ -s "$TMP/state-a/roots" ] || fail "a did not save its root set in state_dir"
warn=$(json_get a show membership.warning)
grep -q "expires within 7 days" <<<"$warn" || fail "a: no expiry warning: $warn"
grep -q "certificate expires" "$TMP/a.log" || fail "a: no expiry warning in the log"
log "serial 10 adopted and saved; expiry warned"

# An older set (serial 5, listing s) replaces the file: refused at a restart...
ca_roots "$TMP/roots.txt" 5 s
kill "$(pid_of a)"
wait "$(pid_of a)" 2>/dev/null || true
start_yipd a
[ "$(json_get a show membership.roots_serial)" -eq 10 ] || fail "a adopted an older root set at restart"
[ "$(json_get a show membership.roots_refused_older)" -eq 1 ] || fail "a did not count the rollback"
grep -q "refused: older" "$TMP/a.log" || fail "a did not log the rollback"
wait_ping a 10.77.0.1
# is_root NODE NAME: yes if NODE holds NAME as a root.
is_root() {
	yipctl_of "$1" members --json | python3 -c '
import json, sys
m = [x for x in json.load(sys.stdin)["members"] if x["name"] == sys.argv[1]]
print("yes" if m and m[0].get("root") else "no")' "$2"
}
[ "$(is_root a "node s")" = no ] || fail "a took s as a root from a refused root set"
log "older serial 5 refused at restart; still on r"

# ... and on SIGHUP.
hs=$(peer_field a handshakes)
kill -HUP "$(pid_of a)"
poll 5 '[ "$(json_get a show membership.roots_refused_older)" -eq 2 ]' || true
[ "$(json_get a show membership.roots_refused_older)" -eq 2 ] || fail "a did not refuse serial 5 on SIGHUP"
[ "$(json_get a show membership.roots_serial)" -eq 10 ] || fail "a adopted serial 5 on SIGHUP"

# A newer set (serial 20, r and s) is adopted on SIGHUP: a connects to s, and
# its session with r was not dropped (no new handshake).
ca_roots "$TMP/roots.txt" 20 r s
ca_cert a --days 365
kill -HUP "$(pid_of a)"
poll 5 '[ "$(json_get a show membership.roots_serial)" -eq 20 ]' || true
[ "$(json_get a show membership.roots_serial)" -eq 20 ] || fail "a did not adopt serial 20"
wait_ping a "$(addr_of s)"
ping_ok a 10.77.0.2 3 -i 0.05 >/dev/null
[ "$(is_root a "node s")" = yes ] || fail "a does not hold s as a root after serial 20"
ping_ok a 10.77.0.1 3 -i 0.05 >/dev/null
[ "$(peer_field a handshakes)" -eq "$hs" ] || fail "SIGHUP dropped a's session with r"
[ "$(json_get a show membership.warning)" = null ] || fail "a still warns after renewal"
"$YIPCA" show "$TMP/state-a/roots" | grep -q "serial: *20$" || fail "a did not save serial 20"
log "ok: rollback refused (restart, SIGHUP); serial 20 adopted on SIGHUP, s reached, session kept, certificate renewed"

# A state directory whoever else could write to is a configuration error:
# a symbolic link (not followed), group- or other-writable, another user's.
# yipd exits with status 2 and "state_dir DIR: what is wrong".
kill "$(pid_of a)"
wait "$(pid_of a)" 2>/dev/null || true
# refused PHRASE: a's yipd refuses its state_dir, saying PHRASE.
refused_dir() {
	local status=0 out
	out=$(YIP_CTL_DIR="$TMP/ctl-a" timeout --kill-after=2 10 \
		ip netns exec "$(ns a)" "$YIPD" "$TMP/a.conf" 2>&1) || status=$?
	[ "$status" -eq 2 ] && grep -qF "state_dir $TMP/state-a: $1" <<<"$out" ||
		fail "state_dir ($1): exit status $status: $out"
}
owner=$(stat -c %u:%g "$TMP/state-a")
mv "$TMP/state-a" "$TMP/state-a.real"
ln -s "$TMP/state-a.real" "$TMP/state-a"
refused_dir "is a symbolic link"
rm "$TMP/state-a"
mv "$TMP/state-a.real" "$TMP/state-a"
chmod 0770 "$TMP/state-a"
refused_dir "mode 0770 lets its group write to it"
chmod 0702 "$TMP/state-a"
refused_dir "mode 0702 lets every user write to it"
chmod 0700 "$TMP/state-a"
chown 4242:4242 "$TMP/state-a"
refused_dir "belongs to uid 4242"
chown "$owner" "$TMP/state-a"
start_yipd a
[ "$(json_get a show membership.roots_serial)" -eq 20 ] || fail "a lost serial 20 from its state_dir"
log "ok: a symbolic link, mode 0770 or 0702, another user's state_dir refused (status 2)"
