#!/bin/bash
# Runs the healing tests built by `make check-heal`.
#   run.sh BIN_DIR [CYCLES]
# Each test is a program that exits 0 (pass), 77 (skip, with the reason
# printed) or anything else (fail).  CYCLES (default 30000): how many
# times heal_unheal_while_threads_call heals and unheals (fewer under
# QEMU's TCG and under the sanitizers).
set -u
. "$(dirname "$0")/../common/run.sh"
echo "kernel: $(uname -r) (${VMTEST_WHERE:-host})"
bin=$1
cycles=${2:-30000}
# ASan must leave SIGSEGV, SIGBUS and SIGTRAP to faultline.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0:handle_sigbus=0:handle_sigtrap=0
# A test still running after this long is hung (minutes, for TCG); timeout
# signals the test's whole process group, its children too.
TIMEOUT=${HEAL_TEST_TIMEOUT:-900}

tests=(
	"healed_corpus_matches_explicit $bin/corpus_explicit"
	"heal_unheal_while_threads_call $cycles"
	"registers_and_flags_survive_the_stub"
	"no_room_for_a_stub_is_unhealable $bin/corpus_explicit"
	"no_room_for_a_stub_is_unhealable_pie $bin/corpus_explicit"
	"unheal_restores_the_compiled_bytes"
	"heals_wanted_at_once_share_a_change"
	"heals_go_with_their_module $bin/libnullchecks.so"
	"stub_frames_unwind_to_main"
	"cxx_exception_through_healed_null_path"
)

for entry in "${tests[@]}"; do
	read -r -a words <<<"$entry"
	t_run "$TIMEOUT" "$bin/${words[0]}" "${words[@]:1}"
done
# One tactic at a time (FAULTLINE_HEAL_TACTICS): the corpus healed by
# relocation alone and by successor eviction alone computes the same, and
# relocation heals and unheals while threads call.
for only in REL T2; do
	FAULTLINE_HEAL_TACTICS=$only t_run "$TIMEOUT" "$bin/healed_corpus_matches_explicit" \
		"$bin/corpus_explicit"
done
FAULTLINE_HEAL_TACTICS=REL t_run "$TIMEOUT" "$bin/heal_unheal_while_threads_call" \
	$((cycles / 10))
t_summary check-heal
