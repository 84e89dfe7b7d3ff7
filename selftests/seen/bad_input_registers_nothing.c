// SPDX-License-Identifier: MIT
/*
 * bad_input_registers_nothing: fl_seen_add refuses bad input with a clear
 * error and *out NULL, and registers nothing: no perf map line (the map is
 * not even created), no FDE for libgcc_s (_Unwind_Find_FDE) or libunwind
 * (unw_get_proc_info_by_ip).  Cases: len 0, no rows, rows[0].at not the
 * start, rows not ascending, a row past the end, a name with a newline, an
 * orig in no FDE, rows' orig in two FDEs.  Then a CFA expression: with
 * pushed 0 it is copied (registered, unwindable); with pushed 8 it cannot
 * be shifted: -ENOTSUP with *out set, named in the perf map, unwindable by
 * neither.
 */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "seen_test.h"

static const void *(*find_fde)(void *, void *);
static char map[64];

/* Whether either unwinder has an FDE for pc. */
static int known(uint64_t pc)
{
	char bases[3 * sizeof(void *)];
	unw_proc_info_t pi;

	return find_fde((void *)(uintptr_t)pc, bases) != NULL ||
	       unw_get_proc_info_by_ip(unw_local_addr_space, pc, &pi, NULL) == 0;
}

static void refused(const char *what, int want, uint64_t start, size_t len, const char *name,
		    const struct fl_seen_row *rows, size_t nrows)
{
	struct fl_diag diag;
	struct fl_seen *s = (struct fl_seen *)1;
	int err;

	memset(&diag, 0, sizeof(diag));
	err = fl_seen_add(start, len, name, rows, nrows, &s, &diag);
	printf("  %-24s %d: %s\n", what, err, diag.msg);
	t_check(err == want, "%s: %d, not %d", what, err, want);
	t_check(!s, "%s: *out set", what);
	t_check(diag.msg[0], "%s: no message", what);
	t_check(!known(start), "%s: an unwinder knows the code", what);
	t_check(access(map, F_OK) && errno == ENOENT, "%s: a perf map was written", what);
}

int main(void)
{
	struct fl_seen_row rows[SEEN_ROWS], bad[SEEN_ROWS];
	struct fl_diag diag;
	struct fl_seen *s;
	uint8_t *code;
	uint64_t start;
	size_t len;
	char *line = NULL;
	size_t cap = 0;
	FILE *f;
	int err, named = 0;

	t_name = "bad_input_registers_nothing";
	fl_set_log(t_log, NULL);
	unsetenv("FAULTLINE_PERF_MAP");
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)getpid());
	unlink(map);
	find_fde = (const void *(*)(void *, void *))dlsym(dlopen("libgcc_s.so.1", RTLD_NOW),
							  "_Unwind_Find_FDE");
	t_check(find_fde, "libgcc_s: %s", dlerror());
	code = seen_copy_nc();
	start = (uint64_t)(uintptr_t)code;
	len = seen_nc_len();
	seen_nc_rows(code, rows);

	refused("len 0", -EINVAL, start, 0, "x", rows, SEEN_ROWS);
	refused("no rows", -EINVAL, start, len, "x", rows, 0);
	refused("rows[0] not at start", -EINVAL, start, len, "x", rows + 1, SEEN_ROWS - 1);
	memcpy(bad, rows, sizeof(bad));
	bad[4].at = bad[2].at;
	refused("rows not ascending", -EINVAL, start, len, "x", bad, SEEN_ROWS);
	memcpy(bad, rows, sizeof(bad));
	bad[SEEN_ROWS - 1].at = start + len;
	refused("a row past the end", -EINVAL, start, len, "x", bad, SEEN_ROWS);
	refused("a newline in the name", -EINVAL, start, len, "a\nb", rows, SEEN_ROWS);
	memcpy(bad, rows, sizeof(bad));
	for (int i = 0; i < SEEN_ROWS; i++)
		bad[i].orig = (uint64_t)(uintptr_t)nocfi_fn;
	refused("orig in no FDE", -ENOENT, start, len, "x", bad, SEEN_ROWS);
	memcpy(bad, rows, sizeof(bad));
	bad[3].orig = (uint64_t)(uintptr_t)other_fn;
	refused("rows in two FDEs", -EINVAL, start, len, "x", bad, SEEN_ROWS);

	/* A CFA expression: copied as it is when nothing was pushed... */
	bad[0] = (struct fl_seen_row){ .at = start, .orig = (uint64_t)(uintptr_t)expr_fn };
	memset(&diag, 0, sizeof(diag));
	err = fl_seen_add(start, len, "faultline:test:expr0", bad, 1, &s, &diag);
	t_check(!err && fl_seen_unwindable(s) && known(start), "a CFA expression, pushed 0: "
		"%d: %s", err, diag.msg);
	fl_seen_remove(s);
	t_check(!known(start), "removed, an unwinder still knows the code");
	/* ... refused when it would have to be shifted. */
	bad[0].pushed = 8;
	memset(&diag, 0, sizeof(diag));
	err = fl_seen_add(start, len, "faultline:test:expr8", bad, 1, &s, &diag);
	printf("  %-24s %d: %s\n", "CFA expression, pushed", err, diag.msg);
	t_check(err == -ENOTSUP && s && !fl_seen_unwindable(s) && !known(start),
		"a CFA expression, pushed 8: %d, *out %p, not -ENOTSUP, set, unwindable by neither",
		err, (void *)s);
	fl_seen_remove(s);
	f = fopen(map, "r");
	t_check(f, "no perf map after the two registrations");
	while (getline(&line, &cap, f) > 0)
		named += strstr(line, "faultline:test:expr") != NULL;
	fclose(f);
	free(line);
	unlink(map);
	t_check(named == 2, "%d perf map lines for the two, not 2", named);
	printf("PASS %s\n", t_name);
	return 0;
}
