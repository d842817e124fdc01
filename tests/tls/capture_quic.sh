#!/usr/bin/env bash
# Captures the QUIC Initials chromium sends to a local HTTP/3 server
# (gtlsserver, tests/lib/quic_hello.sh): N runs (default 5) of a fresh
# chromium forced onto QUIC, recorded by tcpdump on the site's side.
# Prints tests/tls/quic_initial.py's report over the capture.
#
# Usage: flock /tmp/netns.lock tests/tls/capture_quic.sh [-n N] OUT.pcap
set -euo pipefail
count=5
while getopts n: o; do
	case $o in
	n) count=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { echo "usage: $0 [-n N] OUT.pcap" >&2; exit 2; }
out=$(realpath -m "$1")
here=$(cd "$(dirname "$0")" && pwd)

. "$here/../netns/lib.sh"
. "$ROOT/tests/lib/tls_hello.sh"
. "$ROOT/tests/lib/quic_hello.sh"
trap 'rc=$?; set +e; hello_reap; (exit $rc); cleanup' EXIT

for c in chromium tcpdump gtlsserver; do
	command -v "$c" >/dev/null || fail "$c not installed (scripts/deps.sh)"
done
quic_lab
quic_capture_start "$TMP/quic.pcap"
for i in $(seq 1 "$count"); do
	quic_chromium "$i" || log "chromium run $i exited $?"
done
quic_capture_stop
cp "$TMP/quic.pcap" "$out"
log "$count chromium runs captured in $out"
