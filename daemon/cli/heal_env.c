// SPDX-License-Identifier: MIT
/*
 * faultline healable's stand-in for a running process (heal_env.h).
 *
 * The planner (lib/patch/heal_plan.c) is pure: it reads code bytes and asks
 * two questions, which lib/patch/heal.c answers from the process and this
 * file answers from the file alone:
 *   place  any window in user space that does not overlap the module's
 *          own image, placed where the process would have it: an ET_EXEC
 *          at its link-time addresses, an ET_DYN with its first PT_LOAD at
 *          the load address, each code section of an ET_REL at the load
 *          address (its image: the section).  Other modules, the heap,
 *          the stack and other stubs are not known here: whether a window
 *          is really free depends on the process.
 *   busy   the other sites' instructions, each as long as it decodes.
 *          (heal.c's env_busy marks 15 bytes from each site's address, the
 *          longest x86 instruction, as its table does not keep their
 *          lengths: it refuses a site that starts within 14 bytes after
 *          another, which this file does not.)  Nothing is healed yet, so
 *          no other patch pins bytes.
 * An ET_REL file's code is read before relocation: the bytes a punned jump
 * reads past the site may be a relocated field whose value the linker has
 * yet to write.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <Zydis/Zydis.h>

#include <faultline/format.h>

#include "discovery/internal.h"
#include "heal_env.h"

struct heal_key {
	uint32_t section;
	uint8_t len;		/* its instruction's; 15 when none decodes */
	uint64_t addr;
};

/* The longest x86 instruction. */
#define INSN_MAX 15

static int cmp_key(const void *a, const void *b)
{
	const struct heal_key *x = a, *y = b;

	if (x->section != y->section)
		return x->section < y->section ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

const char *heal_file_type(const struct heal_file *hf)
{
	return hf->type == ET_REL ? "relocatable" : hf->type == ET_EXEC ? "executable" : "shared";
}

/* Where the site's function is, and so the site: its link-time address and bias. */
static void locate(struct heal_file *hf, const struct fl_faultmap_event *ev,
		   struct heal_site *s)
{
	struct fl_elf_reloc rel;
	struct fl_elf_code code;
	uint64_t fn;

	s->lost = NULL;
	if (hf->type == ET_REL) {
		if (fl_elf_reloc(hf->elf, FL_SECTION_FAULTMAP, ev->function.address_offset,
				 &rel) != 0) {
			s->lost = "no relocation names its function";
			return;
		}
		fn = rel.symbol_value + (uint64_t)rel.addend;
		s->section = rel.symbol_section;
		s->function = rel.function ? rel.function : rel.symbol[0] ? rel.symbol : NULL;
	} else if (fl_elf_function_address(hf->elf, FL_SECTION_FAULTMAP,
					   ev->function.address_offset, ev->function.address,
					   &fn) != 0) {
		s->lost = "its function's address is unknown (a relocation against an "
			  "undefined symbol)";
		return;
	} else {
		s->function = fl_elf_function_name(hf->elf, FL_SECTION_FAULTMAP,
						   ev->function.address_offset,
						   ev->function.address);
	}
	s->fn = fn;
	if (fl_elf_code(hf->elf, s->section, fn, &code) != 0) {
		s->lost = "its function is not in the file's code";
		return;
	}
	if (hf->type == ET_REL)
		s->bias = (int64_t)(hf->load - code.addr);
	else if (hf->type == ET_DYN)
		s->bias = (int64_t)(hf->load - hf->image.start);
	else
		s->bias = 0;
}

static int collect(struct heal_file *hf, const struct fl_elf_section *sec)
{
	struct fl_faultmap_cursor c;
	struct fl_faultmap_event ev;
	struct fl_diag diag;
	struct heal_site fn_site = { 0 };
	size_t cap = 0;
	int r;

	fl_faultmap_cursor_init(&c, sec->data, sec->size, sec->parse_flags, &diag);
	while ((r = fl_faultmap_next(&c, &ev)) > 0) {
		struct heal_site *s;

		if (ev.type == FL_FM_FUNCTION) {
			memset(&fn_site, 0, sizeof(fn_site));
			locate(hf, &ev, &fn_site);
			continue;
		}
		if (ev.type != FL_FM_FAULT)
			continue;
		if (hf->nsites == cap) {
			cap = cap ? 2 * cap : 64;
			s = realloc(hf->sites, cap * sizeof(*s));
			if (!s)
				return -ENOMEM;
			hf->sites = s;
		}
		s = &hf->sites[hf->nsites++];
		*s = fn_site;
		s->addr = fn_site.fn + ev.fault.faulting_pc_offset;
		s->handler = fn_site.fn + ev.fault.handler_pc_offset;
		s->kind = ev.fault.kind;
		if (!s->lost) {
			struct fl_elf_code code;

			if (fl_elf_code(hf->elf, s->section, s->addr, &code) != 0 ||
			    s->fn < code.addr || s->fn > s->addr)
				s->lost = "the site is not in its function's code";
		}
	}
	return r;
}

/* The length of s's instruction, INSN_MAX when it does not decode. */
static uint8_t insn_length(const struct heal_file *hf, const struct heal_site *s)
{
	ZydisDecoder d;
	ZydisDecodedInstruction insn;
	struct fl_elf_code code;
	uint64_t off;

	if (s->lost || fl_elf_code(hf->elf, s->section, s->addr, &code) != 0)
		return INSN_MAX;
	off = s->addr - code.addr;
	ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&d, NULL, (const uint8_t *)code.data + off,
				code.size - off < INSN_MAX ? code.size - off : INSN_MAX, &insn)))
		return INSN_MAX;
	return insn.length;
}

int heal_file_open(struct heal_file *hf, const char *path, uint64_t load, char *err,
		   size_t errlen)
{
	/* x86-64 files, on any machine: the planner knows x86-64 code only. */
	struct fl_elf_opts opts = { .sz = sizeof(opts), .flags = FL_ELF_CODE | FL_ELF_ANY_MACHINE };
	struct fl_diag diag = { 0 };
	struct fl_elf_section sec;
	int ret;

	memset(hf, 0, sizeof(*hf));
	hf->load = load;
	ret = fl_elf_open(path, &opts, &hf->elf, &diag);
	if (ret < 0) {
		snprintf(err, errlen, "%s", diag.msg[0] ? diag.msg : strerror(-ret));
		return ret;
	}
	if (fl_elf_machine(hf->elf) != EM_X86_64) {
		snprintf(err, errlen, "%s: e_machine %u is not x86-64 (EM_X86_64 = 62): "
			 "healing is planned for x86-64 code only", path, fl_elf_machine(hf->elf));
		return -ENOEXEC;
	}
	hf->type = fl_elf_type(hf->elf);
	hf->assumed = hf->type != ET_EXEC;
	if (hf->type != ET_REL && fl_elf_image(hf->elf, &hf->image) != 0) {
		snprintf(err, errlen, "%s: no PT_LOAD segment: the file has no code to load",
			 path);
		return -EINVAL;
	}
	if (fl_elf_section(hf->elf, FL_SECTION_FAULTMAP, &sec) != 0)
		return 0;
	hf->found = true;
	ret = fl_faultmap_validate(sec.data, sec.size, sec.parse_flags, &diag);
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s", path, diag.msg);
		return ret;
	}
	ret = collect(hf, &sec);
	if (ret == 0 && hf->nsites) {
		hf->keys = malloc(hf->nsites * sizeof(*hf->keys));
		if (!hf->keys)
			ret = -ENOMEM;
	}
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	for (size_t i = 0; i < hf->nsites; i++)
		hf->keys[i] = (struct heal_key){ .section = hf->sites[i].section,
						 .len = insn_length(hf, &hf->sites[i]),
						 .addr = hf->sites[i].addr };
	qsort(hf->keys, hf->nsites, sizeof(*hf->keys), cmp_key);
	return 0;
}

void heal_file_close(struct heal_file *hf)
{
	fl_elf_close(hf->elf);
	free(hf->sites);
	free(hf->keys);
	memset(hf, 0, sizeof(*hf));
}

/* What the planner's callbacks see: the file, the site, the image at run time. */
struct env_ctx {
	const struct heal_file *hf;
	const struct heal_site *site;
	uint64_t image_start, image_end;
};

static bool env_place(void *ctx, uint64_t lo, uint64_t hi, size_t size, uint64_t *at)
{
	const struct env_ctx *e = ctx;

	/* Below the image, or just past it: the lowest start that fits. */
	if (lo + size <= e->image_start || lo >= e->image_end) {
		*at = lo;
		return true;
	}
	if (e->image_end <= hi) {
		*at = e->image_end;
		return true;
	}
	return false;
}

static bool env_busy(void *ctx, uint64_t a, size_t len)
{
	const struct env_ctx *e = ctx;
	const struct heal_file *hf = e->hf;
	uint64_t from = a - (uint64_t)e->site->bias, lo_addr;
	struct heal_key k;
	size_t lo = 0, hi = hf->nsites;

	/* The first site at or after from - (INSN_MAX - 1): it may reach from. */
	lo_addr = from > INSN_MAX - 1 ? from - (INSN_MAX - 1) : 0;
	k = (struct heal_key){ .section = e->site->section, .addr = lo_addr };
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp_key(&hf->keys[mid], &k) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < hf->nsites && hf->keys[lo].section == e->site->section &&
	       hf->keys[lo].addr < from + len; lo++)
		if (hf->keys[lo].addr != e->site->addr && hf->keys[lo].addr + hf->keys[lo].len > from)
			return true;
	return false;
}

/* Relocation: the function's extent is its symbol's size. */
static bool env_extent(void *ctx, uint64_t fn, uint64_t *end, bool *lsda)
{
	const struct env_ctx *e = ctx;
	uint64_t size;

	if (!fl_elf_function_size(e->hf->elf, e->site->section, fn - (uint64_t)e->site->bias,
				  &size))
		return false;
	*end = fn + size;
	*lsda = false;	/* not known from the file alone: the process looks at its unwind entry */
	return true;
}

static int cmp_member(const void *a, const void *b)
{
	const struct fl_heal_member *x = a, *y = b;

	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* The sites of [lo, hi) of the site's section, in address order, each once. */
static size_t env_sites(void *ctx, uint64_t lo, uint64_t hi, struct fl_heal_member *out,
			size_t max)
{
	const struct env_ctx *e = ctx;
	const struct heal_file *hf = e->hf;
	size_t n = 0, k = 0;

	for (size_t i = 0; i < hf->nsites; i++) {
		const struct heal_site *s = &hf->sites[i];
		uint64_t pc = heal_runtime(s, s->addr);

		if (s->lost || s->section != e->site->section || pc < lo || pc >= hi)
			continue;
		if (n == max)
			return max + 1;
		out[n++] = (struct fl_heal_member){ pc, heal_runtime(s, s->handler) };
	}
	qsort(out, n, sizeof(*out), cmp_member);
	for (size_t i = 0; i < n; i++)
		if (!k || out[k - 1].pc != out[i].pc)
			out[k++] = out[i];
	return k;
}

size_t heal_plan_site(const struct heal_file *hf, const struct heal_site *s,
		      struct fl_heal_plan *p, uint8_t bytes[15])
{
	struct env_ctx e = { .hf = hf, .site = s };
	struct fl_heal_env env = { .place = env_place, .busy = env_busy, .extent = env_extent,
				   .sites = env_sites, .tactics = hf->tactics, .ctx = &e };
	struct fl_elf_code code;

	memset(p, 0, sizeof(*p));
	if (s->lost) {
		snprintf(p->why, sizeof(p->why), "%s", s->lost);
		return 0;
	}
	/* collect() found both in one piece of code. */
	fl_elf_code(hf->elf, s->section, s->addr, &code);
	env.base = heal_runtime(s, code.addr);
	env.code = code.data;
	env.len = code.size;
	if (hf->type == ET_REL) {
		e.image_start = env.base;
		e.image_end = env.base + ((code.size + 4095) & ~(uint64_t)4095);
	} else {
		e.image_start = heal_runtime(s, hf->image.start);
		e.image_end = heal_runtime(s, hf->image.end);
	}
	if (fl_heal_plan(&env, heal_runtime(s, s->addr), heal_runtime(s, s->fn),
			 heal_runtime(s, s->handler), p) < 0) {
		snprintf(p->why, sizeof(p->why), "the site is not in its function's code");
		return 0;
	}
	memcpy(bytes, p->site.old, p->site.len);
	return p->site.len;
}
