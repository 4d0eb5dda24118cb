// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The one client of mroced's control protocol (see dclient.h and
 * user/ipc/ipc.h): libmroce's daemon mode and `mrocectl daemon` both
 * talk to the daemon through it, so that a request is framed, timed out
 * and checked the same way everywhere.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "dclient.h"

int mrd_client_connect(struct mrd_client *c, const char *path, int timeout_s)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = timeout_s};
	int err;

	*c = (struct mrd_client){.sock = -1};
	if (!path)
		path = MRD_DEFAULT_SOCK;
	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	c->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c->sock < 0)
		return -errno;
	if (connect(c->sock, (struct sockaddr *)&a, sizeof(a)) < 0) {
		err = -errno; /* -ENOENT / -ECONNREFUSED: no daemon */
		mrd_client_close(c);
		return err;
	}
	(void)setsockopt(c->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return 0;
}

void mrd_client_close(struct mrd_client *c)
{
	if (c->sock >= 0)
		close(c->sock); /* the daemon releases the session */
	c->sock = -1;
}

static int send_req(struct mrd_client *c, struct mrd_req *q, int sendfd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = q, .iov_len = sizeof(*q)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	if (sendfd >= 0) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = sizeof(u.buf);
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &sendfd, sizeof(int));
	}
	do
		n = sendmsg(c->sock, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(*q) ? 0 : -ENOTCONN;
}

/* Keeps up to nrfds passed descriptors in rfds (closes the rest);
 * returns how many it kept. */
static int take_fds(struct msghdr *m, int *rfds, int nrfds)
{
	int got = 0;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(m); cm;
	     cm = CMSG_NXTHDR(m, cm)) {
		int k;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(fd));
			if (got < nrfds)
				rfds[got++] = fd;
			else
				close(fd);
		}
	}
	return got;
}

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		close(fds[i]);
		fds[i] = -1;
	}
}

int mrd_client_call(struct mrd_client *c, uint16_t op, struct mrd_req *q,
		    struct mrd_rep *r, int sendfd, int *rfds, int nrfds)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = r, .iov_len = sizeof(*r)};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = u.buf,
			   .msg_controllen = sizeof(u.buf)};
	int got = 0;
	ssize_t n;

	if (c->broken || c->sock < 0)
		return -ENOTCONN;
	q->version = MRD_VERSION;
	q->op = op;
	q->seq = ++c->seq;
	if (send_req(c, q, sendfd) < 0) {
		c->broken = true;
		return -ENOTCONN;
	}
	do
		n = recvmsg(c->sock, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		got = take_fds(&m, rfds, nrfds);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		/* A daemon that stopped answering is as good as dead. */
		c->broken = true;
		return -ETIMEDOUT;
	}
	if (n <= 0) {
		c->broken = true;
		return -ENOTCONN;
	}
	if (n != (ssize_t)sizeof(*r) || r->version != MRD_VERSION ||
	    r->seq != q->seq || r->op != op) {
		close_fds(rfds, got);
		c->broken = true;
		return -EPROTO;
	}
	if (r->err || got < nrfds) {
		close_fds(rfds, got);
		return r->err ? r->err : -EPROTO;
	}
	return 0;
}

int mrd_client_hello(struct mrd_client *c, uint8_t transport, struct mrd_rep *r,
		     int fds[3])
{
	struct mrd_req q = {0};
	uint32_t entries;
	int err;

	q.u.hello.transport = transport;
	q.u.hello.pid = (uint32_t)getpid();
	err = mrd_client_call(c, MRD_OP_HELLO, &q, r, -1, fds, 3);
	if (err < 0)
		return err;
	entries = r->u.hello.sq_entries;
	if (r->u.hello.shm_size <
		    r->u.hello.sq_off +
			    (uint64_t)entries * sizeof(struct mrd_sqe) ||
	    !entries || (entries & (entries - 1))) {
		close_fds(fds, 3);
		return -EPROTO;
	}
	return 0;
}

const char *mrd_client_strerror(int err)
{
	switch (err) {
	case -ENOENT:
	case -ECONNREFUSED:
		return "mroced is not running";
	case -EACCES:
	case -EPERM:
		return "no permission to use mroced's socket (join the "
		       "socket's group: mroced --sock-group, 'mroce' under "
		       "systemd; or ask for a wider mroced --sock-mode)";
	case -ENAMETOOLONG:
		return "socket path too long";
	case -ETIMEDOUT:
		return "mroced did not answer";
	case -ENOTCONN:
		return "mroced closed the connection";
	case -EPROTO:
		return "mroced's reply does not match the request";
	default:
		return strerror(-err);
	}
}
