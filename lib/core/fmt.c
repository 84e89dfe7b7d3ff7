// SPDX-License-Identifier: MIT
/* Async-signal-safe formatting: see fmt.h for why this exists. */
#include <stdint.h>

#include "core/fmt.h"

struct out {
	char *buf;
	size_t size;
	size_t len;
};

static void put(struct out *o, char ch)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = ch;
	o->len++;
}

/* s, or at most max bytes of it (%.*s) when max is not negative. */
static void put_str_max(struct out *o, const char *s, int max)
{
	if (!s)
		s = "(null)";
	for (int i = 0; *s && (max < 0 || i < max); i++)
		put(o, *s++);
}

static void put_unsigned(struct out *o, unsigned long long v, unsigned base)
{
	char digits[24];
	int n = 0;

	do {
		digits[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (n)
		put(o, digits[--n]);
}

size_t fl_vfmt(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = { buf, size, 0 };

	while (*fmt) {
		const char *start = fmt;
		int longs = 0, is_size = 0, max = -1;
		unsigned long long u;
		long long s;

		if (*fmt != '%') {
			put(&o, *fmt++);
			continue;
		}
		fmt++;
		/* %.*s: the precision is an int argument before the string. */
		if (fmt[0] == '.' && fmt[1] == '*' && fmt[2] == 's') {
			max = va_arg(ap, int);
			fmt += 2;
		}
		while (*fmt == 'l') {
			longs++;
			fmt++;
		}
		if (*fmt == 'z') {
			is_size = 1;
			fmt++;
		}
		switch (*fmt) {
		case '%':
			put(&o, '%');
			break;
		case 'c':
			put(&o, (char)va_arg(ap, int));
			break;
		case 's':
			put_str_max(&o, va_arg(ap, const char *), max);
			break;
		case 'd':
			if (is_size)
				s = va_arg(ap, long);	/* ssize_t */
			else if (longs >= 2)
				s = va_arg(ap, long long);
			else if (longs == 1)
				s = va_arg(ap, long);
			else
				s = va_arg(ap, int);
			if (s < 0) {
				put(&o, '-');
				u = 0ULL - (unsigned long long)s;
			} else {
				u = (unsigned long long)s;
			}
			put_unsigned(&o, u, 10);
			break;
		case 'u':
		case 'x':
			if (is_size)
				u = va_arg(ap, size_t);
			else if (longs >= 2)
				u = va_arg(ap, unsigned long long);
			else if (longs == 1)
				u = va_arg(ap, unsigned long);
			else
				u = va_arg(ap, unsigned int);
			put_unsigned(&o, u, *fmt == 'x' ? 16 : 10);
			break;
		default:
			/* Unknown: copy it verbatim (and stop at a trailing %). */
			while (start <= fmt && *start)
				put(&o, *start++);
			if (!*fmt)
				goto done;
			break;
		}
		fmt++;
	}
done:
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return o.len < size ? o.len : (size ? size - 1 : 0);
}

size_t fl_fmt(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	n = fl_vfmt(buf, size, fmt, ap);
	va_end(ap);
	return n;
}
