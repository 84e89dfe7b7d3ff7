# The kernel-facing selftests again in QEMU (TCG, no KVM) on Debian 12's 6.1
# kernel (scripts/vmtest.sh: apt-get download of the package
# linux-image-amd64 depends on, vmlinuz only, a busybox initramfs with the
# test binaries and their libraries, results through the serial console and
# isa-debug-exit).  Every guest test prints the kernel it runs on (the guest
# sets VMTEST_WHERE="QEMU guest"); the run ends with "N passed, N failed".
# Console log: build/vm/console.log.  In CHECKS as check-vm: about 3
# minutes under TCG on the 2-core build machine (2m47s: the daemon's tests
# 90 s, the shim tests 40 s, the unit tests 10 s, boot and initramfs 25 s).
# The arm64 guest, make vmtest-aarch64 (Debian's arm64 6.1 kernel under
# qemu-system-aarch64 -M virt), is in scripts/vmtest/aarch64.mk, included
# at the end.
#
#   make vmtest [VMTEST_TIMEOUT=900]      (check-vm: the same)
#
# Guest tests: the userfaultfd region tests (both modes), the patcher's
# (VMTEST_PATCH_REWRITES rewrites under load, and membarrier on 6.1), the
# patch points' (VMTEST_POINTS_REWRITES rewrites under load), healing's
# (VMTEST_HEAL_CYCLES heal/unheal cycles under load), deoptimization's
# (VMTEST_DEOPT_ROUNDS deoptimizations per thread), the statepoint example's
# (check-gc: moving collections from C, IR and signal handlers), the seen
# tests' (check-seen: unwinding out of faultline's own code, the perf map;
# perf report itself is host only, the guest has no perf), the unit tests
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
# machine, and over 450 s beside two other test runs; the points suite
# alone took 589 s with 5000 rewrites on a machine busy with three builds.
VMTEST_TIMEOUT ?= 1500
# The patcher's rewrites under load, fewer under TCG than natively.
VMTEST_PATCH_REWRITES ?= 5000
# The patch points' rewrites under load (check-points), likewise: 2000
# (80 of them moving boundaries, each a handshake of 5 threads under TCG).
VMTEST_POINTS_REWRITES ?= 2000
# Healing's heal/unheal cycles under load (check-heal), likewise: 2,000 took 295 s under TCG.
VMTEST_HEAL_CYCLES ?= 500
# Each of threads_deopt_at_once's 8 threads' deoptimizations (check-deopt), likewise.
VMTEST_DEOPT_ROUNDS ?= 2000
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
VMTEST_DEPS = $(VMTEST_GDB) $(RG_BINS) $(PT_BINS) $(PT_PROG) $(PTS_BINS) $(HEAL_BINS) $(HEAL_PIE) $(HEAL_SO) $(HEAL_MODULE) $(DEOPT_BINS) \
	$(DEOPT_CXX_BINS) $(GC_BINS) $(SEEN_BINS) \
	$(DEOPT_OUT)/ll/widen.opt.ll $(DEOPT_OUT)/ll/range.opt.ll $(UNIT) $(PRELOAD_SO) $(SHIM_BINS) $(VMTEST_BPF_FILES) $(FLD) $(CLI) \
	$(FLD_ECHO) $(FLD_TEST_BINS) $(E2E_OUT)/e2e $(E2E_OUT)/e2e-prog $(E2E_OUT)/e2e-load \
	$(filter $(B)/%,$(VMTEST_DAEMON_PROGS))
VMTEST_FILES = $(RG_OUT) $(RG_DIR)/run.sh $(PT_OUT) $(PT_DIR)/run.sh $(PTS_OUT) $(PTS_DIR)/run.sh $(HEAL_OUT) $(HEAL_DIR)/run.sh selftests/common/run.sh $(UNIT) $(PRELOAD_SO) $(SHIM_OUT) \
	$(DEOPT_OUT) $(DEOPT_DIR)/run.sh $(DEOPT_DIR)/widened_once.sh \
	$(DEOPT_DIR)/returns.ll $(DEOPT_DIR)/values.ll $(GC_OUT) $(GC_DIR)/run.sh \
	$(SEEN_OUT) $(SEEN_DIR)/run.sh $(SEEN_DIR)/perf_report_names_hot_new_code.sh \
	/usr/bin/$(LLVM_OBJDUMP) /usr/bin/$(LLVM_READELF) $(VMTEST_BPF_FILES) $(VMTEST_DAEMON_FILES) $(VMTEST_DAEMON_PROGS) \
	$(VMTEST_GDB_FILES)
# a_patched_program_under_gdb: Debian's gdb-minimal (gdb without Python,
# whose standard library the guest does not have), downloaded and
# unpacked once, not installed (it conflicts with gdb); and the
# libthread_db gdb loads itself.
VMTEST_GDB := $(abspath $(VMTEST_OUT))/gdb-minimal/usr/bin/gdb
VMTEST_GDB_FILES := $(VMTEST_GDB) /lib/$(shell gcc -print-multiarch)/libthread_db.so.1

$(VMTEST_GDB): | deps
	@mkdir -p $(VMTEST_OUT)/gdb-minimal/dl
	@$(if $(Q),echo "  GET     gdb-minimal (for the guest)")
	$(Q)cd $(VMTEST_OUT)/gdb-minimal/dl && rm -f *.deb && \
		{ apt-get download gdb-minimal >/dev/null 2>&1 || apt-get download gdb-minimal; }
	$(Q)dpkg -x $(VMTEST_OUT)/gdb-minimal/dl/gdb-minimal_*.deb $(VMTEST_OUT)/gdb-minimal
	$(Q)test -x $@ && touch $@
VMTEST_TESTS = 'region::$(RG_DIR)/run.sh $(RG_OUT)' \
	'patch::FL_TEST_GDB=$(VMTEST_GDB) $(PT_DIR)/run.sh $(PT_OUT) $(PRELOAD_SO) $(VMTEST_PATCH_REWRITES)' \
	'points::$(PTS_DIR)/run.sh $(PTS_OUT) $(VMTEST_POINTS_REWRITES)' \
	'heal::$(HEAL_DIR)/run.sh $(HEAL_OUT) $(VMTEST_HEAL_CYCLES)' \
	'deopt::DEOPT_PRELOAD=$(PRELOAD_SO) $(DEOPT_DIR)/run.sh $(DEOPT_OUT) $(VMTEST_DEOPT_ROUNDS)' \
	'gc::$(GC_DIR)/run.sh $(GC_OUT)' \
	'seen::$(SEEN_DIR)/run.sh $(SEEN_OUT)' \
	'unit::CK_FORK=yes CK_TIMEOUT_MULTIPLIER=20 $(UNIT)' \
	'shim::$(SHIM_OUT)/shim_test $(PRELOAD_SO) $(SHIM_OUT) $(LLVM_OBJDUMP)' \
	$(VMTEST_BPF_TESTS) $(VMTEST_DAEMON_TESTS)

.PHONY: vmtest check-vm
vmtest: $(VMTEST_DEPS) | deps
	$(Q)scripts/vmtest.sh -o $(VMTEST_OUT) -t $(VMTEST_TIMEOUT) \
		$(addprefix -f ,$(sort $(VMTEST_FILES))) -- $(VMTEST_TESTS)

check-vm: vmtest

include scripts/vmtest/aarch64.mk
