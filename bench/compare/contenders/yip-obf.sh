# shellcheck shell=bash disable=SC2034  # sourced by run.sh, which reads these variables
# yip with obf_psk (docs/obfuscation.md): every datagram obfuscated, the
# default shaping (no junk, no cover traffic). Beside plain yip it shows
# what obfuscation costs: the issue's bound is >= 90 % of plain yip's
# clean-link throughput and <= 20 us more idle RTT.
# shellcheck source=yip.sh
. "$(dirname "${BASH_SOURCE[0]}")/yip.sh"
DESC="yip, obf_psk (build/yipd)"
# A fresh network key for every run of run.sh; both nodes get the same one.
YIP_EXTRA_CONF="obf_psk=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
notes() { echo "as yip, with obf_psk set (every datagram obfuscated; no junk, no cover traffic)"; }
