# Healing end to end (selftests/daemon/heal/run.sh): faultlined on a private
# socket, heal-prog (heal.ll's implicit checks, llc-14
# -enable-implicit-null-checks, linked with libfaultline) and faultline heal
# / unheal / request heal-threshold / unheal-after against it, with every
# refusal and bad command line; faultlined --heal-after / --unheal-after;
# and an unmodified program (heal-prog-shim: no faultline code) under
# libfaultline-preload.so with FAULTLINE_HEAL_AFTER=3, whose fault signals
# are counted by the library and by the kernel (the eBPF program), and whose
# output must equal the explicit-check build's; and the healing kept for an
# exited process, in the state directory and across a kill -9 of the
# daemon.  Runs as root (some clients drop to nobody).
#
#   make check-daemon-heal

HEAL_E2E_DIR := selftests/daemon/heal
HEAL_E2E_OUT := $(B)/tests/daemon/heal
HEAL_E2E_LLC := $(LLC) -O2 -mtriple=x86_64-unknown-linux-gnu -filetype=obj -relocation-model=pic

$(HEAL_E2E_OUT)/heal-imp.o: $(HEAL_E2E_DIR)/heal.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(HEAL_E2E_LLC) -enable-implicit-null-checks $< -o $@

$(HEAL_E2E_OUT)/heal-exp.o: $(HEAL_E2E_DIR)/heal.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(HEAL_E2E_LLC) $< -o $@

# PIE, the sites' addresses are the ones faultline sites lists.  -z notext:
# GNU ld makes .llvm_faultmaps TEXTREL in a PIE (selftests/progs/build.mk).
$(HEAL_E2E_OUT)/heal-prog: $(B)/obj/$(HEAL_E2E_DIR)/prog.o $(HEAL_E2E_OUT)/heal-imp.o $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -pie -Wl,-z,notext -pthread -o $@ $(filter %.o,$^) $(LIB_A) \
		$(LIB_LIBS)

# The same without faultline: the preload shim registers it.
$(HEAL_E2E_OUT)/prog-shim.o: $(HEAL_E2E_DIR)/prog.c | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -DNO_FAULTLINE -c $< -o $@

$(HEAL_E2E_OUT)/heal-prog-shim-%: $(HEAL_E2E_OUT)/prog-shim.o $(HEAL_E2E_OUT)/heal-%.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -pie -Wl,-z,notext -o $@ $^

HEAL_E2E_BINS := $(addprefix $(HEAL_E2E_OUT)/,heal-prog heal-prog-shim-imp heal-prog-shim-exp)

.PHONY: check-daemon-heal
check-daemon-heal: $(HEAL_E2E_BINS) $(CLI) $(FLD) $(PRELOAD_SO) | deps
	$(Q)$(FRESH_NS) $(HEAL_E2E_DIR)/run.sh $(CLI) $(FLD) $(PRELOAD_SO) $(HEAL_E2E_OUT)
