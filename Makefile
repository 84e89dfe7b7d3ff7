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
# libfaultline

LIB_SRCS := $(wildcard lib/core/*.c lib/format/*.c lib/discovery/*.c lib/dispatch/*.c \
	lib/table/*.c lib/region/*.c lib/proto/*.c lib/agent/*.c)
LIB_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(LIB_SRCS))
LIB_SO := $(B)/lib/libfaultline.so
LIB_A := $(B)/lib/libfaultline.a
LIB_MAP := lib/libfaultline.map
# The library needs only libelf; json-c is for the command-line tool.
LIB_PKGS := libelf
LIB_LIBS = $(shell pkg-config --libs $(LIB_PKGS))

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
# libfaultline-preload.so: the shim for unmodified programs.  The library is
# linked in statically with its symbols hidden (--exclude-libs), so that the
# shim exports only what it interposes, unversioned (a versioned definition
# would not match the programs' sigaction@GLIBC_2.2.5 references).

PRELOAD_SO := $(B)/lib/libfaultline-preload.so
PRELOAD_OBJS := $(B)/obj/lib/preload/preload.o

$(PRELOAD_SO): $(PRELOAD_OBJS) $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-z,defs -Wl,--exclude-libs,ALL $(ALL_LDFLAGS) -o $@ \
		$(PRELOAD_OBJS) $(LIB_A) $(LIB_LIBS)

# ---------------------------------------------------------------------------
# faultline (the command-line tool)

CLI_SRCS := $(wildcard daemon/cli/*.c)
CLI_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(CLI_SRCS))
CLI := $(B)/bin/faultline

$(B)/obj/daemon/cli/main.o: ALL_CFLAGS += -DFL_VERSION='"$(VERSION)"'
$(B)/obj/daemon/cli/cmd_run.o: ALL_CFLAGS += -DFL_LIBDIR='"$(LIBDIR)"'

$(CLI): $(CLI_OBJS) $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJS) $(BPF_LOADER_OBJ) $(LIB_A) $(PKG_LIBS)

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
check-cli: $(CLI) $(JSON_CHECK) $(PRELOAD_SO) | deps
	$(Q)selftests/cli/run.sh $(CLI) $(JSON_CHECK) $(B)/tests/cli

# ---- corpus (selftests/progs) ----
# The test corpus: LLVM IR in selftests/progs/ compiled by llc-14 into objects
# that hold .llvm_faultmaps and .llvm_stackmaps, and linked in every way the
# project supports.  Outputs: $(B)/progs/obj/*.o and $(B)/progs/link/*; each
# linked file has a FILE.parts beside it listing its inputs in link order (the
# conformance test uses it to split a section into its tables).
#
#   make corpus              build it
#   make check-conformance   compare faultline faultmap/stackmap with
#                            llvm-objdump-14 / llvm-readelf-14 on all of it
#
# Objects: every module at -O0..-O3, relocation models static and pic.
# Implicit null checks need optimization: at -O0 llc-14 emits no
# .llvm_faultmaps at all (the file then prints "<not found>").
#
# Link modes (all from -O2 objects), and what each needs and does (GNU ld
# 2.40, lld 14.0.6; "link-time value" = the function's address in the file):
#   nopie-gnu      gcc -no-pie, static model. Sections hold final addresses.
#   pie-gnu        gcc -pie, pic model. GNU ld writes the link-time value into
#                  the section AND emits an R_X86_64_RELATIVE for it, making
#                  the module TEXTREL; without -z notext it warns "relocation
#                  against `f' in read-only section `.llvm_faultmaps'" and
#                  "creating DT_TEXTREL in a PIE".  A static-model object
#                  with an absolute data address fails: "relocation
#                  R_X86_64_32 against symbol `mixed_calls' can not be used
#                  when making a PIE object; recompile with -fPIE".
#   so-gnu         gcc -shared, pic model. The section holds 0 and each entry
#                  gets a symbolic R_X86_64_64 (f + 0) against the exported,
#                  preemptible function: TEXTREL (same warnings).  Static
#                  model: "... can not be used when making a shared object;
#                  recompile with -fPIC".
#   nopie-lld      clang -fuse-ld=lld -no-pie, static model: as nopie-gnu.
#   pie-lld        clang -fuse-ld=lld -pie, pic model. The section holds the
#                  link-time value and NO dynamic relocation refers to it (no
#                  TEXTREL): at run time add the load bias.  lld gives every
#                  function named by the sections a canonical PLT entry: its
#                  .symtab entry becomes SHN_UNDEF with st_value = its address
#                  (and JUMP_SLOT relocations with no symbol appear).  This
#                  works only for global default-visibility functions; a
#                  hidden one fails with "cannot preempt symbol: hidden_store",
#                  an internal one with "relocation R_X86_64_64 cannot be used
#                  against local symbol; recompile with -fPIC" (so all.pie-lld
#                  and all.gc-lld leave out nullchecks.ll, which has both).
#                  lld also accepts static-model objects here without a word
#                  and writes link-time addresses into absolute immediates in
#                  the code (wrong at run time): use pic.
#   pie-lld-notext clang -fuse-ld=lld -pie -z notext, pic model. The section
#                  holds 0; R_X86_64_RELATIVE relocations (addend = link-time
#                  value) and TEXTREL.
#   so-lld-notext  clang -fuse-ld=lld -shared -z notext, pic model. Section
#                  holds 0; symbolic R_X86_64_64; TEXTREL.  Without -z notext
#                  lld refuses, in both models: "relocation R_X86_64_64
#                  cannot be used against symbol 'mixed_sum'; recompile with
#                  -fPIC" (one error per function in each section).
#   gc-gnu         gcc -no-pie --gc-sections -T keep-sections.ld, objects
#                  built with -function-sections, static model.
#   gc-lld         clang -fuse-ld=lld -pie --gc-sections -T keep-sections.ld,
#                  -function-sections, pic model.
#   gc-nokeep-gnu  gcc -no-pie --gc-sections without the script: both linkers
#                  drop both sections (and the functions only they name), so
#                  this file has neither section.
# mixed.* link mixed.ll + main.c (one table per section); all.* link every
# module + main.c (several tables per section, concatenated in link order).

PROGS_DIR := selftests/progs
PROGS_OUT := $(B)/progs
PROGS_MODULES := nullchecks many stackmaps patchpoints deopt dynamic mixed
PROGS_OPTS := O0 O1 O2 O3
PROGS_RELOCS := static pic
PROGS_MANY_FUNCTIONS := 300
PROGS_KEEP_LD := $(PROGS_DIR)/keep-sections.ld
PROGS_GCC := gcc -fuse-ld=bfd
PROGS_LLD := $(CLANG) -fuse-ld=lld
PROGS_LLC_FLAGS := -mtriple=x86_64-unknown-linux-gnu -enable-implicit-null-checks \
	-filetype=obj
PROGS_CFLAGS := -std=gnu11 -O2 $(WARN)

$(PROGS_OUT)/src/many.ll: $(PROGS_DIR)/gen-many.sh
	@mkdir -p $(@D)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)sh $< $(PROGS_MANY_FUNCTIONS) > $@

progs_src = $(if $(filter many,$(1)),$(PROGS_OUT)/src/many.ll,$(PROGS_DIR)/$(1).ll)

# $(1) module, $(2) O level, $(3) relocation model, $(4) suffix, $(5) llc flags
define PROGS_OBJ_RULE
$(PROGS_OUT)/obj/$(1)-$(2)-$(3)$(4).o: $(call progs_src,$(1)) | deps
	@mkdir -p $$(@D)
	@$$(if $$(Q),echo "  LLC     $$@")
	$$(Q)$$(LLC) -$(2) -relocation-model=$(3) $$(PROGS_LLC_FLAGS) $(5) $$< -o $$@
PROGS_OBJS += $(PROGS_OUT)/obj/$(1)-$(2)-$(3)$(4).o
endef

PROGS_OBJS :=
$(foreach m,$(PROGS_MODULES),$(foreach o,$(PROGS_OPTS),$(foreach r,$(PROGS_RELOCS),\
	$(eval $(call PROGS_OBJ_RULE,$(m),$(o),$(r),,)))))
$(foreach m,$(PROGS_MODULES),$(foreach r,$(PROGS_RELOCS),\
	$(eval $(call PROGS_OBJ_RULE,$(m),O2,$(r),-fs,-function-sections))))

$(PROGS_OUT)/obj/main-nopie.o: $(PROGS_DIR)/main.c $(PROGS_DIR)/stubs.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(PROGS_CFLAGS) -fno-pie -r -nostdlib $^ -o $@

$(PROGS_OUT)/obj/main-pie.o: $(PROGS_DIR)/main.c $(PROGS_DIR)/stubs.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(PROGS_CFLAGS) -fPIE -r -nostdlib $^ -o $@

# $(1) output name, $(2) inputs in link order, $(3) link command
define PROGS_LINK_RULE
$(PROGS_OUT)/link/$(1): $(2) $(PROGS_KEEP_LD)
	@mkdir -p $$(@D)
	@$$(if $$(Q),echo "  LINK    $$@")
	$$(Q)$(3) -o $$@ $(2)
	$$(Q)printf '%s\n' $(2) > $$@.parts
PROGS_LINKED += $(PROGS_OUT)/link/$(1)
endef

PROGS_GC := -Wl,--gc-sections
PROGS_KEEP := $(PROGS_GC) -Wl,-T,$(PROGS_KEEP_LD)
PROGS_NOTEXT := -Wl,-z,notext

# Per link mode: relocation model of the objects, -fs for the
# -function-sections objects, the main object (none for -shared), command.
PROGS_MODES := nopie-gnu pie-gnu so-gnu nopie-lld pie-lld pie-lld-notext \
	so-lld-notext gc-gnu gc-lld gc-nokeep-gnu

PROGS_RELOC_nopie-gnu := static
PROGS_MAIN_nopie-gnu := main-nopie
PROGS_CMD_nopie-gnu := $(PROGS_GCC) -no-pie

PROGS_RELOC_pie-gnu := pic
PROGS_MAIN_pie-gnu := main-pie
PROGS_CMD_pie-gnu := $(PROGS_GCC) -pie $(PROGS_NOTEXT)

PROGS_RELOC_so-gnu := pic
PROGS_CMD_so-gnu := $(PROGS_GCC) -shared $(PROGS_NOTEXT)

PROGS_RELOC_nopie-lld := static
PROGS_MAIN_nopie-lld := main-nopie
PROGS_CMD_nopie-lld := $(PROGS_LLD) -no-pie

PROGS_RELOC_pie-lld := pic
PROGS_MAIN_pie-lld := main-pie
PROGS_CMD_pie-lld := $(PROGS_LLD) -pie

PROGS_RELOC_pie-lld-notext := pic
PROGS_MAIN_pie-lld-notext := main-pie
PROGS_CMD_pie-lld-notext := $(PROGS_LLD) -pie $(PROGS_NOTEXT)

PROGS_RELOC_so-lld-notext := pic
PROGS_CMD_so-lld-notext := $(PROGS_LLD) -shared $(PROGS_NOTEXT)

PROGS_RELOC_gc-gnu := static
PROGS_FS_gc-gnu := -fs
PROGS_MAIN_gc-gnu := main-nopie
PROGS_CMD_gc-gnu := $(PROGS_GCC) -no-pie $(PROGS_KEEP)

PROGS_RELOC_gc-lld := pic
PROGS_FS_gc-lld := -fs
PROGS_MAIN_gc-lld := main-pie
PROGS_CMD_gc-lld := $(PROGS_LLD) -pie $(PROGS_KEEP)

PROGS_RELOC_gc-nokeep-gnu := static
PROGS_FS_gc-nokeep-gnu := -fs
PROGS_MAIN_gc-nokeep-gnu := main-nopie
PROGS_CMD_gc-nokeep-gnu := $(PROGS_GCC) -no-pie $(PROGS_GC)

# The modules of each linked set, in link order (PROGS_SET_<set>_<mode>
# overrides PROGS_SET_<set> for one mode).
PROGS_SET_mixed := mixed
PROGS_SET_all := $(PROGS_MODULES)
PROGS_SET_all_pie-lld := $(filter-out nullchecks,$(PROGS_MODULES))
PROGS_SET_all_gc-lld := $(filter-out nullchecks,$(PROGS_MODULES))

# $(1) set, $(2) mode
progs_inputs = $(foreach m,$(or $(PROGS_SET_$(1)_$(2)),$(PROGS_SET_$(1))),\
	$(PROGS_OUT)/obj/$(m)-O2-$(PROGS_RELOC_$(2))$(PROGS_FS_$(2)).o) \
	$(if $(PROGS_MAIN_$(2)),$(PROGS_OUT)/obj/$(PROGS_MAIN_$(2)).o)

PROGS_LINKED :=
$(foreach s,mixed all,$(foreach mode,$(PROGS_MODES),$(eval $(call \
	PROGS_LINK_RULE,$(s).$(mode),$(strip $(call progs_inputs,$(s),$(mode))),$(PROGS_CMD_$(mode))))))

CORPUS_FILES := $(PROGS_OBJS) $(PROGS_LINKED)

.PHONY: corpus check-conformance
corpus: $(CORPUS_FILES)

check-conformance: $(CLI) $(CORPUS_FILES)
	$(Q)LLVM_OBJDUMP=$(LLVM_OBJDUMP) LLVM_READELF=$(LLVM_READELF) \
		selftests/conformance/run.sh --cli $(CLI) $(CORPUS_FILES)

# ---- end corpus ----

# ---- discovery tests ----
# selftests/discovery: the discovery layer on programs linked in every mode.
# globals.ll and locals.ll (llc-14: implicit null checks, stack maps) are
# linked into a test program (check.c with -DDT_SELF) or into a library a
# host program dlopens; each asks the discovery API for its own module and
# checks every runtime function address against &f or dlsym, and the
# file-level API's names and link-time addresses.
#
#   make check-discovery
#
# Modes (lld through gcc -fuse-ld=lld, so that SAN=1 links gcc's runtime):
#   nopie-gnu, nopie-lld  -no-pie, static-model objects: addresses final
#   pie-gnu               -pie -z notext: R_X86_64_RELATIVE, TEXTREL
#   pie-gnu-relr          ... -z pack-relative-relocs: some in DT_RELR
#   pie-lld               -pie: no relocation, link-time value + load bias;
#                         globals.ll only (lld cannot link locals.ll so)
#   pie-lld-notext        -pie -z notext: R_X86_64_RELATIVE, TEXTREL
#   so-gnu, so-lld-notext -shared -z notext, dlopen'd: R_X86_64_64 against
#                         the global functions, RELATIVE for the others
# and: the ld -r object of both (names from relocations), a library
# replaced on disk after dlopen (-ESTALE), a library whose dt_load the host
# program preempts (-ERANGE).

DT_DIR := selftests/discovery
DT_OUT := $(B)/tests/discovery
DT_LLC_FLAGS := -O2 -mtriple=x86_64-unknown-linux-gnu -enable-implicit-null-checks \
	-filetype=obj
DT_LIBS = $(LIB_A) $(LIB_LIBS)

$(DT_OUT)/%-pic.o: $(DT_DIR)/%.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(LLC) $(DT_LLC_FLAGS) -relocation-model=pic $< -o $@

$(DT_OUT)/%-static.o: $(DT_DIR)/%.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(LLC) $(DT_LLC_FLAGS) -relocation-model=static $< -o $@

$(DT_OUT)/funcs.o: $(DT_OUT)/globals-pic.o $(DT_OUT)/locals-pic.o
	@$(if $(Q),echo "  LD -r   $@")
	$(Q)ld -r -o $@ $^

# check.c three ways: the self-test program, the dlopen host, and a host
# that exports its own dt_load.
$(DT_OUT)/check-self.o: $(DT_DIR)/check.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -DDT_SELF -MMD -MP -c $< -o $@

$(DT_OUT)/check-host.o: $(DT_DIR)/check.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(DT_OUT)/check-preempt.o: $(DT_DIR)/check.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -DDT_PREEMPT -MMD -MP -c $< -o $@

DT_PIC := $(DT_OUT)/globals-pic.o $(DT_OUT)/locals-pic.o
DT_STATIC := $(DT_OUT)/globals-static.o $(DT_OUT)/locals-static.o

DT_EXE_MODES := nopie-gnu nopie-lld pie-gnu pie-gnu-relr pie-lld pie-lld-notext
DT_OBJS_nopie-gnu := $(DT_STATIC)
DT_LINK_nopie-gnu := -no-pie
DT_OBJS_nopie-lld := $(DT_STATIC)
DT_LINK_nopie-lld := -fuse-ld=lld -no-pie
DT_OBJS_pie-gnu := $(DT_PIC)
DT_LINK_pie-gnu := -pie -Wl,-z,notext
DT_OBJS_pie-gnu-relr := $(DT_PIC)
DT_LINK_pie-gnu-relr := -pie -Wl,-z,notext -Wl,-z,pack-relative-relocs
DT_OBJS_pie-lld := $(DT_OUT)/globals-pic.o
DT_LINK_pie-lld := -fuse-ld=lld -pie
DT_OBJS_pie-lld-notext := $(DT_PIC)
DT_LINK_pie-lld-notext := -fuse-ld=lld -pie -Wl,-z,notext

DT_SO_MODES := so-gnu so-lld-notext
DT_LINK_so-gnu := -shared -Wl,-z,notext
DT_LINK_so-lld-notext := -fuse-ld=lld -shared -Wl,-z,notext

define DT_EXE_RULE
$(DT_OUT)/dt-$(1): $(DT_OUT)/check-self.o $(DT_OBJS_$(1)) $(LIB_A)
	@$$(if $$(Q),echo "  LD      $$@")
	$$(Q)$$(CC) $$(ALL_LDFLAGS) $(DT_LINK_$(1)) -o $$@ $(DT_OUT)/check-self.o \
		$(DT_OBJS_$(1)) $$(DT_LIBS)
endef

define DT_SO_RULE
$(DT_OUT)/libdt-$(1).so: $(DT_PIC)
	@$$(if $$(Q),echo "  LD      $$@")
	$$(Q)$$(CC) $(DT_LINK_$(1)) -o $$@ $(DT_PIC)
endef

$(foreach m,$(DT_EXE_MODES),$(eval $(call DT_EXE_RULE,$(m))))
$(foreach m,$(DT_SO_MODES),$(eval $(call DT_SO_RULE,$(m))))

$(DT_OUT)/dt-host: $(DT_OUT)/check-host.o $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(DT_LIBS)

$(DT_OUT)/dt-preempt: $(DT_OUT)/check-preempt.o $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -rdynamic -o $@ $< $(DT_LIBS)

# The corpus (selftests/progs, linked by the corpus rules above: ten modes,
# several tables per section, --gc-sections with keep-sections.ld, stack
# maps of every kind) with dt-probe.so preloaded, which checks every module
# with maps against its own symbol table before main.  The gc-nokeep files
# have no maps, by design.  With SAN=1, ASan's runtime must be preloaded
# first.
$(DT_OUT)/probe.o: $(DT_DIR)/probe.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(DT_OUT)/stubs.o: $(PROGS_DIR)/stubs.c | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(DT_OUT)/dt-probe.so: $(DT_OUT)/probe.o $(DT_OUT)/stubs.o $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -shared -o $@ $(DT_OUT)/probe.o $(DT_OUT)/stubs.o $(DT_LIBS)

DT_CORPUS = $(filter-out %gc-nokeep-gnu,$(PROGS_LINKED))
DT_PRELOAD = $(if $(filter 1,$(SAN)),$(shell $(CC) -print-file-name=libasan.so) )$(DT_OUT)/dt-probe.so

DT_ALL = $(foreach m,$(DT_EXE_MODES),$(DT_OUT)/dt-$(m)) \
	$(foreach m,$(DT_SO_MODES),$(DT_OUT)/libdt-$(m).so) \
	$(DT_OUT)/dt-host $(DT_OUT)/dt-preempt $(DT_OUT)/funcs.o \
	$(DT_OUT)/dt-probe.so $(DT_CORPUS)

.PHONY: check-discovery
check-discovery: $(DT_ALL)
	$(Q)selftests/discovery/run.sh $(DT_OUT) "$(DT_EXE_MODES)" "$(DT_SO_MODES)" \
		"$(DT_PRELOAD)" "$(DT_CORPUS)"

# ---- end discovery tests ----

# ---- fuzz ----
# libFuzzer targets (selftests/fuzz/): the format layer's fault map and stack
# map parsers, the discovery layer's ELF reader, and the protocol's message
# decoder, region header check and ring consumer, on arbitrary bytes.
# Built by clang-14 with -fsanitize=fuzzer plus ASan and UBSan, from the
# library's sources compiled again with the same instrumentation into
# build/fuzz/obj/ (never mixed with the gcc objects).
#
#   make fuzz         run each target for FUZZ_SECONDS (default 300)
#   make check-fuzz   run each for FUZZ_SMOKE_SECONDS (default 20): fails on a
#                     crash, a sanitizer report, a leak, an input that takes
#                     longer than FUZZ_TIMEOUT seconds, or a broken invariant
#
# Runs start from build/fuzz/corpus-NAME/, a copy of the seeds in
# selftests/fuzz/corpus/NAME/ (regenerate them with make-seeds.sh, or
# make-proto-seeds.sh for proto); findings
# go to build/fuzz/artifacts/, logs to build/fuzz/logs/ (see run.sh).

FUZZ_SECONDS ?= 300
FUZZ_SMOKE_SECONDS ?= 20
FUZZ_TIMEOUT ?= 60
FUZZ_OUT := build/fuzz
# NAME:MAX_LEN.  Sections of a few KiB reach every path; ELF files need
# room for headers, section tables and a few sections; messages up to a
# MODULE_ADD with the longest name.
FUZZ_TARGETS := faultmap:8192 stackmap:8192 elf:65536 proto:8192
FUZZ_BINS := $(foreach t,$(FUZZ_TARGETS),$(FUZZ_OUT)/fuzz_$(firstword $(subst :, ,$(t))))
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS = -std=gnu11 -D_GNU_SOURCE -Iinclude -Ilib $(WARN) -O1 -g $(FUZZ_SAN) \
	$(PKG_CFLAGS)
FUZZ_LIB_OBJS := $(patsubst %.c,$(FUZZ_OUT)/obj/%.o,$(LIB_SRCS))
FUZZ_LIB_A := $(FUZZ_OUT)/libfaultline-fuzz.a
FUZZ_OBJS := $(patsubst $(FUZZ_OUT)/%,$(FUZZ_OUT)/obj/selftests/fuzz/%.o,$(FUZZ_BINS))
# Made by a chain of pattern rules: keep them, or every make rebuilds them.
.SECONDARY: $(FUZZ_OBJS)

# The library: coverage instrumentation without libFuzzer's main.
$(FUZZ_OUT)/obj/lib/%.o: lib/%.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CLANG   $@")
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_OUT)/obj/selftests/fuzz/%.o: selftests/fuzz/%.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CLANG   $@")
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer -MMD -MP -c $< -o $@

$(FUZZ_LIB_A): $(FUZZ_LIB_OBJS)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZ_OUT)/fuzz_%: $(FUZZ_OUT)/obj/selftests/fuzz/fuzz_%.o $(FUZZ_LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CLANG) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $< $(FUZZ_LIB_A) $(PKG_LIBS)

.PHONY: fuzz check-fuzz fuzz-build
fuzz-build: $(FUZZ_BINS)

fuzz: $(FUZZ_BINS)
	$(Q)FUZZ_TIMEOUT=$(FUZZ_TIMEOUT) selftests/fuzz/run.sh $(FUZZ_SECONDS) \
		$(FUZZ_OUT) $(FUZZ_TARGETS)

check-fuzz: $(FUZZ_BINS)
	$(Q)FUZZ_TIMEOUT=$(FUZZ_TIMEOUT) selftests/fuzz/run.sh $(FUZZ_SMOKE_SECONDS) \
		$(FUZZ_OUT) $(FUZZ_TARGETS)

# ---- end fuzz ----

# ---- jit tests ----
# selftests/jit: implicit null checks in JIT code, and dispatch while the
# handler table changes under faulting threads.
#
#   make check-jit           jit: a module compiled by MCJIT (LLVM-C of LLVM
#                            14, -enable-implicit-null-checks, OptLevel 2)
#                            whose .llvm_faultmaps/.llvm_stackmaps are taken
#                            from its memory manager and passed to
#                            fl_module_register; dispatch, counts, errors,
#                            unregistration (a NULL call then dies of
#                            SIGSEGV, in a child), registering again
#   make check-stress        stress for STRESS_SECONDS (default 30): two
#                            threads fail checks in this program and a
#                            linked library while a third dlopens/dlcloses a
#                            library (fl_refresh) and registers/unregisters
#                            MCJIT code; 0 wrong results, exact counts
#   make check-stress-tsan   the same built with ThreadSanitizer, library
#                            included, for STRESS_TSAN_SECONDS (default 10)
#
# With SAN=1 both are built with ASan + UBSan like the rest ($(B)/tests/jit).
# The TSan build compiles the library's sources again into build/tsan/
# (never mixed with the other objects).  -Wno-tsan there: gcc warns that
# TSan does not model atomic_thread_fence (the seqlocks in lib/core/log.c
# and lib/dispatch/chain.c); every field those fences order is itself
# accessed atomically, so TSan cannot report a race on them.  Under TSan,
# faultline's handler is installed with glibc's __sigaction, which TSan does
# not intercept: the kernel calls it directly (TSan's own SIGSEGV handler,
# installed at start, becomes the chain) and TSan's checks of signal
# handlers (unsafe calls, errno) do not apply to it.

JIT_DIR := selftests/jit
JIT_OUT := $(B)/tests/jit
LLVM_CONFIG := llvm-config-14
# Recursive: llvm-config runs after deps.sh has installed llvm-14-dev.
JIT_LLVM_CFLAGS = $(shell $(LLVM_CONFIG) --cflags)
JIT_LLVM_LIBS = $(shell $(LLVM_CONFIG) --ldflags --libs)
JIT_LLC_FLAGS := -O2 -relocation-model=pic -mtriple=x86_64-unknown-linux-gnu \
	-enable-implicit-null-checks -filetype=obj
STRESS_SECONDS ?= 30
STRESS_TSAN_SECONDS ?= 10

$(B)/obj/selftests/jit/%.o: ALL_CFLAGS += $(JIT_LLVM_CFLAGS)
# Made by chains of pattern rules: keep them, or every make rebuilds them.
.SECONDARY: $(JIT_OUT)/stress-keep.o $(JIT_OUT)/stress-dl.o \
	$(JIT_OUT)/libstress-keep.so $(JIT_OUT)/libstress-dl.so

$(JIT_OUT)/%.o: $(JIT_DIR)/%.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(LLC) $(JIT_LLC_FLAGS) $< -o $@

# -z notext: the fault maps' symbolic relocations make them TEXTREL.
$(JIT_OUT)/libstress-%.so: $(JIT_OUT)/stress-%.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-z,notext -Wl,-soname,$(@F) -o $@ $<

$(JIT_OUT)/jit: $(B)/obj/selftests/jit/jit.o $(B)/obj/selftests/jit/mcjit.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(LIB_A) $(LIB_LIBS) $(JIT_LLVM_LIBS)

STRESS_OBJS := $(B)/obj/selftests/jit/stress.o $(B)/obj/selftests/jit/mcjit.o \
	$(JIT_OUT)/stress-main.o
# stress-main.o is a pic-model object: -pie -z notext (RELATIVE, TEXTREL).
$(JIT_OUT)/stress: $(STRESS_OBJS) $(JIT_OUT)/libstress-keep.so \
		$(JIT_OUT)/libstress-dl.so $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -pie -Wl,-z,notext -Wl,-rpath,'$$ORIGIN' -o $@ \
		$(STRESS_OBJS) $(JIT_OUT)/libstress-keep.so $(LIB_A) $(LIB_LIBS) \
		$(JIT_LLVM_LIBS) -lpthread

.PHONY: check-jit check-stress check-stress-tsan
check-jit: $(JIT_OUT)/jit
	$(Q)$(JIT_OUT)/jit

check-stress: $(JIT_OUT)/stress
	$(Q)STRESS_SECONDS=$(STRESS_SECONDS) $(JIT_OUT)/stress $(JIT_OUT)/libstress-dl.so

TSAN_OUT := build/tsan
TSAN_CFLAGS = -std=gnu11 -D_GNU_SOURCE -fPIC -Iinclude -Ilib $(WARN) -Wno-tsan \
	-O1 -g -fsanitize=thread $(PKG_CFLAGS)
TSAN_LIB_OBJS := $(patsubst %.c,$(TSAN_OUT)/obj/%.o,$(LIB_SRCS))
TSAN_LIB_A := $(TSAN_OUT)/lib/libfaultline-tsan.a
TSAN_JIT_OUT := $(TSAN_OUT)/tests/jit
TSAN_STRESS_OBJS := $(TSAN_OUT)/obj/selftests/jit/stress.o \
	$(TSAN_OUT)/obj/selftests/jit/mcjit.o $(JIT_OUT)/stress-main.o

$(TSAN_OUT)/obj/selftests/jit/%.o: TSAN_CFLAGS += $(JIT_LLVM_CFLAGS)

$(TSAN_OUT)/obj/%.o: %.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(TSAN_CFLAGS) -MMD -MP -c $< -o $@

$(TSAN_LIB_A): $(TSAN_LIB_OBJS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(TSAN_JIT_OUT)/libstress-%.so: $(JIT_OUT)/libstress-%.so
	@mkdir -p $(@D)
	$(Q)cp $< $@

$(TSAN_JIT_OUT)/stress: $(TSAN_STRESS_OBJS) $(TSAN_JIT_OUT)/libstress-keep.so \
		$(TSAN_JIT_OUT)/libstress-dl.so $(TSAN_LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -fsanitize=thread -pie -Wl,-z,notext -Wl,-rpath,'$$ORIGIN' -o $@ \
		$(TSAN_STRESS_OBJS) $(TSAN_JIT_OUT)/libstress-keep.so $(TSAN_LIB_A) \
		$(LIB_LIBS) $(JIT_LLVM_LIBS) -lpthread

# halt_on_error: the first report fails the run (exit 66).
check-stress-tsan: $(TSAN_JIT_OUT)/stress
	$(Q)TSAN_OPTIONS="halt_on_error=1 $(TSAN_OPTIONS)" \
		STRESS_SECONDS=$(STRESS_TSAN_SECONDS) \
		$(TSAN_JIT_OUT)/stress $(TSAN_JIT_OUT)/libstress-dl.so

# ---- end jit tests ----

# ---- bench ----
# Benchmarks (selftests/bench/): figures measured side by side, never timed
# assertions.
#
#   make bench    BENCH_REPEAT=15 (format layer runs, dispatch and region
#                 batches), BENCH_RUNS=7 (runs of each command in the
#                 whole-process comparison), BENCH_STARTUP_RUNS=21 (runs of
#                 the startup comparison)
#
# bench_parse: format layer throughput (cursor walk, table build, lookups)
# on a synthetic 1,000,000-entry fault map and 1,000,000-record stack map;
# bench_exec: faultline vs llvm-readelf-14 / llvm-objdump-14 on an object
# holding those sections, interleaved.
# bench_dispatch: ns per claimed fault, faultline vs a minimal handler that
# redirects one known PC (the floor), with 1, 1,000 and 1,000,000 JIT sites
# registered; two threads faulting at once; an unclaimed fault delivered to
# an application handler through fl_sigaction vs installed with sigaction.
# bench_region: userfaultfd guard faults past the committed limit (SIGBUS
# mode, helper thread) vs an mprotect guard page, and first touches vs
# fresh anonymous memory.
# bench_daemon: faultlined's registration latency, stats query p50/p99 with
# 1,000 registered processes, its memory per process and idle CPU.
# Startup: a non-PIE program with about 100,000 fault map entries, run with
# and without libfaultline-preload.so.  startup-prog.sh builds it once
# ($(B)/bench/startup/many: about a minute of llc-14 on both cores).
# See selftests/bench/run.sh.  A few minutes; data files in $(B)/bench/data/
# (about 100 MB).

BENCH_REPEAT ?= 15
BENCH_RUNS ?= 7
BENCH_STARTUP_RUNS ?= 21
BENCH_OUT := $(B)/bench
BENCH_BINS := $(BENCH_OUT)/bench_parse $(BENCH_OUT)/bench_exec \
	$(BENCH_OUT)/bench_dispatch $(BENCH_OUT)/bench_region $(BENCH_OUT)/bench_daemon
# llc-14 leaves a few checks explicit: this many functions of gen-many.sh
# give 100,008 fault map entries.
BENCH_STARTUP_FUNCTIONS := 59410
BENCH_STARTUP := $(BENCH_OUT)/startup/many

$(BENCH_OUT)/bench_parse: $(B)/obj/selftests/bench/bench_parse.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIB_A) $(LIB_LIBS)

$(BENCH_OUT)/bench_exec: $(B)/obj/selftests/bench/bench_exec.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $<

$(BENCH_OUT)/bench_dispatch $(BENCH_OUT)/bench_region $(BENCH_OUT)/bench_daemon: $(BENCH_OUT)/%: \
		$(B)/obj/selftests/bench/%.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIB_A) $(LIB_LIBS)

$(BENCH_STARTUP): selftests/bench/startup-prog.sh selftests/bench/startup_main.c \
		selftests/progs/gen-many.sh | deps
	@$(if $(Q),echo "  GEN     $@ (llc-14: about a minute)")
	$(Q)LLC=$(LLC) CC=$(CC) selftests/bench/startup-prog.sh $@ $(BENCH_STARTUP_FUNCTIONS)

.PHONY: bench
bench: $(BENCH_BINS) $(CLI) $(PRELOAD_SO) $(BENCH_STARTUP) $(FLD) bench-bpf
	$(Q)BENCH_REPEAT=$(BENCH_REPEAT) BENCH_RUNS=$(BENCH_RUNS) \
		BENCH_STARTUP_RUNS=$(BENCH_STARTUP_RUNS) PRELOAD=$(PRELOAD_SO) \
		LLVM_READELF=$(LLVM_READELF) LLVM_OBJDUMP=$(LLVM_OBJDUMP) \
		selftests/bench/run.sh $(BENCH_OUT) $(CLI)

# ---- end bench ----

# ---- runtimes tests ----
# Real runtimes that install their own SIGSEGV handlers, run without and
# with libfaultline-preload.so (selftests/runtimes/): Debian's OpenJDK 17
# (NullPointerExceptions from C2 code in several threads, StackOverflowError,
# a fatal error report), Node.js (WebAssembly out-of-bounds traps in V8's
# guard regions), CPython (faulthandler; children dying of SIGSEGV).  The
# two runs must print the same and exit the same.  Java sources are compiled
# at test time; runs and logs are in $(B)/tests/runtimes/.  About 10 s.

RUNTIMES_OUT := $(B)/tests/runtimes

.PHONY: check-runtimes
check-runtimes: $(PRELOAD_SO) | deps
	$(Q)selftests/runtimes/run.sh $(PRELOAD_SO) $(RUNTIMES_OUT)

# ---- end runtimes tests ----

# ---- region tests ----
# selftests/region: userfaultfd regions (lib/region/, the handler side in
# lib/dispatch/region_fault.c).  One small program per feature, most run in
# both modes (default: UFFD_FEATURE_SIGBUS; FL_REGION_HELPER_THREAD):
# populating (zero pages, template), commit and reset, implicit checks past
# the committed limit (hand-written code registered with
# fl_module_register), faults at unregistered PCs dying as without
# faultline, 8 threads at once, the helper thread's forwarded SIGBUS.
#
#   make check-region   the tests, then again built with ASan + UBSan
#                       (SAN=1 runs only that build)

RG_DIR := selftests/region
RG_OUT := $(B)/tests/region
RG_SRCS := $(wildcard $(RG_DIR)/*.c)
RG_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(RG_SRCS))
RG_BINS := $(patsubst $(RG_DIR)/%.c,$(RG_OUT)/%,$(RG_SRCS))
.SECONDARY: $(RG_OBJS)

$(RG_OUT)/%: $(B)/obj/$(RG_DIR)/%.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIB_A) $(LIB_LIBS)

.PHONY: check-region
check-region: $(RG_BINS)
	$(Q)$(RG_DIR)/run.sh $(RG_OUT)
ifneq ($(SAN),1)
	$(Q)$(MAKE) --no-print-directory SAN=1 check-region
endif

# ---- end region tests ----

# ---- shim tests ----
# selftests/shim: libfaultline-preload.so end to end (shim_test.c says what
# each group proves).  sites.ll is compiled by llc-14 -O2 twice: "imp" with
# -enable-implicit-null-checks, "exp" without (explicit checks), and linked
# with the same driver in each mode:
#   nopie-gnu, nopie-lld   -no-pie, static model
#   pie-gnu                -pie -z notext (GNU ld makes the maps TEXTREL)
#   pie-lld                -pie, pic model: lld leaves link-time values
#   pie-lld-notext         -pie -z notext
#   so-gnu, so-lld-notext  -shared -z notext, the driver linked to it; the
#                          same libraries are dlopen'ed, unloaded and
#                          reloaded elsewhere by driver-dl
# unclaimed (imp, pie-gnu) faults in ways faultline must not claim; chain-imp
# and chain-exp are the chaining matrix (chain.c), with libchainctor.so as a
# DT_NEEDED library whose constructor runs before the shim's.
#
#   make check-shim [SHIM_FILTER=substring-of-test-names]

SHIM_DIR := selftests/shim
SHIM_OUT := $(B)/tests/shim
SHIM_LLC_FLAGS := -O2 -mtriple=x86_64-unknown-linux-gnu -filetype=obj
SHIM_CFLAGS := -std=gnu11 -D_GNU_SOURCE -O2 -g $(WARN) -I$(SHIM_DIR)
SHIM_GNU := $(CC) -fuse-ld=bfd
SHIM_LLD := $(CC) -fuse-ld=lld
SHIM_NOTEXT := -Wl,-z,notext
SHIM_RPATH := -Wl,-rpath,'$$ORIGIN'
SHIM_FILTER ?=

$(SHIM_OUT)/sites-imp-%.o: $(SHIM_DIR)/sites.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(LLC) $(SHIM_LLC_FLAGS) -enable-implicit-null-checks -relocation-model=$* $< -o $@

$(SHIM_OUT)/sites-exp-%.o: $(SHIM_DIR)/sites.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(LLC) $(SHIM_LLC_FLAGS) -relocation-model=$* $< -o $@

# $(1) object name, $(2) source, $(3) flags
define SHIM_CC_RULE
$(SHIM_OUT)/obj/$(1).o: $(SHIM_DIR)/$(2) | deps
	@mkdir -p $$(@D)
	@$$(if $$(Q),echo "  CC      $$@")
	$$(Q)$$(CC) $$(SHIM_CFLAGS) $(3) -MMD -MP -c $$< -o $$@
endef

$(eval $(call SHIM_CC_RULE,driver-nopie,driver.c,-fno-pie))
$(eval $(call SHIM_CC_RULE,driver-pie,driver.c,-fPIE))
$(eval $(call SHIM_CC_RULE,driver-dl,driver.c,-fPIE -DDRIVER_DL))
$(eval $(call SHIM_CC_RULE,record-nopie,record.c,-fno-pie))
$(eval $(call SHIM_CC_RULE,record-pic,record.c,-fPIC))
$(eval $(call SHIM_CC_RULE,unclaimed,unclaimed.c,-fPIE))
$(eval $(call SHIM_CC_RULE,chain,chain.c,-fPIE))
$(eval $(call SHIM_CC_RULE,chainctor,chainctor.c,-fPIC))
$(eval $(call SHIM_CC_RULE,shim_test,shim_test.c,))

# Per executable mode: driver object, record object, sites model, command.
SHIM_EXE_MODES := nopie-gnu pie-gnu nopie-lld pie-lld pie-lld-notext
SHIM_SO_MODES := so-gnu so-lld-notext
SHIM_OBJS_nopie-gnu := driver-nopie record-nopie static
SHIM_CMD_nopie-gnu := $(SHIM_GNU) -no-pie
SHIM_OBJS_pie-gnu := driver-pie record-pic pic
SHIM_CMD_pie-gnu := $(SHIM_GNU) -pie $(SHIM_NOTEXT)
SHIM_OBJS_nopie-lld := driver-nopie record-nopie static
SHIM_CMD_nopie-lld := $(SHIM_LLD) -no-pie
SHIM_OBJS_pie-lld := driver-pie record-pic pic
SHIM_CMD_pie-lld := $(SHIM_LLD) -pie
SHIM_OBJS_pie-lld-notext := driver-pie record-pic pic
SHIM_CMD_pie-lld-notext := $(SHIM_LLD) -pie $(SHIM_NOTEXT)
SHIM_CMD_so-gnu := $(SHIM_GNU)
SHIM_CMD_so-lld-notext := $(SHIM_LLD)

# $(1) imp or exp, $(2) mode
define SHIM_EXE_RULE
$(SHIM_OUT)/sites-$(1)-$(2): $(SHIM_OUT)/obj/$(word 1,$(SHIM_OBJS_$(2))).o \
		$(SHIM_OUT)/obj/$(word 2,$(SHIM_OBJS_$(2))).o \
		$(SHIM_OUT)/sites-$(1)-$(word 3,$(SHIM_OBJS_$(2))).o
	@$$(if $$(Q),echo "  LD      $$@")
	$$(Q)$(SHIM_CMD_$(2)) -o $$@ $$^
SHIM_BINS += $(SHIM_OUT)/sites-$(1)-$(2)
endef

# The library, and the driver linked to it (DT_NEEDED, found by $ORIGIN).
define SHIM_SO_RULE
$(SHIM_OUT)/libsites-$(1)-$(2).so: $(SHIM_OUT)/obj/record-pic.o $(SHIM_OUT)/sites-$(1)-pic.o
	@$$(if $$(Q),echo "  LD      $$@")
	$$(Q)$(SHIM_CMD_$(2)) -shared $(SHIM_NOTEXT) -Wl,-soname,libsites-$(1)-$(2).so \
		-o $$@ $$^
$(SHIM_OUT)/sites-$(1)-$(2): $(SHIM_OUT)/obj/driver-pie.o $(SHIM_OUT)/libsites-$(1)-$(2).so
	@$$(if $$(Q),echo "  LD      $$@")
	$$(Q)$(SHIM_CMD_$(2)) -pie $$(SHIM_RPATH) -o $$@ $$^
SHIM_BINS += $(SHIM_OUT)/libsites-$(1)-$(2).so $(SHIM_OUT)/sites-$(1)-$(2)
endef

SHIM_BINS := $(SHIM_OUT)/driver-dl $(SHIM_OUT)/unclaimed $(SHIM_OUT)/chain-imp \
	$(SHIM_OUT)/chain-exp $(SHIM_OUT)/libchainctor.so $(SHIM_OUT)/shim_test \
	$(foreach k,imp exp,$(foreach m,static pic,$(SHIM_OUT)/sites-$(k)-$(m).o))
$(foreach k,imp exp,$(foreach m,$(SHIM_EXE_MODES),$(eval $(call SHIM_EXE_RULE,$(k),$(m)))))
$(foreach k,imp exp,$(foreach m,$(SHIM_SO_MODES),$(eval $(call SHIM_SO_RULE,$(k),$(m)))))

$(SHIM_OUT)/driver-dl: $(SHIM_OUT)/obj/driver-dl.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -pie -o $@ $^

$(SHIM_OUT)/unclaimed: $(SHIM_OUT)/obj/unclaimed.o $(SHIM_OUT)/obj/record-pic.o \
		$(SHIM_OUT)/sites-imp-pic.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(SHIM_GNU) -pie $(SHIM_NOTEXT) -o $@ $^

$(SHIM_OUT)/libchainctor.so: $(SHIM_OUT)/obj/chainctor.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,libchainctor.so -o $@ $^

# -rdynamic: chain names the function a fault hit with dladdr.
$(SHIM_OUT)/chain-%: $(SHIM_OUT)/obj/chain.o $(SHIM_OUT)/obj/record-pic.o \
		$(SHIM_OUT)/sites-%-pic.o $(SHIM_OUT)/libchainctor.so
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(SHIM_GNU) -pie $(SHIM_NOTEXT) -rdynamic $(SHIM_RPATH) -o $@ \
		$(filter %.o,$^) -Wl,--no-as-needed $(SHIM_OUT)/libchainctor.so

$(SHIM_OUT)/shim_test: $(SHIM_OUT)/obj/shim_test.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^

.PHONY: check-shim
check-shim: $(PRELOAD_SO) $(SHIM_BINS)
	$(Q)$(SHIM_OUT)/shim_test $(PRELOAD_SO) $(SHIM_OUT) $(LLVM_OBJDUMP) $(SHIM_FILTER)

# ---- end shim tests ----

# ---- faultlined ----
# The daemon (daemon/faultlined/): one io_uring event loop (liburing), a
# poll(2) fallback.
# Its unit files (faultlined.service, faultlined.socket) are installed with
# @BINDIR@ replaced.
#
#   make check-daemon-loop   the loop's tests (selftests/daemon/loop/): ping,
#                            1,000 clients, floods, oversized messages, fds,
#                            clients that never read, SIGTERM, a second
#                            daemon, socket activation; io_uring and poll

FLD_SRCS := $(wildcard daemon/faultlined/*.c)
FLD_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(FLD_SRCS))
FLD := $(B)/bin/faultlined
FLD_UNITS := daemon/faultlined/faultlined.service daemon/faultlined/faultlined.socket
FLD_CFLAGS = $(shell pkg-config --cflags liburing)
FLD_LIBS = $(shell pkg-config --libs liburing json-c libbpf)

$(FLD_OBJS): ALL_CFLAGS += $(FLD_CFLAGS)
$(B)/obj/daemon/faultlined/main.o: ALL_CFLAGS += -DFL_VERSION='"$(VERSION)"'

$(FLD): $(FLD_OBJS) $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(FLD_OBJS) $(BPF_LOADER_OBJ) $(LIB_A) $(LIB_LIBS) $(FLD_LIBS)

FLD_TEST_DIR := selftests/daemon/loop
FLD_TEST_OUT := $(B)/tests/daemon/loop
FLD_TEST_SRCS := $(wildcard $(FLD_TEST_DIR)/*.c)
FLD_TEST_BINS := $(patsubst $(FLD_TEST_DIR)/%.c,$(FLD_TEST_OUT)/%,$(FLD_TEST_SRCS))
.SECONDARY: $(patsubst %.c,$(B)/obj/%.o,$(FLD_TEST_SRCS))

$(FLD_TEST_OUT)/%: $(B)/obj/$(FLD_TEST_DIR)/%.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $<

# The transport tests run a build of the daemon that answers PING with PONG
# (selftests/daemon/echo.c, not part of faultlined) instead of speaking the
# protocol (session.c).
FLD_ECHO := $(B)/tests/daemon/faultlined-echo

$(B)/obj/selftests/daemon/main-echo.o: daemon/faultlined/main.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(FLD_CFLAGS) -DFL_VERSION='"$(VERSION)"' -DFLD_TRANSPORT_TEST \
		-Iselftests/daemon -Idaemon/faultlined -MMD -MP -c $< -o $@

$(B)/obj/selftests/daemon/echo.o: ALL_CFLAGS += $(FLD_CFLAGS) -Idaemon/faultlined

$(FLD_ECHO): $(filter-out %/main.o,$(FLD_OBJS)) $(B)/obj/selftests/daemon/main-echo.o \
		$(B)/obj/selftests/daemon/echo.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) $(FLD_LIBS)

.PHONY: check-daemon-loop
check-daemon-loop: $(FLD_ECHO) $(FLD_TEST_BINS)
	$(Q)$(FLD_TEST_DIR)/run.sh $(FLD_ECHO) $(FLD_TEST_OUT)

# ---- end faultlined ----

# ---- daemon e2e tests ----
# selftests/daemon/e2e: faultlined, libfaultline-preload.so and programs with
# implicit null checks (sites.ll, llc-14 -O2 -enable-implicit-null-checks),
# end to end: exact per-site counts (short-lived, long-lived, 4 threads,
# fork), forks while a library is loaded and unloaded, kill -9 and restart,
# requests, security (a client as nobody, forged and malformed messages,
# bad memfds, fd floods, slow readers) and 1,000 registered processes.
# Runs as root (not in CHECKS).
#
#   make check-daemon-e2e [E2E_GROUPS="counts churn restart request security load"]

E2E_DIR := selftests/daemon/e2e
E2E_OUT := $(B)/tests/daemon/e2e
E2E_GROUPS ?=

$(E2E_OUT)/sites.o: $(E2E_DIR)/sites.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(LLC) -O2 -mtriple=x86_64-unknown-linux-gnu -filetype=obj \
		-enable-implicit-null-checks -relocation-model=static $< -o $@

$(E2E_OUT)/sites-pic.o: $(E2E_DIR)/sites.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(LLC) -O2 -mtriple=x86_64-unknown-linux-gnu -filetype=obj \
		-enable-implicit-null-checks -relocation-model=pic $< -o $@

# Loaded and unloaded in a loop by e2e-prog churn.
$(E2E_OUT)/libe2e-sites.so: $(E2E_OUT)/sites-pic.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-z,notext -o $@ $<

# -rdynamic: the agent names the sites with dladdr.
$(E2E_OUT)/e2e-prog: $(B)/obj/$(E2E_DIR)/prog.o $(E2E_OUT)/sites.o $(E2E_OUT)/libe2e-sites.so
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -rdynamic -pthread -o $@ $(filter %.o,$^)

$(E2E_OUT)/e2e-load: $(B)/obj/$(E2E_DIR)/load.o $(E2E_OUT)/sites.o $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -rdynamic -pthread -o $@ $(filter %.o,$^) $(LIB_A) \
		$(LIB_LIBS)

$(E2E_OUT)/e2e-region: $(B)/obj/$(E2E_DIR)/region.o $(E2E_OUT)/sites.o $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -rdynamic -pthread -o $@ $(filter %.o,$^) $(LIB_A) \
		$(LIB_LIBS)

$(E2E_OUT)/e2e: $(B)/obj/$(E2E_DIR)/e2e.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIB_A) $(LIB_LIBS) $(PKG_LIBS)

.PHONY: check-daemon-e2e
check-daemon-e2e: $(E2E_OUT)/e2e $(E2E_OUT)/e2e-prog $(E2E_OUT)/e2e-load $(FLD) $(PRELOAD_SO)
	$(Q)$(FRESH_NS) $(E2E_DIR)/run.sh $(E2E_OUT)/e2e $(FLD) $(PRELOAD_SO) $(E2E_OUT)/e2e-prog \
		$(E2E_OUT)/e2e-load $(E2E_OUT) $(E2E_GROUPS)

# ---- end daemon e2e tests ----

# ---- daemon cli tests ----
# The daemon's commands end to end (selftests/daemon/cli/run.sh): faultlined
# on a temporary socket, a program under faultline run failing known checks,
# then faultline stats (exact per-site counts in --json; --openmetrics and
# --prometheus read by prometheus_client's parsers), ps, sites, stackmaps,
# request, and top in a real terminal (tmux).
#
#   make check-daemon-cli

.PHONY: check-daemon-cli
check-daemon-cli: $(CLI) $(FLD) $(PRELOAD_SO) | deps
	$(Q)$(FRESH_NS) selftests/daemon/cli/run.sh $(CLI) $(FLD) $(B)/tests/daemon/cli

# ---- end daemon cli tests ----

# ---- daemon hostile-user tests ----
# A local user (nobody) against root's daemon and programs
# (selftests/daemon/hostile/run.sh): a squatted socket path, a listener
# that never accepts, state and socket directories another user could
# change, a planted state.json.tmp, corrupt and huge state files; and a
# program that closes every descriptor at start, then lives on its own
# files through faults, dlopen, fork and a daemon restart.
#
#   make check-daemon-hostile

HOSTILE_OUT := $(B)/tests/daemon/hostile

# A program that closes 3..1023 at start, then lives on its own files.
$(HOSTILE_OUT)/fdclose: $(B)/obj/selftests/daemon/hostile/fdclose.o $(E2E_OUT)/sites.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -rdynamic -o $@ $^

# Registers as many made-up sites as asked (one user's load on the daemon).
$(HOSTILE_OUT)/manysites: $(B)/obj/selftests/daemon/hostile/manysites.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS)

# Runs a program with memfd_create denied by a seccomp filter.
$(HOSTILE_OUT)/nomemfd: $(B)/obj/selftests/daemon/hostile/nomemfd.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^

.PHONY: check-daemon-hostile
check-daemon-hostile: $(CLI) $(FLD) $(PRELOAD_SO) $(HOSTILE_OUT)/fdclose $(HOSTILE_OUT)/nomemfd \
		$(E2E_OUT)/libe2e-sites.so $(E2E_OUT)/e2e-prog $(E2E_OUT)/e2e-region | deps
	$(Q)selftests/daemon/hostile/run.sh $(CLI) $(FLD) $(PRELOAD_SO) $(HOSTILE_OUT)/fdclose \
		$(E2E_OUT)/libe2e-sites.so $(HOSTILE_OUT)/nomemfd $(E2E_OUT)/e2e-prog \
		$(E2E_OUT)/e2e-region

# One user's load against the others (selftests/daemon/hostile/fair.sh):
# nobody registers 2,000,000 sites in each of two processes, which exit;
# root's stats and programs are served (and counted exactly) while the
# daemon still writes nobody's records; nobody's budgets of sites and
# section bytes; the records read back after a restart.
#
#   make check-daemon-fair

.PHONY: check-daemon-fair
check-daemon-fair: $(CLI) $(FLD) $(PRELOAD_SO) $(HOSTILE_OUT)/manysites $(E2E_OUT)/e2e-prog | deps
	$(Q)selftests/daemon/hostile/fair.sh $(CLI) $(FLD) $(PRELOAD_SO) $(HOSTILE_OUT)/manysites \
		$(E2E_OUT)/e2e-prog

# ---- end daemon hostile-user tests ----

# ---- daemon exact-counts tests ----
# A process's final counts reach faultlined and its state file exactly,
# whatever happens to the daemon (selftests/daemon/counts/run.sh): kill -9
# while a process exits, a daemon stopped for seconds (then killed with
# registrations in its backlog), JIT code unregistered before exit, an exit
# right after registering; and a soak of 20 kill -9s
# while 20 programs of random lifetimes run, in SOAK_RUNS runs (default 4)
# from SOAK_SEED (default: from the clock; printed).
#
#   make check-daemon-counts [SOAK_RUNS=N] [SOAK_SEED=S]

COUNTS_OUT := $(B)/tests/daemon/counts

$(COUNTS_OUT)/counts-prog: $(B)/obj/selftests/daemon/counts/prog.o $(E2E_OUT)/sites.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -pthread -o $@ $(filter %.o,$^) $(LIB_A) $(LIB_LIBS)

.PHONY: check-daemon-counts
check-daemon-counts: $(CLI) $(FLD) $(COUNTS_OUT)/counts-prog | deps
	$(Q)$(FRESH_NS) selftests/daemon/counts/run.sh $(CLI) $(FLD) $(COUNTS_OUT)/counts-prog \
		$(COUNTS_OUT)

# ---- end daemon exact-counts tests ----

# ---- bpf ----
# The eBPF program (bpf/faultline.bpf.c): CO-RE, built by clang-14 against a
# vmlinux.h dumped from this machine's BTF, and a bpftool skeleton for it.
# selftests/bpf/bpf_count.c loads it through the skeleton and checks the
# kernel's counts of its own faults exactly.  Runs as root (not in CHECKS).
#
#   make check-bpf

BPF_OUT := $(B)/bpf
BPF_VMLINUX := $(BPF_OUT)/vmlinux.h
BPF_OBJ := $(BPF_OUT)/faultline.bpf.o
BPF_SKEL := $(BPF_OUT)/faultline.skel.h
BPF_CLANG_FLAGS := -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Werror \
	-I$(BPF_OUT) -Ibpf
BPF_TEST := $(B)/tests/bpf/bpf_count
BPF_TEST_CFLAGS = $(shell pkg-config --cflags libbpf)
BPF_TEST_LIBS = $(shell pkg-config --libs libbpf)

$(BPF_VMLINUX): | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)bpftool btf dump file /sys/kernel/btf/vmlinux format c > $@

$(BPF_OBJ): bpf/faultline.bpf.c bpf/faultline_bpf.h $(BPF_VMLINUX)
	@$(if $(Q),echo "  BPF     $@")
	$(Q)$(CLANG) $(BPF_CLANG_FLAGS) -c $< -o $@

$(BPF_SKEL): $(BPF_OBJ)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)bpftool gen skeleton $< > $@

# One loader (bpf/loader.c: capabilities, open, load, attach) for faultlined
# (kbpf.c) and faultline profile (cmd_profile.c); both link it.
BPF_LOADER_OBJ := $(B)/obj/bpf/loader.o
$(BPF_LOADER_OBJ): $(BPF_SKEL)
$(BPF_LOADER_OBJ): ALL_CFLAGS += -I$(BPF_OUT) -Ibpf $(BPF_TEST_CFLAGS)
$(FLD) $(FLD_ECHO) $(CLI): $(BPF_LOADER_OBJ)

# faultlined's eBPF side (kbpf*.c) uses the program's maps through the skeleton.
KBPF_OBJS := $(filter $(B)/obj/daemon/faultlined/kbpf%,$(FLD_OBJS))
$(KBPF_OBJS): $(BPF_SKEL)
$(KBPF_OBJS): ALL_CFLAGS += -I$(BPF_OUT) -Ibpf $(BPF_TEST_CFLAGS)

$(B)/obj/selftests/bpf/bpf_count.o: $(BPF_SKEL)
$(B)/obj/selftests/bpf/bpf_count.o: ALL_CFLAGS += -I$(BPF_OUT) -Ibpf $(BPF_TEST_CFLAGS)

$(BPF_TEST): $(B)/obj/selftests/bpf/bpf_count.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(BPF_TEST_LIBS)

.PHONY: bpf check-bpf
bpf: $(BPF_OBJ) $(BPF_SKEL) $(BPF_TEST)

check-bpf: $(BPF_TEST)
	$(Q)$(FRESH_NS) $(BPF_TEST)

# ---- end bpf ----

# ---- vmtest ----
# The kernel-facing selftests again in QEMU (TCG, no KVM) on Debian 12's 6.1
# kernel (scripts/vmtest.sh: apt-get download of the package
# linux-image-amd64 depends on, vmlinuz only, a busybox initramfs with the
# test binaries and their libraries, results through the serial console and
# isa-debug-exit).  Every guest test prints the kernel it runs on (the guest
# sets VMTEST_WHERE="QEMU guest"); the run ends with "N passed, N failed".
# Console log: build/vm/console.log.  In CHECKS as check-vm: about 3
# minutes under TCG on the 2-core build machine (2m47s: the daemon's tests
# 90 s, the shim tests 40 s, the unit tests 10 s, boot and initramfs 25 s).
#
#   make vmtest [VMTEST_TIMEOUT=900]      (check-vm: the same)
#
# Guest tests: the userfaultfd region tests (both modes), the unit tests
# (CK_FORK=yes; CK_TIMEOUT_MULTIPLIER=20: TCG is slow), the shim tests (the
# llc-built programs and libfaultline-preload.so; llvm-objdump-14 for the
# fault map counts).
# VMTEST_BPF_FILES / VMTEST_BPF_TESTS: the eBPF selftests (files to copy
# in, NAME::COMMAND tests): for now check-bpf's bpf_count (the skeleton
# embeds the object), which must load and count exactly on 6.1 as on the
# host's kernel.
# VMTEST_DAEMON_TESTS: the daemon's, 'NAME::PROGRAM ARGS...'; each PROGRAM
# is built first and copied in with its libraries, and VMTEST_DAEMON_FILES
# holds what the arguments name:
#   daemon-loop  check-daemon-loop whole: the transport on io_uring (it checks
#                that the daemon says it runs the io_uring loop: multishot
#                accept and poll on 6.1) and on the poll fallback, socket
#                activation (systemd-socket-activate copied in)
#   daemon-e2e   check-daemon-e2e's groups but security and load (too slow
#                under TCG: scripts/vmtest/daemon-e2e.sh prints why), then
#                every daemon's loop must have been io_uring
#   daemon-cli   faultline run, stats (KERNEL equal to FAULTS), ps against
#                the guest's daemon (scripts/vmtest/daemon-cli.sh; it says
#                why check-daemon-cli's suite is not run there)
# The test scripts' tools busybox lacks or has without their options come
# from the host: GNU realpath, install and env, util-linux setpriv and
# prlimit.  A new daemon test is one line after VMTEST_DAEMON_TESTS, e.g.
#   VMTEST_DAEMON_TESTS += 'kernel-counts::$(B)/tests/daemon/kernel_counts ARGS'

VMTEST_OUT := build/vm
# A bound on a hang: the guest's tests take about 140 s on an idle 2-core
# machine, and over 450 s beside two other test runs.
VMTEST_TIMEOUT ?= 900
VMTEST_BPF_FILES ?= $(BPF_TEST)
VMTEST_BPF_TESTS ?= $(if $(BPF_TEST),'bpf::$(BPF_TEST)')
VMTEST_DAEMON_TESTS := \
	'daemon-loop::$(FLD_TEST_DIR)/run.sh $(FLD_ECHO) $(FLD_TEST_OUT)' \
	'daemon-e2e::scripts/vmtest/daemon-e2e.sh $(E2E_DIR)/run.sh $(E2E_OUT)/e2e $(FLD) \
		$(PRELOAD_SO) $(E2E_OUT)/e2e-prog $(E2E_OUT)/e2e-load $(E2E_OUT)' \
	'daemon-cli::scripts/vmtest/daemon-cli.sh $(CLI) $(FLD) $(E2E_OUT)/e2e-prog'
# More daemon tests here, one line each (before the vmtest rule below).
VMTEST_DAEMON_FILES := $(FLD) $(CLI) $(PRELOAD_SO) $(FLD_ECHO) $(FLD_TEST_OUT) $(E2E_OUT) \
	$(E2E_DIR)/run.sh selftests/daemon/wait.sh /usr/bin/realpath /usr/bin/install /usr/bin/env /usr/bin/setpriv \
	/usr/bin/prlimit $(wildcard /usr/bin/systemd-socket-activate)
# The word after "NAME::" in each test.
VMTEST_DAEMON_PROGS = $(subst ',,$(foreach w,$(VMTEST_DAEMON_TESTS),$(if \
	$(findstring ::,$(w)),$(lastword $(subst ::, ,$(w))))))
VMTEST_DEPS = $(RG_BINS) $(UNIT) $(PRELOAD_SO) $(SHIM_BINS) $(VMTEST_BPF_FILES) $(FLD) $(CLI) \
	$(FLD_ECHO) $(FLD_TEST_BINS) $(E2E_OUT)/e2e $(E2E_OUT)/e2e-prog $(E2E_OUT)/e2e-load \
	$(filter $(B)/%,$(VMTEST_DAEMON_PROGS))
VMTEST_FILES = $(RG_OUT) $(RG_DIR)/run.sh $(UNIT) $(PRELOAD_SO) $(SHIM_OUT) \
	/usr/bin/$(LLVM_OBJDUMP) $(VMTEST_BPF_FILES) $(VMTEST_DAEMON_FILES) $(VMTEST_DAEMON_PROGS)
VMTEST_TESTS = 'region::$(RG_DIR)/run.sh $(RG_OUT)' \
	'unit::CK_FORK=yes CK_TIMEOUT_MULTIPLIER=20 $(UNIT)' \
	'shim::$(SHIM_OUT)/shim_test $(PRELOAD_SO) $(SHIM_OUT) $(LLVM_OBJDUMP)' \
	$(VMTEST_BPF_TESTS) $(VMTEST_DAEMON_TESTS)

.PHONY: vmtest check-vm
vmtest: $(VMTEST_DEPS) | deps
	$(Q)scripts/vmtest.sh -o $(VMTEST_OUT) -t $(VMTEST_TIMEOUT) \
		$(addprefix -f ,$(sort $(VMTEST_FILES))) -- $(VMTEST_TESTS)

check-vm: vmtest

# ---- end vmtest ----

# ---- bench-bpf ----
# selftests/bench/bench_bpf.c: the eBPF program's cost per page fault (not
# attached, attached for an unregistered process, for a registered one) and
# ring buffer loss at the highest fault rate the machine gives; part 7 of
# selftests/bench/run.sh.  Part 8 times a minimal vmtest (check-bpf's
# bpf_count in QEMU: boot to result).  Both need root; make bench builds
# them through bench-bpf.

BENCH_BPF := $(BENCH_OUT)/bench_bpf

$(B)/obj/selftests/bench/bench_bpf.o: $(BPF_SKEL)
$(B)/obj/selftests/bench/bench_bpf.o: ALL_CFLAGS += -I$(BPF_OUT) -Ibpf $(BPF_TEST_CFLAGS)

$(BENCH_BPF): $(B)/obj/selftests/bench/bench_bpf.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(BPF_TEST_LIBS) -lpthread

.PHONY: bench-bpf
bench-bpf: $(BENCH_BPF) $(BPF_TEST)

# ---- end bench-bpf ----

# ---- profile ----
# faultline profile (daemon/cli/cmd_profile.c, symbolize.c) loads the eBPF
# program through its skeleton, so the tool links libbpf.
# selftests/profile/run.sh checks it end to end as root: exact counts at a
# labelled NULL load named by its function, a JIT's perf map name, HotSpot's
# compiled code (jcmd Compiler.perfmap), --all, and the errors.  About 20 s.
#
#   make check-profile

PROFILE_DIR := selftests/profile
PROFILE_OUT := $(B)/tests/profile
PROFILE_SRCS := $(wildcard $(PROFILE_DIR)/*.c)
PROFILE_BINS := $(patsubst $(PROFILE_DIR)/%.c,$(PROFILE_OUT)/%,$(PROFILE_SRCS))
.SECONDARY: $(patsubst %.c,$(B)/obj/%.o,$(PROFILE_SRCS))

$(B)/obj/daemon/cli/cmd_profile.o: $(BPF_SKEL)
$(B)/obj/daemon/cli/cmd_profile.o: ALL_CFLAGS += -I$(BPF_OUT) -Ibpf $(BPF_TEST_CFLAGS)
$(CLI): PKG_LIBS += $(BPF_TEST_LIBS)

$(PROFILE_OUT)/%: $(B)/obj/$(PROFILE_DIR)/%.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $<

.PHONY: check-profile
check-profile: $(CLI) $(PROFILE_BINS) | deps
	$(Q)$(FRESH_NS) $(PROFILE_DIR)/run.sh $(CLI) $(PROFILE_OUT)

# ---- end profile ----

# ---------------------------------------------------------------------------
# Top-level targets

ALL := $(LIB_SO) $(LIB_A) $(PRELOAD_SO) $(CLI) $(FLD)

.PHONY: all
all: $(ALL)

.PHONY: check check-unit check-san
check-unit: $(UNIT)
	$(Q)echo "kernel: $$(uname -r) ($${VMTEST_WHERE:-host})"; CK_FORK=yes $(UNIT)

# The unit, CLI, discovery and JIT tests again, and 10 s of the stress test,
# built with ASan + UBSan (check-region runs its own SAN=1 pass).
check-san: | deps
	$(Q)$(MAKE) --no-print-directory SAN=1 STRESS_SECONDS=10 check-unit check-cli \
		check-discovery check-jit check-stress

.PHONY: check-docs
check-docs:
	$(Q)selftests/docs/check-man.sh

.PHONY: check-install
check-install: all
	$(Q)selftests/install/run.sh $(B)/tests/install

CHECKS := check-unit check-cli check-docs check-install check-conformance check-discovery \
	check-shim check-jit check-region check-runtimes check-stress check-stress-tsan \
	check-daemon-loop check-daemon-cli check-daemon-e2e check-daemon-hostile check-daemon-counts \
	check-daemon-fair check-bpf check-profile check-vm \
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
		'Requires.private: $(LIB_PKGS)' \
		'Libs: -L$${libdir} -lfaultline' \
		'Cflags: -I$${includedir}' > $@

.PHONY: install
install: all $(PC_FILE)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(INCLUDEDIR)/faultline $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(PREFIX)/lib/systemd/system
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
	install -m 755 $(PRELOAD_SO) $(DESTDIR)$(LIBDIR)/libfaultline-preload.so
	install -m 644 include/faultline/*.h $(DESTDIR)$(INCLUDEDIR)/faultline/
	install -m 644 $(PC_FILE) $(DESTDIR)$(LIBDIR)/pkgconfig/faultline.pc
	install -m 644 docs/man/faultline.1 $(DESTDIR)$(MANDIR)/man1/faultline.1
	install -m 644 docs/man/*.3 $(DESTDIR)$(MANDIR)/man3/
	install -m 644 docs/man/faultlined.8 $(DESTDIR)$(MANDIR)/man8/faultlined.8

# ---------------------------------------------------------------------------
# Demo: until the daemon exists, the tables of a sample program.

.PHONY: demo
demo: all $(FLD)
	$(Q)scripts/demo.sh $(B)/bin $(B)/demo

.PHONY: clean
clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
