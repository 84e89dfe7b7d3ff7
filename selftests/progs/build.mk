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
# One corpus for every build (plain, SAN=1, ARCH=aarch64): its files do not
# depend on how faultline is built.
PROGS_OUT := build/progs
PROGS_MODULES := nullchecks many stackmaps patchpoints deopt dynamic mixed
PROGS_OPTS := O0 O1 O2 O3
PROGS_RELOCS := static pic
PROGS_MANY_FUNCTIONS := 300
PROGS_KEEP_LD := $(PROGS_DIR)/keep-sections.ld
# The architecture the rules below are made for when they are evaluated
# (x86_64, then aarch64 for the AArch64 corpus at the end): the linkers,
# the triple and the output directory follow it.
PROGS_ARCH := x86_64
PROGS_GCC_x86_64 := gcc -fuse-ld=bfd
PROGS_GCC_aarch64 := aarch64-linux-gnu-gcc -fuse-ld=bfd
PROGS_LLD_x86_64 := $(CLANG) -fuse-ld=lld
PROGS_LLD_aarch64 := $(CLANG) --target=aarch64-linux-gnu -fuse-ld=lld
PROGS_CC_x86_64 := gcc
PROGS_CC_aarch64 := aarch64-linux-gnu-gcc
PROGS_TRIPLE_x86_64 := x86_64-unknown-linux-gnu
PROGS_TRIPLE_aarch64 := aarch64-unknown-linux-gnu
PROGS_SUB_aarch64 := /aarch64
PROGS_GCC = $(PROGS_GCC_$(PROGS_ARCH))
PROGS_LLD = $(PROGS_LLD_$(PROGS_ARCH))
# Where this architecture's objects and links go: $(PROGS_OUT) for x86-64.
PROGS_HERE = $(PROGS_OUT)$(PROGS_SUB_$(PROGS_ARCH))
# The lists the rules append to: PROGS_OBJS and PROGS_LINKED for x86-64.
PROGS_LIST = $(if $(filter x86_64,$(PROGS_ARCH)),PROGS_$(1),PROGS_$(1)_$(PROGS_ARCH))
PROGS_LLC_FLAGS = -mtriple=$(PROGS_TRIPLE_$(PROGS_ARCH)) -enable-implicit-null-checks \
	-filetype=obj
PROGS_CFLAGS := -std=gnu11 -O2 $(WARN)

$(PROGS_OUT)/src/many.ll: $(PROGS_DIR)/gen-many.sh
	@mkdir -p $(@D)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)sh $< $(PROGS_MANY_FUNCTIONS) > $@

# AArch64's stack maps module: stackmaps.ll less the live values that crash
# llc-14's AArch64 instruction selection (i16 and i8 in registers, a
# <4 x i32>: "Running pass 'AArch64 Instruction Selection' on function
# '@sm_registers'", a segmentation fault).
$(PROGS_OUT)/src/stackmaps-aarch64.ll: $(PROGS_DIR)/stackmaps.ll
	@mkdir -p $(@D)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)sed -e 's/i32 %b, i16 %c, i8 %d, double %f/i32 %b, double %f/' \
		-e 's/i8\* %h,$$/i8* %h)/' -e '/^ *<4 x i32> %v)$$/d' $< > $@.tmp
	$(Q)grep -q 'i32 %b, double %f, float %g, i8\* %h)' $@.tmp && mv $@.tmp $@

progs_src = $(if $(filter many random dense,$(1)),$(PROGS_OUT)/src/$(1).ll,$(if \
	$(filter stackmaps-aarch64,$(1)-$(PROGS_ARCH)),$(PROGS_OUT)/src/stackmaps-aarch64.ll,$(PROGS_DIR)/$(1).ll))

# $(1) module, $(2) O level, $(3) relocation model, $(4) suffix, $(5) llc
# flags; for PROGS_ARCH as it is at the call.
define PROGS_OBJ_RULE
$(PROGS_HERE)/obj/$(1)-$(2)-$(3)$(4).o: $(call progs_src,$(1)) | deps
	@mkdir -p $$(@D)
	@$$(if $$(Q),echo "  LLC     $$@")
	$$(Q)$$(LLC) -$(2) -relocation-model=$(3) $(PROGS_LLC_FLAGS) $(5) $$< -o $$@
$(call PROGS_LIST,OBJS) += $(PROGS_HERE)/obj/$(1)-$(2)-$(3)$(4).o
endef

PROGS_OBJS :=
$(foreach m,$(PROGS_MODULES),$(foreach o,$(PROGS_OPTS),$(foreach r,$(PROGS_RELOCS),\
	$(eval $(call PROGS_OBJ_RULE,$(m),$(o),$(r),,)))))
$(foreach m,$(PROGS_MODULES),$(foreach r,$(PROGS_RELOCS),\
	$(eval $(call PROGS_OBJ_RULE,$(m),O2,$(r),-fs,-function-sections))))

# $(1) architecture
define PROGS_MAIN_RULES
$(PROGS_OUT)$(PROGS_SUB_$(1))/obj/main-nopie.o: $(PROGS_DIR)/main.c $(PROGS_DIR)/stubs.c | deps
	@mkdir -p $$(@D)
	@$$(if $$(Q),echo "  CC      $$@")
	$$(Q)$$(PROGS_CC_$(1)) $$(PROGS_CFLAGS) -fno-pie -r -nostdlib $$^ -o $$@

$(PROGS_OUT)$(PROGS_SUB_$(1))/obj/main-pie.o: $(PROGS_DIR)/main.c $(PROGS_DIR)/stubs.c | deps
	@mkdir -p $$(@D)
	@$$(if $$(Q),echo "  CC      $$@")
	$$(Q)$$(PROGS_CC_$(1)) $$(PROGS_CFLAGS) -fPIE -r -nostdlib $$^ -o $$@
endef
$(foreach a,x86_64 aarch64,$(eval $(call PROGS_MAIN_RULES,$(a))))

# $(1) output name, $(2) inputs in link order, $(3) link command; for
# PROGS_ARCH as it is at the call.
define PROGS_LINK_RULE
$(PROGS_HERE)/link/$(1): $(2) $(PROGS_KEEP_LD)
	@mkdir -p $$(@D)
	@$$(if $$(Q),echo "  LINK    $$@")
	$$(Q)$(3) -o $$@ $(2)
	$$(Q)printf '%s\n' $(2) > $$@.parts
$(call PROGS_LIST,LINKED) += $(PROGS_HERE)/link/$(1)
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
PROGS_CMD_nopie-gnu = $(PROGS_GCC) -no-pie

PROGS_RELOC_pie-gnu := pic
PROGS_MAIN_pie-gnu := main-pie
PROGS_CMD_pie-gnu = $(PROGS_GCC) -pie $(PROGS_NOTEXT)

PROGS_RELOC_so-gnu := pic
PROGS_CMD_so-gnu = $(PROGS_GCC) -shared $(PROGS_NOTEXT)

PROGS_RELOC_nopie-lld := static
PROGS_MAIN_nopie-lld := main-nopie
PROGS_CMD_nopie-lld = $(PROGS_LLD) -no-pie

PROGS_RELOC_pie-lld := pic
PROGS_MAIN_pie-lld := main-pie
PROGS_CMD_pie-lld = $(PROGS_LLD) -pie

PROGS_RELOC_pie-lld-notext := pic
PROGS_MAIN_pie-lld-notext := main-pie
PROGS_CMD_pie-lld-notext = $(PROGS_LLD) -pie $(PROGS_NOTEXT)

PROGS_RELOC_so-lld-notext := pic
PROGS_CMD_so-lld-notext = $(PROGS_LLD) -shared $(PROGS_NOTEXT)

PROGS_RELOC_gc-gnu := static
PROGS_FS_gc-gnu := -fs
PROGS_MAIN_gc-gnu := main-nopie
PROGS_CMD_gc-gnu = $(PROGS_GCC) -no-pie $(PROGS_KEEP)

PROGS_RELOC_gc-lld := pic
PROGS_FS_gc-lld := -fs
PROGS_MAIN_gc-lld := main-pie
PROGS_CMD_gc-lld = $(PROGS_LLD) -pie $(PROGS_KEEP)

PROGS_RELOC_gc-nokeep-gnu := static
PROGS_FS_gc-nokeep-gnu := -fs
PROGS_MAIN_gc-nokeep-gnu := main-nopie
PROGS_CMD_gc-nokeep-gnu = $(PROGS_GCC) -no-pie $(PROGS_GC)

# The modules of each linked set, in link order (PROGS_SET_<set>_<mode>
# overrides PROGS_SET_<set> for one mode).
PROGS_SET_mixed := mixed
PROGS_SET_all := $(PROGS_MODULES)
PROGS_SET_all_pie-lld := $(filter-out nullchecks,$(PROGS_MODULES))
PROGS_SET_all_gc-lld := $(filter-out nullchecks,$(PROGS_MODULES))

# $(1) set, $(2) mode
progs_inputs = $(foreach m,$(or $(PROGS_SET_$(1)_$(2)),$(PROGS_SET_$(1))),\
	$(PROGS_HERE)/obj/$(m)-O2-$(PROGS_RELOC_$(2))$(PROGS_FS_$(2)).o) \
	$(if $(PROGS_MAIN_$(2)),$(PROGS_HERE)/obj/$(PROGS_MAIN_$(2)).o)

PROGS_LINKED :=
$(foreach s,mixed all,$(foreach mode,$(PROGS_MODES),$(eval $(call \
	PROGS_LINK_RULE,$(s).$(mode),$(strip $(call progs_inputs,$(s),$(mode))),$(PROGS_CMD_$(mode))))))

CORPUS_FILES := $(PROGS_OBJS) $(PROGS_LINKED)

# The same corpus for AArch64 (llc-14 -mtriple=aarch64-unknown-linux-gnu,
# linked by aarch64-linux-gnu-gcc's GNU ld and by lld, in every mode above:
# on AArch64 as on x86-64 they need the same models and options), read by
# the host's faultline as LLVM's tools read it.  Left out: mixed.ll at
# -O0, where llc-14's AArch64 assembly printer takes all the memory there is
# in @mixed_sum (24 GiB, then the OOM killer; "LLVM ERROR: out of memory").
PROGS_ARCH := aarch64
PROGS_OBJS_aarch64 :=
PROGS_LINKED_aarch64 :=
$(foreach m,$(PROGS_MODULES),$(foreach o,$(PROGS_OPTS),$(foreach r,$(PROGS_RELOCS),\
	$(if $(filter mixed-O0,$(m)-$(o)),,$(eval $(call PROGS_OBJ_RULE,$(m),$(o),$(r),,))))))
$(foreach m,$(PROGS_MODULES),$(foreach r,$(PROGS_RELOCS),\
	$(eval $(call PROGS_OBJ_RULE,$(m),O2,$(r),-fs,-function-sections))))
$(foreach s,mixed all,$(foreach mode,$(PROGS_MODES),$(eval $(call \
	PROGS_LINK_RULE,$(s).$(mode),$(strip $(call progs_inputs,$(s),$(mode))),$(PROGS_CMD_$(mode))))))
PROGS_ARCH := x86_64
CORPUS_FILES_AARCH64 := $(PROGS_OBJS_aarch64) $(PROGS_LINKED_aarch64)

.PHONY: corpus corpus-aarch64 check-conformance
corpus: $(CORPUS_FILES) $(CORPUS_FILES_AARCH64)
corpus-aarch64: $(CORPUS_FILES_AARCH64)

# This build's faultline (an AArch64 one under qemu-user: RUN_TARGET) on both.
check-conformance: $(CLI) $(CORPUS_FILES) $(CORPUS_FILES_AARCH64)
	$(Q)echo "x86-64 corpus, $(ARCH) faultline ($(RUN_WHERE)):"
	$(Q)$(RUN_TARGET) env LLVM_OBJDUMP=$(LLVM_OBJDUMP) LLVM_READELF=$(LLVM_READELF) \
		selftests/conformance/run.sh --cli $(CLI) $(CORPUS_FILES)
	$(Q)echo "AArch64 corpus, $(ARCH) faultline ($(RUN_WHERE)):"
	$(Q)$(RUN_TARGET) env LLVM_OBJDUMP=$(LLVM_OBJDUMP) LLVM_READELF=$(LLVM_READELF) \
		OBJCOPY_DUMP=aarch64-linux-gnu-objcopy \
		selftests/conformance/run.sh --cli $(CLI) $(CORPUS_FILES_AARCH64)
