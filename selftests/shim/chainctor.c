// SPDX-License-Identifier: MIT
/*
 * A DT_NEEDED library of the chain test program: its constructor runs
 * before the constructor of a library in LD_PRELOAD (see chain.c), and
 * installs the case's action there when chain's argv asks for "ctor".
 */
void (*chain_ctor_hook)(int argc, char **argv);

__attribute__((constructor)) static void chainctor(int argc, char **argv)
{
	if (chain_ctor_hook)
		chain_ctor_hook(argc, argv);
}
