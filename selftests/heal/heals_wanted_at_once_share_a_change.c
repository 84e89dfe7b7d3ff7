// SPDX-License-Identifier: MIT
/*
 * heals_wanted_at_once_share_a_change: the heals the policy wants at once
 * (fl_sites_heal, which the healer thread and `faultline heal --over`
 * call) are written in batches, each one change of code with its
 * serializations and its handshake, not one change per site; and the
 * result is what healing the sites one at a time gives.
 *
 * The code is the corpus (nullchecks.ll, mixed.ll, shapes.ll, -no-pie).
 * First every site one at a time (fl_site_heal): the changes of code
 * counted (one per healed site), each site's state and tactic kept, then
 * everything unhealed.  Then all the sites in one fl_sites_heal: every
 * site must end in the state and with the tactic it had one at a time,
 * the corpus must print what it prints as compiled, and the changes of
 * code must be fewer than the sites healed (sites within the planner's
 * reach of one another go in successive batches: printed).
 */
#include "common.h"
#include "patch/heal.h"
#include "patch/internal.h"

int main(int argc, char **argv)
{
	static int alone_state[T_MAX_SITES], results[T_MAX_SITES];
	static char alone_tactic[T_MAX_SITES][8];
	struct t_sites t;
	uint64_t before, one_by_one, batched;
	int healed = 0, differ = 0;
	char *want, *got;

	(void)argc;
	t_start(argv);
	t_init_discovering();
	t_enable();
	t_sites_get(&t);
	want = t_corpus_output(1);

	before = fl_patch_changes_made();
	for (size_t i = 0; i < t.n; i++) {
		struct fl_heal_info info;
		int err = fl_site_heal((const void *)(uintptr_t)t.pc[i], NULL);

		t_check(err == 0 || err == -EOPNOTSUPP, "fl_site_heal 0x%llx: %d",
			(unsigned long long)t.pc[i], err);
		info = t_heal_info(t.pc[i]);
		alone_state[i] = info.state;
		snprintf(alone_tactic[i], sizeof(alone_tactic[i]), "%s", info.tactic);
		healed += info.state == FL_HEAL_HEALED;
	}
	one_by_one = fl_patch_changes_made() - before;
	for (size_t i = 0; i < t.n; i++)
		if (alone_state[i] == FL_HEAL_HEALED)
			t_unheal(t.pc[i]);

	before = fl_patch_changes_made();
	t_check(fl_sites_heal(t.pc, t.n, results) == 0, "fl_sites_heal");
	batched = fl_patch_changes_made() - before;
	for (size_t i = 0; i < t.n; i++) {
		struct fl_heal_info info = t_heal_info(t.pc[i]);

		t_check(results[i] == 0 || results[i] == -EOPNOTSUPP, "site 0x%llx: %d",
			(unsigned long long)t.pc[i], results[i]);
		if (info.state != alone_state[i] || strcmp(info.tactic, alone_tactic[i]) != 0) {
			printf("  site 0x%llx: state %d tactic %s alone, %d %s batched\n",
			       (unsigned long long)t.pc[i], alone_state[i], alone_tactic[i],
			       info.state, info.tactic);
			differ++;
		}
	}
	got = t_corpus_output(1);
	printf("%s: %zu sites, %d healed; changes of code: %llu one at a time, %llu batched\n",
	       t_name, t.n, healed, (unsigned long long)one_by_one, (unsigned long long)batched);
	t_check(differ == 0, "%d sites healed otherwise in a batch than alone", differ);
	t_check(strcmp(want, got) == 0, "the healed corpus prints otherwise than compiled");
	t_check(one_by_one == (uint64_t)healed, "one at a time: %llu changes for %d heals",
		(unsigned long long)one_by_one, healed);
	t_check(batched < one_by_one, "batched: %llu changes, not fewer than %llu",
		(unsigned long long)batched, (unsigned long long)one_by_one);
	free(want);
	free(got);
	printf("PASS %s\n", t_name);
	return 0;
}
