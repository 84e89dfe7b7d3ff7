# faultline: the one Makefile.
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

ifeq ($(origin CC),default)
CC := gcc
endif
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
B := build/san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=all
else
B := build
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
BASE_CFLAGS := -std=gnu11 -D_GNU_SOURCE -fPIC -Iinclude -Ilib $(WARN) $(SANFLAGS)
ALL_CFLAGS = $(BASE_CFLAGS) $(CFLAGS) $(PKG_CFLAGS)
LDFLAGS ?=
ALL_LDFLAGS = $(SANFLAGS) $(LDFLAGS)

# ---------------------------------------------------------------------------
# Dependencies: scripts/deps.sh installs what is missing and is quick when
# nothing is.

.PHONY: deps
deps:
	$(Q)scripts/deps.sh

# ---------------------------------------------------------------------------
# libfaultline

LIB_SRCS := $(wildcard lib/core/*.c lib/format/*.c lib/discovery/*.c)
LIB_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(LIB_SRCS))
LIB_SO := $(B)/lib/libfaultline.so
LIB_A := $(B)/lib/libfaultline.a
LIB_MAP := lib/libfaultline.map
LIB_LIBS = $(PKG_LIBS)

$(B)/obj/%.o: %.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(LIB_A): $(LIB_OBJS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIB_SO): $(LIB_OBJS) $(LIB_MAP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,libfaultline.so.0 -Wl,--version-script=$(LIB_MAP) \
		-Wl,-z,defs $(ALL_LDFLAGS) -o $@ $(LIB_OBJS) $(LIB_LIBS)

# ---------------------------------------------------------------------------
# faultline (the command-line tool)

CLI_SRCS := $(wildcard daemon/cli/*.c)
CLI_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(CLI_SRCS))
CLI := $(B)/bin/faultline

$(B)/obj/daemon/cli/main.o: ALL_CFLAGS += -DFL_VERSION='"$(VERSION)"'

$(CLI): $(CLI_OBJS) $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJS) $(LIB_A) $(LIB_LIBS)

# ---------------------------------------------------------------------------
# Unit tests (Check)

UNIT_SRCS := $(wildcard selftests/unit/*.c)
UNIT_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(UNIT_SRCS))
UNIT := $(B)/tests/unit

$(B)/obj/selftests/unit/%.o: ALL_CFLAGS += $(CHECK_CFLAGS)

$(UNIT): $(UNIT_OBJS) $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(UNIT_OBJS) $(LIB_A) $(LIB_LIBS) $(CHECK_LIBS)

# ---------------------------------------------------------------------------
# CLI behaviour tests (exit codes, messages, JSON, hostile input)

JSON_CHECK := $(B)/tests/json_check

$(JSON_CHECK): $(B)/obj/selftests/cli/json_check.o
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS)

.PHONY: check-cli
check-cli: $(CLI) $(JSON_CHECK) | deps
	$(Q)selftests/cli/run.sh $(CLI) $(JSON_CHECK) $(B)/tests/cli

# ---------------------------------------------------------------------------
# Top-level targets

ALL := $(LIB_SO) $(LIB_A) $(CLI)

.PHONY: all
all: $(ALL)

.PHONY: check check-unit check-san
check-unit: $(UNIT)
	$(Q)CK_FORK=yes $(UNIT)

# The unit tests and the CLI tests again, built with ASan + UBSan.
check-san: | deps
	$(Q)$(MAKE) --no-print-directory SAN=1 check-unit check-cli

.PHONY: check-docs
check-docs:
	$(Q)selftests/docs/check-man.sh

CHECKS := check-unit check-cli check-docs check-san

check: all
	$(Q)failed=; for t in $(CHECKS); do \
		echo "==> make $$t"; \
		$(MAKE) --no-print-directory $$t || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "make check: FAILED:$$failed"; exit 1; fi; \
	echo "make check: all passed ($(CHECKS))"

# ---------------------------------------------------------------------------
# Install

PC_FILE := $(B)/faultline.pc

$(PC_FILE): Makefile
	@mkdir -p $(@D)
	$(Q)printf '%s\n' \
		'prefix=$(PREFIX)' \
		'libdir=$(LIBDIR)' \
		'includedir=$(INCLUDEDIR)' \
		'' \
		'Name: faultline' \
		'Description: Runtime support for LLVM implicit checks, stack maps and patch points' \
		'Version: $(VERSION)' \
		'Requires.private: $(PKGS)' \
		'Libs: -L$${libdir} -lfaultline' \
		'Cflags: -I$${includedir}' > $@

.PHONY: install
install: all $(PC_FILE)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(INCLUDEDIR)/faultline $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man3
	install -m 755 $(CLI) $(DESTDIR)$(BINDIR)/faultline
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/libfaultline.so.$(VERSION)
	ln -sf libfaultline.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libfaultline.so.0
	ln -sf libfaultline.so.0 $(DESTDIR)$(LIBDIR)/libfaultline.so
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/libfaultline.a
	install -m 644 include/faultline/*.h $(DESTDIR)$(INCLUDEDIR)/faultline/
	install -m 644 $(PC_FILE) $(DESTDIR)$(LIBDIR)/pkgconfig/faultline.pc
	install -m 644 docs/man/faultline.1 $(DESTDIR)$(MANDIR)/man1/faultline.1
	install -m 644 docs/man/*.3 $(DESTDIR)$(MANDIR)/man3/

# ---------------------------------------------------------------------------
# Demo: until the daemon exists, the tables of a sample program.

.PHONY: demo
demo: all
	$(Q)scripts/demo.sh $(CLI) $(B)/demo

.PHONY: clean
clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
