// SPDX-License-Identifier: MIT
/*
 * docs/codegen.md's unmodified program: knows nothing of faultline, and
 * runs under faultline run (the preload shim registers its checks).
 */
#include <stdio.h>

int price_of(int *item);

int main(void)
{
	int item = 42;

	printf("price_of(&item) = %d\n", price_of(&item));
	printf("price_of(NULL) = %d\n", price_of(NULL));
	return 0;
}
