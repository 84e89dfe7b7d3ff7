// SPDX-License-Identifier: MIT
/*
 * docs/codegen.md's deoptimization example: total() (deopt.ll) is compiled
 * code that assumes every price is positive.  When one is not, its guard
 * deoptimizes: __llvm_deoptimize (libfaultline) decodes the "deopt" state
 * from the stack map record of the call and hands it to this runtime's
 * handler, which finishes the sum the slow way (an item without a price
 * counts 0) and returns what total() returns.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <faultline/deopt.h>
#include <faultline/dispatch.h>

int64_t total(const int32_t *prices, int32_t n);

struct cart {
	const int32_t *prices;
	int32_t n;
};

/* The "interpreter": resumes at item i with the sum so far. */
static void finish(const struct fl_deopt_state *state, struct fl_deopt_return *ret, void *ctx)
{
	const struct cart *cart = ctx;
	/* The bundle's values, in order: "deopt"(i32 %i, i64 %sum). */
	int32_t i = (int32_t)state->values[0].value;
	int64_t sum = (int64_t)state->values[1].value;

	printf("deoptimized in total at item %d, sum so far %lld\n", i, (long long)sum);
	for (; i < cart->n; i++)
		sum += cart->prices[i] > 0 ? cart->prices[i] : 0;
	ret->rax = (uint64_t)sum;
}

int main(void)
{
	static const int32_t fast[] = { 10, 20, 30 };
	static const int32_t slow[] = { 10, 20, 0, 30, -5, 40 };
	struct cart cart = { slow, 6 };
	int ret;

	/* Registers the program's stack maps (the deopt records) too. */
	ret = fl_init(NULL);
	if (ret == 0)
		ret = fl_deopt_set_handler(finish, &cart);
	if (ret < 0) {
		fprintf(stderr, "deopt: %s\n", strerror(-ret));
		return 1;
	}
	printf("total(fast) = %lld\n", (long long)total(fast, 3));
	printf("total(slow) = %lld\n", (long long)total(slow, 6));
	return 0;
}
