/* SPDX-License-Identifier: MIT */
/*
 * A registered module's stack map index (stackmaps.h): the format layer's
 * (format/smindex.h) over a loaded ELF module's section, its functions at
 * the addresses discovery resolved, or over JIT code's.
 */
#include <errno.h>
#include <stdlib.h>

#include <faultline/discovery.h>
#include <faultline/dispatch.h>
#include <faultline/format.h>

#include "format/smindex.h"
#include "table/stackmaps.h"

/* Whether pc is in the module's text, its loadable executable segments. */
static bool text_contains(const void *fm, uint64_t pc)
{
	return fl_module_text_contains(fm, pc);
}

int fl_smindex_of_elf(const struct fl_module *fm, struct fl_smindex **out,
		      struct fl_diag *diag)
{
	const struct fl_module_section *sec = &fm->sections[FL_SECTION_STACKMAP];
	struct fl_smindex_code code = { .contains = text_contains, .arg = fm };
	uint64_t *funcs;
	int err;

	*out = NULL;
	if (!sec->data || !sec->size)
		return 0;
	funcs = malloc((sec->num_functions ? sec->num_functions : 1) * sizeof(*funcs));
	if (!funcs)
		return -ENOMEM;
	for (size_t i = 0; i < sec->num_functions; i++)
		funcs[i] = sec->functions[i].address;
	err = fl_smindex_build(fm->name[0] ? fm->name : "the main program", sec->data,
			       sec->size, sec->parse_flags, funcs, sec->num_functions, &code, out,
			       diag);
	free(funcs);
	return err;
}

int fl_smindex_of_jit(const struct fl_jit_reg *reg, struct fl_smindex **out,
		      struct fl_diag *diag)
{
	struct fl_smindex_code code = { .lo = reg->code_start,
					.hi = reg->code_start + reg->code_size };

	*out = NULL;
	if (!reg->stackmap || !reg->stackmap_size)
		return 0;
	return fl_smindex_build(reg->name ? reg->name : "jit", reg->stackmap,
				reg->stackmap_size, reg->parse_flags, NULL, 0, &code, out, diag);
}
