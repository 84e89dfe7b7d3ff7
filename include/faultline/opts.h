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
 * FL_OPTS declares one with sz set, the named fields given, and every other
 * byte zero, padding included (a newer library may have a field where an
 * older caller's struct has padding):
 *
 *     FL_OPTS(fl_init_opts, o, .flags = FL_INIT_NO_AGENT);
 *     fl_init(&o);
 *
 * A caller that does not use FL_OPTS must memset the struct to 0 first.
 */
#ifndef FAULTLINE_OPTS_H
#define FAULTLINE_OPTS_H

#include <stddef.h>
#include <string.h>

#define FL_OPTS(type, name, ...)						\
	struct type name = ({							\
		memset(&name, 0, sizeof(struct type));				\
		(struct type){ .sz = sizeof(struct type), __VA_ARGS__ };	\
	})

#endif /* FAULTLINE_OPTS_H */
