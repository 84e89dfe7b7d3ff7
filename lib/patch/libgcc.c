// SPDX-License-Identifier: MIT
/*
 * libgcc_s, found in the process (libgcc.h).
 *
 * The unwinder of C++ exceptions (libstdc++'s _Unwind_RaiseException), of
 * a thread's cancellation and of glibc's backtrace() is libgcc_s.so.1's.
 * Code registered with its __register_frame is found by all of them, but
 * only in that copy: so it is the copy the process has, found by its
 * soname.  A C program loads it lazily (backtrace() and pthread_cancel
 * dlopen it at their first call): loading it here first gives them the
 * same copy later, since the loader finds a loaded library by its soname.
 * dlmopen(LM_ID_BASE) rather than dlopen for the reason lib/table/
 * libunwind.c gives: under the shim, dlopen is the interposed one.
 * RTLD_LOCAL: it adds nothing to the program's global scope (the program
 * or its libraries that need it have it in theirs already).
 *
 * A program linked with -static-libgcc has its own copy of the unwinder,
 * which this registration does not reach.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "core/log.h"
#include "patch/libgcc.h"

#define LIBGCC_SONAME "libgcc_s.so.1"

static struct fl_libgcc loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_err;

static void load(void)
{
	static const char *const names[] = { "__register_frame", "__deregister_frame",
					     "_Unwind_Find_FDE" };
	void *f[3];
	void *h;

	h = dlmopen(LM_ID_BASE, LIBGCC_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fl_log(FL_LOG_ERROR, "libgcc_s: %s", dlerror());
		load_err = -ENOENT;
		return;
	}
	for (size_t i = 0; i < 3; i++) {
		if (!(f[i] = dlsym(h, names[i]))) {
			fl_log(FL_LOG_ERROR, "libgcc_s: %s", dlerror());
			load_err = -ENOENT;
			return;
		}
	}
	memcpy(&loaded.register_frame, &f[0], sizeof(f[0]));
	memcpy(&loaded.deregister_frame, &f[1], sizeof(f[1]));
	memcpy(&loaded.find_fde, &f[2], sizeof(f[2]));
	/* The handle stays open: registered frames live in the library. */
}

int fl_libgcc_load(const struct fl_libgcc **out)
{
	pthread_once(&once, load);
	*out = load_err ? NULL : &loaded;
	return load_err;
}
