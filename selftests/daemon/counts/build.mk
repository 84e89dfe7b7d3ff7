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
