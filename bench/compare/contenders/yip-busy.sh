# shellcheck shell=bash disable=SC2034  # sourced by run.sh, which reads these variables
# yip with io=uring-busy: the event loop never sleeps, so no packet waits for
# a sleeping core to wake. Lowest latency, at the price of one core per
# daemon spinning all the time (on this 2-core machine, both cores).
# shellcheck source=yip.sh
. "$(dirname "${BASH_SOURCE[0]}")/yip.sh"
DESC="yip, io=uring-busy (build/yipd)"
YIP_EXTRA_CONF="io=uring-busy"
notes() { echo "as yip, with io=uring-busy (each daemon spins on a core)"; }
