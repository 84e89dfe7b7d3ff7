// SPDX-License-Identifier: MIT
/*
 * kbpf_procs.c's index of the kernel views by process (fld_kproc_of): after
 * every change of a random sequence of views made and forgotten, every
 * process finds its own view and a forgotten one finds none, as a walk of
 * fld_kprocs finds them; and fld_kprocs_gen changes with each.  Thousands
 * of processes, so that the index grows, and runs wrap around its end and
 * lose members from their middle (its deletion moves entries back).
 *
 *   kprocs [SEED]   (default: from the clock; printed)
 *
 * Exits 0 when every check passed, 1 otherwise.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kbpf_procs.h"

/* What kbpf_procs.c uses of procs.c: its observer is not called here. */
struct fld_proc **fld_procs;
size_t fld_num_procs;

void fld_proc_observe(const struct fld_proc_observer *o)
{
	(void)o;
}

#define NPROCS 5000
#define STEPS 40000

static unsigned failures;

static void fail(const char *what, size_t i)
{
	if (failures++ < 10)
		fprintf(stderr, "kprocs: FAIL: %s (process %zu)\n", what, i);
}

/* The view of p as a walk of fld_kprocs finds it. */
static struct fld_kproc *walk(const struct fld_proc *p)
{
	for (size_t i = 0; i < fld_num_kprocs; i++)
		if (fld_kprocs[i]->p == p)
			return fld_kprocs[i];
	return NULL;
}

static void check_all(struct fld_proc *procs, const bool *has)
{
	for (size_t i = 0; i < NPROCS; i++) {
		struct fld_kproc *k = fld_kproc_of(&procs[i]);

		if (k != walk(&procs[i]))
			fail("fld_kproc_of differs from a walk of fld_kprocs", i);
		if (has[i] != (k != NULL))
			fail(has[i] ? "a view not found" : "a forgotten view found", i);
		if (k && (k->p != &procs[i] || k->pid != procs[i].pid))
			fail("another process's view", i);
	}
}

int main(int argc, char **argv)
{
	unsigned seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : (unsigned)time(NULL);
	struct fld_proc *procs = calloc(NPROCS, sizeof(*procs));
	bool *has = calloc(NPROCS, sizeof(*has));
	size_t live = 0;

	if (!procs || !has)
		return 1;
	printf("kprocs: seed %u\n", seed);
	srand(seed);
	fld_kprocs_init();
	for (size_t i = 0; i < NPROCS; i++)
		procs[i].pid = (pid_t)(1000 + i);
	for (size_t step = 0; step < STEPS; step++) {
		size_t i = (size_t)rand() % NPROCS;
		uint64_t gen = fld_kprocs_gen;

		/* Made more often than forgotten at first, then the other way. */
		if (!has[i] && (step < STEPS / 2 || rand() % 3 == 0)) {
			if (!fld_kproc_new(&procs[i])) {
				fail("out of memory", i);
				break;
			}
			has[i] = true;
			live++;
		} else if (has[i]) {
			fld_kproc_forget(&procs[i]);
			has[i] = false;
			live--;
		} else {
			continue;
		}
		if (fld_kprocs_gen == gen)
			fail("fld_kprocs_gen unchanged by a change", i);
		if (fld_num_kprocs != live)
			fail("fld_num_kprocs is not the number of views", i);
		if (step % 97 == 0)
			check_all(procs, has);
		else if (fld_kproc_of(&procs[i]) != (has[i] ? walk(&procs[i]) : NULL))
			fail("the changed process's view", i);
	}
	check_all(procs, has);
	/* A view made again for a process that has one replaces it. */
	for (size_t i = 0; i < NPROCS; i++) {
		if (!has[i] && !fld_kproc_new(&procs[i]))
			fail("out of memory", i);
		has[i] = true;
	}
	if (!fld_kproc_new(&procs[0]) || fld_num_kprocs != NPROCS)
		fail("a second view of one process is not the only one", 0);
	check_all(procs, has);
	for (size_t i = 0; i < NPROCS; i++) {
		fld_kproc_forget(&procs[i]);
		has[i] = false;
	}
	check_all(procs, has);
	if (fld_num_kprocs)
		fail("views left after every process was forgotten", 0);
	printf("kprocs: %s (%d processes, %d steps, seed %u)\n", failures ? "FAILED" : "passed",
	       NPROCS, STEPS, seed);
	free(procs);
	free(has);
	return failures ? 1 : 0;
}
