#!/bin/bash
# Runs the statepoint example's tests built by `make check-gc`.
#   run.sh BIN_DIR "VARIANTS"
# Each test is a program that exits 0 (pass) or anything else (fail, with
# the reason printed).
set -u
. "$(dirname "$0")/../common/run.sh"
echo "kernel: $(uname -r) (${VMTEST_WHERE:-host})"
bin=$1
# A test still running after this long is hung (minutes, for TCG).
TIMEOUT=${GC_TEST_TIMEOUT:-900}

for v in $2; do
	t_run "$TIMEOUT" "$bin/moved_roots_keep_results_$v" "$v"
done
t_run "$TIMEOUT" "$bin/walk_refuses_bad_input"
t_summary check-gc
