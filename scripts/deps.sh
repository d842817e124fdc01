#!/usr/bin/env bash
# Install every Debian package yip's build, tests, demo and benchmarks need.
# Idempotent and quiet when everything is already present.
set -euo pipefail

pkgs=(
	# build
	build-essential cmake pkg-config clang clang-format libclang-rt-14-dev
	# llvm-profdata-14 and llvm-cov-14 for make fuzz-coverage (clang only recommends them)
	llvm-14
	# libraries
	libsodium-dev libssl-dev libmnl-dev libcmocka-dev libcjson-dev libisal-dev liburing-dev libseccomp-dev
	# QUIC links (src/quic): ngtcp2 0.12 on GnuTLS, nghttp3 for the HTTP/3 decoy
	libngtcp2-dev libngtcp2-crypto-gnutls-dev libgnutls28-dev libnghttp3-dev
	# the QUIC interop peers of tests/netns/quic_probe.sh: gtlsclient, gtlsserver
	ngtcp2-client ngtcp2-server
	# tests and demo
	iproute2 iputils-ping nftables iperf3 tcpdump python3 procps coreutils
	# conntrack -F for the NAT lab (tests/lib/natlab.sh)
	conntrack
	# the DPI oracle of tests/netns/obf_dpi.sh: nDPI's ndpiReader, and ethtool to turn
	# segmentation offloads off so captures hold wire-sized datagrams
	libndpi-bin ethtool
	# the reference ClientHello of the TLS fingerprint tests (tests/tls/): Debian's chromium
	# (156 from the security suite), against openssl s_server, tshark to read captures
	chromium openssl tshark
	# the QUIC hello: GnuTLS's QUIC server session in tests/unit/test_tls_quic.c, and
	# Debian's HTTP/3 server chromium's QUIC Initial is captured against (tests/tls/)
	libgnutls28-dev ngtcp2-server
	# make install / make deb and their tests (tests/netns/ops_install.sh, ops_deb.sh):
	# unit checks, man-page lint, the Debian package and lintian; promtool (in
	# prometheus) checks the metrics exposition
	systemd mandoc debhelper fakeroot lintian dpkg-dev prometheus
)

# Benchmark contenders and tools are listed one per line in deps-bench.list.
here=$(cd "$(dirname "$0")" && pwd)
if [ -f "$here/deps-bench.list" ]; then
	while read -r p _; do
		case "$p" in '' | '#'*) continue ;; esac
		pkgs+=("$p")
	done <"$here/deps-bench.list"
fi

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing packages: ${missing[*]}" >&2
	echo "deps: run as root (or: sudo $0) to install them" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark's package asks whether non-root users may capture: no.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
