// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroced's control socket (SOCK_SEQPACKET, one message per request and
 * per reply; layouts in user/ipc/ipc.h): accept a session, read its
 * requests, check size and version, dispatch by opcode, reply (with
 * descriptors after HELLO). Every malformed request gets a named error
 * and is counted (mrocectl daemon shows the counters); a session whose
 * replies cannot be sent loses its session.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mroced.h"

int ep_add(int fd, struct evtag *t)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = t};

	return epoll_ctl(mroced.epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

void accept_one(void)
{
	struct sess *s;
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	int fd = accept4(mroced.lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	s = calloc(1, sizeof(*s));
	if (!s) {
		close(fd);
		return;
	}
	s->fd = fd;
	s->id = ++mroced.next_id;
	s->shm_fd = s->kick_fd = s->cq_fd = -1;
	s->next_pd = 1;
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl))
		s->pid = cr.pid;
	s->tag_sock = (struct evtag){EV_SOCK, s};
	s->tag_kick = (struct evtag){EV_KICK, s};
	if (ep_add(fd, &s->tag_sock) < 0) {
		close(fd);
		free(s);
		return;
	}
	s->next = mroced.sessions;
	mroced.sessions = s;
}

static int dispatch(struct sess *s, const struct mrd_req *q, struct mrd_rep *r,
		    int rfd, int fds[3], int *nfds)
{
	if (q->op == MRD_OP_STATUS)
		return do_status(q, r);
	if (q->op == MRD_OP_APP_INFO)
		return do_app_info(q, r);
	if (q->op == MRD_OP_HELLO)
		return do_hello(s, q, r, fds, nfds);
	if (q->op == 0 || q->op >= MRD_OP_MAX) {
		mroced.ctl[MRD_CTL_ctl_bad_op]++;
		return -EOPNOTSUPP;
	}
	if (!s->hello) {
		mroced.ctl[MRD_CTL_ctl_no_hello]++;
		return -ENOTCONN;
	}
	/* Work posted before this request goes first (program order; only
	 * a client that overflowed its QPs' bounds, which libmroce never
	 * does, can leave some behind: rings.c). */
	drain_sq_all(s, now_ns());
	switch (q->op) {
	case MRD_OP_ALLOC_PD:
		return do_alloc_pd(s, r);
	case MRD_OP_DEALLOC_PD:
		return do_dealloc_pd(s, q);
	case MRD_OP_REG_MR:
		return do_reg_mr(s, q, r, rfd);
	case MRD_OP_DEREG_MR:
		return do_dereg_mr(s, q);
	case MRD_OP_CREATE_CQ:
		return do_create_cq(s, q, r);
	case MRD_OP_DESTROY_CQ:
		return do_destroy_cq(s, q);
	case MRD_OP_CREATE_QP:
		return do_create_qp(s, q, r);
	case MRD_OP_DESTROY_QP:
		return do_destroy_qp(s, q);
	case MRD_OP_MODIFY_QP:
		return do_modify_qp(s, q);
	case MRD_OP_QUERY_QP:
		return do_query_qp(s, q, r);
	case MRD_OP_QUERY_PATH:
		return do_query_path(s, q, r);
	case MRD_OP_QUERY_STATS:
		do_query_stats(s, r);
		return 0;
	}
	mroced.ctl[MRD_CTL_ctl_bad_op]++;
	return -EOPNOTSUPP;
}

static int send_rep(struct sess *s, const struct mrd_rep *r, const int *fds,
		    int nfds)
{
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = (void *)r, .iov_len = sizeof(*r)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};

	if (nfds) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	}
	/* Replies are small and the app waits for each: a full socket
	 * buffer means a misbehaving app, which loses its session. */
	return sendmsg(s->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT) ==
			       (ssize_t)sizeof(*r)
		       ? 0
		       : -EPIPE;
}

/* Checks one request of n bytes and answers it into *r. */
static void answer(struct sess *s, const struct mrd_req *q, size_t n,
		   int msg_flags, struct mrd_rep *r, int rfd, int fds[3],
		   int *nfds)
{
	mroced.ctl[MRD_CTL_ctl_requests]++;
	r->version = MRD_VERSION;
	if (n < 8 || (msg_flags & MSG_TRUNC) || n != sizeof(struct mrd_req)) {
		mroced.ctl[MRD_CTL_ctl_bad_size]++;
		r->err = -EBADMSG;
		if (n >= 8) {
			r->op = q->op;
			r->seq = q->seq;
		}
		return;
	}
	r->op = q->op;
	r->seq = q->seq;
	if (q->version != MRD_VERSION) {
		mroced.ctl[MRD_CTL_ctl_bad_version]++;
		r->err = -EPROTO;
		return;
	}
	r->err = dispatch(s, q, r, rfd, fds, nfds);
	if (r->err == -ENOENT)
		mroced.ctl[MRD_CTL_ctl_bad_handle]++;
	else if (r->err == -EINVAL)
		mroced.ctl[MRD_CTL_ctl_bad_arg]++;
	if (r->err)
		pr_dbg("session %d: op %u: %s", s->id, r->op,
		       strerror(-r->err));
}

/* The first descriptor passed with a message (REG_MR's memfd), -1 when
 * none; any other is closed. */
static int take_fd(struct msghdr *m)
{
	int rfd = -1;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		int k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			if (rfd < 0)
				rfd = fd;
			else
				close(fd);
		}
	}
	return rfd;
}

/* Reads and answers every pending request; false when the session is
 * over (hang-up, error). */
bool handle_sock(struct sess *s)
{
	for (;;) {
		union {
			char buf[CMSG_SPACE(4 * sizeof(int))];
			struct cmsghdr align;
		} u;
		union {
			struct mrd_req q;
			char raw[sizeof(struct mrd_req) + 1];
		} in;
		struct iovec iov = {.iov_base = &in, .iov_len = sizeof(in)};
		struct msghdr m = {.msg_iov = &iov,
				   .msg_iovlen = 1,
				   .msg_control = u.buf,
				   .msg_controllen = sizeof(u.buf)};
		struct mrd_rep r = {0};
		int rfd, fds[3], nfds = 0;
		ssize_t n;

		n = recvmsg(s->fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		if (n == 0)
			return false; /* hang-up */
		rfd = take_fd(&m);
		answer(s, &in.q, (size_t)n, m.msg_flags, &r, rfd, fds, &nfds);
		if (rfd >= 0)
			close(rfd);
		if (send_rep(s, &r, fds, r.err ? 0 : nfds) < 0)
			return false;
	}
}
