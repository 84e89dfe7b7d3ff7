// SPDX-License-Identifier: MIT
/*
 * JIT code whose functions are named at registration, for the CLI's
 * end-to-end tests: faultlined must show each JIT site with the function
 * the program registered (fl_jit_reg.functions), JIT code having no symbol
 * table of its own.
 *
 *   jit-names L S   compiles two functions with MCJIT (selftests/jit's
 *                   test JIT), registers them as module "jit-names" with
 *                   their names, fails jit_price_of's check L times and
 *                   jit_set_price's S times, prints "ready PID"; exits 0
 *                   at EOF on stdin, having unregistered the code.
 * A check that does not return its sentinel prints "FAIL" and exits 1.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <faultline/dispatch.h>

#include "../../jit/mcjit.h"

static const char ir[] =
	"define i32 @jit_price_of(i32* %item) {\n"
	"entry:\n"
	"  %is_null = icmp eq i32* %item, null\n"
	"  br i1 %is_null, label %none, label %load, !make.implicit !0\n"
	"load:\n"
	"  %v = load i32, i32* %item\n"
	"  ret i32 %v\n"
	"none:\n"
	"  ret i32 -1\n"
	"}\n"
	"define i32 @jit_set_price(i32* %item, i32 %price) {\n"
	"entry:\n"
	"  %is_null = icmp eq i32* %item, null\n"
	"  br i1 %is_null, label %none, label %store, !make.implicit !0\n"
	"store:\n"
	"  store i32 %price, i32* %item\n"
	"  ret i32 0\n"
	"none:\n"
	"  ret i32 1\n"
	"}\n"
	"!0 = !{}\n";

static const char *const names[] = { "jit_price_of", "jit_set_price" };
#define NFN 2

int main(int argc, char **argv)
{
	struct jit_module m = { 0 };
	struct fl_jit_function fns[NFN];
	struct fl_jit_reg reg;
	struct fl_diag diag;
	int (*price_of)(int *);
	int (*set_price)(int *, int);
	int item = 5, id, err;
	long l, s;
	char line[64];

	if (argc != 3) {
		fprintf(stderr, "usage: %s L S\n", argv[0]);
		return 2;
	}
	l = atol(argv[1]);
	s = atol(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	err = fl_init(NULL);
	if (err) {
		fprintf(stderr, "jit-names: fl_init: %s\n", strerror(-err));
		return 1;
	}
	jit_setup();
	if (jit_compile(&m, ir, "jit-names")) {
		fprintf(stderr, "jit-names: %s\n", m.err);
		jit_free(&m);
		return 1;
	}
	/* Each function up to the next one's start, the last to the code's end. */
	for (int i = 0; i < NFN; i++) {
		fns[i].name = names[i];
		fns[i].start = jit_function(&m, names[i]);
	}
	for (int i = 0; i < NFN; i++) {
		uint64_t end = m.code_start + m.code_size;

		for (int j = 0; j < NFN; j++)
			if (fns[j].start > fns[i].start && fns[j].start < end)
				end = fns[j].start;
		fns[i].size = end - fns[i].start;
	}
	jit_reg(&m, "jit-names", &reg);
	reg.functions = fns;
	reg.num_functions = NFN;
	id = fl_jit_register(&reg, &diag);
	if (id < 0) {
		fprintf(stderr, "jit-names: fl_jit_register: %s\n",
			id == -EINVAL ? diag.msg : strerror(-id));
		jit_free(&m);
		return 1;
	}

	price_of = (int (*)(int *))(uintptr_t)fns[0].start;
	set_price = (int (*)(int *, int))(uintptr_t)fns[1].start;
	for (long i = 0; i < l; i++)
		if (price_of(NULL) != -1 || price_of(&item) != 5)
			goto bad;
	for (long i = 0; i < s; i++)
		if (set_price(NULL, 7) != 1)
			goto bad;
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin))
		;
	fl_jit_unregister(id);
	jit_free(&m);
	return 0;
bad:
	printf("FAIL: a JIT check did not return its sentinel\n");
	fl_jit_unregister(id);
	jit_free(&m);
	return 1;
}
