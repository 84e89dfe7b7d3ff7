// SPDX-License-Identifier: MIT
/*
 * docs/codegen.md's program for the link modes: calls price.ll's functions
 * (compiled by llc-14, linked in whichever way the guide shows) with an
 * item and with none, after fl_init has registered the implicit checks of
 * every loaded module, and prints what each site of price.ll counted.
 */
#include <stdio.h>
#include <string.h>

#include <faultline/dispatch.h>

int price_of(int *item);
int set_price(int *item, int price);

static int print_site(const struct fl_site *s, void *ctx)
{
	const char *base = strrchr(s->module_name, '/');

	(void)ctx;
	/* The main program's name is "". */
	printf("site in %s: %s, %llu fault(s)\n",
	       base ? base + 1 : *s->module_name ? s->module_name : "the program",
	       fl_fault_kind_name(s->kind), (unsigned long long)s->faults);
	return 0;
}

int main(void)
{
	int item = 42, ret;

	ret = fl_init(NULL);
	if (ret < 0) {
		fprintf(stderr, "shop: fl_init: %s\n", strerror(-ret));
		return 1;
	}
	printf("price_of(&item) = %d\n", price_of(&item));
	printf("price_of(NULL) = %d\n", price_of(NULL));
	printf("set_price(NULL, 7) = %d\n", set_price(NULL, 7));
	fl_site_for_each(print_site, NULL);
	return 0;
}
