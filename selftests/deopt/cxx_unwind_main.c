/* SPDX-License-Identifier: MIT */
/*
 * cxx_exceptions_stay_with_libgcc_s: faultline does not take a program's
 * C++ exceptions away from libgcc_s (lib/table/libunwind.c).  Run three
 * ways by run.sh: without faultline, under the shim (LD_PRELOAD), and
 * linked with libfaultline.so ahead of the C++ library (built with
 * -DLINKED: it calls fl_init).  In each, _Unwind_RaiseException in the
 * global scope must be libgcc_s's, and the C++ library's exceptions, a
 * rethrow and a thread's cancellation must unwind through their
 * destructors (cxx_unwind.cc).  With faultline, libunwind must be loaded,
 * or the test would prove nothing.
 *   cxx_unwind_main plain|preload|linked
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#ifdef LINKED
#include <faultline/dispatch.h>
#endif

int cxx_unwind_run(void);

/*
 * The object whose _Unwind_RaiseException the program's calls reach:
 * dlsym's first definition in the global scope, or, when that is ASan's
 * interceptor (the sanitizer build), the definition it forwards to, the
 * next one in load order.  Returns its file name, or NULL.
 */
static const char *unwinder(void)
{
	struct link_map *lm = NULL;
	void *f = dlsym(RTLD_DEFAULT, "_Unwind_RaiseException"), *self;
	Dl_info di;
	int after_asan = 0;

	if (!f || !dladdr(f, &di) || !di.dli_fname)
		return NULL;
	if (!strstr(di.dli_fname, "/libasan.so"))
		return di.dli_fname;
	self = dlopen(NULL, RTLD_NOW);
	if (!self || dlinfo(self, RTLD_DI_LINKMAP, &lm) != 0)
		return NULL;
	for (; lm; lm = lm->l_next) {
		void *h;

		if (strstr(lm->l_name, "/libasan.so")) {
			after_asan = 1;
			continue;
		}
		if (!after_asan || !(h = dlopen(lm->l_name, RTLD_NOLOAD | RTLD_LAZY)))
			continue;
		f = dlsym(h, "_Unwind_RaiseException");
		if (f && dladdr(f, &di) && di.dli_fname && strcmp(di.dli_fname, lm->l_name) == 0)
			return di.dli_fname;
	}
	return NULL;
}

static int find_libunwind(struct dl_phdr_info *info, size_t size, void *found)
{
	(void)size;
	if (strstr(info->dlpi_name, "/libunwind.so.8"))
		*(int *)found = 1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "plain";
	const char *by;
	int libunwind = 0;

#ifdef LINKED
	struct fl_init_opts o = { .sz = sizeof(o), .flags = FL_INIT_NO_AGENT };
	int err = fl_init(&o);

	if (err) {
		printf("FAIL cxx_exceptions_stay_with_libgcc_s (%s): fl_init: %s\n", how,
		       strerror(-err));
		return 1;
	}
#endif
	dl_iterate_phdr(find_libunwind, &libunwind);
	if (strcmp(how, "plain") != 0 && !libunwind) {
		printf("FAIL cxx_exceptions_stay_with_libgcc_s (%s): libunwind.so.8 is not "
		       "loaded: faultline did not load it\n", how);
		return 1;
	}
	by = unwinder();
	if (!by) {
		printf("FAIL cxx_exceptions_stay_with_libgcc_s (%s): no _Unwind_RaiseException "
		       "in the global scope\n", how);
		return 1;
	}
	if (!strstr(by, "/libgcc_s.so")) {
		printf("FAIL cxx_exceptions_stay_with_libgcc_s (%s): _Unwind_RaiseException is "
		       "%s's, not libgcc_s's\n", how, by);
		return 1;
	}
	if (cxx_unwind_run() != 0)
		return 1;
	printf("PASS cxx_exceptions_stay_with_libgcc_s (%s): _Unwind_RaiseException is %s's%s\n",
	       how, by, libunwind ? ", libunwind.so.8 loaded beside it" : "");
	return 0;
}
