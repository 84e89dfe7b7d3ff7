/* SPDX-License-Identifier: MIT */
/*
 * Text output for the commands that print a line per map entry (faultmap,
 * stackmap: millions of lines for a large file).  printf parses its format
 * string and takes stdio's lock at every call; at a million lines that was
 * most of the command's time.  This appends to a buffer with inline puts
 * and hands the FILE 64 KiB at a time.  Not thread-safe: one writer per
 * struct.
 */
#ifndef FL_CLI_OUT_H
#define FL_CLI_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CLI_OUT_SIZE (64u << 10)
/* The most one number appends: 20 decimal digits and a sign. */
#define CLI_OUT_NUMBER_MAX 24u

struct cli_out {
	FILE *f;
	size_t len;
	int err;		/* a write failed (the FILE's error is set too) */
	char buf[CLI_OUT_SIZE];
};

/* Starts writing to f.  Nothing reaches f before cli_out_flush. */
void cli_out_init(struct cli_out *o, FILE *f);

/*
 * Hands what is buffered to the FILE (which keeps its own buffering: mixing
 * with printf on the same FILE keeps the order as long as this is called
 * in between).  Returns 0, or -1 when a write has failed.
 */
int cli_out_flush(struct cli_out *o);

/* cli_out_mem's rare case: the buffer is full, or n is larger than it. */
void cli_out_mem_slow(struct cli_out *o, const char *s, size_t n);

/* Appends n bytes (a constant n compiles to a few moves). */
static inline void cli_out_mem(struct cli_out *o, const char *s, size_t n)
{
	if (CLI_OUT_SIZE - o->len < n) {
		cli_out_mem_slow(o, s, n);
		return;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

/* A string literal, without strlen. */
#define CLI_OUT_LIT(o, lit) cli_out_mem((o), "" lit, sizeof(lit) - 1)

static inline void cli_out_str(struct cli_out *o, const char *s)
{
	cli_out_mem(o, s, strlen(s));
}

/* Appends v in decimal. */
static inline void cli_out_u64(struct cli_out *o, uint64_t v)
{
	unsigned n = 1;
	char *p;

	if (CLI_OUT_SIZE - o->len < CLI_OUT_NUMBER_MAX)
		cli_out_flush(o);
	for (uint64_t t = v; t >= 10; t /= 10)
		n++;
	p = o->buf + o->len + n;
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	o->len += n;
}

/* Appends v in decimal, with a '-' when negative. */
static inline void cli_out_i64(struct cli_out *o, int64_t v)
{
	if (v < 0) {
		cli_out_mem(o, "-", 1);
		/* As unsigned: -INT64_MIN does not fit an int64_t. */
		cli_out_u64(o, 0 - (uint64_t)v);
		return;
	}
	cli_out_u64(o, (uint64_t)v);
}

/* Appends v in lowercase hexadecimal, zero-padded to min_digits (<= 16). */
static inline void cli_out_hex(struct cli_out *o, uint64_t v, unsigned min_digits)
{
	unsigned n = 1;
	char *p;

	if (CLI_OUT_SIZE - o->len < CLI_OUT_NUMBER_MAX)
		cli_out_flush(o);
	for (uint64_t t = v; t >= 16; t >>= 4)
		n++;
	if (n < min_digits && min_digits <= 16)
		n = min_digits;
	p = o->buf + o->len + n;
	for (unsigned i = 0; i < n; i++, v >>= 4)
		*--p = "0123456789abcdef"[v & 15];
	o->len += n;
}

#endif /* FL_CLI_OUT_H */
