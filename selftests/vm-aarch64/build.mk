# selftests/vm-aarch64: the arm64 QEMU guest's smoke tests, one small
# program per thing the kernel must offer faultline on arm64 (common.h),
# cross-built with aarch64-linux-gnu-gcc against Debian's arm64 multiarch
# packages and run by make vmtest-aarch64 (scripts/vmtest/aarch64.mk, which
# includes this file) on Debian's arm64 6.1 kernel:
#   guest_kernel_is_aarch64          uname: aarch64, 6.1, the CPUs online
#   userfaultfd_exists               a descriptor or EPERM, not ENOSYS; the
#                                    features (SIGBUS, MINOR_SHMEM; WP shown)
#   membarrier_offers_sync_core      QUERY lists PRIVATE_EXPEDITED_SYNC_CORE,
#                                    which then registers and runs
#   bpf_exists                       a map or EPERM, not ENOSYS; BTF; libbpf's
#                                    probe loads a perf_event program
#   null_access_signal_has_esr_record  SIGSEGV from a NULL load and store:
#                                    fault_address, pc, the FPSIMD and ESR
#                                    records (EC, WnR)
#   guest_runs_bash_scripts.sh       /bin/bash is arm64's and works (the
#                                    suites' run.sh are bash scripts)
#   fails_when_asked                 fails iff VMTEST_AARCH64_FAIL is set
#                                    (not 0): the failure path's check
# Outside the guest they fail as they should: qemu-aarch64-static has no
# userfaultfd or bpf and gives no ESR record.

VMA64_DIR := selftests/vm-aarch64
VMA64_OUT := build/vm-aarch64/tests
VMA64_CC := aarch64-linux-gnu-gcc
VMA64_CFLAGS := -std=gnu11 -D_GNU_SOURCE -O2 -g $(WARN)
VMA64_SRCS := $(wildcard $(VMA64_DIR)/*.c)
VMA64_BINS := $(patsubst $(VMA64_DIR)/%.c,$(VMA64_OUT)/%,$(VMA64_SRCS))
VMA64_SCRIPTS := $(VMA64_DIR)/guest_runs_bash_scripts.sh
# Debian's arm64 libbpf (libbpf-dev:arm64), and with it libelf and libz in
# the guest.
VMA64_LIBS_bpf_exists := -lbpf

$(VMA64_OUT)/%: $(VMA64_DIR)/%.c $(VMA64_DIR)/common.h | vmtest-aarch64-deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@ (aarch64)")
	$(Q)$(VMA64_CC) $(VMA64_CFLAGS) -o $@ $< $(VMA64_LIBS_$*)
