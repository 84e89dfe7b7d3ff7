// SPDX-License-Identifier: MIT
/*
 * The symbols the IR modules in this directory call, for the corpus
 * executables (linked with main.c) and for dt-probe.so (selftests/discovery),
 * which loads corpus libraries into programs that lack them.  The executables are
 * inputs for the conformance test (their sections are parsed, they are not
 * run for their behaviour), so every stub is minimal.  __llvm_deoptimize is
 * libfaultline's to define; a stub stands in for it here so that the
 * corpus does not depend on the library.
 */
#include <stdlib.h>

void throw_npe(void);
void callee(void);
long callee_i64(long x);
void __llvm_deoptimize(void);

void throw_npe(void)
{
	abort();
}

void callee(void)
{
}

long callee_i64(long x)
{
	return x + 1;
}

void __llvm_deoptimize(void)
{
	abort();
}
