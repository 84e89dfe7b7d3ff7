/* SPDX-License-Identifier: MIT */
/*
 * A fault map or stack map section as LLVM 14 prints it
 * (llvm-objdump-14 --fault-map-section, llvm-readelf-14 --stackmap).
 */
#ifndef FL_CLI_PRINT_LLVM_H
#define FL_CLI_PRINT_LLVM_H

#include <stdint.h>
#include <stdio.h>

#include "input.h"

int print_faultmap_llvm(FILE *f, const struct cli_section *sec, uint32_t flags);
int print_stackmap_llvm(FILE *f, const struct cli_section *sec, uint32_t flags);

#endif /* FL_CLI_PRINT_LLVM_H */
