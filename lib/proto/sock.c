/* SPDX-License-Identifier: MIT */
/*
 * Sending one message on the protocol's SOCK_SEQPACKET socket, with the
 * file descriptors it carries: the one sendmsg the agent, the daemon and
 * the command-line tool all need; and connecting to the daemon, which the
 * agent and the command-line tool share.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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

int fl_proto_connect(const char *path, uint32_t *peer_uid)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	size_t n = strlen(path);
	int fd, err;

	if (n == 0 || n >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, n + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/*
	 * A Unix socket connects at once or not at all: with the peer's
	 * backlog full it fails with EAGAIN rather than EINPROGRESS.
	 */
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		if (errno == EINTR)
			continue;
		err = -errno;
		goto fail;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
		err = -errno;
		goto fail;
	}
	if (peer_uid)
		*peer_uid = (uint32_t)cred.uid;
	if (cred.uid != 0 && cred.uid != geteuid()) {
		err = -EPERM;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return err;
}
