// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * UDP-socket packet I/O: the fallback backend for hosts without XDP and the
 * loopback demo.
 *
 * Receive: one socket per protocol port (MetaRoCE, RoCEv2) bound on
 * local_addr, drained with recvmmsg(); IP_RECVTOS / IPV6_RECVTCLASS report
 * the ECN field so CE marks reach the engine. Both sockets sit in one epoll
 * set whose fd is what mroce_io_fd() returns, so a caller polls one fd.
 *
 * Transmit: the source port is the path (ECMP entropy), and the kernel only
 * sends from the port a socket is bound to, so each source port the engine
 * uses gets its own socket, bound lazily on first use and kept in a small
 * table (at most UDP_MAX_SPORTS; the least recently used one is closed to
 * make room). Runs of packets with the same source port go out in one
 * sendmmsg(); ECT(0) is set per packet with an IP_TOS / IPV6_TCLASS cmsg.
 *
 * Destination ports: the engine addresses the well-known ports (4792/4791);
 * the backend sends to the configured ports instead, so a test deployment
 * can move both ends to other ports together.
 *
 * RoCEv2 ICRC: the kernel writes the IP header, so it cannot be computed
 * here; RoCEv2 payloads go out with whatever the engine left (zeros) and
 * received ICRCs are not checked (see io.h).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mroce/wire.h"
#include "io_int.h"

#define UDP_BATCH 64	  /* recvmmsg / sendmmsg batch */
#define UDP_NBUF 256	  /* receive buffers (in flight to caller) */
#define UDP_BUF_SIZE 9216 /* jumbo frame payload */
#define UDP_MAX_SPORTS 64 /* cap on bound source-port sockets */
#define UDP_SOCKBUF (16 << 20)

struct udp_sport {
	uint16_t port; /* 0 = free slot */
	int fd;
	uint64_t last_use; /* tx batch counter, for LRU */
};

struct udp_io {
	struct mroce_io io; /* must be first */
	int rx_fd[2];	    /* [0] MetaRoCE port, [1] RoCEv2 port */
	int epfd;
	int next_rx;	/* fairness between the two sockets */
	uint64_t clock; /* tx batches so far (LRU clock) */
	struct udp_sport sports[UDP_MAX_SPORTS];
	uint8_t *bufs;		       /* UDP_NBUF * UDP_BUF_SIZE */
	uint16_t free_stack[UDP_NBUF]; /* free receive buffer indices */
	int nfree;
};

static struct udp_io *to_udp(const struct mroce_io *io)
{
	return (struct udp_io *)io;
}

static socklen_t make_sa(uint8_t family, const uint8_t *addr, uint16_t port,
			 struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, addr, 4);
		return sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, addr, 16);
		return sizeof(*sin6);
	}
}

static void bufsize(int fd, int opt_force, int opt)
{
	int v = UDP_SOCKBUF;

	/* The FORCE variant ignores rmem_max but needs CAP_NET_ADMIN. */
	if (setsockopt(fd, SOL_SOCKET, opt_force, &v, sizeof(v)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
}

static int open_sock(const struct mroce_io_cfg *cfg, uint16_t port, bool rx)
{
	struct sockaddr_storage ss;
	socklen_t sl = make_sa(cfg->family, cfg->local_addr, port, &ss);
	int one = 1, err;
	int fd = socket(cfg->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			0);

	if (fd < 0)
		return -errno;
	if (cfg->family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
				 sizeof(one));
	if (rx) {
		bufsize(fd, SO_RCVBUFFORCE, SO_RCVBUF);
		if (cfg->family == AF_INET)
			err = setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one,
					 sizeof(one));
		else
			err = setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS,
					 &one, sizeof(one));
		if (err < 0)
			goto fail;
	}
	bufsize(fd, SO_SNDBUFFORCE, SO_SNDBUF);
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0)
		goto fail;
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

static void udp_close(struct mroce_io *io)
{
	struct udp_io *u = to_udp(io);

	for (int i = 0; i < 2; i++)
		if (u->rx_fd[i] >= 0)
			close(u->rx_fd[i]);
	for (int i = 0; i < UDP_MAX_SPORTS; i++)
		if (u->sports[i].port)
			close(u->sports[i].fd);
	if (u->epfd >= 0)
		close(u->epfd);
	free(u->bufs);
	free(u);
}

static int udp_open(const struct mroce_io_cfg *cfg, struct mroce_io **out)
{
	struct udp_io *u;
	int err = -ENOMEM;

	if (cfg->family != AF_INET && cfg->family != AF_INET6)
		return -EAFNOSUPPORT;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->io.ops = &mroce_io_udp_ops;
	u->io.cfg = *cfg;
	if (!u->io.cfg.mroce_port)
		u->io.cfg.mroce_port = MROCE_UDP_PORT;
	if (!u->io.cfg.rocev2_port)
		u->io.cfg.rocev2_port = ROCEV2_UDP_PORT;
	if (!u->io.cfg.sport_min && !u->io.cfg.sport_max) {
		u->io.cfg.sport_min = MROCE_SPORT_MIN;
		u->io.cfg.sport_max = MROCE_SPORT_MAX;
	}
	u->io.cfg.ifname = NULL; /* not ours to keep a pointer to */
	u->rx_fd[0] = u->rx_fd[1] = u->epfd = -1;
	u->bufs = malloc((size_t)UDP_NBUF * UDP_BUF_SIZE);
	if (!u->bufs)
		goto fail;
	for (int i = 0; i < UDP_NBUF; i++)
		u->free_stack[i] = (uint16_t)(UDP_NBUF - 1 - i);
	u->nfree = UDP_NBUF;

	u->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (u->epfd < 0) {
		err = -errno;
		goto fail;
	}
	for (int i = 0; i < 2; i++) {
		uint16_t port =
			i ? u->io.cfg.rocev2_port : u->io.cfg.mroce_port;
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};

		err = open_sock(&u->io.cfg, port, true);
		if (err < 0)
			goto fail;
		u->rx_fd[i] = err;
		if (epoll_ctl(u->epfd, EPOLL_CTL_ADD, err, &ev) < 0) {
			err = -errno;
			goto fail;
		}
	}
	*out = &u->io;
	return 0;
fail:
	udp_close(&u->io);
	return err;
}

static bool read_ce(struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		int tos;

		if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS &&
		     c->cmsg_len >= CMSG_LEN(1))) {
			/* IPv4 delivers the TOS byte as one unsigned char. */
			tos = *(uint8_t *)CMSG_DATA(c);
		} else if (c->cmsg_level == IPPROTO_IPV6 &&
			   c->cmsg_type == IPV6_TCLASS &&
			   c->cmsg_len >= CMSG_LEN(sizeof(int))) {
			memcpy(&tos, CMSG_DATA(c), sizeof(tos));
		} else {
			continue;
		}
		return (tos & 3) == 3;
	}
	return false;
}

static int rx_one_sock(struct udp_io *u, int which, struct mroce_io_rx *pkts,
		       int n)
{
	struct mmsghdr mm[UDP_BATCH];
	struct iovec iov[UDP_BATCH];
	struct sockaddr_storage src[UDP_BATCH];
	char ctl[UDP_BATCH][CMSG_SPACE(sizeof(int)) * 2];
	uint16_t idx[UDP_BATCH];
	int got;

	if (n > UDP_BATCH)
		n = UDP_BATCH;
	if (n > u->nfree)
		n = u->nfree;
	if (n <= 0)
		return 0;
	memset(mm, 0, sizeof(mm[0]) * n);
	for (int i = 0; i < n; i++) {
		idx[i] = u->free_stack[u->nfree - 1 - i];
		iov[i].iov_base = u->bufs + (size_t)idx[i] * UDP_BUF_SIZE;
		iov[i].iov_len = UDP_BUF_SIZE;
		mm[i].msg_hdr.msg_iov = &iov[i];
		mm[i].msg_hdr.msg_iovlen = 1;
		mm[i].msg_hdr.msg_name = &src[i];
		mm[i].msg_hdr.msg_namelen = sizeof(src[i]);
		mm[i].msg_hdr.msg_control = ctl[i];
		mm[i].msg_hdr.msg_controllen = sizeof(ctl[i]);
	}
	got = recvmmsg(u->rx_fd[which], mm, (unsigned int)n, MSG_DONTWAIT,
		       NULL);
	if (got < 0)
		return (errno == EAGAIN || errno == EINTR) ? 0 : -errno;
	u->nfree -= got;
	for (int i = 0; i < got; i++) {
		struct mroce_io_rx *r = &pkts[i];

		memset(r, 0, sizeof(*r));
		r->data = iov[i].iov_base;
		r->len = mm[i].msg_len;
		r->cookie = idx[i];
		r->dport = which ? u->io.cfg.rocev2_port : u->io.cfg.mroce_port;
		r->ce = read_ce(&mm[i].msg_hdr);
		if (src[i].ss_family == AF_INET) {
			struct sockaddr_in *s = (struct sockaddr_in *)&src[i];

			r->family = AF_INET;
			memcpy(r->src, &s->sin_addr, 4);
			r->sport = ntohs(s->sin_port);
		} else {
			struct sockaddr_in6 *s = (struct sockaddr_in6 *)&src[i];

			r->family = AF_INET6;
			memcpy(r->src, &s->sin6_addr, 16);
			r->sport = ntohs(s->sin6_port);
		}
		if (mm[i].msg_hdr.msg_flags & MSG_TRUNC)
			u->io.stats.rx_bad_frame++;
		u->io.stats.rx_pkts++;
		u->io.stats.rx_bytes += r->len;
	}
	return got;
}

static int udp_rx(struct mroce_io *io, struct mroce_io_rx *pkts, int n)
{
	struct udp_io *u = to_udp(io);
	int total = 0;

	/* Alternate which socket goes first so neither protocol starves. */
	for (int k = 0; k < 2 && total < n; k++) {
		int which = (u->next_rx + k) & 1;
		int got = rx_one_sock(u, which, pkts + total, n - total);

		if (got < 0)
			return total ? total : got;
		total += got;
	}
	u->next_rx ^= 1;
	return total;
}

static void udp_rx_release(struct mroce_io *io, struct mroce_io_rx *pkts, int n)
{
	struct udp_io *u = to_udp(io);

	for (int i = 0; i < n; i++) {
		/* Not one of ours, or released twice (data is cleared on
		 * release): ignore rather than corrupt the free stack. */
		if (!pkts[i].data || pkts[i].cookie >= UDP_NBUF ||
		    u->nfree >= UDP_NBUF)
			continue;
		u->free_stack[u->nfree++] = (uint16_t)pkts[i].cookie;
		pkts[i].data = NULL;
	}
}

/* The socket bound to source port `port`, opened on first use. Falls back
 * to the MetaRoCE receive socket when the port cannot be bound (in use by
 * someone else): the packet still goes out, on another path. */
static int sport_fd(struct udp_io *u, uint16_t port)
{
	struct udp_sport *victim = &u->sports[0];
	int fd;

	for (int i = 0; i < UDP_MAX_SPORTS; i++) {
		struct udp_sport *s = &u->sports[i];

		if (s->port == port) {
			s->last_use = u->clock;
			return s->fd;
		}
		if (!s->port)
			victim = s;
		else if (victim->port && s->last_use < victim->last_use)
			victim = s;
	}
	if (port == u->io.cfg.mroce_port)
		return u->rx_fd[0];
	if (port == u->io.cfg.rocev2_port)
		return u->rx_fd[1];
	fd = open_sock(&u->io.cfg, port, false);
	if (fd < 0)
		return u->rx_fd[0];
	if (victim->port)
		close(victim->fd);
	victim->port = port;
	victim->fd = fd;
	victim->last_use = u->clock;
	return fd;
}

static uint16_t map_dport(const struct udp_io *u, uint16_t dport)
{
	if (dport == MROCE_UDP_PORT)
		return u->io.cfg.mroce_port;
	if (dport == ROCEV2_UDP_PORT)
		return u->io.cfg.rocev2_port;
	return dport;
}

static int udp_tx(struct mroce_io *io, const struct mroce_io_tx *pkts, int n)
{
	struct udp_io *u = to_udp(io);
	struct mmsghdr mm[UDP_BATCH];
	struct iovec iov[UDP_BATCH];
	struct sockaddr_storage dst[UDP_BATCH];
	char ctl[UDP_BATCH][CMSG_SPACE(sizeof(int))];
	int done = 0;

	u->clock++;
	while (done < n) {
		uint16_t sport = pkts[done].sport;
		int run = 0, fd, sent;

		/* One sendmmsg per run of packets sharing a source port. */
		while (done + run < n && run < UDP_BATCH &&
		       pkts[done + run].sport == sport)
			run++;
		memset(mm, 0, sizeof(mm[0]) * run);
		for (int i = 0; i < run; i++) {
			const struct mroce_io_tx *t = &pkts[done + i];
			struct msghdr *mh = &mm[i].msg_hdr;

			if (!t->dst || (t->dst->family != AF_INET &&
					t->dst->family != AF_INET6))
				return done ? done : -EINVAL;
			iov[i].iov_base = (void *)t->data;
			iov[i].iov_len = t->len;
			mh->msg_iov = &iov[i];
			mh->msg_iovlen = 1;
			mh->msg_name = &dst[i];
			mh->msg_namelen =
				make_sa(t->dst->family, t->dst->addr,
					map_dport(u, t->dport), &dst[i]);
			if (t->ect) {
				struct cmsghdr *c;
				int tos = 0x02; /* ECT(0) */

				mh->msg_control = ctl[i];
				mh->msg_controllen = CMSG_SPACE(sizeof(int));
				c = CMSG_FIRSTHDR(mh);
				c->cmsg_level = t->dst->family == AF_INET
							? IPPROTO_IP
							: IPPROTO_IPV6;
				c->cmsg_type = t->dst->family == AF_INET
						       ? IP_TOS
						       : IPV6_TCLASS;
				c->cmsg_len = CMSG_LEN(sizeof(int));
				memcpy(CMSG_DATA(c), &tos, sizeof(tos));
			}
		}
		fd = sport_fd(u, sport);
		sent = sendmmsg(fd, mm, (unsigned int)run, MSG_DONTWAIT);
		u->io.stats.tx_kicks++;
		if (sent < 0) {
			if (errno == EAGAIN || errno == ENOBUFS ||
			    errno == EINTR) {
				u->io.stats.tx_full++;
				break;
			}
			/* Unreachable destination and the like: the packet
			 * is lost as on a real network; the transport
			 * recovers. Count it and move on. */
			u->io.stats.tx_errors++;
			done++;
			continue;
		}
		for (int i = 0; i < sent; i++) {
			u->io.stats.tx_pkts++;
			u->io.stats.tx_bytes += pkts[done + i].len;
		}
		done += sent;
		if (sent < run) {
			u->io.stats.tx_full++;
			break;
		}
	}
	return done;
}

static int udp_fd(const struct mroce_io *io)
{
	return to_udp(io)->epfd;
}

const struct mroce_io_ops mroce_io_udp_ops = {
	.open = udp_open,
	.close = udp_close,
	.rx = udp_rx,
	.rx_release = udp_rx_release,
	.tx = udp_tx,
	.fd = udp_fd,
};
