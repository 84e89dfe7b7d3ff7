# Benchmarks (selftests/bench/): figures measured side by side, never timed
# assertions.
#
#   make bench    BENCH_REPEAT=15 (format layer runs, dispatch and region
#                 batches), BENCH_RUNS=7 (runs of each command in the
#                 whole-process comparison), BENCH_STARTUP_RUNS=21 (runs of
#                 the startup comparison)
#
# bench_parse: format layer throughput (cursor walk, table build, lookups)
# on synthetic fault maps and stack maps of 1,000 to 1,000,000 entries (the
# scaling table); bench_exec: faultline vs llvm-readelf-14 / llvm-objdump-14
# on objects holding those sections, interleaved, at each size.
# bench_dispatch: ns per claimed fault, faultline vs a minimal handler that
# redirects one known PC (the floor), with 1, 1,000 and 1,000,000 JIT sites
# registered; two threads faulting at once; an unclaimed fault delivered to
# an application handler through fl_sigaction vs installed with sigaction.
# bench_region: userfaultfd guard faults past the committed limit (SIGBUS
# mode, helper thread) vs an mprotect guard page, and first touches vs
# fresh anonymous memory.
# bench_patch: code patching's latency (int3 protocol, one site and 100,
# the thread handshake) with 1, 2 and 8 threads running the code, a
# patch storm's cost for a running thread, a boundary-moving change with
# 10 threads and with 1,000 (990 blocked), and the EINTR race's count.
# bench_heal: healing: a storm of failing checks unhealed, healed and
# explicit, the non-failing path, fl_site_heal's latency (below).
# bench_daemon: faultlined's registration latency, stats query p50/p99 with
# 1,000 registered processes, its memory per process and idle CPU; faultline
# stats, stats --prometheus and GET /metrics at 100 x 100,000 sites.
# healable.sh (part 10): faultline healable on about 10^4, 10^5 and 10^6
# sites (shared libraries built once into $(B)/bench/healable, about a
# minute, 180 MB).
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
	$(BENCH_OUT)/bench_dispatch $(BENCH_OUT)/bench_region $(BENCH_OUT)/bench_daemon \
	$(BENCH_OUT)/bench_patch $(BENCH_OUT)/bench_heal $(BENCH_OUT)/bench_deopt
# llc-14 leaves a few checks explicit: this many functions of gen-many.sh
# give 100,008 fault map entries.
BENCH_STARTUP_FUNCTIONS := 59410
BENCH_STARTUP := $(BENCH_OUT)/startup/many
# One check a function, and ten (every tenth function has none, and llc-14
# leaves more of them explicit than of the mix): about 100,000 entries too.
BENCH_STARTUP_ONE_FUNCTIONS := 130440
BENCH_STARTUP_TEN_FUNCTIONS := 20690
BENCH_STARTUPS := $(BENCH_STARTUP) $(BENCH_OUT)/startup/one $(BENCH_OUT)/startup/ten

$(BENCH_OUT)/bench_parse: $(B)/obj/selftests/bench/bench_parse.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIB_A) $(LIB_LIBS)

$(BENCH_OUT)/bench_exec: $(B)/obj/selftests/bench/bench_exec.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $<

$(BENCH_OUT)/bench_dispatch $(BENCH_OUT)/bench_region $(BENCH_OUT)/bench_daemon \
		$(BENCH_OUT)/bench_patch: $(BENCH_OUT)/%: \
		$(B)/obj/selftests/bench/%.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIB_A) $(LIB_LIBS)

$(BENCH_STARTUP): selftests/bench/startup-prog.sh selftests/bench/startup_main.c \
		selftests/progs/gen-many.sh | deps
	@$(if $(Q),echo "  GEN     $@ (llc-14: about a minute)")
	$(Q)LLC=$(LLC) CC=$(CC) selftests/bench/startup-prog.sh $@ $(BENCH_STARTUP_FUNCTIONS)

$(BENCH_OUT)/startup/one: selftests/bench/startup-prog.sh selftests/bench/startup_main.c \
		selftests/progs/gen-many.sh | deps
	@$(if $(Q),echo "  GEN     $@ (llc-14: about a minute)")
	$(Q)LLC=$(LLC) CC=$(CC) selftests/bench/startup-prog.sh $@ $(BENCH_STARTUP_ONE_FUNCTIONS) 1

$(BENCH_OUT)/startup/ten: selftests/bench/startup-prog.sh selftests/bench/startup_main.c \
		selftests/progs/gen-many.sh | deps
	@$(if $(Q),echo "  GEN     $@ (llc-14: about a minute)")
	$(Q)LLC=$(LLC) CC=$(CC) selftests/bench/startup-prog.sh $@ $(BENCH_STARTUP_TEN_FUNCTIONS) 10

.PHONY: bench
bench: $(BENCH_BINS) $(CLI) $(PRELOAD_SO) $(BENCH_STARTUPS) $(FLD) bench-bpf bench-remote-patch
	$(Q)BENCH_REPEAT=$(BENCH_REPEAT) BENCH_RUNS=$(BENCH_RUNS) \
		BENCH_STARTUP_RUNS=$(BENCH_STARTUP_RUNS) PRELOAD=$(PRELOAD_SO) \
		LLVM_READELF=$(LLVM_READELF) LLVM_OBJDUMP=$(LLVM_OBJDUMP) \
		selftests/bench/run.sh $(BENCH_OUT) $(CLI)

# selftests/bench/bench_bpf.c: the eBPF program's cost per page fault (not
# attached, attached for an unregistered process, for a registered one) and
# ring buffer loss at the highest fault rate the machine gives; part 7 of
# selftests/bench/run.sh.  Part 8 times a minimal vmtest (check-bpf's
# bpf_count in QEMU: boot to result).  Both need root; make bench builds
# them through bench-bpf.

BENCH_BPF := $(BENCH_OUT)/bench_bpf
# The floor: an empty program at the same attach point (bench_floor.bpf.c).
BENCH_FLOOR_OBJ := $(BENCH_OUT)/bpf/bench_floor.bpf.o
BENCH_FLOOR_SKEL := $(BENCH_OUT)/bpf/bench_floor.skel.h

$(BENCH_FLOOR_OBJ): selftests/bench/bench_floor.bpf.c $(BPF_VMLINUX)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  BPF     $@")
	$(Q)$(CLANG) $(BPF_CLANG_FLAGS) -c $< -o $@

$(BENCH_FLOOR_SKEL): $(BENCH_FLOOR_OBJ)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)bpftool gen skeleton $< > $@

$(B)/obj/selftests/bench/bench_bpf.o: $(BPF_SKEL) $(BENCH_FLOOR_SKEL)
$(B)/obj/selftests/bench/bench_bpf.o: ALL_CFLAGS += -I$(BPF_OUT) -I$(BENCH_OUT)/bpf -Ibpf \
	$(BPF_TEST_CFLAGS)

$(BENCH_BPF): $(B)/obj/selftests/bench/bench_bpf.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(BPF_TEST_LIBS) -lpthread

.PHONY: bench-bpf
bench-bpf: $(BENCH_BPF) $(BPF_TEST)

# selftests/bench/bench_heal.c: healing's cost (part 10 of run.sh): a storm
# of failing checks unhealed, healed and explicit; the non-failing path;
# fl_site_heal's latency.  bench_heal.ll compiled twice: with
# -enable-implicit-null-checks (bh_load) and, renamed bx_, without.
BENCH_HEAL := $(BENCH_OUT)/bench_heal

$(BENCH_OUT)/heal/bench_heal-implicit.o: selftests/bench/bench_heal.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(LLC) -O2 -relocation-model=static -enable-implicit-null-checks -filetype=obj $< -o $@

$(BENCH_OUT)/heal/bench_heal-explicit.o: selftests/bench/bench_heal.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)sed 's/@bh_/@bx_/g' $< | $(LLC) -O2 -relocation-model=static -filetype=obj -o $@

$(BENCH_HEAL): $(B)/obj/selftests/bench/bench_heal.o $(BENCH_OUT)/heal/bench_heal-implicit.o \
		$(BENCH_OUT)/heal/bench_heal-explicit.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -pthread -o $@ $(filter %.o,$^) $(LIB_A) $(LIB_LIBS)

.PHONY: bench-heal
bench-heal: $(BENCH_HEAL)
	$(Q)$(BENCH_HEAL) -n $(or $(BENCH_HEAL_ROUNDS),10)

# selftests/bench/bench_deopt.c: deoptimization's cost (part 12 of run.sh):
# fl_stackmap_record_at at 10^3..10^6 records, a deoptimization's round
# trip against a plain call and a fault dispatch, a stack walk of 100
# frames beside libunwind's unw_step.  The functions are selftests/deopt's
# returns.ll, bench_heal.ll's bh_load and walk.ll (statepoints, through
# rewrite-statepoints-for-gc).
BENCH_DEOPT := $(BENCH_OUT)/bench_deopt

$(BENCH_OUT)/deopt/walk.o: selftests/bench/walk.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)opt-14 -passes=rewrite-statepoints-for-gc $< | \
		$(LLC) -O2 -relocation-model=static -filetype=obj -o $@

$(BENCH_DEOPT): $(B)/obj/selftests/bench/bench_deopt.o $(DEOPT_OUT)/ll/returns.o \
		$(BENCH_OUT)/heal/bench_heal-implicit.o $(BENCH_OUT)/deopt/walk.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -o $@ $(filter %.o,$^) $(LIB_A) $(LIB_LIBS) -lunwind

.PHONY: bench-deopt
bench-deopt: $(BENCH_DEOPT)
	$(Q)$(BENCH_DEOPT) -n $(or $(BENCH_DEOPT_ROUNDS),15)

# Latency of a remote patch request (selftests/bench/remote_patch.sh): the
# same change made in the process (the floor), POINT to REPLY and a whole
# faultline patch run, 0 and 3 busy threads.
.PHONY: bench-remote-patch
bench-remote-patch: $(CLI) $(FLD) $(B)/tests/daemon/patch/patch-prog
	$(Q)selftests/bench/remote_patch.sh $(CLI) $(FLD) $(B)/tests/daemon/patch/patch-prog
