// SPDX-License-Identifier: MIT
/*
 * The .eh_frame given to fl_jit_register is checked before anything is
 * registered.  A well-formed one (one CIE "zR", PC-relative FDE pointers,
 * one FDE over 16 bytes of code) is registered with libunwind for as long
 * as the module is: unw_get_proc_info_by_ip finds its FDE, and nothing once
 * the module is unregistered; one over code that a registered module's
 * covers is refused (-EEXIST).  A malformed one is refused with -EINVAL and
 * a message that says what is wrong, and nothing is registered: neither
 * the module's stack map record (fl_stackmap_record_at) nor unwind
 * information (libunwind):
 *   truncated records, the 64-bit format, a CIE pointer that names no CIE,
 *   an unknown augmentation or one without 'z', a CIE version other than 1
 *   and 3, a pointer encoding libunwind cannot read (data-relative), an
 *   unknown call frame instruction, an operand past its record, an FDE
 *   outside the code, two FDEs over the same code, no FDE, a size without
 *   bytes; and code more than 2 GiB from its .eh_frame (absolute pointers:
 *   accepted near the code).
 */
#define UNW_LOCAL_ONLY
#include <errno.h>
#include <libunwind.h>
#include <stdio.h>
#include <sys/mman.h>

#include "common.h"
#include "handmade.h"

/* The code the .eh_frame describes, and its stack map's one record (4 bytes in). */
static uint8_t code[64];
static uint8_t map[64];

static struct eh eh;

static const uint8_t nothing[1] = { 0 };	/* no instructions */

/* The well-formed .eh_frame: one CIE, one FDE over code[0, 16), the terminator. */
static void good(void)
{
	eh_simple(&eh, (uint64_t)(uintptr_t)code, 16);
}

static int reg(const void *data, size_t size, uint64_t code_size, struct fl_diag *d)
{
	FL_OPTS(fl_jit_reg, r, .name = "eh", .stackmap = map, .stackmap_size = sizeof(map),
		.code_start = (uint64_t)(uintptr_t)code, .code_size = code_size,
		.eh_frame = data, .eh_frame_size = size);

	return fl_jit_register(&r, d);
}

/* Nothing registered: no record at code + 4, no unwind information in code. */
static void nothing_registered(const char *what)
{
	struct fl_stackmap_at at = { .sz = sizeof(at) };
	unw_proc_info_t pi;

	t_check(fl_stackmap_record_at((uint64_t)(uintptr_t)code + 4, &at) == -ENOENT,
		"%s: its stack map record is registered", what);
	t_check(unw_get_proc_info_by_ip(unw_local_addr_space, (uint64_t)(uintptr_t)code + 1, &pi,
					NULL) < 0, "%s: libunwind finds unwind information", what);
}

/* Registers data (size bytes) and expects -EINVAL with words in the message. */
static void refused_at(const char *what, const void *data, size_t size, uint64_t code_size,
		       const char *words)
{
	struct fl_diag d = { 0 };
	int err = reg(data, size, code_size, &d);

	printf("  %s: %d %s\n", what, err, d.msg);
	t_check(err == -EINVAL, "%s: %d, not -EINVAL (%s)", what, err, d.msg);
	t_check(strstr(d.msg, words) != NULL, "%s: \"%s\" does not say \"%s\"", what, d.msg, words);
	nothing_registered(what);
}

/* The .eh_frame being built, its first size bytes. */
static void refused(const char *what, size_t size, uint64_t code_size, const char *words)
{
	refused_at(what, eh.b, size, code_size, words);
}

int main(void)
{
	uint64_t at = (uint64_t)(uintptr_t)code;
	struct fl_diag d = { 0 };
	unw_proc_info_t pi;
	uint32_t len;
	void *far;
	size_t c;
	int id, err;

	t_start("eh_frame_checked_before_registration");
	setvbuf(stdout, NULL, _IOLBF, 0);
	map_one_record(map, at);

	good();
	id = reg(eh.b, eh.n, sizeof(code), &d);
	t_check(id > 0, "the well-formed .eh_frame: %d %s", id, d.msg);
	err = unw_get_proc_info_by_ip(unw_local_addr_space, at + 1, &pi, NULL);
	t_check(err == 0 && pi.start_ip == at && pi.end_ip == at + 16,
		"libunwind: %d, [0x%llx, 0x%llx), not the FDE's [0x%llx, +16)", err,
		(unsigned long long)pi.start_ip, (unsigned long long)pi.end_ip,
		(unsigned long long)at);
	t_check(unw_get_proc_info_by_ip(unw_local_addr_space, at + 20, &pi, NULL) < 0,
		"libunwind finds unwind information past the FDE");
	t_check(fl_jit_unregister(id) == 0, "fl_jit_unregister");
	nothing_registered("unregistered");

	/*
	 * Code whose .eh_frame covers code a registered module's covers is
	 * refused (-EEXIST), though its stack map records are elsewhere.
	 */
	good();
	id = reg(eh.b, eh.n, sizeof(code), &d);
	t_check(id > 0, "the well-formed .eh_frame again: %d %s", id, d.msg);
	{
		static struct eh eh2;
		uint8_t map2[64];

		map_one_record(map2, at + 36);
		eh_simple(&eh2, at + 8, 16);
		FL_OPTS(fl_jit_reg, r, .name = "eh2", .stackmap = map2, .stackmap_size = sizeof(map2),
			.code_start = at + 8, .code_size = sizeof(code) - 8, .eh_frame = eh2.b,
			.eh_frame_size = eh2.n);

		err = fl_jit_register(&r, &d);
		printf("  an .eh_frame over registered code: %d %s\n", err, d.msg);
		t_check(err == -EEXIST && strstr(d.msg, ".eh_frame"),
			"an .eh_frame over registered code: %d %s", err, d.msg);
	}
	t_check(fl_jit_unregister(id) == 0, "fl_jit_unregister");
	nothing_registered("unregistered again");

	good();
	refused("truncated in its FDE", eh.n - 10, sizeof(code), "runs past the section");
	good();
	refused("a truncated length", 2, sizeof(code), "truncated length");

	eh.n = 0;
	eh_put(&eh, 0xffffffffu, 4);
	eh_put(&eh, 64, 8);
	refused("64-bit format", eh.n, sizeof(code), "64-bit");

	good();
	memcpy(&len, eh.b, 4);
	/* The FDE follows the CIE; its CIE pointer follows its length. */
	memcpy(eh.b + 4 + len + 4, &(uint32_t){ 0x1000 }, 4);
	refused("a CIE pointer to nothing", eh.n, sizeof(code), "names no CIE");

	eh.n = 0;
	c = eh_cie(&eh, 1, "zX", 0);
	eh_fde(&eh, c, at, 16, nothing, 0);
	refused("augmentation zX", eh.n, sizeof(code), "'X' unknown");

	eh.n = 0;
	c = eh_cie(&eh, 1, "eh", 0);
	eh_fde(&eh, c, at, 16, nothing, 0);
	refused("augmentation eh", eh.n, sizeof(code), "without 'z'");

	eh.n = 0;
	c = eh_cie(&eh, 2, NULL, 0x1b);
	eh_fde(&eh, c, at, 16, nothing, 0);
	refused("CIE version 2", eh.n, sizeof(code), "version 2");

	eh.n = 0;
	c = eh_cie(&eh, 1, NULL, 0x3b);	/* datarel | sdata4 */
	eh_fde(&eh, c, at, 16, nothing, 0);
	refused("data-relative FDE pointers", eh.n, sizeof(code), "cannot be read");

	eh.n = 0;
	c = eh_cie(&eh, 1, NULL, 0x1b);
	eh_fde(&eh, c, at, 16, (const uint8_t[]){ 0x3f }, 1);
	refused("an unknown instruction", eh.n, sizeof(code), "0x3f at offset");

	/* def_cfa: its register (0x87, then the padding's 0), no offset. */
	eh.n = 0;
	c = eh_cie(&eh, 1, NULL, 0x1b);
	eh_fde(&eh, c, at, 16, (const uint8_t[]){ 0x0c, 0x87 }, 2);
	refused("an operand past the record", eh.n, sizeof(code), "runs past the record");

	eh.n = 0;
	c = eh_cie(&eh, 1, NULL, 0x1b);
	eh_fde(&eh, c, at + 8, 16, nothing, 0);
	refused("an FDE past the code", eh.n, 16, "outside the code");

	eh.n = 0;
	c = eh_cie(&eh, 1, NULL, 0x1b);
	eh_fde(&eh, c, at, 16, nothing, 0);
	eh_fde(&eh, c, at + 8, 16, nothing, 0);
	refused("two FDEs over the same code", eh.n, sizeof(code), "overlap");

	eh.n = 0;
	eh_cie(&eh, 1, NULL, 0x1b);
	refused("no FDE", eh.n, sizeof(code), "no FDE");

	refused_at("a size without bytes", NULL, 16, sizeof(code), "range");

	/* Absolute pointers, but more than 2 GiB from the code: libunwind's index cannot say it. */
	eh.n = 0;
	c = eh_cie(&eh, 1, NULL, 0x00);
	eh_fde(&eh, c, at, 16, nothing, 0);
	far = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	t_check(far != MAP_FAILED, "mmap");
	memcpy(far, eh.b, eh.n);
	if ((uint64_t)(uintptr_t)far - at > (1ull << 31) && at - (uint64_t)(uintptr_t)far > (1ull << 31))
		refused_at("code 2 GiB away", far, eh.n, sizeof(code), "2 GiB");
	else
		printf("  code 2 GiB away: not tried, the mapping is %p, the code %p\n", far,
		       (void *)code);
	/* The same bytes, near the code: accepted. */
	id = reg(eh.b, eh.n, sizeof(code), &d);
	t_check(id > 0, "absolute pointers near the code: %d %s", id, d.msg);
	t_check(fl_jit_unregister(id) == 0, "fl_jit_unregister");
	munmap(far, 4096);

	printf("PASS %s\n", t_name);
	return 0;
}
