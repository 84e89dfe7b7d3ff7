#!/bin/bash
# Runs the tests of patch points and stack map shadows built by
# `make check-points`.
#   run.sh BIN_DIR [REWRITES]
# Each test is a program that exits 0 (pass) or anything else (fail).
# REWRITES (default 100000): rewrites_while_threads_call's count (fewer
# under QEMU's TCG); the JIT test rewrites a fiftieth of it.
set -u
. "$(dirname "$0")/../common/run.sh"
echo "kernel: $(uname -r) (${VMTEST_WHERE:-host})"
bin=$1
rewrites=${2:-100000}
jit=$((rewrites / 50 > 0 ? rewrites / 50 : 1))
# ASan must leave SIGSEGV, SIGBUS and SIGTRAP to faultline.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0:handle_sigbus=0:handle_sigtrap=0
# A test still running after this long is hung (minutes, for TCG); timeout
# signals the test's whole process group, its children too.
TIMEOUT=${POINTS_TEST_TIMEOUT:-900}

tests=(
	"rewrites_while_threads_call $rewrites"
	"a_thread_in_the_way_stops_a_boundary_move"
	"refused_writes_change_nothing"
	"invalidated_frames_return_into_the_target"
	"neighbouring_regions_stay_apart"
	"records_of_every_table_are_placed"
	"jit_patch_points_are_rewritten $jit"
	"jit_stackmap_only_points_work"
)

for entry in "${tests[@]}"; do
	read -r -a words <<<"$entry"
	t_run "$TIMEOUT" "$bin/${words[0]}" "${words[@]:1}"
done
t_summary check-points
