/* SPDX-License-Identifier: MIT */
/*
 * walk_refuses_bad_input: fl_stack_walk's errors, and what a walk yields.
 *
 *   - before fl_init: -ENODEV;
 *   - no callback, a start whose sz is too small, a longer start with a
 *     byte this library does not know: -EINVAL (a longer one all zero:
 *     accepted);
 *   - a context that is not a signal handler's (getcontext's, a zeroed
 *     one, a copy of the handler's): -EINVAL;
 *   - from C called by workload.ll's frames (deep_run, 4 frames of deep,
 *     poll): exactly those frames, innermost first, each with its own
 *     record, the C frame in between counted in the index but not yielded;
 *   - the same frames from a signal handler, from its context and from
 *     the handler itself (through the signal's frame);
 *   - a callback that returns non-zero ends the walk with its value.
 * Exits 0 (pass) or 1 (fail, with the reason).
 */
#include <errno.h>
#include <signal.h>

/* The stack pointer's DWARF number. */
#if defined(__aarch64__)
#define T_DWARF_SP FL_DWARF_A64_SP
#else
#define T_DWARF_SP FL_DWARF_RSP
#endif
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include <faultline/deopt.h>
#include <faultline/dispatch.h>

#include "../common/t.h"
#include "collector.h"
#include "heap.h"

int64_t deep_run(int64_t depth);

#define DEPTH 3
/* @poll, DEPTH + 1 frames of @deep, @deep_run */
#define FRAMES (1 + DEPTH + 1 + 1)

struct seen {
	unsigned n, stop_at;
	unsigned index[16];
	uint64_t pc[16];
};

static int record(const struct fl_walk_frame *f, void *ctx)
{
	struct seen *s = ctx;

	t_check(f->at && f->at->record && f->at->record->pc == f->pc,
		"frame %u: pc 0x%llx, its record's 0x%llx", f->index, (unsigned long long)f->pc,
		f->at && f->at->record ? (unsigned long long)f->at->record->pc : 0ull);
	t_check(f->at->record->id == GC_STATEPOINT_ID && f->at->function < f->pc,
		"frame %u: record ID 0x%llx, function 0x%llx, pc 0x%llx", f->index,
		(unsigned long long)f->at->record->id, (unsigned long long)f->at->function,
		(unsigned long long)f->pc);
	t_check(f->regs && f->regs->at[T_DWARF_SP] &&
		*(uint64_t *)f->regs->at[T_DWARF_SP] == f->sp,
		"frame %u: regs' stack pointer is not the frame's sp", f->index);
	if (s->n < 16) {
		s->index[s->n] = f->index;
		s->pc[s->n] = f->pc;
	}
	s->n++;
	return s->stop_at && s->n == s->stop_at ? 7 : 0;
}

/* The frames a walk yielded are workload.ll's, in order, after skipped ones. */
static void check_frames(const char *how, const struct seen *s, const struct seen *want)
{
	t_check(s->n == FRAMES, "%s: %u frames yielded, not %d", how, s->n, FRAMES);
	t_check(s->index[0] > 0, "%s: the innermost frame yielded is frame 0 (C's)", how);
	for (unsigned i = 1; i < s->n; i++)
		t_check(s->index[i] > s->index[i - 1], "%s: frame %u after frame %u", how,
			s->index[i], s->index[i - 1]);
	for (unsigned i = 0; want && i < s->n; i++)
		t_check(s->pc[i] == want->pc[i], "%s: frame %u at 0x%llx, not 0x%llx", how, i,
			(unsigned long long)s->pc[i], (unsigned long long)want->pc[i]);
}

static struct seen from_c;

static void in_handler(int sig, siginfo_t *si, void *uc)
{
	FL_OPTS(fl_walk_start, start, .signal_context = uc);
	ucontext_t copy = *(ucontext_t *)uc;
	struct seen s = { 0 };
	int err;

	(void)sig;
	(void)si;
	err = fl_stack_walk(&start, record, &s);
	t_check(err == 0, "from a signal context: %d", err);
	check_frames("from a signal context", &s, &from_c);

	memset(&s, 0, sizeof(s));
	err = fl_stack_walk(NULL, record, &s);
	t_check(err == 0, "from a signal handler: %d", err);
	check_frames("from a signal handler, through the signal's frame", &s, &from_c);

	start.signal_context = &copy;
	err = fl_stack_walk(&start, record, &s);
	t_check(err == -EINVAL, "a copy of the signal context: %d, not -EINVAL", err);
}

static void checks(void)
{
	struct {
		struct fl_walk_start s;
		uint64_t newer;
	} longer;
	struct fl_walk_start small;
	struct sigaction sa;
	struct seen s = { 0 };
	ucontext_t uc;
	int err;

	err = fl_stack_walk(NULL, NULL, NULL);
	t_check(err == -EINVAL, "no callback: %d, not -EINVAL", err);

	memset(&small, 0, sizeof(small));
	small.sz = 4;
	err = fl_stack_walk(&small, record, &s);
	t_check(err == -EINVAL && s.n == 0, "start.sz 4: %d, not -EINVAL", err);

	memset(&longer, 0, sizeof(longer));
	longer.s.sz = sizeof(longer);
	longer.newer = 1;
	err = fl_stack_walk(&longer.s, record, &s);
	t_check(err == -EINVAL && s.n == 0, "a start with an unknown field set: %d", err);
	longer.newer = 0;
	err = fl_stack_walk(&longer.s, record, &s);
	t_check(err == 0, "a longer start, all zero: %d", err);
	check_frames("a longer start", &s, NULL);

	memset(&from_c, 0, sizeof(from_c));
	err = fl_stack_walk(NULL, record, &from_c);
	t_check(err == 0, "from C: %d", err);
	check_frames("from C", &from_c, NULL);
	t_check(from_c.index[0] == 1, "from C: the first frame yielded is frame %u, not 1 "
		"(this function is frame 0)", from_c.index[0]);

	memset(&s, 0, sizeof(s));
	s.stop_at = 2;
	err = fl_stack_walk(NULL, record, &s);
	t_check(err == 7 && s.n == 2, "a callback returning 7 at its 2nd frame: %d after %u",
		err, s.n);

	memset(&s, 0, sizeof(s));
	getcontext(&uc);
	{
		FL_OPTS(fl_walk_start, start, .signal_context = &uc);

		err = fl_stack_walk(&start, record, &s);
		t_check(err == -EINVAL && s.n == 0, "getcontext's context: %d, not -EINVAL", err);
		memset(&uc, 0, sizeof(uc));
		err = fl_stack_walk(&start, record, &s);
		t_check(err == -EINVAL && s.n == 0, "a zeroed context: %d, not -EINVAL", err);
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = in_handler;
	sa.sa_flags = SA_SIGINFO;
	t_check(sigaction(SIGUSR2, &sa, NULL) == 0, "sigaction: %m");
	raise(SIGUSR2);
}

int main(void)
{
	FL_OPTS(fl_init_opts, o, .flags = FL_INIT_NO_AGENT);
	struct seen s = { 0 };
	int64_t got, want = 0;
	int err;

	t_name = gc_test_name = "walk_refuses_bad_input";
	fl_set_log(t_log, NULL);
	err = fl_stack_walk(NULL, record, &s);
	t_check(err == -ENODEV && s.n == 0, "before fl_init: %d, not -ENODEV", err);
	err = fl_init(&o);
	t_check(err == 0, "fl_init: %d", err);
	gc_heap_init();

	safepoint_fn = checks;
	got = deep_run(DEPTH);
	for (int d = 0; d <= DEPTH; d++)
		want += (100 + d % 8) + 100 + 1;
	t_check(got == want, "deep_run(%d) = %lld, not %lld", DEPTH, (long long)got,
		(long long)want);
	printf("PASS walk_refuses_bad_input\n");
	return 0;
}
