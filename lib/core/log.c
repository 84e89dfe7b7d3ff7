// SPDX-License-Identifier: MIT
/* The log callback: the only way libfaultline says anything. */
#include <stdarg.h>
#include <stddef.h>

#include <faultline/log.h>

#include "core/fmt.h"
#include "core/log.h"

struct log_sink {
	fl_log_fn fn;
	void *ctx;
};

/*
 * A sequence lock: the setter makes seq odd, writes (fn, ctx), makes it even
 * again; a reader copies the pair and retries if seq was odd or changed.
 * Readers never block a setter and never see a torn pair.  Setters are
 * serialized by a spin flag: they are rare and never in signal context.
 */
static struct log_sink sink;
static unsigned seq;
static int setting;

fl_log_fn fl_set_log(fl_log_fn fn, void *ctx)
{
	fl_log_fn old;

	while (__atomic_exchange_n(&setting, 1, __ATOMIC_ACQUIRE))
		;
	old = sink.fn;
	__atomic_store_n(&seq, seq + 1, __ATOMIC_RELAXED);
	/* Orders the odd seq before the writes; pairs with read_sink's acquire fence. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&sink.fn, fn, __ATOMIC_RELAXED);
	__atomic_store_n(&sink.ctx, ctx, __ATOMIC_RELAXED);
	/* Orders the writes before the even seq; pairs with read_sink's acquire load. */
	__atomic_store_n(&seq, seq + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&setting, 0, __ATOMIC_RELEASE);
	return old;
}

static struct log_sink read_sink(void)
{
	struct log_sink copy;
	unsigned before, after;

	do {
		/* Pairs with the release store of the even seq in fl_set_log. */
		before = __atomic_load_n(&seq, __ATOMIC_ACQUIRE);
		copy.fn = __atomic_load_n(&sink.fn, __ATOMIC_RELAXED);
		copy.ctx = __atomic_load_n(&sink.ctx, __ATOMIC_RELAXED);
		/* Pairs with the release fence after the odd seq in fl_set_log. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		after = __atomic_load_n(&seq, __ATOMIC_RELAXED);
	} while ((before & 1) || before != after);
	return copy;
}

int fl_log_enabled(void)
{
	return read_sink().fn != NULL;
}

void fl_log(enum fl_log_level level, const char *fmt, ...)
{
	struct log_sink to = read_sink();
	char msg[512];
	va_list ap;

	if (!to.fn)
		return;
	va_start(ap, fmt);
	fl_vfmt(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	to.fn(level, msg, to.ctx);
}
