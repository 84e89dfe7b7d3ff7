# Patch requests end to end (selftests/daemon/patch/run.sh): faultlined on a
# private socket, a program with a patch point and a stack map record
# (points.ll, llc-14) that opted in or not, and faultline patch / faultline
# invalidate against it: success, every refusal (not opted in, not root,
# stale --expect, unknown record), bad command lines, the preload shim's
# FAULTLINE_ALLOW_PATCH, and a patch made with faultlined, the program and
# faultline in a sandbox that forbids ptrace, process_vm_writev and writing
# /proc/PID/mem (sandbox.c).  Runs as root (some clients drop to nobody).
#
#   make check-daemon-patch

PATCH_E2E_DIR := selftests/daemon/patch
PATCH_E2E_OUT := $(B)/tests/daemon/patch

$(PATCH_E2E_OUT)/points.o: $(PATCH_E2E_DIR)/points.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(LLC) -O2 -mtriple=x86_64-unknown-linux-gnu -filetype=obj -relocation-model=static \
		$< -o $@

# No PIE: the records' addresses are the stack map's (faultline stackmap).
$(PATCH_E2E_OUT)/patch-prog: $(B)/obj/$(PATCH_E2E_DIR)/prog.o $(PATCH_E2E_OUT)/points.o $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -pthread -o $@ $(filter %.o,$^) $(LIB_A) $(LIB_LIBS)

# The same without faultline: the preload shim registers it.
$(PATCH_E2E_OUT)/prog-shim.o: $(PATCH_E2E_DIR)/prog.c | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -DNO_FAULTLINE -c $< -o $@

$(PATCH_E2E_OUT)/patch-prog-shim: $(PATCH_E2E_OUT)/prog-shim.o $(PATCH_E2E_OUT)/points.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -pthread -o $@ $^

$(PATCH_E2E_OUT)/patch-sandbox: $(B)/obj/$(PATCH_E2E_DIR)/sandbox.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^

PATCH_E2E_BINS := $(addprefix $(PATCH_E2E_OUT)/,patch-prog patch-prog-shim patch-sandbox)

.PHONY: check-daemon-patch
check-daemon-patch: $(PATCH_E2E_BINS) $(CLI) $(FLD) $(PRELOAD_SO) | deps
	$(Q)$(FRESH_NS) $(PATCH_E2E_DIR)/run.sh $(CLI) $(FLD) $(PRELOAD_SO) $(PATCH_E2E_OUT)
