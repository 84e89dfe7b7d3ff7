# The daemon's commands end to end (selftests/daemon/cli/run.sh): faultlined
# on a temporary socket, a program under faultline run failing known checks,
# then faultline stats (exact per-site counts in --json; --openmetrics and
# --prometheus read by prometheus_client's parsers), ps, sites, stackmaps,
# request, and top in a real terminal (tmux); a JIT program's sites named
# by the functions it registered.
#
#   make check-daemon-cli

# JIT code named at registration (fl_jit_reg.functions): selftests/jit's test JIT.
CLI_JIT_NAMES := $(B)/tests/daemon/cli-jit-names
$(CLI_JIT_NAMES): $(B)/obj/selftests/daemon/cli/jit_names.o $(B)/obj/selftests/jit/mcjit.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(LIB_A) $(LIB_LIBS) $(JIT_LLVM_LIBS)

.PHONY: check-daemon-cli
check-daemon-cli: $(CLI) $(FLD) $(PRELOAD_SO) $(CLI_JIT_NAMES) $(B)/tests/daemon/cli-progs/jitperf | deps
	$(Q)$(FRESH_NS) selftests/daemon/cli/run.sh $(CLI) $(FLD) $(B)/tests/daemon/cli \
		$(CLI_JIT_NAMES) $(B)/tests/daemon/cli-progs/jitperf

# Not in the test's work directory, which run.sh empties.
DCLI_OUT := $(B)/tests/daemon/cli-progs

# JIT code that only a perf map names (stats reads it).
$(DCLI_OUT)/jitperf: $(B)/obj/selftests/daemon/cli/jitperf.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -pthread -o $@ $< $(LIB_A) $(LIB_LIBS)
