#!/bin/bash
# Runs the deoptimization and statepoint tests that an AArch64 build runs
# under qemu-user (make check-deopt-aarch64-user; the Makefile's
# RUN_TARGET runs this script where AArch64 programs run).
#   run_user.sh DEOPT_BIN_DIR GC_BIN_DIR
# What does not run here says why, once: it is not built for AArch64 yet
# or runs only in the arm64 guest.
set -u
. "$(dirname "$0")/../common/run.sh"
echo "kernel: $(uname -r) (${VMTEST_WHERE:-qemu-user aarch64 on the host})"
deopt=$1
gc=$2
rounds=${DEOPT_USER_ROUNDS:-2000}
TIMEOUT=${DEOPT_TEST_TIMEOUT:-900}

t_run "$TIMEOUT" "$(dirname "$0")/widened_once.sh" "$deopt/ll"
for t in widening_matches_unoptimized returns_every_type \
	deopt_values_every_kind_and_size_nopie deopt_values_every_kind_and_size_pie \
	deopt_values_every_kind_and_size_shared deopt_in_a_signal_handler \
	no_handler_aborts_naming_the_site record_at_and_locations_refuse_bad_input \
	eh_frame_checked_before_registration; do
	t_run "$TIMEOUT" "$deopt/$t"
done
t_run "$TIMEOUT" "$deopt/threads_deopt_at_once" "$rounds"
for v in O0_stack O1_stack O2_stack O3_stack O0_reg O1_reg O2_reg O3_reg; do
	t_run "$TIMEOUT" "$gc/moved_roots_keep_results_$v" "$v"
done
t_run "$TIMEOUT" "$gc/walk_refuses_bad_input"
t_run "$TIMEOUT" "$gc/signal_frame_is_the_context"

cat <<'NOT'
not run under qemu-user:
  deopt_left_by_longjmp_keeps_memory_flat: under qemu-aarch64-static every
    deoptimization grows RSS by about 8 KiB, returned ones too (x86-64 under
    qemu-x86_64-static stays flat): the check that the frame has unwind
    information (unw_get_proc_info_by_ip) of Debian's arm64 libunwind reads
    /proc/self/maps and maps the program's file each time (its .debug_frame
    search), and qemu keeps what it tracks of each new address; to be
    measured in the arm64 guest
  deopt_from_mcjit_code, moved_roots_in_mcjit_code: need LLVM 14's arm64
    libraries (llvm-14-dev:arm64), not installed
  deopt_left_by_exception_keeps_memory_flat, cxx_exceptions_stay_with_libgcc_s:
    need an AArch64 C++ compiler (g++-aarch64-linux-gnu), not installed
  walk_ends_at_a_frame_it_cannot_step_out_of, walk_gives_up_past_max_frames:
    hand-made x86-64 JIT code (not yet for AArch64)
NOT
t_summary check-deopt-aarch64-user
