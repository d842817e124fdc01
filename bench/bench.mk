# Benchmark targets; included by the top-level Makefile.
#
#   make bench-compare   yip beside other tunnels over emulated links, yip's cells
#                        three times (~80 min; writes docs/benchmarks/RESULTS.md,
#                        results.csv, runs.csv, *.svg)
#   make bench-quick     yip vs wireguard-go, clean and 5 % loss at 20 ms RTT, once
#                        (~2 min, prints a table; writes build/bench/quick-*/quick.md)
#
# Both need root (network namespaces, TUN devices, sysctls). They install
# missing packages with scripts/deps.sh, build, then run bench/compare/run.sh.
# Options for run.sh (e.g. "--contenders yip,raw --conditions clean,wan
# --loss-at both") can be passed as BENCH_ARGS=...

.PHONY: bench-compare bench-quick bench-root bench-deps

bench-root:
	@if [ "$$(id -u)" -ne 0 ]; then \
		echo "bench: needs root (network namespaces, TUN devices, sysctls): run 'sudo make $(filter bench-%,$(MAKECMDGOALS))'" >&2; \
		exit 1; \
	fi

bench-deps: bench-root
	@./scripts/deps.sh

bench-compare: bench-deps build
	@BENCH_CMD="make bench-compare$(if $(BENCH_ARGS), BENCH_ARGS='$(BENCH_ARGS)')" \
		./bench/compare/run.sh $(BENCH_ARGS)

bench-quick: bench-deps build
	@BENCH_CMD="make bench-quick" ./bench/compare/run.sh --quick $(BENCH_ARGS)

# make bench-micro   per-packet costs in memory: libsodium and ISA-L floors, our AEAD
#                    wrappers, datagram framing, FEC encode/decode, and two engines back
#                    to back (egress, ingress); medians of 31 runs, plus instruction
#                    counts under callgrind when valgrind is installed. No root, ~30 s.
#                    Prints the tables and writes docs/benchmarks/micro.md.
#                    Options for build/yip-micro (e.g. "--runs 51") in MICRO_ARGS=...
.PHONY: bench-micro
bench-micro: build
	@mkdir -p docs/benchmarks
	@$(BUILD)/yip-micro --markdown docs/benchmarks/micro.md --callgrind \
		--command "make bench-micro$(if $(MICRO_ARGS), MICRO_ARGS='$(MICRO_ARGS)')" $(MICRO_ARGS)

# make bench-cpb     instructions per byte of yipd's own code under callgrind, for the
#                    sender and the receiver of a 32 MB TCP transfer on a veth: this
#                    tree with offloads on and off. CPB_ARGS adds NAME=BINARY[:KEYS]
#                    entries (e.g. an older build). Root; ~3 min. Prints a table.
.PHONY: bench-cpb
bench-cpb: bench-deps build
	@./bench/cpb/run.sh yip=$(BUILD)/yipd "yip-offload-off=$(BUILD)/yipd:offload=off" $(CPB_ARGS)

# make bench-rendezvous  the rendezvous server's engine in memory: 100 000 nodes with
#                        their own keys complete real handshakes and register
#                        (registrations/s, memory per node), then relayed 1400-byte
#                        datagrams between two introduced nodes (datagrams/s). No root;
#                        about a minute, most of it the nodes' own X25519 work. Writes
#                        docs/benchmarks/rendezvous.md. Options for build/yip-rdv-bench
#                        (e.g. "--nodes 20000") in RDV_BENCH_ARGS=...
# make bench-members     50 real yipd in network namespaces, a CA-gated network
#                        with two roots and no [peer] blocks: time until every
#                        daemon holds every record and has a session with every
#                        other (polled with yipctl members), a ping sweep,
#                        memory per daemon, gossip bytes (bench/members/mesh50.sh;
#                        root; MEMBERS_N=50; raises the kernel's neighbour-table
#                        limit for the run)
.PHONY: bench-members
bench-members: build
	@./bench/members/mesh50.sh $(or $(MEMBERS_N),50)

.PHONY: bench-rendezvous
bench-rendezvous: build
	@mkdir -p docs/benchmarks
	@$(BUILD)/yip-rdv-bench --markdown docs/benchmarks/rendezvous.md \
		--command "make bench-rendezvous$(if $(RDV_BENCH_ARGS), RDV_BENCH_ARGS='$(RDV_BENCH_ARGS)')" \
		$(RDV_BENCH_ARGS)

# make gossip-sim    the gossip engine (src/gossip) at scale on a discrete-event clock, no
#                    sockets: time until 99 % of nodes hold a new member's record and a
#                    revocation, and control bytes per node per second in steady state
#                    (bench/gossip-sim/sim.c). GOSSIP_NODES=1000 by default (about half a
#                    minute); GOSSIP_NODES=10000 by hand (~7 GB of memory, 6-30 min).
#                    Records are re-signed as yipd does (YIP_RECORD_RESIGN_S).
#                    Writes docs/benchmarks/gossip-<nodes><GOSSIP_TAG>.{json,csv}, then
#                    docs/benchmarks/gossip.md and gossip-convergence.svg from every such
#                    run there. Options for build/yip-gossip-sim (e.g. "--refresh 3600",
#                    with GOSSIP_TAG=-1h to keep the run apart) in GOSSIP_ARGS=...
GOSSIP_NODES ?= 1000
GOSSIP_TAG ?=
.PHONY: gossip-sim
gossip-sim: build
	@mkdir -p docs/benchmarks
	@$(BUILD)/yip-gossip-sim --nodes $(GOSSIP_NODES) \
		--out docs/benchmarks/gossip-$(GOSSIP_NODES)$(GOSSIP_TAG) \
		--command "make gossip-sim GOSSIP_NODES=$(GOSSIP_NODES)$(if $(GOSSIP_TAG), GOSSIP_TAG=$(GOSSIP_TAG))$(if $(GOSSIP_ARGS), GOSSIP_ARGS='$(GOSSIP_ARGS)')" \
		$(GOSSIP_ARGS)
	@python3 bench/gossip-sim/report.py docs/benchmarks
