/* SPDX-License-Identifier: MIT */
/*
 * Options structs.  Every options struct of faultline leads with `size_t sz`,
 * the size of the struct the caller was compiled with, so that a program and
 * a library of different versions agree (see FL_OPTS(3)):
 *   - a caller built against an older faultline passes a shorter struct: the
 *     fields it lacks take their defaults;
 *   - a caller built against a newer faultline passes a longer one: it is
 *     accepted when every field this library does not know is zero, and
 *     refused with -EINVAL otherwise.
 *
 * FL_OPTS declares one with sz set and the named fields given:
 *
 *     FL_OPTS(fl_init_opts, o, .flags = FL_INIT_NO_AGENT);
 *     fl_init(&o);
 */
#ifndef FAULTLINE_OPTS_H
#define FAULTLINE_OPTS_H

#include <stddef.h>

#define FL_OPTS(type, name, ...) \
	struct type name = { .sz = sizeof(struct type), __VA_ARGS__ }

#endif /* FAULTLINE_OPTS_H */
