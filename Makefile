# yip — top-level driver. The real build is CMake; this file gives the
# short commands the README promises.

MAKEFLAGS += --no-print-directory
JOBS     ?= $(shell nproc)
BUILD    ?= build
ASAN     ?= build-asan
FUZZ     ?= build-fuzz
FUZZ_SECS ?= 10
COV      ?= build-cov
COV_SECS ?= 60
FUZZ_LONG_RUNS ?= 10000000
FUZZ_LONG_SECS ?= 3600
FUZZ_LONG_JOBS ?= 1
FUZZ_LONG_OUT  ?= /tmp/yip-fuzz-long
SOAK_SECS ?= 1800

.PHONY: all deps build debug test unit unit-asan fuzz fuzz-build fuzz-long fuzz-coverage netns \
	layering opaque check demo soak format format-check clean

all: build

deps:
	@./scripts/deps.sh

build:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

debug:
	@cmake -S . -B $(ASAN) -DCMAKE_BUILD_TYPE=Debug -DYIP_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN) -j $(JOBS)

unit: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

unit-asan: debug
	@cd $(ASAN) && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

fuzz: fuzz-build
	@./tests/fuzz/run.sh $(FUZZ)/fuzz $(FUZZ_SECS)

fuzz-build:
	@cmake -S . -B $(FUZZ) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
		-DYIP_SANITIZE=ON -DYIP_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ) -j $(JOBS)

# Every fuzzer until FUZZ_LONG_RUNS executions or FUZZ_LONG_SECS seconds,
# FUZZ_LONG_JOBS at a time under nice; logs, grown corpora, crash inputs and
# a results table in FUZZ_LONG_OUT (not part of make check; docs/security.md
# records a run).
fuzz-long: fuzz-build
	@./tests/fuzz/long.sh $(FUZZ)/fuzz $(FUZZ_LONG_RUNS) $(FUZZ_LONG_SECS) $(FUZZ_LONG_JOBS) \
		$(FUZZ_LONG_OUT)

# Two yipd under ASan for SOAK_SECS seconds: mixed traffic over 5 % loss,
# rekeys every 10 s, one side restarted every 2 min, hashed transfers, RSS
# sampled (tests/soak/soak.sh; root; not part of make check).
soak: debug
	@./tests/soak/soak.sh $(SOAK_SECS)

# Line coverage of src/peer, src/fec, src/wire, src/rendezvous, src/membership and src/obf reached by the
# fuzz corpus, each fuzzer's corpus grown for COV_SECS seconds first (not part of make check).
fuzz-coverage:
	@./tests/fuzz/coverage.sh $(COV) $(COV_SECS)

netns: build
	@./tests/netns/run.sh

# Module and file order from the built objects (scripts/layering.py), and a
# self-test showing the check fails on an upward call.
layering: build
	@python3 scripts/layering.py $(BUILD)
	@./tests/layering/selftest.sh >/dev/null && echo "layering: selftest passed"

# Outside src/peer, struct yip_device and struct yip_peer are opaque: every
# other file under src/ compiles without peer/state.h (scripts/opaque.py),
# and a self-test shows the check fails on a file that includes it.
opaque: build
	@python3 scripts/opaque.py $(BUILD)
	@./tests/opaque/selftest.sh >/dev/null && echo "opaque: selftest passed"

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	@clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

check: deps format-check layering opaque unit unit-asan fuzz netns
	@echo "check: all passed"

demo: deps build
	@./scripts/demo.sh

clean:
	rm -rf $(BUILD) $(ASAN) $(FUZZ) $(COV)

# Benchmark targets live beside the benchmarks.
-include bench/bench.mk
