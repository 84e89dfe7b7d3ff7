#!/bin/bash
# Runs the statepoint example's tests built by `make check-gc`.
#   run.sh BIN_DIR
# Each test is a program that exits 0 (pass) or anything else (fail, with
# the reason printed); moved_roots_keep_results_VARIANT is run for every
# variant built.
set -u
. "$(dirname "$0")/../common/run.sh"
echo "kernel: $(uname -r) (${VMTEST_WHERE:-host})"
bin=$1
# A test still running after this long is hung (minutes, for TCG).
TIMEOUT=${GC_TEST_TIMEOUT:-900}

variants=0
for t in "$bin"/moved_roots_keep_results_*; do
	[ -x "$t" ] || continue
	t_run "$TIMEOUT" "$t" "${t##*/moved_roots_keep_results_}"
	variants=$((variants + 1))
done
[ "$variants" -eq 8 ] || { echo "FAIL check-gc: $variants variants in $bin, not 8"; failed+=(variants); }
t_run "$TIMEOUT" "$bin/walk_refuses_bad_input"
t_run "$TIMEOUT" "$bin/walk_ends_at_a_frame_it_cannot_step_out_of"
t_run "$TIMEOUT" "$bin/walk_gives_up_past_max_frames"
t_run "$TIMEOUT" "$bin/signal_frame_is_the_context"
t_run "$TIMEOUT" "$bin/moved_roots_in_mcjit_code" "$bin/ll/workload.opt.ll"
t_summary check-gc
