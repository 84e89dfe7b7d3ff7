/* SPDX-License-Identifier: MIT */
/* The functions of sites.ll and record.c. */
#ifndef SHIM_SITES_H
#define SHIM_SITES_H

#include <stdint.h>

#define SITE_IDS 8	/* site ids are 1..6 */

int site_load_i32(int *p);
int site_load_i8(uint8_t *p);
int64_t site_load_i64_off(int64_t *p);	/* p[500] */
void site_store_i32(int *p, int x);
void site_rmw_add_i32(int *p, int x);
void site_store_i64_off(int64_t *p, int64_t x);	/* p[256] = x */
int site_load_nocall(int *p);

void site_null(int id);
unsigned long site_null_count(int id);

#endif
