# selftests/daemon/e2e: faultlined, libfaultline-preload.so and programs with
# implicit null checks (sites.ll, llc-14 -O2 -enable-implicit-null-checks),
# end to end: exact per-site counts (short-lived, long-lived, 4 threads,
# fork), forks while a library is loaded and unloaded, kill -9 and restart,
# a live process's counts file (persist),
# requests, security (a client as nobody, forged and malformed messages,
# bad memfds, fd floods, slow readers), 1,000 registered processes, and the
# completion bell (DONE) from both sides.  Runs as root (not in CHECKS).
#
#   make check-daemon-e2e [E2E_GROUPS="counts churn restart persist request security load kernel bell"]
#   make check-daemon-e2e-GROUP   (one group alone, with its own daemon)

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

# The driver: the harness (harness.c, harness.h) and one file per group
# (group-NAME.c), chosen by the first argument; run.sh runs each group in
# a driver of its own.
E2E_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(E2E_DIR)/harness.c $(wildcard $(E2E_DIR)/group-*.c))

$(E2E_OUT)/e2e: $(E2E_OBJS) $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(E2E_OBJS) $(LIB_A) $(LIB_LIBS) $(PKG_LIBS)

.PHONY: check-daemon-e2e
check-daemon-e2e: $(E2E_OUT)/e2e $(E2E_OUT)/e2e-prog $(E2E_OUT)/e2e-load $(FLD) $(PRELOAD_SO)
	$(Q)$(FRESH_NS) $(E2E_DIR)/run.sh $(E2E_OUT)/e2e $(FLD) $(PRELOAD_SO) $(E2E_OUT)/e2e-prog \
		$(E2E_OUT)/e2e-load $(E2E_OUT) $(E2E_GROUPS)

# One group alone: make check-daemon-e2e-GROUP (make check-daemon-e2e-kernel).
E2E_GROUP_CHECKS := $(patsubst $(E2E_DIR)/group-%.c,check-daemon-e2e-%,$(wildcard $(E2E_DIR)/group-*.c))
.PHONY: $(E2E_GROUP_CHECKS)
$(E2E_GROUP_CHECKS): check-daemon-e2e-%: $(E2E_OUT)/e2e $(E2E_OUT)/e2e-prog $(E2E_OUT)/e2e-load \
		$(FLD) $(PRELOAD_SO)
	$(Q)$(FRESH_NS) $(E2E_DIR)/run.sh $(E2E_OUT)/e2e $(FLD) $(PRELOAD_SO) $(E2E_OUT)/e2e-prog \
		$(E2E_OUT)/e2e-load $(E2E_OUT) $*
