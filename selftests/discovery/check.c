// SPDX-License-Identifier: MIT
/*
 * The discovery layer on real linked programs: a program (or a library it
 * dlopens) built from globals.ll and locals.ll in one link mode asks the
 * discovery API for its own modules and checks that every runtime function
 * address it computes is the real address of the function (&f or dlsym) and
 * lies in an executable segment, and that the file-level API names the
 * functions.
 *
 *   dt-MODE self MODE                   (DT_SELF build, the objects linked in)
 *   dt-host dlopen MODE LIB             LIB linked from the objects
 *   dt-host stale MODE LIB OTHER DIR    LIB replaced on disk by OTHER after
 *                                       dlopen: must be -ESTALE
 *   dt-preempt preempted MODE LIB       this program exports dt_load, which
 *                                       the library's symbolic relocation
 *                                       then binds to: must be -ERANGE
 *   dt-host object MODE FILE            ld -r of both objects (ET_REL)
 *
 * Prints what it measured and "PASS MODE" or "FAIL MODE: why"; exits 0 on
 * pass.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <faultline/discovery.h>

enum { FM = 1 << FL_SECTION_FAULTMAP, SM = 1 << FL_SECTION_STACKMAP };

struct expect {
	const char *name;
	uint64_t addr;		/* 0: not linked in (locals.ll is optional) */
	unsigned kinds;		/* FM, SM */
	unsigned seen[FL_SECTION_KINDS];
};

/* globals.ll and (not in every mode) locals.ll */
static struct expect expected[] = {
	{ "dt_load", 0, FM },
	{ "dt_store", 0, FM },
	{ "dt_hidden", 0, FM },
	{ "dt_local", 0, FM | SM },
	{ "dt_sm", 0, SM },
};
#define NEXPECTED (sizeof(expected) / sizeof(expected[0]))

static const char *mode = "?";
static int failures;
static int printed;	/* the measurements are printed once */

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("  error: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	failures++;
}

static int finish(void)
{
	if (failures) {
		printf("FAIL %s: %d error(s)\n", mode, failures);
		return 1;
	}
	printf("PASS %s\n", mode);
	return 0;
}

static struct expect *expect_at(uint64_t addr)
{
	size_t i;

	for (i = 0; i < NEXPECTED; i++)
		if (expected[i].addr && expected[i].addr == addr)
			return &expected[i];
	return NULL;
}

static const char *kind_name(int k)
{
	return fl_section_kind_name((enum fl_section_kind)k);
}

/* The value of the address field at off of a file's section, as stored. */
static uint64_t file_value(const struct fl_elf_section *s, size_t off)
{
	uint64_t v;

	memcpy(&v, (const unsigned char *)s->data + off, sizeof(v));
	return v;
}

/* Everything about one module that holds the functions of the .ll files. */
static void check_module(const struct fl_module *m)
{
	struct fl_diag d = { 0 };
	struct fl_elf *elf = NULL;
	size_t i, relocated = 0, total = 0;
	int k;

	if (m->err) {
		fail("module %s: %s", m->path, m->diag.msg);
		return;
	}
	if (fl_elf_open(m->path, NULL, &elf, &d))
		fail("fl_elf_open(%s): %s", m->path, d.msg);
	for (k = 0; k < FL_SECTION_KINDS; k++) {
		const struct fl_module_section *s = &m->sections[k];
		struct fl_elf_section fs;
		bool have_file = elf && !fl_elf_section(elf, k, &fs);

		if (!s->data) {
			fail("%s: not found", kind_name(k));
			continue;
		}
		if (elf && !have_file)
			fail("%s: fl_elf_section failed on %s", kind_name(k), m->path);
		for (i = 0; i < s->num_functions; i++) {
			const struct fl_module_function *f = &s->functions[i];
			struct expect *e = expect_at(f->address);
			uint64_t rt = 0, in_memory, link;
			const char *name;

			total++;
			relocated += f->relocated;
			if (!e || !(e->kinds & (1u << k))) {
				fail("%s: function %zu: address 0x%llx is none of the expected functions",
				     kind_name(k), i, (unsigned long long)f->address);
				continue;
			}
			e->seen[k]++;
			if (!fl_module_text_contains(m, f->address))
				fail("%s: %s: 0x%llx not in an executable segment", kind_name(k),
				     e->name, (unsigned long long)f->address);
			memcpy(&in_memory, (const unsigned char *)s->data + f->address_offset, 8);
			if (in_memory != f->stored)
				fail("%s: %s: stored 0x%llx, memory holds 0x%llx", kind_name(k), e->name,
				     (unsigned long long)f->stored, (unsigned long long)in_memory);
			if (fl_module_function_address(m, k, f->address_offset, f->stored, &rt) ||
			    rt != f->address)
				fail("%s: %s: fl_module_function_address disagrees (0x%llx)",
				     kind_name(k), e->name, (unsigned long long)rt);
			if (!have_file)
				continue;
			/* The file-level view: link-time address + bias, and the name. */
			if (fl_elf_function_address(elf, k, f->address_offset,
						    file_value(&fs, f->address_offset), &link))
				fail("%s: %s: fl_elf_function_address failed", kind_name(k), e->name);
			else if (link + m->load_bias != f->address)
				fail("%s: %s: link-time 0x%llx + bias 0x%llx != 0x%llx", kind_name(k),
				     e->name, (unsigned long long)link,
				     (unsigned long long)m->load_bias,
				     (unsigned long long)f->address);
			name = fl_elf_function_name(elf, k, f->address_offset,
						    file_value(&fs, f->address_offset));
			if (!name || strcmp(name, e->name))
				fail("%s: function at 0x%llx is named %s, expected %s", kind_name(k),
				     (unsigned long long)f->address, name ? name : "(null)", e->name);
			if (printed)
				continue;
			printf("  %s %-9s 0x%llx  file 0x%llx  memory 0x%llx  %s\n", kind_name(k),
			       e->name, (unsigned long long)f->address,
			       (unsigned long long)file_value(&fs, f->address_offset),
			       (unsigned long long)f->stored,
			       f->relocated ? "relocated by the loader" : "+ load bias");
		}
	}
	for (i = 0; i < NEXPECTED; i++)
		for (k = 0; k < FL_SECTION_KINDS; k++)
			if (expected[i].addr && (expected[i].kinds & (1u << k)) &&
			    expected[i].seen[k] != 1)
				fail("%s: %s seen %u times", kind_name(k), expected[i].name,
				     expected[i].seen[k]);
	if (!printed++)
		printf("  module %s: bias 0x%llx, %zu executable segment(s), %zu function "
		       "fields, %zu relocated by the loader\n",
		       m->path, (unsigned long long)m->load_bias, m->num_text, total, relocated);
	fl_elf_close(elf);
}

static void reset_seen(void)
{
	size_t i;

	for (i = 0; i < NEXPECTED; i++)
		memset(expected[i].seen, 0, sizeof(expected[i].seen));
}

struct walk {
	const void *needle;	/* an address in the module under test */
	int with_maps;
	int found;
};

/* fl_module_for_each: only the module under test may have maps, none errors. */
static int walk_module(const struct fl_module *m, void *ctx)
{
	struct walk *w = ctx;

	if (m->err) {
		fail("fl_module_for_each: %s", m->diag.msg);
		return 0;
	}
	w->with_maps++;
	if (fl_module_text_contains(m, (uintptr_t)w->needle)) {
		w->found++;
		reset_seen();
		check_module(m);
	}
	return 0;
}

static void check_for_each(const void *needle)
{
	struct walk w = { .needle = needle };
	int ret = fl_module_for_each(walk_module, &w, NULL);

	if (ret)
		fail("fl_module_for_each returned %d", ret);
	if (w.with_maps != 1 || w.found != 1)
		fail("fl_module_for_each: %d module(s) with maps, %d of them the one under test",
		     w.with_maps, w.found);
}

static void check_open_addr(const void *addr)
{
	struct fl_diag d = { 0 };
	struct fl_module *m;

	if (fl_module_open_addr(addr, NULL, &m, &d)) {
		fail("fl_module_open_addr: %s", d.msg);
		return;
	}
	reset_seen();
	check_module(m);
	fl_module_free(m);
}

static void check_open_handle(void *handle)
{
	struct fl_diag d = { 0 };
	struct fl_module *m;

	if (fl_module_open_handle(handle, NULL, &m, &d)) {
		fail("fl_module_open_handle: %s", d.msg);
		return;
	}
	reset_seen();
	check_module(m);
	fl_module_free(m);
}

#ifdef DT_SELF
int dt_load(int *p);
void dt_store(long *p, long x);
long dt_sm(long a);
/* locals.ll: not linked in the lld -pie mode, which cannot link it. */
int dt_hidden(int *p) __attribute__((weak));
void *dt_local_addr(void) __attribute__((weak));

static int run_self(void)
{
	void *self;

	expected[0].addr = (uintptr_t)dt_load;
	expected[1].addr = (uintptr_t)dt_store;
	expected[2].addr = (uintptr_t)dt_hidden;
	expected[3].addr = dt_local_addr ? (uintptr_t)dt_local_addr() : 0;
	expected[4].addr = (uintptr_t)dt_sm;
	if (!dt_local_addr)
		printf("  (locals.ll not linked: dt_hidden and dt_local not expected)\n");

	printf("%s: the main program\n", mode);
	check_open_addr((const void *)dt_load);
	self = dlopen(NULL, RTLD_NOW);
	if (!self) {
		fail("dlopen(NULL): %s", dlerror());
	} else {
		check_open_handle(self);
		dlclose(self);
	}
	check_for_each((const void *)dt_load);
	return finish();
}
#endif

#ifdef DT_PREEMPT
/* Exported (-rdynamic): the library's R_X86_64_64 against dt_load binds here. */
int dt_load(int *p);
int dt_load(int *p)
{
	return p ? *p : 0;
}
#endif

static void *open_lib(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	void *(*local_addr)(void);

	if (!h) {
		fail("dlopen(%s): %s", lib, dlerror());
		return NULL;
	}
	expected[0].addr = (uintptr_t)dlsym(h, "dt_load");
	expected[1].addr = (uintptr_t)dlsym(h, "dt_store");
	expected[4].addr = (uintptr_t)dlsym(h, "dt_sm");
	*(void **)&local_addr = dlsym(h, "dt_local_addr");
	expected[3].addr = local_addr ? (uintptr_t)local_addr() : 0;
	expected[2].addr = 0;	/* hidden: see find_hidden */
	return h;
}

/*
 * dt_hidden is not exported, so it has no dlsym address: the expectation is
 * the one function of the fault map that is none of the others, found with
 * fl_module_open_handle and then checked like the rest (in text, named
 * dt_hidden by the file).
 */
static void find_hidden(void *h)
{
	const struct fl_module_section *s;
	struct fl_diag d = { 0 };
	struct fl_module *m;
	size_t i;

	if (!expected[3].addr || fl_module_open_handle(h, NULL, &m, &d))
		return;		/* no locals.ll; or reported by check_open_handle */
	s = &m->sections[FL_SECTION_FAULTMAP];
	for (i = 0; i < s->num_functions; i++)
		if (!expect_at(s->functions[i].address))
			expected[2].addr = s->functions[i].address;
	fl_module_free(m);
}

static int run_dlopen(const char *lib)
{
	void *h;

	printf("%s: %s through dlopen\n", mode, lib);
	h = open_lib(lib);
	if (!h)
		return finish();
	find_hidden(h);
	check_open_handle(h);
	check_open_addr((const void *)(uintptr_t)expected[4].addr);
	check_for_each((const void *)(uintptr_t)expected[4].addr);
	dlclose(h);
	return finish();
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in, out, ok = 1;

	in = open(from, O_RDONLY);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (in < 0 || out < 0)
		ok = 0;
	while (ok && (n = read(in, buf, sizeof(buf))) > 0)
		ok = write(out, buf, (size_t)n) == n;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ok ? 0 : -1;
}

/* A library replaced on disk after it was loaded: -ESTALE, not wrong addresses. */
static int run_stale(const char *lib, const char *other, const char *dir)
{
	char path[4096], tmp[4096];
	struct fl_diag d = { 0 };
	struct fl_module *m;
	void *h;
	int ret;

	printf("%s: %s replaced on disk by %s after dlopen\n", mode, lib, other);
	snprintf(path, sizeof(path), "%s/stale.so", dir);
	snprintf(tmp, sizeof(tmp), "%s/stale.so.new", dir);
	if (copy_file(lib, path)) {
		fail("cannot copy %s to %s", lib, path);
		return finish();
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fail("dlopen(%s): %s", path, dlerror());
		return finish();
	}
	ret = fl_module_open_handle(h, NULL, &m, &d);
	if (ret)
		fail("before the replacement: %s", d.msg);
	else
		fl_module_free(m);
	if (copy_file(other, tmp) || rename(tmp, path)) {
		fail("cannot replace %s", path);
	} else {
		ret = fl_module_open_handle(h, NULL, &m, &d);
		printf("  after the replacement: %d: %s\n", ret, d.msg);
		if (ret != -ESTALE)
			fail("expected -ESTALE, got %d", ret);
		if (!ret)
			fl_module_free(m);
	}
	dlclose(h);
	unlink(path);
	return finish();
}

/* The library's dt_load relocation bound to this program's dt_load: -ERANGE. */
static int run_preempted(const char *lib)
{
	struct fl_diag d = { 0 };
	struct fl_module *m;
	void *h;
	int ret;

	printf("%s: %s with dt_load preempted by the main program\n", mode, lib);
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fail("dlopen(%s): %s", lib, dlerror());
		return finish();
	}
	ret = fl_module_open_handle(h, NULL, &m, &d);
	printf("  %d: %s\n", ret, d.msg);
	if (ret != -ERANGE)
		fail("expected -ERANGE, got %d", ret);
	else if (!strstr(d.msg, ".llvm_faultmaps") || !strstr(d.msg, "not in an executable segment"))
		fail("the message does not say which section and why");
	if (!ret)
		fl_module_free(m);
	dlclose(h);
	return finish();
}

/* ET_REL: each address field's relocation names its function. */
static int run_object(const char *path)
{
	struct fl_diag d = { 0 };
	struct fl_elf *elf;
	int k;

	printf("%s: %s\n", mode, path);
	if (fl_elf_open(path, NULL, &elf, &d)) {
		fail("%s", d.msg);
		return finish();
	}
	if (fl_elf_type(elf) != ET_REL)
		fail("e_type %u", fl_elf_type(elf));
	for (k = 0; k < FL_SECTION_KINDS; k++) {
		struct fl_faultmap_cursor fc;
		struct fl_stackmap_cursor sc;
		struct fl_faultmap_event fe;
		struct fl_stackmap_event se;
		struct fl_elf_section s;

		if (fl_elf_section(elf, k, &s)) {
			fail("%s: not found", kind_name(k));
			continue;
		}
		if (k == FL_SECTION_FAULTMAP)
			fl_faultmap_cursor_init(&fc, s.data, s.size, s.parse_flags, &d);
		else
			fl_stackmap_cursor_init(&sc, s.data, s.size, s.parse_flags, &d);
		for (;;) {
			struct fl_elf_reloc r;
			size_t off, i;
			int ret;

			if (k == FL_SECTION_FAULTMAP) {
				ret = fl_faultmap_next(&fc, &fe);
				if (ret <= 0 || fe.type != FL_FM_FUNCTION)
					goto next;
				off = fe.function.address_offset;
			} else {
				ret = fl_stackmap_next(&sc, &se);
				if (ret <= 0 || se.type != FL_SM_FUNCTION)
					goto next;
				off = se.function.address_offset;
			}
			if (fl_elf_reloc(elf, k, off, &r)) {
				fail("%s: no relocation at 0x%zx", kind_name(k), off);
				goto next;
			}
			printf("  %s field 0x%zx: %s %s + 0x%llx: %s\n", kind_name(k), off,
			       r.type == R_X86_64_64 ? "R_X86_64_64" : "?", r.symbol,
			       (unsigned long long)r.addend, r.function ? r.function : "(null)");
			for (i = 0; i < NEXPECTED; i++)
				if (r.function && !strcmp(r.function, expected[i].name))
					expected[i].seen[k]++;
next:
			if (ret < 0)
				fail("%s: %s", kind_name(k), d.msg);
			if (ret <= 0)
				break;
		}
	}
	for (size_t i = 0; i < NEXPECTED; i++)
		for (k = 0; k < FL_SECTION_KINDS; k++)
			if ((expected[i].kinds & (1u << k)) && expected[i].seen[k] != 1)
				fail("%s: %s named %u times", kind_name(k), expected[i].name,
				     expected[i].seen[k]);
	fl_elf_close(elf);
	return finish();
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3) {
		fprintf(stderr, "usage: see selftests/discovery/check.c\n");
		return 2;
	}
	mode = argv[2];
#ifdef DT_SELF
	if (!strcmp(argv[1], "self"))
		return run_self();
#endif
	if (!strcmp(argv[1], "dlopen") && argc == 4)
		return run_dlopen(argv[3]);
	if (!strcmp(argv[1], "stale") && argc == 6)
		return run_stale(argv[3], argv[4], argv[5]);
	if (!strcmp(argv[1], "preempted") && argc == 4)
		return run_preempted(argv[3]);
	if (!strcmp(argv[1], "object") && argc == 4)
		return run_object(argv[3]);
	fprintf(stderr, "usage: see selftests/discovery/check.c\n");
	return 2;
}
