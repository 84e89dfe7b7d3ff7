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
	int64_t out = 0;
	char buf[64];

	t_start("returns_every_type");
	t_check(fl_deopt_set_handler(handler, NULL) == 0, "fl_deopt_set_handler");
	for (int i = -3; i < 1000; i += 7) {
		int64_t big = (int64_t)i * 0x100000007ll;
		float f = (float)i / 8.0f;
		double d = (double)i / 3.0;

		t_check(ret_i32(i, false) == i, "i32: fast path");
		t_check(ret_i32(i, true) == ret_i32_expected(i), "i32 %d: %d", i, ret_i32(i, true));
		t_check(ret_i64(big, true) == ret_i64_expected(big), "i64 %lld",
			(long long)big);
		t_check(ret_ptr(buf + i % 32, true) == ret_ptr_expected(buf + i % 32), "ptr");
		t_check(ret_f32(f, false) == f, "f32: fast path");
		t_check(ret_f32(f, true) == ret_f32_expected(f), "f32 %g: %g", (double)f,
			(double)ret_f32(f, true));
		t_check(ret_f64(d, true) == ret_f64_expected(d), "f64 %g: %g", d, ret_f64(d, true));
		ret_void(&out, big, true);
		t_check(out == ret_void_expected(big), "void: %lld", (long long)out);
		ret_void(&out, big, false);
		t_check(out == big, "void: fast path");
	}
	printf("PASS %s\n", t_name);
	return 0;
}
