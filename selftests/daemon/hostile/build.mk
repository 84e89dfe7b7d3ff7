# A local user (nobody) against root's daemon and programs
# (selftests/daemon/hostile/run.sh): a squatted socket path, a listener
# that never accepts, state and socket directories another user could
# change, a planted state.json.tmp, corrupt and huge state files; and a
# program that closes every descriptor at start, then lives on its own
# files through faults, dlopen, fork and a daemon restart.  Then set-id
# programs (setid.sh, in a mount namespace of its own with a tmpfs on /run:
# the system daemon's real path): what nobody may read and change through
# faultlined of a setgid and a setuid-root program, and of one that turns
# itself undumpable; which daemon they register with.
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

# N processes that register at once and never answer a request.
$(HOSTILE_OUT)/manyprocs: $(B)/obj/selftests/daemon/hostile/manyprocs.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS)

# Runs a program with memfd_create denied by a seccomp filter.
$(HOSTILE_OUT)/nomemfd: $(B)/obj/selftests/daemon/hostile/nomemfd.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^

$(HOSTILE_OUT)/setid.o: selftests/daemon/hostile/setid.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(LLC) -O2 -mtriple=x86_64-unknown-linux-gnu -filetype=obj \
		-enable-implicit-null-checks -relocation-model=static $< -o $@

# Made set-id at test time (setid.sh).  No PIE: win()'s address is fixed.
$(HOSTILE_OUT)/setid-prog: $(B)/obj/selftests/daemon/hostile/setid.o $(HOSTILE_OUT)/setid.o \
		$(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -rdynamic -pthread -o $@ $(filter %.o,$^) $(LIB_A) \
		$(LIB_LIBS)

# Needs the preload shim, found at /run/fl-setid-lib (setid.sh puts it there,
# in a mount namespace of its own): how the shim loads into a set-id program.
$(HOSTILE_OUT)/setid-shim: $(B)/obj/selftests/daemon/hostile/setid_shim.o $(PRELOAD_SO)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< -L$(B)/lib -Wl,--no-as-needed -l:libfaultline-preload.so \
		-Wl,-rpath,/run/fl-setid-lib

.PHONY: check-daemon-hostile
check-daemon-hostile: $(CLI) $(FLD) $(PRELOAD_SO) $(HOSTILE_OUT)/fdclose $(HOSTILE_OUT)/nomemfd \
		$(E2E_OUT)/libe2e-sites.so $(E2E_OUT)/e2e-prog $(E2E_OUT)/e2e-region \
		$(HOSTILE_OUT)/setid-prog $(HOSTILE_OUT)/setid-shim | deps
	$(Q)selftests/daemon/hostile/run.sh $(CLI) $(FLD) $(PRELOAD_SO) $(HOSTILE_OUT)/fdclose \
		$(E2E_OUT)/libe2e-sites.so $(HOSTILE_OUT)/nomemfd $(E2E_OUT)/e2e-prog \
		$(E2E_OUT)/e2e-region
	$(Q)$(FRESH_NS) selftests/daemon/hostile/setid.sh $(CLI) $(FLD) $(HOSTILE_OUT)/setid-prog \
		$(PRELOAD_SO) $(HOSTILE_OUT)/setid-shim

# The set-id part alone.
.PHONY: check-daemon-setid
check-daemon-setid: $(CLI) $(FLD) $(PRELOAD_SO) $(HOSTILE_OUT)/setid-prog \
		$(HOSTILE_OUT)/setid-shim | deps
	$(Q)$(FRESH_NS) selftests/daemon/hostile/setid.sh $(CLI) $(FLD) $(HOSTILE_OUT)/setid-prog \
		$(PRELOAD_SO) $(HOSTILE_OUT)/setid-shim

# One user's load against the others (selftests/daemon/hostile/fair.sh):
# nobody registers 2,000,000 sites in each of two processes, which exit;
# root's stats and programs are served (and counted exactly) while the
# daemon still writes nobody's records; nobody's budgets of sites and
# section bytes; the records read back after a restart; sites left in a
# region's site table (no MODULE_ADD) and records restored at start
# charged to the budget of sites, records to the budget of state bytes;
# 700 processes of nobody's that never answer the daemon's heal policy
# requests while root's requests are answered, and the log says so once.
#
#   make check-daemon-fair

.PHONY: check-daemon-fair
check-daemon-fair: $(CLI) $(FLD) $(PRELOAD_SO) $(HOSTILE_OUT)/manysites $(E2E_OUT)/e2e-prog \
		$(HOSTILE_OUT)/manyprocs | deps
	$(Q)selftests/daemon/hostile/fair.sh $(CLI) $(FLD) $(PRELOAD_SO) $(HOSTILE_OUT)/manysites \
		$(E2E_OUT)/e2e-prog $(HOSTILE_OUT)/manyprocs
