// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Connection helper: a TCP rendezvous that exchanges what two RC QPs need
 * to know about each other, then walks both to RTS (see mroce.h).
 *
 * Rendezvous message (56 bytes, big-endian, both directions):
 *   0  magic "MRV0"        4  version (1)   5 transport   6 family   7 0
 *   8  device address (16 bytes; IPv4 in the first 4)
 *  24  QP number           28 initial PSN (24 bits)
 *  32  buffer address      40 buffer rkey  44 reserved (0)
 *  48  buffer length
 * After both moved to RTR, each side sends one byte 'R' and waits for the
 * peer's: only then is it safe to send (the peer can receive).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../common/util.h"
#include "lib_int.h"

#define RDV_LEN 56
#define RDV_VERSION 1
#define RDV_DEFAULT_MS 10000

struct mrv_listener {
	struct mrv_device *dev;
	int fd;
	uint16_t port;
};

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static int remaining_ms(uint64_t deadline)
{
	uint64_t now = mrl_now_ns();

	if (now >= deadline)
		return 0;
	return (int)((deadline - now + 999999) / 1000000);
}

/* Wait for `events` on fd, driving the device meanwhile (the peer may
 * already be talking to us: handshake packets need answers). */
static int wait_fd(struct mrv_device *dev, int fd, short events,
		   uint64_t deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		int ms = remaining_ms(deadline), r;

		if (!ms)
			return -ETIMEDOUT;
		if (dev) {
			(void)mrv_progress(dev);
			if (ms > 1)
				ms = 1;
		}
		r = poll(&p, 1, ms);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0)
			return 0;
	}
}

/* Sends (dir POLLOUT) or receives (POLLIN) all len bytes of buf on the
 * non-blocking stream socket fd by the deadline. */
static int xfer_all(struct mrv_device *dev, int fd, short dir, void *buf,
		    size_t len, uint64_t deadline)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t r = dir == POLLOUT ? send(fd, p, len,
						  MSG_NOSIGNAL | MSG_DONTWAIT)
					   : recv(fd, p, len, MSG_DONTWAIT);

		if (r == 0 && dir == POLLIN)
			return -ECONNRESET; /* peer closed mid-exchange */
		if (r < 0) {
			int err;

			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			err = wait_fd(dev, fd, dir, deadline);
			if (err < 0)
				return err;
			continue;
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

/* Sends len bytes of out, then receives as many into in (may be out). */
static int trade(struct mrv_device *dev, int fd, void *out, void *in,
		 size_t len, uint64_t deadline)
{
	int err = xfer_all(dev, fd, POLLOUT, out, len, deadline);

	return err ? err : xfer_all(dev, fd, POLLIN, in, len, deadline);
}

static int exchange(struct mrv_qp *qp, int fd, const struct mrv_conn_param *lp,
		    struct mrv_conn_info *ri, uint64_t deadline)
{
	struct mrv_device *dev = qp->pd->dev;
	uint8_t m[RDV_LEN] = {'M', 'R', 'V', '0', RDV_VERSION};
	uint8_t r[RDV_LEN];
	struct mrv_qp_attr a;
	uint32_t psn;
	char ack = 'R';
	int err;

	err = mroce_random_bytes(&psn, sizeof(psn));
	if (err < 0)
		return err;
	psn &= 0xffffff;
	m[5] = dev->transport;
	m[6] = dev->family;
	memcpy(m + 8, dev->local, 16);
	put32(m + 24, qp->qpn);
	put32(m + 28, psn);
	put64(m + 32, lp ? lp->buf_addr : 0);
	put32(m + 40, lp ? lp->buf_rkey : 0);
	put64(m + 48, lp ? lp->buf_len : 0);
	err = trade(NULL, fd, m, r, sizeof(m), deadline);
	if (err < 0)
		return err;
	if (memcmp(r, "MRV0", 4) || r[4] != RDV_VERSION ||
	    r[6] != dev->family || get32(r + 24) == 0)
		return -EPROTO;
	if (r[5] != m[5]) /* a well-formed peer on the other transport */
		return -EPROTONOSUPPORT;

	memset(ri, 0, sizeof(*ri));
	ri->sock = -1;
	if (!inet_ntop(r[6], r + 8, ri->addr, sizeof(ri->addr)))
		return -EPROTO;
	ri->qp_num = get32(r + 24);
	ri->psn = get32(r + 28) & 0xffffff;
	ri->buf_addr = get64(r + 32);
	ri->buf_rkey = get32(r + 40);
	ri->buf_len = get64(r + 48);

	memset(&a, 0, sizeof(a));
	a.qp_state = MRV_QPS_INIT;
	a.qp_access_flags = lp && lp->access ? lp->access
					     : MRV_ACCESS_LOCAL_WRITE |
						       MRV_ACCESS_REMOTE_WRITE |
						       MRV_ACCESS_REMOTE_READ;
	err = mrv_modify_qp(qp, &a, MRV_QP_STATE | MRV_QP_ACCESS_FLAGS);
	if (err < 0)
		return err;
	a.qp_state = MRV_QPS_RTR;
	memcpy(a.dest_addr, ri->addr, sizeof(a.dest_addr));
	a.dest_qp_num = ri->qp_num;
	a.rq_psn = ri->psn;
	err = mrv_modify_qp(qp, &a, MRV_QP_STATE | MRV_QP_DEST | MRV_QP_RQ_PSN);
	if (err < 0)
		return err;
	err = trade(dev, fd, &ack, &ack, 1, deadline);
	if (err < 0)
		return err;
	if (ack != 'R')
		return -EPROTO;
	a.qp_state = MRV_QPS_RTS;
	a.sq_psn = psn;
	return mrv_modify_qp(qp, &a, MRV_QP_STATE | MRV_QP_SQ_PSN);
}

static uint64_t deadline_of(const struct mrv_conn_param *lp)
{
	int ms = lp && lp->timeout_ms > 0 ? lp->timeout_ms : RDV_DEFAULT_MS;

	return mrl_now_ns() + (uint64_t)ms * 1000000ull;
}

static int qp_is_reset(struct mrv_qp *qp)
{
	struct mrv_qp_attr a;
	int err = mrv_query_qp(qp, &a);

	if (err < 0)
		return err;
	return a.qp_state == MRV_QPS_RESET ? 0 : -EPERM;
}

static void tcp_opts(int fd)
{
	int one = 1;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* The exchange on the connected socket fd; then fd is the caller's, as an
 * ordinary blocking socket, in remote->sock. Closes fd on failure. */
static int exchange_on(struct mrv_qp *qp, int fd,
		       const struct mrv_conn_param *local,
		       struct mrv_conn_info *remote, uint64_t deadline)
{
	int err;

	tcp_opts(fd);
	err = exchange(qp, fd, local, remote, deadline);
	if (err < 0) {
		close(fd);
		return err;
	}
	remote->sock = fd;
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return 0;
}

int mrv_connect(struct mrv_qp *qp, const char *host, uint16_t port,
		const struct mrv_conn_param *local,
		struct mrv_conn_info *remote)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
	struct addrinfo *ai, *it;
	uint64_t deadline;
	char svc[8];
	int fd = -1, err;

	if (!qp || !host || !port || !remote)
		return -EINVAL;
	err = qp_is_reset(qp);
	if (err < 0)
		return err;
	deadline = deadline_of(local);
	snprintf(svc, sizeof(svc), "%u", port);
	err = getaddrinfo(host, svc, &hints, &ai);
	if (err)
		return err == EAI_SYSTEM   ? -errno
		       : err == EAI_MEMORY ? -ENOMEM
					   : -EHOSTUNREACH;
	err = -EHOSTUNREACH;
	for (it = ai; it; it = it->ai_next) {
		int soerr = 0;
		socklen_t sl = sizeof(soerr);

		fd = socket(it->ai_family,
			    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			err = -errno;
			continue;
		}
		if (connect(fd, it->ai_addr, it->ai_addrlen) < 0 &&
		    errno != EINPROGRESS) {
			err = -errno;
		} else {
			err = wait_fd(NULL, fd, POLLOUT, deadline);
			if (!err &&
			    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl))
				err = -errno;
			if (!err && soerr)
				err = -soerr;
		}
		if (!err)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0)
		return err;
	return exchange_on(qp, fd, local, remote, deadline);
}

int mrv_listen(struct mrv_device *dev, const char *host, uint16_t port,
	       struct mrv_listener **out)
{
	struct addrinfo hints = {
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE,
	};
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct addrinfo *ai;
	struct mrv_listener *l;
	char svc[8];
	int fd, err, one = 1;

	if (!dev || !out)
		return -EINVAL;
	/* Without a host: every address of the device's own family (an
	 * IPv6 device's peers connect over IPv6) */
	if (!host)
		hints.ai_family = dev->family;
	snprintf(svc, sizeof(svc), "%u", port);
	err = getaddrinfo(host, svc, &hints, &ai);
	if (err)
		return err == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0) {
		err = -errno;
		freeaddrinfo(ai);
		return err;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		err = -errno;
		freeaddrinfo(ai);
		close(fd);
		return err;
	}
	freeaddrinfo(ai);
	l = calloc(1, sizeof(*l));
	if (!l) {
		close(fd);
		return -ENOMEM;
	}
	l->dev = dev;
	l->fd = fd;
	l->port = ntohs(ss.ss_family == AF_INET
				? ((struct sockaddr_in *)&ss)->sin_port
				: ((struct sockaddr_in6 *)&ss)->sin6_port);
	*out = l;
	return 0;
}

int mrv_listener_port(const struct mrv_listener *l)
{
	return l ? l->port : -EINVAL;
}

void mrv_listener_close(struct mrv_listener *l)
{
	if (!l)
		return;
	close(l->fd);
	free(l);
}

int mrv_accept(struct mrv_listener *l, struct mrv_qp *qp,
	       const struct mrv_conn_param *local, struct mrv_conn_info *remote)
{
	uint64_t deadline;
	int fd, err;

	if (!l || !qp || !remote || qp->pd->dev != l->dev)
		return -EINVAL;
	err = qp_is_reset(qp);
	if (err < 0)
		return err;
	deadline = deadline_of(local);
	for (;;) {
		fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0)
			break;
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			return -errno;
		err = wait_fd(l->dev, l->fd, POLLIN, deadline);
		if (err < 0)
			return err;
	}
	return exchange_on(qp, fd, local, remote, deadline);
}
