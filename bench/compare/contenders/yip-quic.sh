# shellcheck shell=bash disable=SC2034  # sourced by run.sh, which reads these variables
# yip over a QUIC link (docs/transports.md): A dials B's listen_quic
# (endpoint = quic://...), B presents a self-signed certificate. QUIC
# datagrams are unreliable, so FEC and ARQ stay on; ngtcp2's congestion
# controller (yipd's default, BBR2; YIP_QUIC_CC picks another) holds back
# what leaves. Beside plain yip it shows what a network that lets only
# QUIC-looking UDP through leaves: the issue's bound is >= 60 % of raw-UDP yip's goodput at
# 20 ms + 5 % loss, idle ping within raw UDP's + 0.2 ms.
# shellcheck source=yip.sh
. "$(dirname "${BASH_SOURCE[0]}")/yip.sh"
DESC="yip over QUIC (build/yipd, endpoint = quic://)"
notes() { echo "as yip, with A's endpoint quic://B:8443 and B's listen_quic (self-signed); ngtcp2 ${YIP_QUIC_CC:-bbr2}"; }

up() { _yip_link_up quic; }
