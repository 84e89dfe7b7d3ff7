/* SPDX-License-Identifier: MIT */
/*
 * The one rule for options structs (libbpf's), for every layer.
 *
 * Each options struct leads with `size_t sz`, set by the caller to the size
 * of the struct it was compiled with (FL_OPTS in <faultline/opts.h> does it).
 * A library newer than its caller knows more fields: the caller's struct is
 * shorter, and the fields it lacks take their defaults (zero).  A library
 * older than its caller knows fewer: the caller's struct is longer, and it is
 * accepted only when every byte the library does not know is zero, so that a
 * request for a feature this library lacks is refused, never ignored.
 */
#ifndef FL_CORE_OPTS_H
#define FL_CORE_OPTS_H

#include <stddef.h>

/*
 * Copies the caller's options struct *opts (NULL: all defaults) into *copy,
 * of the `known` bytes this library was built with: bytes the caller's
 * struct lacks read as 0.  Returns 0, or -EINVAL when opts->sz is smaller
 * than the size field itself or when a byte past `known` is non-zero.
 * Thread-safe and async-signal-safe.
 */
int fl_opts_copy(void *copy, size_t known, const void *opts);

/*
 * Copies a result struct `known` bytes long from *from into the caller's
 * *to, whose sz the caller set: min(sz, known) bytes are written, the bytes
 * of a longer caller struct past `known` are zeroed, and to->sz is kept.
 * Returns 0, or -EINVAL when to->sz is smaller than the size field.
 * Thread-safe and async-signal-safe.
 */
int fl_opts_out(void *to, const void *from, size_t known);

#endif /* FL_CORE_OPTS_H */
