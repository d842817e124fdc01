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
	layering opaque check demo soak format format-check clean install uninstall mancheck deb

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

# make install / make uninstall (GNU conventions; docs/operations.md). The
# binaries come from $(BUILD), built first by `make`; DESTDIR is used only
# here and never written into an installed file. The systemd directories
# come from systemd's pkg-config file when it is there. yipd, yipctl and
# yip-rendezvous are root's tools (sbin), yip-ca anyone's (bin).
# scripts/install.manifest lists what `make install PREFIX=/usr` installs
# (tests/netns/ops_install.sh holds the two to each other). /etc/yip is
# made mode 0700 and empty (keys are the operator's; none is installed);
# uninstall removes it only if empty, so configs and keys stay.
PREFIX      ?= /usr/local
prefix      ?= $(PREFIX)
exec_prefix ?= $(prefix)
bindir      ?= $(exec_prefix)/bin
sbindir     ?= $(exec_prefix)/sbin
datarootdir ?= $(prefix)/share
mandir      ?= $(datarootdir)/man
# /etc whatever the prefix: the units and the man pages name /etc/yip.
sysconfdir  ?= /etc
pc_systemd   = $(shell pkg-config --variable=$(1) systemd 2>/dev/null)
systemdsystemunitdir ?= $(or $(call pc_systemd,systemdsystemunitdir),$(prefix)/lib/systemd/system)
sysusersdir ?= $(or $(call pc_systemd,sysusersdir),$(prefix)/lib/sysusers.d)
tmpfilesdir ?= $(or $(call pc_systemd,tmpfilesdir),$(prefix)/lib/tmpfiles.d)
INSTALL     ?= install

SBIN_PROGS = yipd yipctl yip-rendezvous
BIN_PROGS  = yip-ca
MAN1       = yip-ca.1
MAN5       = yipd.conf.5
MAN8       = yipd.8 yipctl.8 yip-rendezvous.8
UNITS      = yipd@.service yip-rendezvous.service

install:
	@for p in $(SBIN_PROGS) $(BIN_PROGS); do [ -x $(BUILD)/$$p ] || \
		{ echo "install: $(BUILD)/$$p is not built; run make first" >&2; exit 1; }; done
	$(INSTALL) -d $(DESTDIR)$(sbindir) $(DESTDIR)$(bindir) $(DESTDIR)$(mandir)/man1 \
		$(DESTDIR)$(mandir)/man5 $(DESTDIR)$(mandir)/man8 $(DESTDIR)$(systemdsystemunitdir) \
		$(DESTDIR)$(sysusersdir) $(DESTDIR)$(tmpfilesdir)
	$(INSTALL) -m 0755 $(addprefix $(BUILD)/,$(SBIN_PROGS)) $(DESTDIR)$(sbindir)/
	$(INSTALL) -m 0755 $(addprefix $(BUILD)/,$(BIN_PROGS)) $(DESTDIR)$(bindir)/
	$(INSTALL) -m 0644 $(addprefix doc/man/,$(MAN1)) $(DESTDIR)$(mandir)/man1/
	$(INSTALL) -m 0644 $(addprefix doc/man/,$(MAN5)) $(DESTDIR)$(mandir)/man5/
	$(INSTALL) -m 0644 $(addprefix doc/man/,$(MAN8)) $(DESTDIR)$(mandir)/man8/
	@for u in $(UNITS); do \
		echo "sed dist/systemd/$$u.in > $(DESTDIR)$(systemdsystemunitdir)/$$u"; \
		sed -e 's|@SBINDIR@|$(sbindir)|g' -e 's|@BINDIR@|$(bindir)|g' \
			-e 's|/etc/yip|$(sysconfdir)/yip|g' dist/systemd/$$u.in \
			>$(DESTDIR)$(systemdsystemunitdir)/$$u.tmp && \
		chmod 0644 $(DESTDIR)$(systemdsystemunitdir)/$$u.tmp && \
		mv $(DESTDIR)$(systemdsystemunitdir)/$$u.tmp $(DESTDIR)$(systemdsystemunitdir)/$$u || exit 1; \
	done
	$(INSTALL) -m 0644 dist/systemd/yip.sysusers $(DESTDIR)$(sysusersdir)/yip.conf
	$(INSTALL) -m 0644 dist/systemd/yip.tmpfiles $(DESTDIR)$(tmpfilesdir)/yip.conf
	$(INSTALL) -d -m 0700 $(DESTDIR)$(sysconfdir)/yip

uninstall:
	rm -f $(addprefix $(DESTDIR)$(sbindir)/,$(SBIN_PROGS)) \
		$(addprefix $(DESTDIR)$(bindir)/,$(BIN_PROGS)) \
		$(addprefix $(DESTDIR)$(mandir)/man1/,$(MAN1)) \
		$(addprefix $(DESTDIR)$(mandir)/man5/,$(MAN5)) \
		$(addprefix $(DESTDIR)$(mandir)/man8/,$(MAN8)) \
		$(addprefix $(DESTDIR)$(systemdsystemunitdir)/,$(UNITS)) \
		$(DESTDIR)$(sysusersdir)/yip.conf $(DESTDIR)$(tmpfilesdir)/yip.conf
	rmdir $(DESTDIR)$(sysconfdir)/yip 2>/dev/null || true

# Every config key of src/config/config.c and every option and subcommand in
# the binaries' --help in the man pages, and mandoc -Tlint clean.
mancheck: build
	@python3 scripts/mancheck.py $(BUILD)

# The Debian package, built from a copy of the tree (git ls-files plus
# uncommitted changes) so this tree stays clean; the .deb files land in
# $(DEB_OUT). docs/operations.md.
DEB_OUT ?= $(BUILD)/deb
deb:
	@./scripts/deb.sh $(DEB_OUT)

# Benchmark targets live beside the benchmarks.
-include bench/bench.mk
