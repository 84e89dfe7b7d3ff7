/* SPDX-License-Identifier: MIT */
/* x86-64's DWARF register numbers, by name. */
#ifndef FL_CLI_DWARF_REGS_H
#define FL_CLI_DWARF_REGS_H

/* The x86-64 name of DWARF register reg ("rsp"), or NULL if it has none. */
const char *cli_dwarf_reg_name(unsigned reg);

#endif /* FL_CLI_DWARF_REGS_H */
