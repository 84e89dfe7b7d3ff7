// SPDX-License-Identifier: MIT
/*
 * main of the corpus executables; the symbols the IR modules call are in
 * stubs.c, linked into the same object.
 */
int main(void);

int main(void)
{
	return 0;
}
