# shellcheck shell=bash disable=SC2034  # sourced by run.sh, which reads these variables
# raw: no tunnel at all. A talks to B's underlay address directly through the
# same link emulator, so this row is the limit every tunnel is measured against.
DESC="raw underlay (no tunnel)"
PEER=$UL_B
TUN_DEV=$IF_A

available() { :; }
version() { echo "kernel $(uname -r)"; }
notes() { echo "veth, no encryption"; }
up() { wait_ping "$PEER" 10; }
down() { :; }
