/* SPDX-License-Identifier: MIT */
/*
 * The healing tests' harness over the corpus (corpus.c): every function of
 * selftests/progs/nullchecks.ll and mixed.ll and of selftests/heal/shapes.ll
 * called with null and valid pointers, each result printed as a line.  The
 * same calls run in the explicit-check build (the IR compiled without
 * -enable-implicit-null-checks: test/je, never a fault) and in the
 * implicit one, unhealed and healed; their outputs must be equal.
 */
#ifndef FL_TEST_HEAL_CORPUS_H
#define FL_TEST_HEAL_CORPUS_H

#include <stdint.h>
#include <stdio.h>

/*
 * Runs every call once with valid pointers and reps times with each null
 * case, printing each result (and the memory the call wrote) to out.
 * Returns the number of calls made with a null pointer that a check
 * guards (each is one failure of an implicit check in the implicit build).
 */
uint64_t corpus_run(FILE *out, int reps);

#endif /* FL_TEST_HEAL_CORPUS_H */
