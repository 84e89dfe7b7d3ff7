// SPDX-License-Identifier: MIT
/*
 * corpus_explicit [REPS]: the corpus harness (corpus.c) over the IR compiled
 * without -enable-implicit-null-checks (every check a test/je: nothing
 * faults, nothing to heal).  Prints the calls' results: the reference the
 * implicit build's output must equal, unhealed and healed.
 */
#include <stdlib.h>

#include "corpus.h"

int main(int argc, char **argv)
{
	corpus_run(stdout, argc > 1 ? atoi(argv[1]) : 1);
	return 0;
}
