# The arm64 QEMU guest (scripts/vmtest.sh -a aarch64): Debian 12's arm64 6.1
# kernel (the package linux-image-arm64:arm64 depends on, apt-get download,
# vmlinuz only) booted under TCG by qemu-system-aarch64 -M virt -cpu
# max,pauth-impdef=on with -kernel/-initrd and no firmware, console
# ttyAMA0; a busybox initramfs as the x86-64 guest's, with Debian's arm64
# busybox-static, bash and libtinfo6 (downloaded and unpacked, not
# installed), the cross-built test programs and the arm64 loader and
# libraries they need (the loader's own --list under qemu-aarch64-static);
# the result through the serial console (its summary line), then poweroff.  Every
# guest test prints the kernel it runs on (VMTEST_WHERE="QEMU guest"); the
# run ends with "N passed, N failed" as the x86-64 guest's does, and fails
# if a test failed.  Downloads, the programs and the console log
# (console.log) are in build/vm-aarch64/, kept and reused.
#
#   make vmtest-aarch64 [VMTEST_AARCH64_TIMEOUT=900] [VMTEST_AARCH64_FAIL=1]
#
# VMTEST_AARCH64_FAIL=1 makes fails_when_asked fail, to see a failure
# reported (make then fails too).  For now the guest runs the smoke tests
# of selftests/vm-aarch64/ only (its build.mk lists them); when the
# top-level Makefile builds for ARCH=aarch64, `make vmtest ARCH=aarch64`
# is to map to this target with the kernel-facing suites' arm64 builds
# (their host tools, GNU realpath and the rest, then come from arm64
# packages as busybox does).  Not in CHECKS yet.
#
# Measured under TCG on the 2-core build machine, beside another CI run
# (load average 1.4 to 3): boot to init 1.9 to 2.6 s of guest uptime (2.5
# to 3.4 s from QEMU's start), QEMU boot to result 3.1 to 3.7 s for the 7
# tests, make vmtest-aarch64 about 5 s in all once the downloads are kept
# (19 s the first time: the kernel package is 60 MB).

include selftests/vm-aarch64/build.mk

VMTEST_AARCH64_OUT := build/vm-aarch64
# A bound on a hang: the smoke tests take seconds once booted.
VMTEST_AARCH64_TIMEOUT ?= 600
VMTEST_AARCH64_FAIL ?= 0
VMTEST_AARCH64_TESTS = \
	'guest-kernel::$(VMA64_OUT)/guest_kernel_is_aarch64' \
	'userfaultfd::$(VMA64_OUT)/userfaultfd_exists' \
	'membarrier::$(VMA64_OUT)/membarrier_offers_sync_core' \
	'bpf::$(VMA64_OUT)/bpf_exists' \
	'esr::$(VMA64_OUT)/null_access_signal_has_esr_record' \
	'bash::$(VMA64_DIR)/guest_runs_bash_scripts.sh' \
	'fails-when-asked::VMTEST_AARCH64_FAIL=$(VMTEST_AARCH64_FAIL) $(VMA64_OUT)/fails_when_asked' \
	'unit::CK_FORK=yes CK_TIMEOUT_MULTIPLIER=20 $(VMA64_UNIT)'

# The arm64 build's programs the guest runs, made by make ARCH=aarch64
# (build/aarch64/): asked of it each time, so that they are up to date.
VMA64_UNIT := build/aarch64/tests/unit
# What is loaded with dlopen (no DT_NEEDED names it): libunwind (the
# library's), libgcc_s (glibc's backtrace()).
VMA64_DLOPENED := /usr/lib/aarch64-linux-gnu/libunwind.so.8 /lib/aarch64-linux-gnu/libgcc_s.so.1
.PHONY: vmtest-aarch64-progs
vmtest-aarch64-progs: | vmtest-aarch64-deps
	$(Q)$(MAKE) --no-print-directory ARCH=aarch64 $(VMA64_UNIT)

# The top-level deps target installs the test packages only for goals
# named check*, vmtest, bench* or fuzz*: this one asks for them itself.
.PHONY: vmtest-aarch64 vmtest-aarch64-deps
vmtest-aarch64-deps:
	$(Q)scripts/deps.sh test

vmtest-aarch64: $(VMA64_BINS) vmtest-aarch64-progs | vmtest-aarch64-deps
	$(Q)scripts/vmtest.sh -a aarch64 -o $(VMTEST_AARCH64_OUT) -t $(VMTEST_AARCH64_TIMEOUT) \
		-f $(VMA64_OUT) $(addprefix -f ,$(VMA64_SCRIPTS)) -f $(VMA64_UNIT) $(addprefix -f ,$(VMA64_DLOPENED)) \
		-- $(VMTEST_AARCH64_TESTS)

# In make check: the guest's suites (check-aarch64-user runs what qemu-user can).
.PHONY: check-vm-aarch64
check-vm-aarch64: vmtest-aarch64
