// SPDX-License-Identifier: MIT
/*
 * Code faultline writes, made visible (seen.h).
 *
 * Why both unwinders: libgcc_s's is the one C++ exceptions, glibc's
 * backtrace() and thread cancellation use, and libunwind's is the one the
 * deoptimization entry, collectors' stack walks and profilers use; each
 * keeps its own list of code registered at run time (__register_frame,
 * _U_dyn_register), and neither reads the other's.
 *
 * How the unwind information is made:
 *  1. The original's FDE is the one libgcc_s's _Unwind_Find_FDE finds for
 *     rows[0].orig: it looks in the loaded modules' PT_GNU_EH_FRAME and in
 *     the frames registered with __register_frame (MCJIT registers its
 *     code's there).  Its CIE is the one its CIE pointer names.
 *  2. For each row, the original's complete rule set at orig
 *     (format/cfi.h's interpreter: the CIE's initial instructions, then
 *     the FDE's up to orig), with the CFA moved by pushed when it is
 *     %rsp-based: the new code has pushed that much more, so the same CFA
 *     is that much further from %rsp.  Register rules are relative to the
 *     CFA and stay.
 *  3. One new CIE and FDE giving those rows at the rows' at (fl_cfi_emit),
 *     without personality or LSDA: the new code has no landing pads.
 *  4. The .eh_frame is placed within 2 GiB of the code (libunwind's index
 *     holds 32-bit offsets from it, lib/table/unwind.c), read-only, and
 *     registered with libgcc_s, then with libunwind.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <faultline/discovery.h>

#include "format/cfi.h"
#include "format/diag.h"
#include "patch/libgcc.h"
#include "patch/perfmap.h"
#include "patch/seen.h"
#include "table/libunwind.h"
#include "table/unwind.h"

/* x86-64's DWARF number of %rsp (the System V ABI's Figure 3.36). */
#define DWARF_RSP 7

struct fl_seen {
	uint64_t start;
	size_t len;
	char *name;
	void *eh_frame;			/* its mapping, of map_size bytes, or NULL */
	size_t map_size;
	bool gcc;			/* registered with libgcc_s */
	struct fl_unwind *unw;		/* registered with libunwind, or NULL */
	struct fl_seen *prev, *next;	/* the live ones */
};

/* Every fl_seen not yet removed, for a child's perf map.  Under the patch lock. */
static struct fl_seen *live;

/* Whether [lo, hi) and base are within libunwind's 32-bit offsets of each other. */
static bool reaches(uint64_t base, uint64_t lo, uint64_t hi)
{
	int64_t a = (int64_t)(lo - base), b = (int64_t)(hi - 1 - base);

	return a >= INT32_MIN && a <= INT32_MAX && b >= INT32_MIN && b <= INT32_MAX;
}

/*
 * Maps size bytes, read-write, within reach of [lo, hi): where the kernel
 * puts them first (usually beside the other mappings, which is near code
 * in a library or an mmap'd stub page), else at the first free place
 * tried 1 MiB, 2 MiB, ... on either side of the code.
 */
static void *map_near(uint64_t lo, uint64_t hi, size_t size)
{
	const uint64_t step = 1u << 20;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED) {
		if (reaches((uint64_t)(uintptr_t)p, lo, hi))
			return p;
		munmap(p, size);
	}
	for (uint64_t k = 1; k <= 1024; k++) {
		for (int side = 0; side < 2; side++) {
			uint64_t at = side ? (hi & ~(step - 1)) + k * step :
					     (lo & ~(step - 1)) - k * step;

			if (at < step || at + size < at || !reaches(at, lo, hi))
				continue;
			p = mmap((void *)(uintptr_t)at, size, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == MAP_FAILED)
				continue;
			/* A kernel before 4.17 takes the flag as a hint. */
			if ((uint64_t)(uintptr_t)p == at)
				return p;
			munmap(p, size);
		}
	}
	return NULL;
}

/*
 * Finds the FDE of rows[0].orig and checks that it covers every row's orig.
 * Returns 0 with *f set, or -errno with *diag filled in.
 */
static int find_fde(const struct fl_seen_row *rows, size_t nrows, struct fl_cfi_fde *f,
		    struct fl_diag *diag)
{
	const struct fl_libgcc *g;
	struct fl_libgcc_bases bases;
	const unsigned char *fde, *cie;
	uint32_t fde_len, cie_len, back;
	int err;

	if ((err = fl_libgcc_load(&g)))
		return fl_diag_say(diag, err, "seen: libgcc_s.so.1 cannot be loaded: no FDE "
				   "can be found for 0x%llx", (unsigned long long)rows[0].orig);
	fde = g->find_fde((void *)(uintptr_t)(rows[0].orig), &bases);
	if (!fde)
		return fl_diag_say(diag, -ENOENT, "seen: no FDE covers the original code at "
				   "0x%llx (it has no unwind information)",
				   (unsigned long long)rows[0].orig);
	memcpy(&fde_len, fde, 4);
	memcpy(&back, fde + 4, 4);
	if (fde_len == 0xffffffffu || back > (uintptr_t)fde + 4)
		return fl_diag_say(diag, -EINVAL, "seen: the FDE at %p is in the 64-bit format "
				   "or has a bad CIE pointer", (const void *)fde);
	cie = fde + 4 - back;
	memcpy(&cie_len, cie, 4);
	if (cie_len == 0xffffffffu)
		return fl_diag_say(diag, -EINVAL, "seen: the CIE at %p is in the 64-bit format",
				   (const void *)cie);
	err = fl_cfi_fde_parse(fde, (size_t)fde_len + 4, (uint64_t)(uintptr_t)fde, cie,
			       (size_t)cie_len + 4, (uint64_t)(uintptr_t)cie, f, diag);
	if (err)
		return err;
	for (size_t i = 0; i < nrows; i++)
		if (rows[i].orig < f->start || rows[i].orig >= f->end)
			return fl_diag_say(diag, -EINVAL, "seen: row %zu's original code 0x%llx "
					   "is outside the FDE of row 0's, [0x%llx, 0x%llx)", i,
					   (unsigned long long)rows[i].orig,
					   (unsigned long long)f->start, (unsigned long long)f->end);
	return 0;
}

static int check_input(uint64_t start, size_t len, const char *name,
		       const struct fl_seen_row *rows, size_t nrows, struct fl_diag *diag)
{
	if (!len || start + len < start)
		return fl_diag_say(diag, -EINVAL, "seen: [0x%llx, +0x%zx) is no code",
				   (unsigned long long)start, len);
	if (!name || !*name || strchr(name, '\n'))
		return fl_diag_say(diag, -EINVAL, "seen: the name is empty or holds a newline");
	if (!rows || !nrows)
		return fl_diag_say(diag, -EINVAL, "seen: no rows for [0x%llx, +0x%zx)",
				   (unsigned long long)start, len);
	if (rows[0].at != start)
		return fl_diag_say(diag, -EINVAL, "seen: rows[0].at is 0x%llx, not the start "
				   "0x%llx", (unsigned long long)rows[0].at,
				   (unsigned long long)start);
	for (size_t i = 1; i < nrows; i++)
		if (rows[i].at <= rows[i - 1].at || rows[i].at - start >= len)
			return fl_diag_say(diag, -EINVAL, "seen: row %zu at 0x%llx: rows must "
					   "ascend inside [0x%llx, +0x%zx)", i,
					   (unsigned long long)rows[i].at,
					   (unsigned long long)start, len);
	return 0;
}

/* Steps 2 to 4 of the comment above.  Returns 0, or -errno with *diag filled in. */
static int describe(struct fl_seen *s, const struct fl_cfi_fde *f,
		    const struct fl_seen_row *rows, size_t nrows, struct fl_diag *diag)
{
	const struct fl_libgcc *g;
	struct fl_cfi_at *at;
	size_t size = 0, pg = (size_t)sysconf(_SC_PAGESIZE);
	void *blob = NULL;
	int err = 0;

	if (fl_libgcc_load(&g) || fl_libunwind_load())
		return fl_diag_say(diag, -ENOENT, "seen: libgcc_s.so.1 or libunwind.so.8 "
				   "cannot be loaded");
	if (!(at = calloc(nrows, sizeof(*at))))
		return -ENOMEM;
	for (size_t i = 0; i < nrows && !err; i++) {
		at[i].at = rows[i].at;
		err = fl_cfi_row_at(f, rows[i].orig, &at[i].row, diag);
		if (!err)
			err = fl_cfi_row_shift(&at[i].row, DWARF_RSP, rows[i].pushed, diag);
	}
	if (!err)
		err = fl_cfi_emit(s->start, s->len, f->ra, f->data_align, at, nrows, &blob, &size,
				  diag);
	free(at);
	if (err)
		return err;
	s->map_size = (size + pg - 1) / pg * pg;
	s->eh_frame = map_near(s->start, s->start + s->len, s->map_size);
	if (!s->eh_frame) {
		free(blob);
		return fl_diag_say(diag, -ENOMEM, "seen: no memory for the .eh_frame within 2 GiB "
				   "of [0x%llx, +0x%zx)", (unsigned long long)s->start, s->len);
	}
	memcpy(s->eh_frame, blob, size);
	free(blob);
	mprotect(s->eh_frame, s->map_size, PROT_READ);
	/* Checked and indexed before either unwinder is told of it. */
	err = fl_unwind_of_ehframe(s->eh_frame, size, s->start, s->start + s->len, s->name,
				   &s->unw, diag);
	if (!err && (err = fl_unwind_register(s->unw))) {
		fl_unwind_free(s->unw);
		s->unw = NULL;
	}
	if (err) {
		munmap(s->eh_frame, s->map_size);
		s->eh_frame = NULL;
		return err;
	}
	g->register_frame(s->eh_frame);
	s->gcc = true;
	return 0;
}

int fl_seen_add(uint64_t start, size_t len, const char *name, const struct fl_seen_row *rows,
		size_t nrows, struct fl_seen **out, struct fl_diag *diag)
{
	struct fl_cfi_fde f;
	struct fl_seen *s;
	int err;

	*out = NULL;
	if ((err = check_input(start, len, name, rows, nrows, diag)) ||
	    (err = find_fde(rows, nrows, &f, diag)))
		return err;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->name = strdup(name))) {
		free(s);
		return -ENOMEM;
	}
	s->start = start;
	s->len = len;
	/* A map opened now (the first, or a child's after fork) gets the live code first. */
	if (fl_perfmap_open() == 1)
		for (struct fl_seen *o = live; o; o = o->next)
			fl_perfmap_write(o->start, o->len, o->name);
	fl_perfmap_write(start, len, name);
	s->next = live;
	if (live)
		live->prev = s;
	live = s;
	*out = s;
	return describe(s, &f, rows, nrows, diag);
}

void fl_seen_remove(struct fl_seen *s)
{
	const struct fl_libgcc *g;

	if (!s)
		return;
	if (s->gcc && !fl_libgcc_load(&g))
		g->deregister_frame(s->eh_frame);
	fl_unwind_free(s->unw);
	if (s->eh_frame)
		munmap(s->eh_frame, s->map_size);
	if (s->prev)
		s->prev->next = s->next;
	else
		live = s->next;
	if (s->next)
		s->next->prev = s->prev;
	free(s->name);
	free(s);
}

int fl_seen_unwindable(const struct fl_seen *s)
{
	return s && s->gcc && s->unw;
}

int fl_seen_name(uint64_t orig, char *buf, size_t size)
{
	struct fl_elf_opts opts = { .sz = sizeof(opts) };
	struct link_map *lm = NULL;
	const char *path, *mod, *fn = NULL;
	struct fl_elf *elf = NULL;
	uint64_t off = 0;
	Dl_info info;
	int n;

	if (!dladdr1((void *)(uintptr_t)orig, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return snprintf(buf, size, "0x%llx", (unsigned long long)orig);
	path = lm->l_name && lm->l_name[0] ? lm->l_name : "/proc/self/exe";
	if (!fl_elf_open(path, &opts, &elf, NULL))
		fn = fl_elf_function_containing(elf, orig - lm->l_addr, &off);
	if (!fn && info.dli_sname && info.dli_saddr) {
		fn = info.dli_sname;
		off = orig - (uint64_t)(uintptr_t)info.dli_saddr;
	}
	if (fn) {
		n = snprintf(buf, size, "%s+0x%llx", fn, (unsigned long long)off);
	} else {
		mod = lm->l_name && lm->l_name[0] ? lm->l_name : program_invocation_short_name;
		if (strrchr(mod, '/'))
			mod = strrchr(mod, '/') + 1;
		n = snprintf(buf, size, "%s+0x%llx", mod, (unsigned long long)(orig - lm->l_addr));
	}
	fl_elf_close(elf);
	return n;
}
