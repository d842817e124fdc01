#!/usr/bin/env bash
# drivers: one (control plane: the rendezvous server's REALITY front, no yipd data path)
# A sealed hello is good once, and only as it was sealed (docs/protocol.md,
# "The REALITY seal"). A node's hello (yip-tls-dial --reality, which
# completes its handshake with the front) is captured as it left; then,
# from another host:
#   - the same bytes again: a replay, spliced to the real site, which
#     answers with its own ServerHello and logs the connection;
#   - the same hello with one byte changed outside the seal (in the SNI's
#     neighbourhood, the key share, the last extension): no seal opens;
#     spliced, and the site logs it;
#   - the hello with its clock 3 minutes off (sealed by a node whose clock
#     is): refused as a clock, spliced.
# A fresh sealed hello still gets the front's answer afterwards.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/natyip.sh"
. "$ROOT/tests/lib/reality.sh"

reality_lab v=203.0.113.40 p=203.0.113.41
reality_front
outcome() { rdv_get rdv "reality.outcomes.$1"; }
site_lines() { wc -l <"$TMP/site.log"; }

log "a node's sealed hello: the front answers, the handshake completes"
in_ns v "$DIAL" --sni www.example.com --reality "$REALITY_PUB" abcd12 \
	--hello-out "$TMP/hello.bin" "$S" 443 >/dev/null || fail "the sealed dial failed"
[ "$(outcome authenticated)" = 1 ] || fail "authenticated: $(outcome authenticated)"
len=$(stat -c %s "$TMP/hello.bin")
log "its hello: $len bytes"

# spliced WHAT FILE OUTCOME: FILE's bytes from p get the site's ServerHello
# (a handshake record first), the outcome OUTCOME is counted once more, and
# the site logs one connection more.
spliced() {
	local what=$1 file=$2 name=$3 before lines out
	before=$(outcome "$name")
	lines=$(site_lines)
	out=$(in_ns p python3 "$VISIT" "$S" 443 --raw --send "$file" --wait 1)
	case $(sed -n 's/.*first=\([0-9a-f]*\).*/\1/p' <<<"$out") in
	1603*) ;;
	*) fail "$what: no ServerHello from the site: $out" ;;
	esac
	[ "$(outcome "$name")" = $((before + 1)) ] || fail "$what: $name is $(outcome "$name"), not $((before + 1))"
	poll 12 '[ "$(site_lines)" -gt "$lines" ]' 0.2 || fail "$what: the site logged no connection"
	log "$what: spliced ($name), the site answered: $(tail -n 1 "$TMP/site.log")"
}

spliced "the captured hello replayed" "$TMP/hello.bin" replay
for at in 60 $((len / 2)) $((len - 1)); do
	python3 - "$TMP/hello.bin" "$TMP/changed.bin" "$at" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[int(sys.argv[3])] ^= 0x01
open(sys.argv[2], "wb").write(b)
PY
	spliced "one byte changed at $at" "$TMP/changed.bin" seal
done

log "a node whose clock is 3 minutes fast"
in_ns v "$DIAL" --sni www.example.com --reality "$REALITY_PUB" abcd12 --skew 180 \
	"$S" 443 >/dev/null 2>"$TMP/skew.err" && fail "a hello sealed 3 minutes ahead was answered"
grep -q "the real site answered" "$TMP/skew.err" || fail "skewed clock: $(cat "$TMP/skew.err")"
[ "$(outcome clock)" = 1 ] || fail "clock: $(outcome clock)"

log "a fresh sealed hello is still the front's"
in_ns v "$DIAL" --sni www.example.com --reality "$REALITY_PUB" abcd12 "$S" 443 >/dev/null ||
	fail "a sealed dial after the probes failed"
[ "$(outcome authenticated)" = 2 ] || fail "authenticated: $(outcome authenticated)"
rdv rdv status --summary | sed -n '/REALITY front/,/yip streams/p' | sed 's/^/    /'
log "ok"
