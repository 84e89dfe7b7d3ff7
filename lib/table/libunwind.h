/* SPDX-License-Identifier: MIT */
/*
 * libunwind, loaded privately (libunwind.c says why): the functions of
 * its local unwinding that faultline calls, by pointer.
 */
#ifndef FL_TABLE_LIBUNWIND_H
#define FL_TABLE_LIBUNWIND_H

#define UNW_LOCAL_ONLY
#include <libunwind.h>

struct fl_libunwind {
	__typeof__(unw_init_local) *init_local;
	__typeof__(unw_init_local2) *init_local2;
	__typeof__(unw_step) *step;
	__typeof__(unw_get_reg) *get_reg;
	__typeof__(unw_get_save_loc) *get_save_loc;
	__typeof__(unw_get_proc_info_by_ip) *get_proc_info_by_ip;
	__typeof__(unw_flush_cache) *flush_cache;
	__typeof__(_U_dyn_register) *dyn_register;
	__typeof__(_U_dyn_cancel) *dyn_cancel;
	unw_addr_space_t local_addr_space;
};

/*
 * libunwind's functions once fl_libunwind_load has succeeded, NULL before.
 * Written once, before fl_table_init publishes anything; read without a
 * lock afterwards, from signal context too.
 */
extern const struct fl_libunwind *fl_libunwind;

/*
 * Loads libunwind (once) and sets fl_libunwind.  Returns 0 on success,
 * -ENOENT when libunwind cannot be loaded or lacks a function (with the
 * loader's message in the log).  Thread-safe; takes the loader's lock.
 */
int fl_libunwind_load(void);

#endif /* FL_TABLE_LIBUNWIND_H */
