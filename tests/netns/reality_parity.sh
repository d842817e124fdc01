#!/usr/bin/env bash
# drivers: one (control plane: the rendezvous server's REALITY front, no yipd data path)
# A prober that follows a hello with N ChangeCipherSpec records learns how
# many the TLS stack behind the address tolerates; through the REALITY
# front it must learn the real site's number (docs/transports.md, "The
# REALITY front"). For N = 1 ... 40, yip-tls-dial --ccs N: straight to the
# site (tests/tls/realsite.py, OpenSSL), through the front with an
# ordinary hello (spliced), and through the front with a sealed hello (the
# front's own TLS server answers): the first N that is refused must be
# the site's in all three (within the few records by which it moves between
# runs at the site itself), and every N below it tolerated. The table is
# printed.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/natyip.sh"
. "$ROOT/tests/lib/reality.sh"

reality_lab v=203.0.113.40
reality_front

# outcome ARGS...: "ok", or the class of the failure (the alert, a close, a timeout).
outcome() {
	local out
	if out=$(in_ns v "$DIAL" --sni www.example.com "$@" 2>&1); then
		echo ok
		return
	fi
	case $out in
	*"alert "*) sed -n 's/.*(alert \([0-9]*\)).*/alert-\1/p' <<<"$out" | head -n 1 ;;
	*"no answer"*) echo timeout ;;
	*closed*) echo closed ;;
	*) echo "other:$out" ;;
	esac
}

# The first N each way refuses: past it, whether the client sees the
# alert or the reset first is a race at the site too (it closes on unread
# records), so the limit is what is compared.
printf '%-4s %-10s %-10s %-10s\n' N site spliced sealed >"$TMP/parity.txt"
lim_d=0 lim_f=0 lim_a=0
for n in $(seq 1 40); do
	d=$(outcome --ccs "$n" "$W" 443)
	f=$(outcome --ccs "$n" "$S" 443)
	a=$(outcome --ccs "$n" --reality "$REALITY_PUB" abcd12 "$S" 443)
	printf '%-4s %-10.10s %-10.10s %-10.10s\n' "$n" "$d" "$f" "$a" >>"$TMP/parity.txt"
	[ "$d" != ok ] && [ "$lim_d" = 0 ] && lim_d=$n
	[ "$f" != ok ] && [ "$lim_f" = 0 ] && lim_f=$n
	[ "$a" != ok ] && [ "$lim_a" = 0 ] && lim_a=$n
done
sed 's/^/    /' "$TMP/parity.txt"
log "the first count refused: site $lim_d, spliced $lim_f, sealed $lim_a"
# Whatever the site's limit, the table must cross it, or the test tells nothing.
[ "$lim_d" -gt 1 ] || fail "the site refuses every count: the test probes nothing"
# OpenSSL counts the records one read brings (32 at most): where a read
# ends is the kernel's, so the first refused N moves by a few between runs,
# at the site straight too. A stack that stops at 16 (Go's) is what a
# prober tells apart; within 3 of the site's limit is the same stack.
for lim in $lim_f $lim_a; do
	[ "$lim" -ge $((lim_d - 3)) ] && [ "$lim" -le $((lim_d + 3)) ] ||
		fail "through the front the limit is not the site's ($lim_d): spliced $lim_f, sealed $lim_a"
done
log "ok"
