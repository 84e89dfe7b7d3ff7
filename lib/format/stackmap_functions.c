// SPDX-License-Identifier: MIT
/* A stack map section's functions, table by table: see stackmap_functions.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/stackmap_functions.h"

/* Makes room for one more of n elements of size elem in *v. */
static int room(void **v, size_t n, size_t *cap, size_t elem)
{
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*v, (*cap ? 2 * *cap : 16) * elem);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = *cap ? 2 * *cap : 16;
	return 0;
}

int fl_sm_functions_walk(const void *data, size_t size, uint32_t flags,
			 struct fl_sm_functions *f, struct fl_diag *diag)
{
	struct fl_stackmap_cursor c;
	struct fl_stackmap_event ev;
	size_t cap = 0, tables_cap = 0;
	int r;

	memset(f, 0, sizeof(*f));
	fl_stackmap_cursor_init(&c, data, size, flags, diag);
	while ((r = fl_stackmap_next(&c, &ev)) > 0) {
		if (ev.type == FL_SM_TABLE) {
			if (room((void **)&f->table_base, f->tables, &tables_cap,
				 sizeof(*f->table_base))) {
				r = -ENOMEM;
				break;
			}
			f->table_base[f->tables++] = (uint32_t)f->n;
		} else if (ev.type == FL_SM_FUNCTION) {
			if (room((void **)&f->stored, f->n, &cap, sizeof(*f->stored))) {
				r = -ENOMEM;
				break;
			}
			f->stored[f->n++] = ev.function.address;
		}
	}
	if (r < 0)
		fl_sm_functions_free(f);
	return r;
}

size_t fl_sm_function_of(const struct fl_sm_functions *f, const struct fl_stackmap_record *r)
{
	size_t i;

	if (r->function == FL_NO_FUNCTION || r->table >= f->tables)
		return SIZE_MAX;
	i = (size_t)f->table_base[r->table] + r->function;
	return i < f->n ? i : SIZE_MAX;
}

void fl_sm_functions_free(struct fl_sm_functions *f)
{
	free(f->stored);
	free(f->table_base);
	memset(f, 0, sizeof(*f));
}
