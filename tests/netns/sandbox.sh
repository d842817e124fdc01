#!/usr/bin/env bash
# The sandbox (docs/security.md), on by default. Two yipd with the default
# settings, once up, run as nobody in every thread, with no capabilities
# left (CapEff, CapPrm and CapAmb all 0), NoNewPrivs 1 and Seccomp 2 (a
# filter) in every thread, not dumpable (/proc/PID/status belongs to root, not to
# the daemon's user) and with their key storage locked in memory (VmLck).
# Under the filter they carry traffic across rekeys every second, answer
# yipctl, log their status on SIGUSR1 and exit 0 on SIGTERM: a system call
# the allow-list lacks would have killed them (SIGSYS, exit status 159).
# yip-rendezvous the same. With sandbox=off the same fields show root and no
# filter, so the checks can fail; a user that does not exist is a clear
# error (exit 2) before anything is set up; and a configuration file others
# can read draws a warning.
. "$(dirname "$0")/lib.sh"

RDV=${RDV:-$(dirname "$YIPD")/yip-rendezvous}
[ -x "$RDV" ] || fail "$RDV not built"
nobody=$(id -u nobody) || fail "no user nobody"

# status_field PID FIELD [TASK]: a field of /proc/PID/status (or of one thread's).
status_field() {
	local f=/proc/$1/status
	[ -n "${3:-}" ] && f=/proc/$1/task/$3/status
	sed -n "s/^$2:[[:space:]]*//p" "$f"
}

# sandboxed NAME PID: every thread of PID is sandboxed as described above.
sandboxed() {
	local name=$1 pid=$2 t n=0 uid
	for t in /proc/"$pid"/task/*; do
		t=${t##*/}
		n=$((n + 1))
		uid=$(status_field "$pid" Uid "$t")
		[ "$uid" = "$nobody	$nobody	$nobody	$nobody" ] || fail "$name thread $t: Uid $uid"
		for cap in CapEff CapPrm CapAmb; do
			[ "$(status_field "$pid" $cap "$t")" = 0000000000000000 ] ||
				fail "$name thread $t: $cap $(status_field "$pid" $cap "$t")"
		done
		[ "$(status_field "$pid" NoNewPrivs "$t")" = 1 ] || fail "$name thread $t: NoNewPrivs"
		[ "$(status_field "$pid" Seccomp "$t")" = 2 ] || fail "$name thread $t: Seccomp"
	done
	[ "$(stat -c %u /proc/"$pid"/status)" = 0 ] || fail "$name is dumpable: /proc/$pid/status is not root's"
	local lck
	lck=$(status_field "$pid" VmLck | awk '{print $1}')
	[ "${lck:-0}" -gt 0 ] || fail "$name: no memory locked (VmLck $lck)"
	log "$name: $n threads as nobody, no capabilities, NoNewPrivs 1, Seccomp 2; VmLck $lck kB"
}

# wait_sandbox NAME: until NAME's log says it entered the sandbox (after "device up").
wait_sandbox() {
	local log=$TMP/$1.log
	poll 5 'grep -q "sandbox on" "$log"' || fail "$1 did not enter the sandbox"
}

two_peers
chmod 600 "$TMP/a.conf"
chmod 644 "$TMP/b.conf"
# Two workers: a thread besides the loop, which must be sandboxed too.
sed -i '1a workers=2' "$TMP/a.conf"
start_yipd a YIP_REKEY_INTERVAL_MS=1000
start_yipd b YIP_REKEY_INTERVAL_MS=1000
grep -q "b.conf holds a private key, and its mode 0644 lets every user at it" "$TMP/b.log" ||
	fail "no warning about b.conf's mode"
! grep -q "a.conf holds a private key" "$TMP/a.log" || fail "a warning about a.conf (0600)"
wait_sandbox a
wait_sandbox b
sandboxed "yipd a ($YIP_IO)" "$(pid_of a)"
sandboxed "yipd b ($YIP_IO)" "$(pid_of b)"
[ "$(status_field "$(pid_of a)" Threads)" -ge 2 ] || fail "a has no worker thread"

log "traffic across rekeys, yipctl and SIGUSR1 under the filter"
ping_ok a 10.77.0.2 20 -i 0.2 >/dev/null
ping_ok b "$(addr_of a)" 5 -i 0.1 >/dev/null
[ "$(peer_field a handshakes)" -ge 3 ] || fail "a rekeyed only $(peer_field a handshakes) times"
kill -USR1 "$(pid_of a)"
poll 2 'grep -q "status: " "$TMP/a.log"' || fail "SIGUSR1 logged no status"
for n in a b; do
	kill -TERM "$(pid_of "$n")"
	status=0
	wait "$(pid_of "$n")" || status=$?
	[ "$status" -eq 0 ] || fail "yipd $n exited with status $status (159: killed by the filter)"
done
log "a and b exited 0"

log "yip-rendezvous"
(umask 077 && "$RDV" --genkey >"$TMP/server.key")
env "YIP_CTL_DIR=$TMP/ctl-s" ip netns exec "$(ns a)" "$RDV" -v --listen 198.18.0.1:7000 \
	--key "$TMP/server.key" >"$TMP/rdv.log" 2>&1 &
RDV_PID=$!
PIDS+=("$RDV_PID")
wait_sandbox rdv
sandboxed yip-rendezvous "$RDV_PID"
YIP_CTL_DIR="$TMP/ctl-s" "$RDV" status >/dev/null || fail "yip-rendezvous status failed"
# It logs its status at shutdown too: the status from SIGUSR1 must come first.
grep -q "status: " "$TMP/rdv.log" && fail "yip-rendezvous logged a status before SIGUSR1"
kill -USR1 "$RDV_PID"
poll 5 'grep -q "status: " "$TMP/rdv.log"' || fail "yip-rendezvous logged no status on SIGUSR1"
kill -TERM "$RDV_PID"
status=0
wait "$RDV_PID" || status=$?
[ "$status" -eq 0 ] || fail "yip-rendezvous exited with status $status"

log "sandbox=off: root and no filter (what the checks above would catch)"
sed -i '1a sandbox=off' "$TMP/a.conf"
start_yipd a
[ "$(status_field "$(pid_of a)" Uid | awk '{print $2}')" = 0 ] || fail "sandbox=off: not root"
[ "$(status_field "$(pid_of a)" Seccomp)" = 0 ] || fail "sandbox=off: a filter"
kill -TERM "$(pid_of a)"
wait "$(pid_of a)" || true

log "a user that does not exist"
sed -i '/^sandbox=off$/d' "$TMP/a.conf"
sed -i '1a user=yip-no-such-user' "$TMP/a.conf"
status=0
err=$(ip netns exec "$(ns a)" "$YIPD" "$TMP/a.conf" 2>&1) || status=$?
[ "$status" -eq 2 ] || fail "unknown user: exit status $status"
grep -q "user 'yip-no-such-user' does not exist" <<<"$err" || fail "unknown user: $err"
in_ns a ip link show yip0 >/dev/null 2>&1 && fail "the device was made before the user was checked"
log "ok"
