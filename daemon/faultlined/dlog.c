// SPDX-License-Identifier: MIT
/* faultlined's log (see dlog.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dlog.h"

static enum fl_log_level max_level = FL_LOG_INFO;
static int journal = -1; /* unknown until the first message */

static const char *const names[] = { "error", "warn", "info", "debug" };
/* sd-daemon priorities: LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG. */
static const char *const sd_prefix[] = { "<3>", "<4>", "<6>", "<7>" };

void fld_log_set_level(enum fl_log_level level)
{
	max_level = level;
}

int fld_log_parse_level(const char *s)
{
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i]))
			return (int)i;
	return -1;
}

int fld_log_enabled(enum fl_log_level level)
{
	return level <= max_level;
}

/* systemd sets JOURNAL_STREAM=DEV:INO for the journal socket it gives us. */
static int stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2)
		return 0;
	if (fstat(2, &st) < 0)
		return 0;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void fld_log(enum fl_log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (level > max_level)
		return;
	if (journal < 0)
		journal = stderr_is_journal();
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (journal)
		fprintf(stderr, "%s%s\n", sd_prefix[level], msg);
	else
		fprintf(stderr, "faultlined: %s: %s\n", names[level], msg);
}
