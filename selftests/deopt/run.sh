#!/bin/bash
# Runs the deoptimization tests built by `make check-deopt`.
#   DEOPT_PRELOAD=SHIM run.sh BIN_DIR [ROUNDS]
# Each test is a program that exits 0 (pass), 77 (skip, with the reason
# printed) or anything else (fail).  ROUNDS (default 20000): each thread's
# deoptimizations in threads_deopt_at_once (fewer under QEMU's TCG and
# under the sanitizers).
set -u
. "$(dirname "$0")/../common/run.sh"
echo "kernel: $(uname -r) (${VMTEST_WHERE:-host})"
bin=$1
rounds=${2:-20000}
if [ -z "${DEOPT_PRELOAD:-}" ]; then
	echo "run.sh: DEOPT_PRELOAD must name libfaultline-preload.so (cxx_exceptions_stay_with_libgcc_s)" >&2
	exit 2
fi
# A test still running after this long is hung (minutes, for TCG).
TIMEOUT=${DEOPT_TEST_TIMEOUT:-900}

t_run "$TIMEOUT" "$(dirname "$0")/widened_once.sh" "$bin/ll"
for t in widening_matches_unoptimized returns_every_type \
	deopt_values_every_kind_and_size_nopie deopt_values_every_kind_and_size_pie \
	deopt_values_every_kind_and_size_shared deopt_in_a_signal_handler \
	no_handler_aborts_naming_the_site record_at_and_locations_refuse_bad_input \
	eh_frame_checked_before_registration; do
	t_run "$TIMEOUT" "$bin/$t"
done
t_run "$TIMEOUT" "$bin/deopt_from_mcjit_code" "$(dirname "$0")/returns.ll" \
	"$(dirname "$0")/values.ll"
t_run "$TIMEOUT" "$bin/threads_deopt_at_once" "$rounds"
t_run "$TIMEOUT" "$bin/deopt_left_by_longjmp_keeps_memory_flat"
t_run "$TIMEOUT" "$bin/deopt_left_by_exception_keeps_memory_flat"
# DEOPT_PRELOAD: the shim (with ASan's runtime before it under the sanitizers).
t_run "$TIMEOUT" "$bin/cxx_unwind_plain" plain
LD_PRELOAD=$DEOPT_PRELOAD t_run "$TIMEOUT" "$bin/cxx_unwind_plain" preload
t_run "$TIMEOUT" "$bin/cxx_unwind_linked" linked
t_summary check-deopt
