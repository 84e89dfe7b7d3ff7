// SPDX-License-Identifier: MIT
/*
 * The discovery layer on the test corpus (selftests/progs, linked in every
 * mode by the corpus rules): preloaded into a corpus executable, or with a
 * corpus library into any program, this runs before main, discovers every
 * module that has maps and checks each function's runtime address against
 * an independent oracle: the module file's own symbol table, read here with
 * libelf (an STT_FUNC symbol's st_value + load bias).  It also checks that
 * at least one module has maps, that none has an error, and that
 * fl_module_function_address agrees.  Prints "PASS"/"FAIL" and exits before
 * main: the corpus programs are not run for their behaviour.
 *
 *   LD_PRELOAD=dt-probe.so corpus-exe
 *   LD_PRELOAD="dt-probe.so corpus.so" /bin/true
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <faultline/discovery.h>

/* What the corpus libraries import is in selftests/progs/stubs.c, linked in. */

static int failures;

struct oracle {
	uint64_t *addr;		/* sorted runtime addresses of functions */
	size_t n;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Every STT_FUNC of .symtab (else .dynsym), + bias.  lld -pie makes the
 * functions the maps name SHN_UNDEF with st_value = the address: those too.
 */
static int oracle_load(struct oracle *o, const char *path, uint64_t bias)
{
	Elf_Scn *scn = NULL, *best = NULL;
	GElf_Shdr sh, best_sh;
	Elf_Data *d;
	size_t i, n;
	Elf *e;
	int fd;

	memset(o, 0, sizeof(*o));
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && (scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh))
			break;
		if (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !best)) {
			best = scn;
			best_sh = sh;
		}
	}
	if (!best || !(d = elf_getdata(best, NULL))) {
		elf_end(e);
		close(fd);
		return -1;
	}
	n = best_sh.sh_size / sizeof(Elf64_Sym);
	o->addr = calloc(n + 1, sizeof(*o->addr));
	for (i = 0; o->addr && i < n; i++) {
		GElf_Sym s;

		if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC)
			continue;
		if (s.st_shndx == SHN_UNDEF && !s.st_value)
			continue;
		o->addr[o->n++] = s.st_value + bias;
	}
	qsort(o->addr, o->n, sizeof(*o->addr), cmp_u64);
	elf_end(e);
	close(fd);
	return o->addr ? 0 : -1;
}

static int oracle_has(const struct oracle *o, uint64_t addr)
{
	return bsearch(&addr, o->addr, o->n, sizeof(addr), cmp_u64) != NULL;
}

static int check_module(const struct fl_module *m, void *ctx)
{
	size_t *with_maps = ctx, i, total = 0, relocated = 0;
	struct oracle o;
	int k;

	if (m->err) {
		printf("  error: %s\n", m->diag.msg);
		failures++;
		return 0;
	}
	(*with_maps)++;
	if (oracle_load(&o, m->path, m->load_bias)) {
		printf("  error: %s: no symbol table to check against\n", m->path);
		failures++;
		return 0;
	}
	for (k = 0; k < FL_SECTION_KINDS; k++) {
		const struct fl_module_section *s = &m->sections[k];

		for (i = 0; i < s->num_functions; i++) {
			const struct fl_module_function *f = &s->functions[i];
			uint64_t rt = 0;

			total++;
			relocated += f->relocated;
			if (!oracle_has(&o, f->address)) {
				printf("  error: %s: %s: table %u function %u: 0x%llx is no function's address\n",
				       m->path, fl_section_kind_name(k), f->table, f->index,
				       (unsigned long long)f->address);
				failures++;
			}
			if (!fl_module_text_contains(m, f->address) ||
			    fl_module_function_address(m, k, f->address_offset, f->stored, &rt) ||
			    rt != f->address) {
				printf("  error: %s: %s: table %u function %u: inconsistent\n",
				       m->path, fl_section_kind_name(k), f->table, f->index);
				failures++;
			}
		}
	}
	printf("  module %s: bias 0x%llx, %zu function fields (%zu fault map, %zu stack map), "
	       "%zu relocated by the loader\n",
	       m->path, (unsigned long long)m->load_bias, total,
	       m->sections[FL_SECTION_FAULTMAP].num_functions,
	       m->sections[FL_SECTION_STACKMAP].num_functions, relocated);
	free(o.addr);
	return 0;
}

__attribute__((constructor)) static void probe(void)
{
	const char *label = getenv("DT_PROBE_LABEL");
	size_t with_maps = 0;
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = fl_module_for_each(check_module, &with_maps, NULL);
	if (ret) {
		printf("  error: fl_module_for_each: %d\n", ret);
		failures++;
	}
	if (!with_maps) {
		printf("  error: no module with maps\n");
		failures++;
	}
	label = label ? label : "probe";
	if (failures)
		printf("FAIL %s: %d error(s)\n", label, failures);
	else
		printf("PASS %s\n", label);
	fflush(stdout);
	_exit(failures ? 1 : 0);
}
