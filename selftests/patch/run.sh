#!/bin/bash
# Runs the patcher's tests built by `make check-patch`.
#   run.sh BIN_DIR PRELOAD [REWRITES]
# Each test is a program that exits 0 (pass) or anything else (fail);
# sigtrap_program runs without and with PRELOAD (libfaultline-preload.so),
# and must print the same and die the same way.
# REWRITES (default 100000): rewrites_while_threads_call's count (fewer
# under QEMU's TCG).
set -u
. "$(dirname "$0")/../common/run.sh"
echo "kernel: $(uname -r) (${VMTEST_WHERE:-host})"
bin=$1
preload=$2
rewrites=${3:-100000}
# Rewrites that move boundaries (each stops every thread): a fiftieth.
moves=$((rewrites / 50 > 0 ? rewrites / 50 : 1))
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
