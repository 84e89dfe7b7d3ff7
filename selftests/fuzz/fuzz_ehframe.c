// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the .eh_frame checker (lib/format/ehframe.c) on
 * arbitrary bytes, taken as a section at its own address.  What must hold:
 *  - with all of memory as the code, a success returns FDEs sorted by
 *    start, each covering code (end > start), none overlapping another,
 *    each at an offset whose 8 bytes of length and CIE pointer are inside
 *    the input; a failure is -EINVAL (or -ENOMEM) with a diagnostic that
 *    starts with ".eh_frame: " and nothing returned;
 *  - the same input gives the same answer again;
 *  - a success is still one with the code narrowed to the FDEs' span, and
 *    a failure (the last FDE outside) with the span one byte shorter.
 */
#include <stdbool.h>

#include "fuzz.h"
#include "format/ehframe.h"

#define PREFIX FL_EHFRAME_SECTION ": "

static long fdes(const uint8_t *data, size_t size, uint64_t lo, uint64_t hi,
		 struct fl_eh_fde **out, struct fl_diag *d)
{
	long n;

	memset(d, 0, sizeof(*d));
	n = fl_ehframe_fdes(data, size, (uint64_t)(uintptr_t)data, lo, hi, out, d);
	if (n < 0) {
		CHECK(n == -EINVAL || n == -ENOMEM);
		CHECK(*out == NULL);
		if (n == -EINVAL)
			check_diag(d, (int)n, PREFIX);
	} else {
		CHECK(n > 0 && *out != NULL);
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fl_eh_fde *out = NULL, *again = NULL;
	struct fl_diag d;
	long n, m;

	n = fdes(data, size, 0, UINT64_MAX, &out, &d);
	m = fdes(data, size, 0, UINT64_MAX, &again, &d);
	CHECK(m == n);
	if (n <= 0)
		return 0;
	for (long i = 0; i < n; i++) {
		CHECK(out[i].end > out[i].start);
		CHECK(out[i].offset + 8 <= size);
		CHECK(out[i].start == again[i].start && out[i].end == again[i].end &&
		      out[i].offset == again[i].offset);
		if (i > 0)
			CHECK(out[i].start >= out[i - 1].end);
	}
	free(again);
	again = NULL;
	{
		uint64_t lo = out[0].start, hi = out[n - 1].end;

		CHECK(fdes(data, size, lo, hi, &again, &d) == n);
		free(again);
		again = NULL;
		CHECK(fdes(data, size, lo, hi - 1, &again, &d) == -EINVAL);
	}
	free(out);
	return 0;
}
