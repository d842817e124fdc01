#!/usr/bin/env bash
# drivers: one (control plane: what it checks does not depend on the I/O driver)
# The Prometheus endpoint (docs/operations.md, "Metrics"): yipd a serves
# metrics_listen=127.0.0.1 inside its namespace; the body passes promtool
# check metrics with no finding, has the right Content-Type, and equals
# `yipctl metrics` in its series; 1000 pings move the packet counters by at
# least 1000 both ways; other paths and methods are 404 and 405; another
# namespace cannot reach the listener, nor can a's own non-loopback address;
# idle clients beyond the limit neither stall the daemon nor keep a scrape
# out for long; metrics_listen=0.0.0.0 without metrics_remote is refused
# (exit 2), and so is yip-rendezvous's --metrics-listen 0.0.0.0 without
# --metrics-remote; the rendezvous server's endpoint passes promtool too.
# Counters never decrease across `yipctl reload` (skipped, saying so, while
# this build has no reload).
. "$(dirname "$0")/lib.sh"

RDV=${RDV:-$ROOT/build/yip-rendezvous}
[ -x "$RDV" ] || fail "$RDV not built"
command -v promtool >/dev/null || fail "promtool missing (Debian package prometheus)"
command -v curl >/dev/null || fail "curl missing"

PORT=9464
URL=http://127.0.0.1:$PORT/metrics

# scrape NS URL [CURL OPTIONS...]: the body, curl failing on HTTP errors.
scrape() { local n=$1 u=$2; shift 2; in_ns "$n" curl -fsS --max-time 3 "$@" "$u"; }

# promtool_clean FILE: promtool check metrics exits 0 and prints nothing.
promtool_clean() {
	local out
	out=$(promtool check metrics <"$1" 2>&1) || fail "promtool check metrics failed: $out"
	[ -z "$out" ] || fail "promtool check metrics has findings: $out"
}

# value FILE SERIES: the value of one series (name{labels}) in a scrape.
value() { awk -v s="$2" '$1 == s { print $2; found = 1 } END { if (!found) print "missing" }' "$1"; }

two_peers
sed -i "1i metrics_listen = 127.0.0.1:$PORT" "$TMP/a.conf"
start_yipd a
start_yipd b
ping_ok a 10.77.0.2 3 -i 0.2 >/dev/null

log "GET /metrics: 200, Content-Type, promtool clean"
in_ns a curl -sS --max-time 3 -D "$TMP/h1" -o "$TMP/m1" "$URL" || fail "scrape failed"
head -1 "$TMP/h1" | grep -q "^HTTP/1.1 200" || fail "status: $(head -1 "$TMP/h1")"
grep -qi "^Content-Type: text/plain; version=0.0.4" "$TMP/h1" || fail "content type: $(cat "$TMP/h1")"
grep -qi "^Connection: close" "$TMP/h1" || fail "no Connection: close"
promtool_clean "$TMP/m1"
sed -n '1,4p;/^yip_sent_packets_total/p' "$TMP/m1" | sed 's/^/    /'
[ "$(value "$TMP/m1" yip_sessions_up)" = 1 ] || fail "yip_sessions_up is not 1"
[ "$(value "$TMP/m1" 'yip_build_info{version="'"$("$YIPD" --version | awk '{print $2}')"'"}')" = 1 ] ||
	fail "no yip_build_info with the version"

log "yipctl metrics: the same series as the endpoint"
yipctl_of a metrics >"$TMP/c1" || fail "yipctl metrics failed"
promtool_clean "$TMP/c1"
diff <(awk '!/^#/ { print $1 }' "$TMP/m1") <(awk '!/^#/ { print $1 }' "$TMP/c1") >/dev/null ||
	fail "yipctl metrics and the endpoint list different series"

log "1000 pings move the packet counters by >= 1000 both ways"
scrape a "$URL" >"$TMP/m2" || fail "scrape failed"
in_ns a ping -q -f -c 1000 -w 20 10.77.0.2 >"$TMP/ping" || fail "flood ping failed: $(cat "$TMP/ping")"
scrape a "$URL" >"$TMP/m3" || fail "scrape failed"
for s in yip_sent_packets_total yip_received_packets_total; do
	before=$(value "$TMP/m2" "$s{kind=\"direct\"}")
	after=$(value "$TMP/m3" "$s{kind=\"direct\"}")
	log "  $s{kind=\"direct\"}: $before -> $after"
	[ "$after" != missing ] && [ $((after - before)) -ge 1000 ] || fail "$s moved by less than 1000"
done

log "other paths and methods: 404, 405; HEAD: headers only"
code() { in_ns a curl -s --max-time 3 -o /dev/null -w '%{http_code}' "$@"; }
[ "$(code http://127.0.0.1:$PORT/)" = 404 ] || fail "/ is not 404"
[ "$(code http://127.0.0.1:$PORT/metricsx)" = 404 ] || fail "/metricsx is not 404"
[ "$(code -X POST -d x "$URL")" = 405 ] || fail "POST is not 405"
[ "$(code -I "$URL")" = 200 ] || fail "HEAD is not 200"

log "the listener is loopback inside a's namespace only"
! in_ns b curl -s --max-time 2 -o /dev/null "http://198.18.0.1:$PORT/metrics" ||
	fail "namespace b reached a's metrics at 198.18.0.1"
! in_ns b curl -s --max-time 2 -o /dev/null "$URL" ||
	fail "namespace b reached a metrics listener on its own loopback"
! in_ns a curl -s --max-time 2 -o /dev/null "http://198.18.0.1:$PORT/metrics" ||
	fail "a's metrics answer on its non-loopback address"
in_ns a ss -ltn | grep -q "127.0.0.1:$PORT " || fail "no listener on 127.0.0.1:$PORT"

log "20 idle clients: tunnel and scrapes go on, the idle ones are closed"
in_ns a python3 - "$PORT" "$TMP/idle" <<'PY' &
import socket, sys, time
port, out = int(sys.argv[1]), sys.argv[2]
socks = []
for _ in range(20):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.1\r\n")  # never the empty line
    socks.append(s)
time.sleep(3)
closed = 0
for s in socks:
    s.setblocking(False)
    try:
        s.recv(4096)  # a 408 and the end, or just the end: closed either way
        closed += 1
    except BlockingIOError:
        pass  # still open
    except ConnectionResetError:
        closed += 1
open(out, "w").write(str(closed))
PY
idle=$!
sleep 0.3
ping_ok a 10.77.0.2 3 -i 0.1 >/dev/null
ok=0
for _ in 1 2 3 4 5 6 7 8 9 10; do
	scrape a "$URL" -o /dev/null 2>/dev/null && { ok=1; break; }
	sleep 0.2
done
[ "$ok" = 1 ] || fail "no scrape got through while 20 clients sat idle"
wait "$idle" || fail "idle client script failed"
[ "$(cat "$TMP/idle")" = 20 ] || fail "only $(cat "$TMP/idle") of 20 idle clients were closed"
in_ns a ss -tn state established "( sport = :$PORT )" | grep -q ESTAB &&
	fail "connections to the metrics port are still open"

log "metrics_listen = 0.0.0.0 without metrics_remote: refused, exit 2"
sed "s/^metrics_listen = .*/metrics_listen = 0.0.0.0:9100/" "$TMP/a.conf" >"$TMP/bad.conf"
set +e
in_ns a "$YIPD" "$TMP/bad.conf" >"$TMP/bad.log" 2>&1
rc=$?
set -e
sed 's/^/    /' "$TMP/bad.log"
[ "$rc" = 2 ] || fail "yipd exited $rc, not 2"
grep -q "not a loopback address.*metrics_remote = on" "$TMP/bad.log" || fail "no clear message"

log "yip-rendezvous: --metrics-listen 0.0.0.0 without --metrics-remote refused"
(umask 077 && "$RDV" --genkey >"$TMP/rdv.key")
set +e
in_ns b "$RDV" --listen 198.18.0.2:7000 --key "$TMP/rdv.key" --metrics-listen 0.0.0.0:9465 \
	>"$TMP/rdvbad.log" 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || fail "yip-rendezvous exited $rc, not 2: $(cat "$TMP/rdvbad.log")"
grep -q "not a loopback address" "$TMP/rdvbad.log" || fail "no clear message: $(cat "$TMP/rdvbad.log")"

log "yip-rendezvous's endpoint: promtool clean"
env YIP_CTL_DIR="$TMP/ctl-rdv" ip netns exec "$(ns b)" "$RDV" -v --listen 198.18.0.2:7000 \
	--key "$TMP/rdv.key" --metrics-listen 127.0.0.1:9465 >"$TMP/rdv.log" 2>&1 &
PIDS+=($!)
poll 5 'grep -q "metrics on" "$TMP/rdv.log"' || fail "yip-rendezvous did not start: $(cat "$TMP/rdv.log")"
scrape b http://127.0.0.1:9465/metrics >"$TMP/r1" || fail "rendezvous scrape failed"
promtool_clean "$TMP/r1"
[ "$(value "$TMP/r1" yip_rendezvous_nodes)" = 0 ] || fail "yip_rendezvous_nodes is not 0"
grep -q '^yip_rendezvous_refused_total{reason="no_certificate"} 0' "$TMP/r1" ||
	fail "no refusals by reason"

# ---- Reload: counters never decrease. ------------------------------------------------
# Runs as soon as yipctl has reload (built on another branch): every counter
# before and after `yipctl reload` with a peer added.
log "counters never decrease across a reload"
scrape a "$URL" >"$TMP/before" || fail "scrape failed"
gen_key c >/dev/null
cat >>"$TMP/a.conf" <<CONF
[peer]
public_key=$(pub_of c)
endpoint=198.18.0.3:51820
allowed_ips=10.77.0.3/32
CONF
set +e
out=$(yipctl_of a reload 2>&1)
rc=$?
set -e
if [ "$rc" != 0 ] && grep -Eqi "unknown (command|request)" <<<"$out"; then
	log "  SKIPPED: this build has no yipctl reload ($(head -1 <<<"$out"))"
else
	[ "$rc" = 0 ] || fail "yipctl reload failed: $out"
	ping_ok a 10.77.0.2 3 -i 0.1 >/dev/null
	scrape a "$URL" >"$TMP/after" || fail "scrape after reload failed"
	promtool_clean "$TMP/after"
	python3 - "$TMP/before" "$TMP/after" <<'PY' || fail "a counter decreased across the reload"
import sys
def counters(path):
    kinds, vals = {}, {}
    for line in open(path):
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            kinds[name] = kind
        elif not line.startswith("#") and line.strip():
            series, v = line.rsplit(" ", 1)
            name = series.split("{")[0]
            if kinds.get(name) == "counter" and not name.startswith("yip_peer_"):
                vals[series] = float(v)
    return vals
b, a = counters(sys.argv[1]), counters(sys.argv[2])
bad = [s for s in b if s not in a or a[s] < b[s]]
for s in bad:
    print("  %s: %s -> %s" % (s, b[s], a.get(s)))
sys.exit(1 if bad else 0)
PY
	log "  $(grep -c . "$TMP/before") lines compared, no counter went down"
fi
log "ok"
