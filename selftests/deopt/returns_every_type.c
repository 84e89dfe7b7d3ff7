// SPDX-License-Identifier: MIT
/*
 * A deoptimized function returns the handler's value to its caller as its
 * own type returns it: i32, i64 and a pointer in rax, float and double in
 * xmm0 (faultline's own return: libunwind cannot set an XMM register),
 * void.  The same functions return normally when they do not deoptimize.
 */
#include <stdio.h>

#include "common.h"

static void handler(const struct fl_deopt_state *st, struct fl_deopt_return *ret, void *ctx)
{
	char why[256];

	(void)ctx;
	if (!ret_handle(st, ret, why, sizeof(why)))
		t_fail("handler: %s", why);
}

int main(void)
{
	t_start("returns_every_type");
	t_check(fl_deopt_set_handler(handler, NULL) == 0, "fl_deopt_set_handler");
	ret_check_all(&RET_LINKED, "linked");
	printf("PASS %s\n", t_name);
	return 0;
}
