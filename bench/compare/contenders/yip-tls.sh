# shellcheck shell=bash disable=SC2034  # sourced by run.sh, which reads these variables
# yip over a TLS link (docs/transports.md): A dials B's listen_tls
# (endpoint = tls://...), B presents a self-signed certificate; the link is
# reliable, so FEC and ARQ are off on it and the outer TCP (BBR, as the
# link asks for) does the loss recovery. Beside plain yip it shows what a
# network that lets only TCP through leaves: the issue's bound is >= 50 %
# of its own clean goodput at 20 ms + 1 % loss, loaded ping <= idle + 100 ms.
# shellcheck source=yip.sh
. "$(dirname "${BASH_SOURCE[0]}")/yip.sh"
DESC="yip over TLS (build/yipd, endpoint = tls://)"
notes() { echo "as yip, with A's endpoint tls://B:8443 and B's listen_tls (self-signed); outer TCP BBR"; }

up() { _yip_link_up tls; }
