// SPDX-License-Identifier: MIT
/*
 * The C++ half of cxx_exceptions_stay_with_libgcc_s (cxx_unwind_main.c):
 * a library, so that the program has no direct dependency on libgcc_s and
 * the loader's search order alone decides who unwinds its exceptions.
 * Returns 0 when every exception was caught where it should have been and
 * every destructor on the way ran, 1 (with the reason printed) otherwise.
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include <stdexcept>

namespace {

struct counted {
	int *n;
	~counted() { ++*n; }
};

int __attribute__((noinline)) descend(int depth, int *destroyed)
{
	counted c{destroyed};

	if (depth == 0)
		throw std::runtime_error("from the bottom");
	return descend(depth - 1, destroyed) + 1;
}

void *wait_to_be_cancelled(void *arg)
{
	counted c{static_cast<int *>(arg)};

	for (;;)
		pause();
	return nullptr;
}

}

extern "C" int cxx_unwind_run(void)
{
	const int depth = 6;
	int destroyed = 0, rethrown = 0, caught = 0, cancelled_destroyed = 0;
	pthread_t t;
	void *ret;

	try {
		try {
			descend(depth, &destroyed);
		} catch (const std::runtime_error &) {
			rethrown = 1;
			throw;
		}
	} catch (const std::exception &) {
		caught = 1;
	}
	if (!rethrown || !caught || destroyed != depth + 1) {
		printf("FAIL cxx_exceptions_stay_with_libgcc_s: rethrown %d, caught %d, "
		       "%d of %d destructors ran\n", rethrown, caught, destroyed, depth + 1);
		return 1;
	}
	/* glibc unwinds a cancelled thread with libgcc_s's _Unwind_ForcedUnwind. */
	if (pthread_create(&t, nullptr, wait_to_be_cancelled, &cancelled_destroyed) ||
	    pthread_cancel(t) || pthread_join(t, &ret)) {
		printf("FAIL cxx_exceptions_stay_with_libgcc_s: the thread to cancel\n");
		return 1;
	}
	if (ret != PTHREAD_CANCELED || cancelled_destroyed != 1) {
		printf("FAIL cxx_exceptions_stay_with_libgcc_s: the cancelled thread %s, "
		       "its destructor ran %d times (1 expected)\n",
		       ret == PTHREAD_CANCELED ? "was cancelled" : "was not cancelled",
		       cancelled_destroyed);
		return 1;
	}
	return 0;
}
