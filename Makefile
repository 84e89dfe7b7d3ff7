# faultline: the top-level Makefile.  Each directory's targets are in its
# build.mk, included below.
#
#   make            build everything (installs missing Debian packages first)
#   make check      build and run every test
#   make demo       show what faultline does
#   make fuzz       run the libFuzzer targets (FUZZ_SECONDS each)
#   make bench      run the benchmarks
#   make install    PREFIX=/usr/local DESTDIR=
#   make clean
#
#   SAN=1           build with AddressSanitizer + UndefinedBehaviorSanitizer
#                   (outputs under build/san/)
#   V=1             show commands

.DEFAULT_GOAL := all
SHELL := /bin/bash
.DELETE_ON_ERROR:
.SUFFIXES:
MAKEFLAGS += --no-builtin-rules

VERSION := 0.1.0
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/faultline
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions

# The architecture built for: the build machine's by default (uname -m;
# arm64 and amd64 are accepted for aarch64 and x86_64).  Each layer's code
# that knows an instruction set, a signal frame or a calling convention is
# in its ARCH directory (lib/dispatch/x86_64/, lib/deopt/x86_64/, ...:
# docs/architecture.md, "One place per architecture"), which ARCH picks.
HOST_ARCH := $(shell uname -m)
ARCH ?= $(HOST_ARCH)
override ARCH := $(patsubst arm64,aarch64,$(patsubst amd64,x86_64,$(ARCH)))
ifeq ($(filter x86_64 aarch64,$(ARCH)),)
$(error ARCH=$(ARCH): faultline builds for x86_64 or aarch64)
endif

# Another architecture than the build machine's: Debian's cross compiler
# (gcc-aarch64-linux-gnu) and binutils, and the libraries of its multiarch
# packages (libelf-dev:arm64, ...: scripts/deps.sh), under build/ARCH/.
# The tests run what they built through RUN_TARGET: for AArch64 on another
# machine, scripts/qemu-user.sh (qemu-aarch64-static, for the program and
# every program it starts); RUN_WHERE says where in their first line.
ifneq ($(ARCH),$(HOST_ARCH))
CROSS := $(ARCH)-linux-gnu-
ARCH_SUB := /$(ARCH)
export PKG_CONFIG_LIBDIR := /usr/lib/$(ARCH)-linux-gnu/pkgconfig:/usr/share/pkgconfig
RUN_TARGET := scripts/qemu-user.sh
RUN_WHERE := qemu-user $(ARCH) on the host
else
CROSS :=
ARCH_SUB :=
RUN_TARGET :=
RUN_WHERE := host
endif

ifeq ($(origin CC),default)
CC := $(CROSS)gcc
endif
ifeq ($(origin AR),default)
AR := $(CROSS)ar
endif
OBJCOPY := $(CROSS)objcopy
CLANG := clang-14
LLC := llc-14
LLVM_OBJDUMP := llvm-objdump-14
LLVM_READELF := llvm-readelf-14

ifeq ($(V),1)
Q :=
else
Q := @
endif

ifeq ($(SAN),1)
B := build/san$(ARCH_SUB)
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=all
else
B := build$(ARCH_SUB)
SANFLAGS :=
endif

# Recursive on purpose: pkg-config runs when a recipe needs the flags, which
# is after deps.sh (an order-only prerequisite of every object) has run.
PKGS := libelf json-c
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS = $(shell pkg-config --libs $(PKGS))
CHECK_CFLAGS = $(shell pkg-config --cflags check)
CHECK_LIBS = $(shell pkg-config --libs check)

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-missing-field-initializers
CFLAGS ?= -O2 -g
# The per-architecture parts' headers, each found by its own name.
ARCH_CFLAGS := -Ilib/core/$(ARCH) -Ilib/dispatch/$(ARCH) -Ilib/deopt/$(ARCH) -Ilib/table/$(ARCH)
BASE_CFLAGS := -std=gnu11 -D_GNU_SOURCE -fPIC -Iinclude -Ilib $(ARCH_CFLAGS) $(WARN) $(SANFLAGS)
ALL_CFLAGS = $(BASE_CFLAGS) $(CFLAGS) $(PKG_CFLAGS)
LDFLAGS ?=
ALL_LDFLAGS = $(SANFLAGS) $(LDFLAGS)

# ---------------------------------------------------------------------------
# Dependencies: scripts/deps.sh installs what is missing and is quick when
# nothing is.  What it installs depends on the goal: make and make install
# need only the build's packages; make demo adds llc-14; the tests, the
# benchmarks and the fuzzers need the rest (LLVM, Check, OpenJDK, Node.js,
# QEMU, ...).  A sub-make of make check has a check-* goal, so it asks for
# the same.

ifneq ($(filter check check-% vmtest bench bench-% fuzz fuzz-%,$(MAKECMDGOALS)),)
DEPS_FOR := test
else ifneq ($(filter demo,$(MAKECMDGOALS)),)
DEPS_FOR := demo
else
DEPS_FOR := build
endif

.PHONY: deps
deps:
	$(Q)scripts/deps.sh $(DEPS_FOR)

# The tests of everything that loads the eBPF program (check-bpf, the daemon's
# e2e and CLI tests, check-profile) run as on a fresh machine: in a private
# mount namespace without tracefs or debugfs (scripts/fresh-ns.sh).
FRESH_NS := scripts/fresh-ns.sh

# ---------------------------------------------------------------------------
# The compile rule every directory's objects use.

$(B)/obj/%.o: %.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@


# ---------------------------------------------------------------------------
# One fragment per directory (build.mk), each declaring its own variables and
# targets.  The programs first, in the order they link against each other,
# then the tests, whose rules name the programs' variables.

include lib/build.mk
include lib/preload/build.mk
include bpf/build.mk
include daemon/metrics/build.mk
include daemon/cli/build.mk
include daemon/faultlined/build.mk

include selftests/unit/build.mk
include selftests/cli/build.mk
include selftests/docs/build.mk
include docs/examples/build.mk
include selftests/install/build.mk
include selftests/progs/build.mk
include selftests/healable/build.mk
include selftests/discovery/build.mk
include selftests/fuzz/build.mk
include selftests/jit/build.mk
include selftests/runtimes/build.mk
include selftests/region/build.mk
include selftests/patch/build.mk
include selftests/points/build.mk
include selftests/heal/build.mk
include selftests/deopt/build.mk
include selftests/seen/build.mk
include selftests/gc/build.mk
include selftests/shim/build.mk
include selftests/bpf/build.mk
include selftests/daemon/loop/build.mk
include selftests/daemon/e2e/build.mk
include selftests/daemon/cli/build.mk
include selftests/daemon/hostile/build.mk
include selftests/daemon/counts/build.mk
include selftests/daemon/kprocs/build.mk
include selftests/daemon/patch/build.mk
include selftests/daemon/heal/build.mk
include selftests/daemon/oneuser/build.mk
include selftests/daemon/metrics/build.mk
include selftests/profile/build.mk
include selftests/bench/build.mk
include scripts/build.mk
include scripts/vmtest/build.mk

# ---------------------------------------------------------------------------
# Top-level targets

ALL := $(LIB_SO) $(LIB_A) $(PRELOAD_SO) $(CLI) $(FLD)

.PHONY: all
all: $(ALL)

.PHONY: check check-san
# The unit, CLI, discovery and JIT tests again, and 10 s of the stress test,
# built with ASan + UBSan (check-region runs its own SAN=1 pass).
check-san: | deps
	$(Q)$(MAKE) --no-print-directory SAN=1 STRESS_SECONDS=10 check-unit check-cli \
		check-discovery check-jit check-stress

# AArch64 on this machine, under qemu-user (scripts/qemu-user.sh): the
# cross build (make ARCH=aarch64), its unit tests, its deoptimization and
# stack walk suites (check-deopt-aarch64-user), and its faultline on
# both corpora.  What qemu-user cannot run (userfaultfd, bpf, perf, code
# changes: DC/IC do nothing there) is the arm64 guest's.
.PHONY: check-aarch64-user
check-aarch64-user: | deps
	$(Q)$(MAKE) --no-print-directory ARCH=aarch64 all check-unit check-conformance check-deopt-aarch64-user

CHECKS := check-layers check-unit check-cli check-docs check-codegen check-install check-conformance check-aarch64-user check-healable check-discovery \
	check-shim check-jit check-region check-patch check-points check-heal check-deopt check-seen check-gc check-runtimes check-stress check-stress-tsan \
	check-daemon-loop check-daemon-cli check-daemon-metrics check-daemon-e2e check-daemon-hostile check-daemon-counts check-daemon-kprocs \
	check-daemon-fair check-daemon-patch check-daemon-heal check-daemon-oneuser check-bpf check-profile check-vm check-vm-aarch64 \
	check-fuzz check-san

# After each step, scripts/leftovers.sh looks for a process the step left
# running (a daemon, a test program, QEMU): the step fails, and the process
# is killed, so that the next step and the next run start clean.  Processes
# of the tree that ran before make check began are not its own; every
# process the run starts inherits FL_CHECK_RUN, which names the run.
check: all
	$(Q)failed=; start=$$(date +%s); \
	export FL_CHECK_RUN=$$$$.$$(date +%s%N); \
	scripts/leftovers.sh --list $(CURDIR) > $(B)/check-running-before; \
	for t in $(CHECKS); do \
		echo "==> make $$t"; \
		t0=$$(date +%s); \
		$(MAKE) --no-print-directory $$t || failed="$$failed $$t"; \
		scripts/leftovers.sh $(CURDIR) "make $$t" $(B)/check-running-before || \
			failed="$$failed $$t(left-processes)"; \
		echo "==> make $$t: $$(( $$(date +%s) - t0 )) s"; \
	done; \
	echo "make check: $$(( $$(date +%s) - start )) s"; \
	if [ -n "$$failed" ]; then echo "make check: FAILED:$$failed"; exit 1; fi; \
	echo "make check: all passed ($(CHECKS))"

# ---------------------------------------------------------------------------
# Install

PC_FILE := $(B)/faultline.pc

# Made again on every make that needs it, since it holds PREFIX and LIBDIR
# (a make install PREFIX=X after another prefix's must not install the
# other's); replaced only when it changed.
.PHONY: FORCE
$(PC_FILE): FORCE
	@mkdir -p $(@D)
	$(Q)printf '%s\n' \
		'prefix=$(PREFIX)' \
		'libdir=$(LIBDIR)' \
		'includedir=$(INCLUDEDIR)' \
		'' \
		'Name: faultline' \
		'Description: Runtime support for LLVM implicit checks, stack maps and patch points' \
		'Version: $(VERSION)' \
		'Requires.private: $(LIB_PKGS)' \
		'Libs.private: -lZydis' \
		'Libs: -L$${libdir} -lfaultline' \
		'Cflags: -I$${includedir}' > $@.tmp
	$(Q)if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi

.PHONY: install
install: all $(PC_FILE)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(INCLUDEDIR)/faultline $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(PREFIX)/lib/systemd/system $(DESTDIR)$(DOCDIR) $(DESTDIR)$(BASHCOMPDIR)
	install -m 755 $(CLI) $(DESTDIR)$(BINDIR)/faultline
	install -m 755 $(FLD) $(DESTDIR)$(BINDIR)/faultlined
	for u in $(FLD_UNITS); do \
		sed 's|@BINDIR@|$(BINDIR)|g' $$u > $(DESTDIR)$(PREFIX)/lib/systemd/system/$${u##*/} && \
		chmod 644 $(DESTDIR)$(PREFIX)/lib/systemd/system/$${u##*/} || exit 1; \
	done
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/libfaultline.so.$(VERSION)
	ln -sf libfaultline.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libfaultline.so.0
	ln -sf libfaultline.so.0 $(DESTDIR)$(LIBDIR)/libfaultline.so
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/libfaultline.a
	# The shim's debug info beside it, not in it: a runtime that reads the
	# DWARF of every frame for its crash report (Ruby 3.1 misreads DWARF 5,
	# and lost the file names of the frames after the shim's) finds none;
	# gdb follows the debug link into .debug/.
	install -d $(DESTDIR)$(LIBDIR)/.debug
	$(OBJCOPY) --only-keep-debug $(PRELOAD_SO) $(DESTDIR)$(LIBDIR)/.debug/libfaultline-preload.so.debug
	chmod 644 $(DESTDIR)$(LIBDIR)/.debug/libfaultline-preload.so.debug
	$(OBJCOPY) --strip-debug \
		--add-gnu-debuglink=$(DESTDIR)$(LIBDIR)/.debug/libfaultline-preload.so.debug \
		$(PRELOAD_SO) $(DESTDIR)$(LIBDIR)/libfaultline-preload.so
	chmod 755 $(DESTDIR)$(LIBDIR)/libfaultline-preload.so
	install -m 644 include/faultline/*.h $(DESTDIR)$(INCLUDEDIR)/faultline/
	# Every architecture's part of the headers (each defines only on its own).
	for a in x86_64 aarch64; do \
		install -d $(DESTDIR)$(INCLUDEDIR)/faultline/$$a && \
		install -m 644 include/faultline/$$a/*.h $(DESTDIR)$(INCLUDEDIR)/faultline/$$a/ || exit 1; \
	done
	install -m 644 $(PC_FILE) $(DESTDIR)$(LIBDIR)/pkgconfig/faultline.pc
	# A page that is another's alias is a symlink in the tree, so that
	# man -l reads it from anywhere (man-db resolves .so from the current
	# directory); installed, it is the usual .so link, which man resolves
	# from the top of its manpath.
	for p in docs/man/*.[0-9]; do \
		d=$(DESTDIR)$(MANDIR)/man$${p##*.}/$${p##*/}; rm -f $$d; \
		if [ -L $$p ]; then \
			t=$$(basename "$$(readlink -f $$p)") && \
			printf '.so man%s/%s\n' "$${t##*.}" "$$t" > $$d && chmod 644 $$d; \
		else \
			install -m 644 $$p $$d; \
		fi || exit 1; \
	done
	install -m 644 docs/json.md $(DESTDIR)$(DOCDIR)/json.md
	install -m 644 scripts/completion/faultline.bash $(DESTDIR)$(BASHCOMPDIR)/faultline

# ---------------------------------------------------------------------------
# Demo: until the daemon exists, the tables of a sample program.

.PHONY: demo
demo: all $(FLD)
	$(Q)scripts/demo.sh $(B)/bin $(B)/demo

.PHONY: clean
clean:
	rm -rf build

-include $(shell find build -name '*.d' -type f 2>/dev/null)
