// SPDX-License-Identifier: MIT
/*
 * heals_wanted_at_once_share_a_change: the heals the policy wants at once
 * (fl_sites_heal, which the healer thread and `faultline heal --over`
 * call) are written in batches, each one change of code with its
 * serializations and its handshake, not one change per site; and the
 * result is what healing the sites one at a time gives.
 *
 * The code is the corpus (nullchecks.ll, mixed.ll, shapes.ll, -no-pie).
 * The program runs itself twice, each time a fresh process (a heal's
 * stubs, once unhealed, wait in a quarantine that the next heals see, so
 * one process cannot compare the two fairly): --alone heals every site
 * with fl_site_heal, one at a time; --batched heals them all in one
 * fl_sites_heal.  Each prints, for every site, its state and tactic, and
 * the changes of code it took; each checks that the healed corpus prints
 * what it prints as compiled.  Then: every site must end in the same
 * state with the same tactic both ways, one at a time must take one
 * change per healed site, and batched fewer (sites within the planner's
 * reach of one another go in successive batches: the counts are printed).
 */
#include <fcntl.h>

#include "common.h"
#include "patch/heal.h"
#include "patch/internal.h"

#define LINE 96

/* The child's side: heals every site one way, prints what came of it. */
static int heal_all(bool batched)
{
	static int results[T_MAX_SITES];
	struct t_sites t;
	uint64_t before, changes;
	char *want, *got;
	int healed = 0;

	t_init_discovering();
	t_enable();
	t_sites_get(&t);
	want = t_corpus_output(1);
	before = fl_patch_changes_made();
	if (batched)
		t_check(fl_sites_heal(t.pc, t.n, results) == 0, "fl_sites_heal");
	else
		for (size_t i = 0; i < t.n; i++)
			results[i] = fl_site_heal((const void *)(uintptr_t)t.pc[i], NULL);
	changes = fl_patch_changes_made() - before;
	for (size_t i = 0; i < t.n; i++) {
		struct fl_heal_info info = t_heal_info(t.pc[i]);

		t_check(results[i] == 0 || results[i] == -EOPNOTSUPP, "site 0x%llx: %d",
			(unsigned long long)t.pc[i], results[i]);
		printf("site %llx %d %s\n", (unsigned long long)t.pc[i], info.state,
		       info.tactic[0] ? info.tactic : "-");
		healed += info.state == FL_HEAL_HEALED;
	}
	got = t_corpus_output(1);
	t_check(strcmp(want, got) == 0, "the healed corpus prints otherwise than compiled");
	printf("changes %llu healed %d\n", (unsigned long long)changes, healed);
	free(want);
	free(got);
	return 0;
}

/* Runs self with how (--alone or --batched); its output into out (size bytes). */
static void run(const char *self, const char *how, char *out, size_t size)
{
	size_t len = 0;
	int fds[2], status;
	pid_t pid;
	ssize_t r;

	t_check(pipe2(fds, O_CLOEXEC) == 0, "pipe: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	t_check(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(fds[1], 1);
		execl(self, self, how, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	while (len < size - 1 && (r = read(fds[0], out + len, size - 1 - len)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		t_check(r > 0, "reading %s's output: %s", how, strerror(errno));
		len += (size_t)r;
	}
	out[len] = 0;
	close(fds[0]);
	t_check(t_wait(pid, 600, &status) && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"%s %s did not exit 0 (above)", t_name, how);
}

int main(int argc, char **argv)
{
	static char alone[T_MAX_SITES * LINE], batched[T_MAX_SITES * LINE];
	unsigned long long changes[2];
	char self[4096], *a, *b;
	int healed[2], differ = 0;
	ssize_t n;

	t_start(argv);
	if (argc > 1)
		return heal_all(strcmp(argv[1], "--batched") == 0);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	t_check(n > 0, "/proc/self/exe: %s", strerror(errno));
	self[n] = 0;
	run(self, "--alone", alone, sizeof(alone));
	run(self, "--batched", batched, sizeof(batched));
	a = strstr(alone, "changes ");
	b = strstr(batched, "changes ");
	t_check(a && sscanf(a, "changes %llu healed %d", &changes[0], &healed[0]) == 2,
		"--alone printed no count:\n%s", alone);
	t_check(b && sscanf(b, "changes %llu healed %d", &changes[1], &healed[1]) == 2,
		"--batched printed no count:\n%s", batched);
	/* The sites' lines: the same sites, in the same order, both ways. */
	for (char *x = strtok_r(alone, "\n", &a), *y = strtok_r(batched, "\n", &b);
	     x && y && strncmp(x, "site ", 5) == 0; x = strtok_r(NULL, "\n", &a),
	     y = strtok_r(NULL, "\n", &b))
		if (strcmp(x, y) != 0) {
			printf("  alone:   %s\n  batched: %s\n", x, y);
			differ++;
		}
	printf("%s: %d healed alone, %d batched; changes of code: %llu one at a time, %llu "
	       "batched\n", t_name, healed[0], healed[1], changes[0], changes[1]);
	t_check(differ == 0, "%d sites healed otherwise in a batch than alone", differ);
	t_check(changes[0] == (unsigned long long)healed[0], "one at a time: %llu changes for %d "
		"heals", changes[0], healed[0]);
	t_check(changes[1] < changes[0], "batched: %llu changes, not fewer than %llu", changes[1],
		changes[0]);
	printf("PASS %s\n", t_name);
	return 0;
}
