// SPDX-License-Identifier: MIT
/*
 * The handler's decoded deopt values equal what the IR passed, for values
 * of every location kind (Register, Direct, Indirect, Constant,
 * ConstantIndex) and size (1, 2, 4, 8; 16 for an XMM register), as
 * llc-14 lays them out (on AArch64 a Register location is 4 or 8 bytes:
 * an i8 or i16 kept in a W register has its size, 4; a float or a double
 * in a V register its S or D size) at -O0..-O3, with deopt values spilled and in
 * registers (values.ll, a copy per variant), in the program's link mode
 * (build.mk links this program non-PIE, PIE, and against a shared library
 * of the variants).  The variants' callers (@keeps) get their
 * callee-saved registers back.  Every kind and size must have been seen.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "values.h"

static const char *const variants[] = {
	"O0_stack", "O1_stack", "O2_stack", "O3_stack",
	"O0_reg", "O1_reg", "O2_reg", "O3_reg",
};

static void *sym(const char *prefix, const char *v)
{
	char name[64];
	void *p;

	snprintf(name, sizeof(name), "%s_%s", prefix, v);
	p = dlsym(RTLD_DEFAULT, name);
	t_check(p, "no symbol %s", name);
	return p;
}

int main(void)
{
	t_start("deopt_values_every_kind_and_size");
	t_check(fl_deopt_set_handler(values_handler, NULL) == 0, "fl_deopt_set_handler");
	for (size_t k = 0; k < sizeof(variants) / sizeof(variants[0]); k++)
		values_run(variants[k], (values_fn)sym("values", variants[k]),
			   (keeps_fn)sym("keeps", variants[k]));
	for (int kind = 1; kind <= 5; kind++) {
		bool any = false;

		for (int s = 0; s < 5; s++)
			any |= seen[kind][s];
		t_check(any, "no %s location seen", values_kinds[kind]);
	}
	for (int s = 0; s < 4; s++) {
		t_check(seen[3][s], "no Indirect location of %d bytes seen", 1 << s);
#if defined(__aarch64__)
		if (s < 2)
			continue;
		t_check(seen_vector[s], "no V Register location of %d bytes seen", 1 << s);
#endif
		t_check(seen[1][s], "no Register location of %d bytes seen", 1 << s);
	}
#if !defined(__aarch64__)
	t_check(seen[1][4] && seen_vector[4], "no XMM Register location (16 bytes) seen");
#endif
	printf("PASS %s: %u deoptimizations, %zu variants\n", t_name, deopts,
	       sizeof(variants) / sizeof(variants[0]));
	return 0;
}
