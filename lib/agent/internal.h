/* SPDX-License-Identifier: MIT */
/* Internal interfaces of lib/agent/. */
#ifndef FL_AGENT_INTERNAL_H
#define FL_AGENT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/*
 * Sends SYMBOLS messages naming the sites at pcs (names[i] when names and
 * it are not NULL, else dladdr; sites without a name are left out), as many messages as the size limit needs.  Returns
 * 0 or -errno.
 */
int fl_agent_send_symbols(int fd, uint32_t module, const uint64_t *pcs,
			  const char *const *names, uint32_t n, uint32_t *seq);

/*
 * Starts a detached thread that takes no signals (the application's
 * signals are its own), named name.  Returns 0 or -errno.
 */
int fl_agent_thread_start(void *(*fn)(void *), const char *name, size_t stack);

/* Starts the fl-requests thread.  Returns 0 or -errno. */
int fl_agent_requests_start(void);

#endif /* FL_AGENT_INTERNAL_H */
