// SPDX-License-Identifier: MIT
/*
 * A region's extent ends where the next record's begins.  Patch points 60
 * and 61 are 8 bytes of nops each, back to back (pp_pair + 4 and + 12):
 * nothing in the code says where the first ends, but the stack map does.
 *   - the derived extent of 60 is 8 bytes, not the 16 bytes of nops;
 *   - mov $1, %eax written into 61, then mov $2, %eax into 60: 61 still
 *     holds mov $1 (a write of 60 padded over 16 bytes would have put nops
 *     over it);
 *   - fl_patchpoint_reset of 60 leaves 61 as it is;
 *   - a declared size that passes the next record is refused.
 */
#include "common.h"

void pp_pair(void);

int main(int argc, char **argv)
{
	uint8_t mov1[5], mov2[5];
	struct fl_point a, b;
	struct fl_diag d = { 0 };
	const uint8_t *pc61 = (const uint8_t *)(uintptr_t)pp_pair + 12;
	int err;

	(void)argc;
	t_start(argv);
	t_init_discovering();
	t_enable();
	t_mov_eax(mov1, 1);
	t_mov_eax(mov2, 2);

	t_read_point(60, NULL, &a);
	t_read_point(61, NULL, &b);
	printf("  patch point 60 at %#llx: %u bytes; 61 at %#llx: %u bytes\n", (unsigned long long)a.pc,
	       a.size, (unsigned long long)b.pc, b.size);
	t_check(b.pc == (uintptr_t)pc61 && a.pc + 8 == b.pc, "the records are not back to back");
	t_check(b.size == 8, "patch point 61: derived %u bytes, compiled with 8", b.size);
	t_check(a.size == 8, "patch point 60: derived %u bytes, compiled with 8: its extent passes "
		"the next record (61, at +8)", a.size);

	err = fl_patchpoint_write(61, NULL, mov1, 5, NULL, &d);
	t_check(err == 0, "write 61: %d %s", err, d.msg);
	err = fl_patchpoint_write(60, NULL, mov2, 5, NULL, &d);
	t_check(err == 0, "write 60: %d %s", err, d.msg);
	t_check(memcmp(pc61, mov1, 5) == 0, "writing patch point 60 changed patch point 61");
	err = fl_patchpoint_write(61, NULL, mov1, 5, NULL, &d);
	t_check(err == 0, "write 61 again: %d %s", err, d.msg);
	err = fl_patchpoint_reset(60, NULL, &d);
	t_check(err == 0, "reset 60: %d %s", err, d.msg);
	t_check(memcmp(pc61, mov1, 5) == 0, "resetting patch point 60 changed patch point 61");
	err = fl_patchpoint_declare(60, NULL, 12, &d);
	printf("  declare 60 with 12 bytes: %d %s\n", err, d.msg);
	t_check(err != 0, "declaring 60 with 12 bytes, over patch point 61, was accepted");
	printf("PASS %s\n", t_name);
	return 0;
}
