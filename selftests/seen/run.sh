#!/bin/bash
# Runs the tests built by `make check-seen` (selftests/seen/build.mk).
#   run.sh BIN_DIR
# Each test is a program that exits 0 (pass), 77 (skip, with the reason
# printed) or anything else (fail).
set -u
. "$(dirname "$0")/../common/run.sh"
echo "kernel: $(uname -r) (${VMTEST_WHERE:-host})"
bin=$1
TIMEOUT=${SEEN_TEST_TIMEOUT:-300}

for t in unwinders_step_out_of_new_code cxx_exception_crosses_new_code \
	perf_map_written_only_when_ours bad_input_registers_nothing; do
	t_run "$TIMEOUT" "$bin/$t"
done
t_run "$TIMEOUT" "$(dirname "$0")/perf_report_names_hot_new_code.sh" "$bin/hot_new_code"
t_summary check-seen
