#!/bin/bash
# Runs the patcher's tests built by `make check-patch`.
#   run.sh BIN_DIR PRELOAD [REWRITES]
# Each test is a program that exits 0 (pass) or anything else (fail);
# sigtrap_program runs without and with PRELOAD (libfaultline-preload.so),
# and must print the same and die the same way.
# REWRITES (default 100000): rewrites_while_threads_call's count (fewer
# under QEMU's TCG and ASan); the other counts follow from it.
# A test that exits 77 is skipped (it printed why).
set -u
. "$(dirname "$0")/../common/run.sh"
echo "kernel: $(uname -r) (${VMTEST_WHERE:-host})"
bin=$1
preload=$2
rewrites=${3:-100000}
# Rewrites that move boundaries (each stops every thread): a fiftieth.
moves=$((rewrites / 50 > 0 ? rewrites / 50 : 1))
# eintr_race_is_counted's boundary moves: 10,000 natively.
races=$((rewrites / 10 > 0 ? rewrites / 10 : 1))
# The workers_that_block_* tests' changes: a worker meets an int3 in about
# one change in a thousand, so 50,000 also under ASan; fewer under TCG.
masked=$((rewrites >= 10000 ? 50000 : rewrites / 2 > 0 ? rewrites / 2 : 1))
# ASan must leave SIGSEGV, SIGBUS and SIGTRAP to faultline and the kernel:
# the tests check how processes die.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0:handle_sigbus=0:handle_sigtrap=0
# A test still running after this long is hung (minutes, for TCG); timeout
# signals the test's whole process group, its children too.
TIMEOUT=${PATCH_TEST_TIMEOUT:-900}

tests=(
	"rewrites_while_threads_call $rewrites"
	"bad_changes_are_refused"
	"sigtrap_reaches_the_application"
	"no_membarrier_no_patching"
	"fork_while_patching"
	"boundary_moves_with_threads_running $moves"
	"blocking_calls_are_never_cut_short"
	"eintr_race_is_counted $races"
	"a_thousand_threads_most_blocked"
	"workers_that_block_every_signal $((masked < 1000 ? masked : 1000))"
	"workers_that_block_sigtrap_only $masked"
	"workers_that_block_the_handshake_signal $((masked < 5000 ? masked : 5000))"
	"sigtrap_blocked_around_each_call_under_the_shims_mask $((rewrites < 10000 ? rewrites : 10000))"
	"the_programs_own_traps_reach_it"
	"raw_fork_while_patching"
	"handshake_in_a_pid_namespace_without_its_proc"
	"a_denied_thread_listing_refuses"
	"a_denied_membarrier_refuses"
	"a_stack_in_a_huge_mapping"
	"a_patched_program_under_gdb $((rewrites >= 10000 ? 10 : 3))"
)

for entry in "${tests[@]}"; do
	read -r -a words <<<"$entry"
	t_run "$TIMEOUT" "$bin/${words[0]}" "${words[@]:1}"
done

# The unmodified program: what it prints and how it ends, without and with
# the shim.  The sanitizer build's shim needs ASan's runtime first.
name=sigtrap_program_under_the_shim
plain=$("$bin/sigtrap_program" 2>&1; echo "exit status $?")
asan=
if ldd "$preload" 2>/dev/null | grep -q libasan; then
	asan=$(ldd "$preload" | awk '/libasan/ { print $3 }'):
fi
shim=$(LD_PRELOAD="$asan$preload" "$bin/sigtrap_program" 2>&1; echo "exit status $?")
if [ "$plain" = "$shim" ] && [[ $plain == *"exit status 133" ]]; then
	passed=$((passed + 1))
	echo "PASS $name"
	printf '%s\n' "$plain" | sed 's/^/  /'
else
	echo "FAIL $name: without the shim:"
	printf '%s\n' "$plain" | sed 's/^/  /'
	echo "  with it:"
	printf '%s\n' "$shim" | sed 's/^/  /'
	failed+=("$name")
fi

t_summary check-patch
