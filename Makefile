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

.PHONY: all deps build debug test unit unit-asan fuzz fuzz-coverage netns layering check demo \
	format format-check clean

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

fuzz:
	@cmake -S . -B $(FUZZ) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
		-DYIP_SANITIZE=ON -DYIP_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ) -j $(JOBS)
	@./tests/fuzz/run.sh $(FUZZ)/fuzz $(FUZZ_SECS)

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

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	@clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

check: deps format-check layering unit unit-asan fuzz netns
	@echo "check: all passed"

demo: deps build
	@./scripts/demo.sh

clean:
	rm -rf $(BUILD) $(ASAN) $(FUZZ) $(COV)

# Benchmark targets live beside the benchmarks.
-include bench/bench.mk
