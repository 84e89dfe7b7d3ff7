/* SPDX-License-Identifier: MIT */
/*
 * What the libFuzzer targets share: the entry point's prototype, an
 * invariant check that aborts (libFuzzer saves the input as a crash), a
 * reader of the raw bytes independent of the library's, and the checks every
 * diagnostic must pass.
 */
#ifndef FL_FUZZ_H
#define FL_FUZZ_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <faultline/format.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)							\
	do {								\
		if (!(cond))						\
			fuzz_violation(#cond, __FILE__, __LINE__);	\
	} while (0)

static inline __attribute__((noreturn)) void
fuzz_violation(const char *what, const char *file, int line)
{
	fprintf(stderr, "\n%s:%d: invariant violated: %s\n", file, line, what);
	abort();
}

/* n bytes at p as an unsigned integer, little- or big-endian. */
static inline uint64_t raw(const uint8_t *p, unsigned n, int big)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[big ? n - 1 - i : i] << (8 * i);
	return v;
}

/* Errors the format layer may return for malformed input. */
static inline int format_error(int err)
{
	return err == -EINVAL || err == -EMSGSIZE || err == -EPROTONOSUPPORT;
}

/*
 * A failed call's diagnostic: the same error, a message that is
 * NUL-terminated within FL_DIAG_MAX, not empty and starts with prefix.
 */
static inline void check_diag(const struct fl_diag *d, int err, const char *prefix)
{
	const char *nul = memchr(d->msg, '\0', sizeof(d->msg));

	CHECK(d->err == err);
	CHECK(nul != NULL);
	CHECK(nul != d->msg);
	CHECK(strncmp(d->msg, prefix, strlen(prefix)) == 0);
}

#endif /* FL_FUZZ_H */
