/* SPDX-License-Identifier: MIT */
/*
 * Sending one message on the protocol's SOCK_SEQPACKET socket, with the
 * file descriptors it carries: the one sendmsg the agent, the daemon and
 * the command-line tool all need.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "proto/proto.h"

int fl_proto_send(int fd, const void *buf, size_t len, const int *fds, size_t nfds,
		  int flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * FL_PROTO_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds > FL_PROTO_MAX_FDS)
		return -EINVAL;
	if (nfds) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	for (;;) {
		ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL | flags);

		/* A datagram goes whole or not at all: a short count is not retried. */
		if (n == (ssize_t)len)
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 ? -errno : -EIO;
	}
}
