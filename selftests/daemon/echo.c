// SPDX-License-Identifier: MIT
/* The placeholder PING/PONG protocol (see echo.h). */
#include <errno.h>
#include <string.h>

#include "dlog.h"
#include "echo.h"

static void echo_message(struct fld_client *c, const void *buf, size_t len, int *fds,
			 size_t nfds, void *ctx)
{
	unsigned char reply[256];
	int err;

	(void)fds;
	(void)ctx;
	if (len >= 4 && !memcmp(buf, "PING", 4)) {
		if (len > sizeof(reply))
			len = sizeof(reply);
		memcpy(reply, "PONG", 4);
		memcpy(reply + 4, (const unsigned char *)buf + 4, len - 4);
		err = fld_client_send(c, reply, len, NULL, 0);
		if (err < 0 && err != -EPIPE)
			fld_debug("client %lu: PONG not sent: %s", fld_client_id(c), strerror(-err));
		return;
	}
	fld_debug("client %lu: ignoring a message of %zu bytes with %zu descriptors",
		  fld_client_id(c), len, nfds);
}

const struct fld_loop_ops fld_echo_ops = {
	.on_message = echo_message,
};
