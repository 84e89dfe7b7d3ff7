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
# DT_NEEDED library whose constructor runs before the shim's.  mask-imp and
# mask-exp (mask.c): the signal mask under the shim, each build; alone-imp
# and alone-exp (alone.c): faultline's threads and descriptors out of the
# program's way.
#
#   make check-shim [SHIM_FILTER=substring-of-test-names]
#
# The programs' architecture part is SHIM_DIR/ARCH/shim_arch.h (probes, a
# trap, the context's registers, the kernel's frame).  make ARCH=aarch64
# check-shim builds the suite for AArch64 and runs it under qemu-user; it
# is not in make check yet: 155 of 185 pass there, the rest are qemu-user's
# own (it cannot block signals 9 and 19 as the kernel does, nor 63 and 64,
# has no SS_AUTODISARM, and is a threaded process: unshare(CLONE_NEWUSER)
# refuses) or AArch64's still to do (no FaultingLoadStore on AArch64; how
# the shim reads back SA_RESTORER, which AArch64's glibc never asks for).

SHIM_DIR := selftests/shim
SHIM_OUT := $(B)/tests/shim
SHIM_LLC_FLAGS := -O2 -mtriple=$(ARCH)-unknown-linux-gnu -filetype=obj
# SHIM_DIR/ARCH/shim_arch.h: the test programs' architecture part.
SHIM_CFLAGS := -std=gnu11 -D_GNU_SOURCE -O2 -g $(WARN) -I$(SHIM_DIR) -I$(SHIM_DIR)/$(ARCH)
SHIM_GNU := $(CC) -fuse-ld=bfd
# lld through clang for another architecture (a cross gcc finds no ld.lld).
SHIM_LLD_x86_64 := $(CC) -fuse-ld=lld
SHIM_LLD_aarch64 := $(if $(CROSS),$(CLANG) --target=aarch64-linux-gnu,$(CC)) -fuse-ld=lld
SHIM_LLD := $(SHIM_LLD_$(ARCH))
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
$(eval $(call SHIM_CC_RULE,mask,mask.c,-fPIE))
$(eval $(call SHIM_CC_RULE,alone,alone.c,-fPIE))
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
	$(SHIM_OUT)/mask-imp $(SHIM_OUT)/mask-exp $(SHIM_OUT)/alone-imp $(SHIM_OUT)/alone-exp \
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

$(SHIM_OUT)/mask-%: $(SHIM_OUT)/obj/mask.o $(SHIM_OUT)/obj/record-pic.o \
		$(SHIM_OUT)/sites-%-pic.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(SHIM_GNU) -pie $(SHIM_NOTEXT) -pthread -o $@ $^

$(SHIM_OUT)/alone-%: $(SHIM_OUT)/obj/alone.o $(SHIM_OUT)/obj/record-pic.o \
		$(SHIM_OUT)/sites-%-pic.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(SHIM_GNU) -pie $(SHIM_NOTEXT) -pthread -o $@ $^

$(SHIM_OUT)/shim_test: $(SHIM_OUT)/obj/shim_test.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^

.PHONY: check-shim
check-shim: $(PRELOAD_SO) $(SHIM_BINS)
	$(Q)$(RUN_TARGET) $(SHIM_OUT)/shim_test $(PRELOAD_SO) $(SHIM_OUT) $(LLVM_OBJDUMP) $(SHIM_FILTER)
