#!/usr/bin/env bash
# Captures the ClientHellos a TLS client sends to a local site: N runs
# (default 20) of a fresh client (chromium opens two connections a run, the
# second some 20-35 ms after the first, both full handshakes with hellos of
# their own) from a client namespace to openssl s_server in
# another (tests/lib/tls_hello.sh), recorded by tcpdump on the site's side.
# Needs root and a built tree (tests/netns/lib.sh, which it uses for the
# namespaces and the cleanup, checks for build/yipd). Prints the report of
# tests/tls/hello.py over the capture.
#
# Usage: tests/tls/capture_hello.sh [-n N] [-c chromium|curl|openssl|yip] OUT.pcap
#
# Run it under the namespace lock, as the netns tests are:
#   flock /tmp/netns.lock tests/tls/capture_hello.sh -n 20 /tmp/chromium.pcap
set -euo pipefail
count=20 kind=chromium
while getopts n:c: o; do
	case $o in
	n) count=$OPTARG ;;
	c) kind=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { echo "usage: $0 [-n N] [-c chromium|curl|openssl|yip] OUT.pcap" >&2; exit 2; }
out=$(realpath -m "$1")
here=$(cd "$(dirname "$0")" && pwd)

. "$here/../netns/lib.sh"
. "$ROOT/tests/lib/tls_hello.sh"
# The client's helpers go before the namespaces (lib.sh's cleanup).
trap 'rc=$?; set +e; hello_reap; (exit $rc); cleanup' EXIT

command -v "$kind" >/dev/null || fail "$kind not installed (scripts/deps.sh)"
command -v tcpdump >/dev/null || fail "tcpdump not installed (scripts/deps.sh)"

hello_lab
hello_capture_start "$TMP/hello.pcap"
failed=0
for i in $(seq 1 "$count"); do
	hello_client "$kind" "$i" || { rc=$?; failed=$((failed + 1)); log "$kind run $i exited $rc"; }
done
hello_capture_stop
cp "$TMP/hello.pcap" "$out"
log "$count $kind runs ($failed failed) captured in $out"
python3 "$ROOT/tests/tls/hello.py" report "$out"
