/* SPDX-License-Identifier: MIT */
/*
 * libunwind, loaded with RTLD_LOCAL instead of linked (libunwind.h).
 *
 * Debian's libunwind.so.8 also defines the 36 _Unwind_* functions of the
 * C++ ABI, unversioned.  As a DT_NEEDED library of libfaultline.so or of
 * the shim it would be in the process's global scope, and where it comes
 * before libgcc_s there (a C program whose C++ code is in a library, a
 * program run with the shim preloaded) libstdc++'s references to
 * _Unwind_RaiseException@GCC_3.0 and the others bind to it: an unversioned
 * definition satisfies a versioned reference.  The program's exceptions
 * would then be unwound by libunwind, and a thread's cancellation (which
 * glibc unwinds with libgcc_s's _Unwind_ForcedUnwind) would hand libgcc_s's
 * context to libunwind's _Unwind_Get*: C++ destructors are skipped.
 * Linking libunwind.a with its symbols hidden is not possible either:
 * Debian builds it without -fPIC.  Loaded with RTLD_LOCAL, libunwind is in
 * no one's lookup scope but its own, and faultline calls it by pointer.
 *
 * dlmopen(LM_ID_BASE) rather than dlopen: in the shim, dlopen is the
 * interposed one, which rescans the loaded modules (lib/preload/preload.c).
 * A program that links libunwind itself gets the same copy (the loader
 * finds it by its soname), so JIT code registered here is seen by its
 * unwinding too.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "core/log.h"
#include "table/libunwind.h"

/* The soname of the ABI libunwind.h describes (libunwind 1.x). */
#define LIBUNWIND_SONAME "libunwind.so.8"

/* The names libunwind.h's macros give the functions (_ULx86_64_step, ...). */
#define NAME_(x) #x
#define NAME(x) NAME_(x)

const struct fl_libunwind *fl_libunwind;

static struct fl_libunwind loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_err;

static const struct {
	const char *name;
	size_t off;
} functions[] = {
	{ NAME(unw_init_local), offsetof(struct fl_libunwind, init_local) },
	{ NAME(unw_init_local2), offsetof(struct fl_libunwind, init_local2) },
	{ NAME(unw_step), offsetof(struct fl_libunwind, step) },
	{ NAME(unw_get_reg), offsetof(struct fl_libunwind, get_reg) },
	{ NAME(unw_get_save_loc), offsetof(struct fl_libunwind, get_save_loc) },
	{ NAME(unw_get_proc_info_by_ip), offsetof(struct fl_libunwind, get_proc_info_by_ip) },
	{ NAME(unw_flush_cache), offsetof(struct fl_libunwind, flush_cache) },
	{ NAME(_U_dyn_register), offsetof(struct fl_libunwind, dyn_register) },
	{ NAME(_U_dyn_cancel), offsetof(struct fl_libunwind, dyn_cancel) },
};

static void load(void)
{
	unw_addr_space_t *as;
	void *h, *f;

	h = dlmopen(LM_ID_BASE, LIBUNWIND_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fl_log(FL_LOG_ERROR, "libunwind: %s", dlerror());
		load_err = -ENOENT;
		return;
	}
	for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); i++) {
		if (!(f = dlsym(h, functions[i].name))) {
			fl_log(FL_LOG_ERROR, "libunwind: %s", dlerror());
			load_err = -ENOENT;
			return;
		}
		memcpy((char *)&loaded + functions[i].off, &f, sizeof(f));
	}
	if (!(as = dlsym(h, NAME(unw_local_addr_space)))) {
		fl_log(FL_LOG_ERROR, "libunwind: %s", dlerror());
		load_err = -ENOENT;
		return;
	}
	loaded.local_addr_space = *as;
	/* The handle stays open: faultline calls into it until the process ends. */
	fl_libunwind = &loaded;
}

int fl_libunwind_load(void)
{
	pthread_once(&once, load);
	return load_err;
}
