#!/bin/bash
# Runs the region tests built by `make check-region`.
#   run.sh BIN_DIR
# Each test is a program that exits 0 (pass), 77 (skip, reason printed) or
# anything else (fail).  Most run in both modes: "sigbus" (the default,
# UFFD_FEATURE_SIGBUS) and "helper" (FL_REGION_HELPER_THREAD).
set -u
echo "kernel: $(uname -r) (${VMTEST_WHERE:-host})"
bin=$1
# ASan (SAN=1) must leave SIGBUS and SIGSEGV to faultline and the kernel:
# the tests check how the process dies.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0:handle_sigbus=0
# A test still running after this long is hung: minutes, for QEMU's TCG,
# and longer than a test's own limit on a hang (common.h's T_HANG_S).
# timeout signals the test's whole process group, its children too.
TIMEOUT=${REGION_TEST_TIMEOUT:-600}

both="sigbus helper"
tests=(
	"create_rejects_bad_input -"
	"zero_pages_appear_on_first_touch $both"
	"template_pages_appear_on_first_touch $both"
	"commit_moves_the_limit $both"
	"reset_drops_pages $both"
	"implicit_check_past_limit_resumes_at_handler $both"
	"unregistered_pc_past_limit_is_not_claimed $both"
	"threads_populate_concurrently $both"
	"blocked_sigbus_past_limit_kills $both"
	"kernel_access_to_untouched_page_is_efault $both"
	"destroy_leaves_nothing_behind $both"
	"guard_tail_keeps_repeated_guard_faults_plain $both"
	"helper_thread_blocks_all_signals -"
	"forwarded_sigbus_is_checked -"
)

passed=0
skipped=()
failed=()
for entry in "${tests[@]}"; do
	read -r name modes <<<"$entry"
	for mode in $modes; do
		label=$name
		args=()
		if [ "$mode" != - ]; then
			label="$name ($mode)"
			args=("$mode")
		fi
		timeout "$TIMEOUT" "$bin/$name" "${args[@]}"
		rc=$?
		case $rc in
		0)	passed=$((passed + 1)) ;;
		77)	skipped+=("$label") ;;
		124)	echo "FAIL $label: no result after ${TIMEOUT}s"; failed+=("$label") ;;
		*)	echo "FAIL $label: exit status $rc"; failed+=("$label") ;;
		esac
	done
done

echo "check-region: $passed passed, ${#skipped[@]} skipped, ${#failed[@]} failed"
for s in "${skipped[@]}"; do echo "  skipped: $s"; done
if [ ${#failed[@]} -ne 0 ]; then
	for f in "${failed[@]}"; do echo "  FAILED: $f"; done
	exit 1
fi
