// SPDX-License-Identifier: MIT
/* Buffered text output of faultmap and stackmap (out.h): the rare cases. */
#include "out.h"

void cli_out_init(struct cli_out *o, FILE *f)
{
	o->f = f;
	o->len = 0;
	o->err = 0;
}

int cli_out_flush(struct cli_out *o)
{
	if (o->len && fwrite(o->buf, 1, o->len, o->f) != o->len)
		o->err = 1;
	o->len = 0;
	return o->err ? -1 : 0;
}

void cli_out_mem_slow(struct cli_out *o, const char *s, size_t n)
{
	cli_out_flush(o);
	if (n > CLI_OUT_SIZE) {
		if (fwrite(s, 1, n, o->f) != n)
			o->err = 1;
		return;
	}
	memcpy(o->buf, s, n);
	o->len = n;
}
