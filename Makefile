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
# Top-level targets

ALL := $(LIB_SO) $(LIB_A) $(CLI)

.PHONY: all
all: $(ALL)

.PHONY: check check-unit
check-unit: $(UNIT)
	$(Q)CK_FORK=yes $(UNIT)

check: all check-unit
	@echo "make check: all passed"

.PHONY: clean
clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
