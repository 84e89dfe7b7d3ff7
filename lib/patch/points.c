/* SPDX-License-Identifier: MIT */
/*
 * Patch points and stack map records (include/faultline/points.h): the
 * process's registry of stack map records, and the changes made to them
 * through the patcher (patch.c).
 *
 * The registry holds one source per module with a stack map: a loaded ELF
 * module (found with the discovery layer, again whenever the loader's
 * count of loads and unloads has moved since the last look), or a JIT
 * registration (told by the table, as an observer).  A source's records
 * are sorted by address, with an index sorted by ID.  A record remembers
 * what the runtime declared of it and, from the first time faultline
 * looked at it, the bytes the compiler emitted there.
 *
 * Locks: every operation holds the patch lock (internal.h) from its
 * lookup to its last write, so records are never freed under it.  The JIT
 * sources the table reports (under the table's lock, which must not wait
 * for a patch) go through jit_lock, which is held only to move a source
 * in or out of a list: a removed source is freed by the next operation.
 */
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <Zydis/Zydis.h>

#include <faultline/discovery.h>
#include <faultline/dispatch.h>
#include <faultline/points.h>

#include "format/diag.h"
#include "format/stackmap_functions.h"
#include "patch/internal.h"
#include "patch/points.h"
#include "table/table.h"

struct rec {
	uint64_t pc;
	uint64_t id;
	uint64_t limit;		/* the end of its code, or the next record */
	uint32_t size;		/* declared size, or 0 */
	uint32_t compiled_len;	/* 0 until first looked at */
	uint8_t *compiled;
};

struct source {
	struct source *next;
	char *name;
	uint64_t bias;		/* ELF: the load bias; JIT: 0 */
	int jit_id;		/* JIT: the table's module id; ELF: 0 */
	struct rec *recs;	/* sorted by pc */
	size_t n;
	uint32_t *by_id;	/* indexes into recs, sorted by (id, pc) */
};

/* Under the patch lock. */
static struct source *elf_sources;
static unsigned long long seen_adds, seen_subs;
static bool elf_scanned;

/* The JIT sources: live ones, and removed ones not yet freed. */
static pthread_mutex_t jit_lock = PTHREAD_MUTEX_INITIALIZER;
static struct source *jit_sources, *jit_gone;

static void source_free(struct source *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->recs[i].compiled);
	free(s->recs);
	free(s->by_id);
	free(s->name);
	free(s);
}

static void sources_free(struct source *s)
{
	while (s) {
		struct source *next = s->next;

		source_free(s);
		s = next;
	}
}

static int by_pc(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

struct id_key {
	uint64_t id;
	uint64_t pc;
	uint32_t i;
};

static int by_id(const void *a, const void *b)
{
	const struct id_key *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* Sorts s's records and builds its ID index.  Returns 0 or -ENOMEM. */
static int source_index(struct source *s)
{
	struct id_key *keys = malloc((s->n ? s->n : 1) * sizeof(*keys));

	s->by_id = malloc((s->n ? s->n : 1) * sizeof(*s->by_id));
	if (!keys || !s->by_id) {
		free(keys);
		return -ENOMEM;
	}
	qsort(s->recs, s->n, sizeof(*s->recs), by_pc);
	for (size_t i = 0; i < s->n; i++)
		keys[i] = (struct id_key){ s->recs[i].id, s->recs[i].pc, (uint32_t)i };
	qsort(keys, s->n, sizeof(*keys), by_id);
	for (size_t i = 0; i < s->n; i++)
		s->by_id[i] = keys[i].i;
	free(keys);
	return 0;
}

/*
 * A source of the records of the stack map at sm, whose i-th function
 * (event order, every table: fl_sm_function_of) is at runtime address
 * funcs[i] (NULL: as stored); a record's code ends at limit(ctx, pc), or it
 * is left out (0: outside the module's code).
 */
static struct source *source_make(const char *name, const void *sm, size_t size,
				  uint32_t parse_flags, const uint64_t *funcs, size_t num_funcs,
				  uint64_t (*limit)(const void *ctx, uint64_t pc), const void *ctx)
{
	struct fl_sm_functions f = { 0 };
	struct fl_stackmap *map = NULL;
	struct source *s = calloc(1, sizeof(*s));
	size_t count;

	if (!s || !(s->name = strdup(name)) ||
	    fl_sm_functions_walk(sm, size, parse_flags, &f, NULL) ||
	    fl_stackmap_parse(sm, size, parse_flags, &map, NULL))
		goto fail;
	if (!funcs) {
		funcs = f.stored;
		num_funcs = f.n;
	}
	count = fl_stackmap_count(map);
	if (count > UINT32_MAX || !(s->recs = calloc(count ? count : 1, sizeof(*s->recs))))
		goto fail;
	for (size_t i = 0; i < count; i++) {
		const struct fl_stackmap_record *r = fl_stackmap_record(map, i);
		struct rec *out = &s->recs[s->n];
		/* SIZE_MAX for v1 records, which name no function: their address is unknown. */
		size_t fn = fl_sm_function_of(&f, r);

		if (fn >= num_funcs)
			continue;
		out->pc = funcs[fn] + r->instruction_offset;
		out->id = r->id;
		out->limit = limit(ctx, out->pc);
		if (out->limit > out->pc)
			s->n++;
	}
	fl_sm_functions_free(&f);
	fl_stackmap_free(map);
	if (source_index(s))
		goto fail;
	/*
	 * A region or shadow ends at the next record at the latest: llc-14
	 * puts null-target patch points back to back, their nops one run.
	 */
	for (size_t i = 0, next = 0; i < s->n; i++) {
		while (next < s->n && s->recs[next].pc <= s->recs[i].pc)
			next++;
		if (next < s->n && s->recs[next].pc < s->recs[i].limit)
			s->recs[i].limit = s->recs[next].pc;
	}
	return s;
fail:
	fl_sm_functions_free(&f);
	fl_stackmap_free(map);
	source_free(s);
	return NULL;
}

/* ------------------------------------------------------------------------
 * Loaded ELF modules
 */

static uint64_t module_limit(const void *ctx, uint64_t pc)
{
	const struct fl_module *m = ctx;

	for (size_t i = 0; i < m->num_text; i++)
		if (pc >= m->text[i].start && pc < m->text[i].end)
			return m->text[i].end;
	return 0;
}

struct scan {
	struct source *found;
	struct source *old;	/* the sources of the last scan */
	int err;
};

/* Takes the last scan's source for this module, if it is the same one. */
static struct source *old_source(struct scan *sc, const char *name, uint64_t bias)
{
	for (struct source **p = &sc->old; *p; p = &(*p)->next) {
		struct source *s = *p;

		if (s->bias == bias && strcmp(s->name, name) == 0) {
			*p = s->next;
			return s;
		}
	}
	return NULL;
}

static int scan_module(const struct fl_module *m, void *ctx)
{
	struct scan *sc = ctx;
	const struct fl_module_section *sec = &m->sections[FL_SECTION_STACKMAP];
	const char *name = m->name[0] ? m->name : m->path;
	struct source *s;
	uint64_t *funcs;

	if (m->err || !sec->data || !sec->size)
		return 0;
	/* Still loaded at the same place: the same code, and what we know of it. */
	s = old_source(sc, name, m->load_bias);
	if (!s) {
		funcs = malloc((sec->num_functions ? sec->num_functions : 1) * sizeof(*funcs));
		if (!funcs) {
			sc->err = -ENOMEM;
			return 1;
		}
		for (size_t i = 0; i < sec->num_functions; i++)
			funcs[i] = sec->functions[i].address;
		s = source_make(name, sec->data, sec->size, sec->parse_flags, funcs,
				sec->num_functions, module_limit, m);
		free(funcs);
		if (!s) {
			sc->err = -ENOMEM;
			return 1;
		}
		s->bias = m->load_bias;
	}
	s->next = sc->found;
	sc->found = s;
	return 0;
}

static int loader_counts(struct dl_phdr_info *info, size_t size, void *ctx)
{
	unsigned long long *v = ctx;

	(void)size;
	v[0] = info->dlpi_adds;
	v[1] = info->dlpi_subs;
	return 1;
}

/*
 * Finds the loaded modules' records again when a module was loaded or
 * unloaded since the last look (or force).  Under the patch lock.
 */
static int elf_rescan(bool force, struct fl_diag *diag)
{
	unsigned long long v[2] = { 0, 0 };
	struct scan sc = { 0 };
	int err;

	dl_iterate_phdr(loader_counts, v);
	if (elf_scanned && !force && v[0] == seen_adds && v[1] == seen_subs)
		return 0;
	sc.old = elf_sources;
	err = fl_module_for_each(scan_module, &sc, NULL);
	if (err == 1)
		err = sc.err;
	if (err) {
		sources_free(sc.found);
		elf_sources = sc.old;
		return fl_diag_say(diag, err, "finding the loaded modules' stack maps: %s",
				   strerror(-err));
	}
	sources_free(sc.old);	/* modules gone */
	elf_sources = sc.found;
	seen_adds = v[0];
	seen_subs = v[1];
	elf_scanned = true;
	return 0;
}

/* ------------------------------------------------------------------------
 * JIT registrations: the table's observer
 */

static uint64_t jit_limit(const void *ctx, uint64_t pc)
{
	const struct fl_jit_reg *r = ctx;

	return pc >= r->code_start && pc - r->code_start < r->code_size ?
		r->code_start + r->code_size : 0;
}

static void *jit_prepare(const struct fl_table_source *src)
{
	const struct fl_jit_reg *r = src->jit;

	if (!r || !r->stackmap || !r->stackmap_size)
		return NULL;
	/* JIT code's stack map holds runtime addresses (the loader relocated it). */
	return source_make(src->name ? src->name : "jit", r->stackmap, r->stackmap_size,
			   r->parse_flags, NULL, 0, jit_limit, r);
}

static void jit_added(const struct fl_table_module *m, void *data)
{
	struct source *s = data;

	if (!s)
		return;
	s->jit_id = m->id;
	pthread_mutex_lock(&jit_lock);
	s->next = jit_sources;
	jit_sources = s;
	pthread_mutex_unlock(&jit_lock);
}

static void jit_discard(void *data)
{
	source_free(data);
}

static void jit_removed(int id)
{
	pthread_mutex_lock(&jit_lock);
	for (struct source **p = &jit_sources; *p; p = &(*p)->next) {
		struct source *s = *p;

		if (s->jit_id == id) {
			*p = s->next;
			s->next = jit_gone;
			jit_gone = s;
			break;
		}
	}
	pthread_mutex_unlock(&jit_lock);
}

static void jit_fork_prepare(void)
{
	pthread_mutex_lock(&jit_lock);
}

static void jit_fork_done(void)
{
	pthread_mutex_unlock(&jit_lock);
}

static void jit_fork_child(int counters_err)
{
	(void)counters_err;
	pthread_mutex_unlock(&jit_lock);
}

static const struct fl_table_observer jit_observer = {
	.module_prepare = jit_prepare,
	.module_added = jit_added,
	.module_discard = jit_discard,
	.module_removed = jit_removed,
	.fork_prepare = jit_fork_prepare,
	.fork_parent = jit_fork_done,
	.fork_child = jit_fork_child,
};

int fl_points_subscribe(void)
{
	return fl_table_observe(&jit_observer);
}

/* ------------------------------------------------------------------------
 * Finding a record
 */

/* Records of s with this id: [*first, *first + return). */
static size_t id_range(const struct source *s, uint64_t id, size_t *first)
{
	size_t lo = 0, hi = s->n, end;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->recs[s->by_id[mid]].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; end < s->n && s->recs[s->by_id[end]].id == id; end++)
		;
	*first = lo;
	return end - lo;
}

static struct rec *pc_find(const struct source *s, uint64_t pc)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->recs[mid].pc < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->n && s->recs[lo].pc == pc ? &s->recs[lo] : NULL;
}

/* Looks in one list; counts the records with the ID in *count. */
static struct rec *list_find(const struct source *list, uint64_t id, uint64_t pc,
			     bool by_pc, size_t *count)
{
	struct rec *found = NULL;

	for (const struct source *s = list; s; s = s->next) {
		if (by_pc) {
			struct rec *r = pc_find(s, pc);

			if (r)
				return *count = 1, r;
			continue;
		}
		size_t first, n = id_range(s, id, &first);

		if (n && !found)
			found = &s->recs[s->by_id[first]];
		*count += n;
	}
	return found;
}

static struct rec *lists_find(uint64_t id, uint64_t pc, bool by_pc, size_t *count)
{
	struct rec *r, *j;

	*count = 0;
	r = list_find(elf_sources, id, pc, by_pc, count);
	if (by_pc && r)
		return r;
	pthread_mutex_lock(&jit_lock);
	j = list_find(jit_sources, id, pc, by_pc, count);
	pthread_mutex_unlock(&jit_lock);
	return r ? r : j;
}

/*
 * The record named by id or pc (points.h).  Under the patch lock: frees
 * the removed JIT sources first, and looks at the loaded modules again
 * when the loader's counts moved, or when nothing is found.
 */
static int find(uint64_t id, const void *pc, struct rec **out, struct fl_diag *diag)
{
	uint64_t a = (uint64_t)(uintptr_t)pc;
	bool by_pc = pc != NULL;
	struct source *gone;
	size_t count;
	int err;

	pthread_mutex_lock(&jit_lock);
	gone = jit_gone;
	jit_gone = NULL;
	pthread_mutex_unlock(&jit_lock);
	sources_free(gone);

	err = elf_rescan(false, diag);
	if (err)
		return err;
	*out = lists_find(id, a, by_pc, &count);
	if (count == 0) {
		/* A module whose file could not be read at the last look may be now. */
		err = elf_rescan(true, diag);
		if (err)
			return err;
		*out = lists_find(id, a, by_pc, &count);
	}
	if (count == 0)
		return by_pc ? fl_diag_say(diag, -ENOENT, "no stack map record at 0x%llx",
					   (unsigned long long)a) :
			fl_diag_say(diag, -ENOENT, "no stack map record has ID %llu (0x%llx)",
				    (unsigned long long)id, (unsigned long long)id);
	if (count > 1)
		return fl_diag_say(diag, -ENOTUNIQ, "%zu stack map records have ID %llu (0x%llx): "
				   "name the one to change by its address", count,
				   (unsigned long long)id, (unsigned long long)id);
	return 0;
}

/* ------------------------------------------------------------------------
 * Extents
 */

/* Remembers the compiled bytes of r, the first time it is looked at. */
static int remember(struct rec *r, struct fl_diag *diag)
{
	uint64_t len = r->limit - r->pc;

	if (r->compiled)
		return 0;
	if (len > FL_POINT_MAX_SIZE)
		len = FL_POINT_MAX_SIZE;
	r->compiled = malloc(len);
	if (!r->compiled)
		return fl_diag_say(diag, -ENOMEM, "out of memory");
	memcpy(r->compiled, (const void *)(uintptr_t)r->pc, len);
	r->compiled_len = (uint32_t)len;
	return 0;
}

/* movabsq $imm64, %r11; callq *%r11: how LLVM calls a patch point's target. */
static const uint8_t movabs_r11[2] = { 0x49, 0xbb };
static const uint8_t call_r11[3] = { 0x41, 0xff, 0xd3 };
#define MOVABS_CALL_LEN 13

/* The bytes of nops at code (at most len). */
static size_t nops(const uint8_t *code, size_t len)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction insn;
	size_t at = 0;

	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	while (at < len && ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, NULL, code + at,
								     len - at, &insn)) &&
	       insn.mnemonic == ZYDIS_MNEMONIC_NOP)
		at += insn.length;
	return at;
}

enum kind { PATCHPOINT, STACKMAP };

/* The size of r's region (PATCHPOINT) or shadow (STACKMAP), from the compiled bytes. */
static uint32_t extent(const struct rec *r, enum kind kind)
{
	const uint8_t *c = r->compiled;
	size_t len = r->compiled_len, at = 0;

	if (r->size)
		return r->size;
	if (kind == PATCHPOINT && len >= MOVABS_CALL_LEN && memcmp(c, movabs_r11, 2) == 0 &&
	    memcmp(c + 10, call_r11, 3) == 0)
		at = MOVABS_CALL_LEN;
	return (uint32_t)(at + nops(c + at, len - at));
}

static const char *kind_name(enum kind kind)
{
	return kind == PATCHPOINT ? "patch point" : "stack map record";
}

/* The record, its compiled bytes remembered, and its size.  Patch lock held. */
static int look(uint64_t id, const void *pc, enum kind kind, struct rec **r, uint32_t *size,
		struct fl_diag *diag)
{
	int err = find(id, pc, r, diag);

	if (!err)
		err = remember(*r, diag);
	if (!err)
		*size = extent(*r, kind);
	return err;
}

static int declare(uint64_t id, const void *pc, size_t size, enum kind kind,
		   struct fl_diag *diag)
{
	struct rec *r;
	uint32_t now;
	sigset_t old;
	int err;

	if (size == 0 || size > FL_POINT_MAX_SIZE)
		return fl_diag_say(diag, size ? -E2BIG : -EINVAL, "a %s of %zu bytes "
				   "(1 to %d)", kind_name(kind), size, FL_POINT_MAX_SIZE);
	err = fl_patch_lock(&old, diag);
	if (err)
		return err;
	err = look(id, pc, kind, &r, &now, diag);
	if (err)
		goto out;
	if (size > r->compiled_len)
		err = fl_diag_say(diag, -EINVAL, "the %s at 0x%llx: %zu bytes would pass the end "
				  "of its code or the next record (%u bytes left)", kind_name(kind),
				  (unsigned long long)r->pc, size, r->compiled_len);
	else if (r->size && r->size != size)
		err = fl_diag_say(diag, -EEXIST, "the %s at 0x%llx was declared with %u bytes, "
				  "not %zu", kind_name(kind), (unsigned long long)r->pc, r->size, size);
	else
		r->size = (uint32_t)size;
out:
	fl_patch_unlock(&old);
	return err;
}

int fl_patchpoint_declare(uint64_t id, const void *pc, size_t size, struct fl_diag *diag)
{
	return declare(id, pc, size, PATCHPOINT, diag);
}

int fl_stackmap_declare(uint64_t id, const void *pc, size_t shadow, struct fl_diag *diag)
{
	return declare(id, pc, shadow, STACKMAP, diag);
}

static int read_point(uint64_t id, const void *pc, enum kind kind, struct fl_point *out,
		      struct fl_diag *diag)
{
	struct fl_point p;
	struct rec *r;
	uint32_t size;
	sigset_t old;
	int err;

	if (!out || out->sz < sizeof(*out))
		return fl_diag_say(diag, -EINVAL, "fl_point: sz %zu, not %zu", out ? out->sz : 0,
				   sizeof(*out));
	err = fl_patch_lock(&old, diag);
	if (err)
		return err;
	err = look(id, pc, kind, &r, &size, diag);
	if (!err) {
		memset(&p, 0, sizeof(p));
		p.sz = sizeof(p);
		p.id = r->id;
		p.pc = r->pc;
		p.size = size;
		p.flags = r->size ? FL_POINT_DECLARED : 0;
		memcpy(p.now, (const void *)(uintptr_t)r->pc, size);
		memcpy(p.compiled, r->compiled, size);
		if (memcmp(p.now, p.compiled, size) != 0)
			p.flags |= FL_POINT_CHANGED;
		*out = p;
	}
	fl_patch_unlock(&old);
	return err;
}

int fl_patchpoint_read(uint64_t id, const void *pc, struct fl_point *out, struct fl_diag *diag)
{
	return read_point(id, pc, PATCHPOINT, out, diag);
}

int fl_stackmap_read(uint64_t id, const void *pc, struct fl_point *out, struct fl_diag *diag)
{
	return read_point(id, pc, STACKMAP, out, diag);
}

/* ------------------------------------------------------------------------
 * Changing a record's bytes
 */

/* Fills len bytes at out with the recommended long nops (Intel SDM vol. 2B, NOP). */
static void nop_fill(uint8_t *out, size_t len)
{
	static const uint8_t nop[9][9] = {
		{ 0x90 },
		{ 0x66, 0x90 },
		{ 0x0f, 0x1f, 0x00 },
		{ 0x0f, 0x1f, 0x40, 0x00 },
		{ 0x0f, 0x1f, 0x44, 0x00, 0x00 },
		{ 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 },
		{ 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00 },
		{ 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
		{ 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
	};

	while (len) {
		size_t n = len < 9 ? len : 9;

		memcpy(out, nop[n - 1], n);
		out += n;
		len -= n;
	}
}

/*
 * The instruction boundaries of code (len bytes) as a bit per byte.
 * Returns false when it does not decode whole.
 */
static bool boundaries(const uint8_t *code, size_t len, uint8_t *starts)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction insn;
	size_t at = 0;

	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	memset(starts, 0, len);
	while (at < len) {
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, NULL, code + at, len - at,
								&insn)))
			return false;
		starts[at] = 1;
		at += insn.length;
	}
	return at == len;
}

/*
 * Replaces the size bytes at r->pc (now: what is there) with want.
 *
 * When old and new decode to the same instruction boundaries and differ in
 * one instruction only, that instruction alone is changed: within one
 * instruction, the int3 protocol (patch.c), and the other threads run on.
 * Two or more instructions changed with int3s could be seen half old, half
 * new by a thread that ran the first old one just before its int3 and the
 * second new one after: so any other change goes whole, with the threads
 * stopped (the handshake), which also proves no thread is inside it.
 */
static int replace(const struct rec *r, const uint8_t *now, const uint8_t *want, uint32_t size,
		   struct fl_diag *diag)
{
	uint8_t a[FL_POINT_MAX_SIZE], b[FL_POINT_MAX_SIZE];
	uint32_t first = 0, last = size;
	struct fl_patch p;

	while (first < size && now[first] == want[first])
		first++;
	if (first == size)
		return 0;
	while (last > first && now[last - 1] == want[last - 1])
		last--;
	p = (struct fl_patch){ .addr = (void *)(uintptr_t)r->pc, .old_bytes = now,
			       .new_bytes = want, .len = size };
	if (boundaries(now, size, a) && boundaries(want, size, b) && memcmp(a, b, size) == 0) {
		uint32_t start = first, end = first + 1;

		while (!a[start])
			start--;
		while (end < size && !a[end])
			end++;
		if (end >= last)
			p = (struct fl_patch){ .addr = (void *)(uintptr_t)(r->pc + start),
					       .old_bytes = now + start, .new_bytes = want + start,
					       .len = end - start };
	}
	return fl_patch_text_locked(&p, 1, NULL, 0, diag);
}

int fl_patchpoint_write(uint64_t id, const void *pc, const void *bytes, size_t len,
			const void *expect, struct fl_diag *diag)
{
	uint8_t now[FL_POINT_MAX_SIZE], want[FL_POINT_MAX_SIZE];
	struct rec *r;
	uint32_t size;
	sigset_t old;
	int err;

	if (!bytes && len)
		return fl_diag_say(diag, -EINVAL, "fl_patchpoint_write: no bytes");
	err = fl_patch_lock(&old, diag);
	if (err)
		return err;
	err = look(id, pc, PATCHPOINT, &r, &size, diag);
	if (err)
		goto out;
	if (len > size) {
		err = fl_diag_say(diag, -ENOSPC, "%zu bytes do not fit the %u-byte region of "
				  "the patch point at 0x%llx", len, size, (unsigned long long)r->pc);
		goto out;
	}
	memcpy(now, (const void *)(uintptr_t)r->pc, size);
	if (expect && memcmp(now, expect, size) != 0) {
		err = fl_diag_say(diag, -ESTALE, "the patch point at 0x%llx is not the expected "
				  "bytes", (unsigned long long)r->pc);
		goto out;
	}
	memcpy(want, bytes, len);
	nop_fill(want + len, size - len);
	err = replace(r, now, want, size, diag);
out:
	fl_patch_unlock(&old);
	return err;
}

int fl_patchpoint_reset(uint64_t id, const void *pc, struct fl_diag *diag)
{
	uint8_t now[FL_POINT_MAX_SIZE];
	struct rec *r;
	uint32_t size;
	sigset_t old;
	int err;

	err = fl_patch_lock(&old, diag);
	if (err)
		return err;
	err = look(id, pc, PATCHPOINT, &r, &size, diag);
	if (!err) {
		memcpy(now, (const void *)(uintptr_t)r->pc, size);
		err = replace(r, now, r->compiled, size, diag);
	}
	fl_patch_unlock(&old);
	return err;
}

int fl_stackmap_invalidate(uint64_t id, const void *pc, const void *target,
			   struct fl_diag *diag)
{
	uint8_t call[MOVABS_CALL_LEN], now[MOVABS_CALL_LEN];
	uint64_t to = (uint64_t)(uintptr_t)target;
	struct fl_patch p;
	struct rec *r;
	uint32_t size, len;
	int64_t rel;
	sigset_t old;
	int err;

	if (!target)
		return fl_diag_say(diag, -EINVAL, "fl_stackmap_invalidate: no target");
	err = fl_patch_lock(&old, diag);
	if (err)
		return err;
	err = look(id, pc, STACKMAP, &r, &size, diag);
	if (err)
		goto out;
	/* callq rel32 when the target is within reach, else through %r11. */
	rel = (int64_t)(to - (r->pc + 5));
	if (rel >= INT32_MIN && rel <= INT32_MAX) {
		int32_t rel32 = (int32_t)rel;

		len = 5;
		call[0] = 0xe8;
		memcpy(call + 1, &rel32, 4);
	} else {
		len = MOVABS_CALL_LEN;
		memcpy(call, movabs_r11, 2);
		memcpy(call + 2, &to, 8);
		memcpy(call + 10, call_r11, 3);
	}
	if (len > size) {
		err = fl_diag_say(diag, -ENOSPC, "the shadow of the stack map record at 0x%llx "
				  "holds %u bytes%s: a call to 0x%llx needs %u", (unsigned long long)r->pc,
				  size, r->size ? "" : " (derived from its nops: declare it with "
				  "fl_stackmap_declare)", (unsigned long long)to, len);
		goto out;
	}
	memcpy(now, (const void *)(uintptr_t)r->pc, len);
	if (memcmp(now, call, len) == 0)
		goto out;	/* invalidated before */
	p = (struct fl_patch){ .addr = (void *)(uintptr_t)r->pc, .old_bytes = now,
			       .new_bytes = call, .len = len };
	err = fl_patch_text_locked(&p, 1, NULL, 0, diag);
out:
	fl_patch_unlock(&old);
	return err;
}
