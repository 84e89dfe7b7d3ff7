// SPDX-License-Identifier: MIT
/* The options rule: see opts.h. */
#include <errno.h>
#include <string.h>

#include "core/opts.h"

int fl_opts_copy(void *copy, size_t known, const void *opts)
{
	const unsigned char *p = opts;
	size_t sz;

	memset(copy, 0, known);
	if (!opts)
		return 0;
	memcpy(&sz, opts, sizeof(sz));
	if (sz < sizeof(sz))
		return -EINVAL;
	for (size_t i = known; i < sz; i++)
		if (p[i])
			return -EINVAL;
	memcpy(copy, opts, sz < known ? sz : known);
	return 0;
}

int fl_opts_out(void *to, const void *from, size_t known)
{
	unsigned char *p = to;
	size_t sz;

	memcpy(&sz, to, sizeof(sz));
	if (sz < sizeof(sz))
		return -EINVAL;
	memcpy(p + sizeof(sz), (const unsigned char *)from + sizeof(sz),
	       (sz < known ? sz : known) - sizeof(sz));
	if (sz > known)
		memset(p + known, 0, sz - known);
	return 0;
}
