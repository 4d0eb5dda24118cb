// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce_blast --tcp --pingpong: the kernel TCP ping-pong, the reference row
 * of the loaded-latency measurement (scripts/bench_e2e.sh --loaded): the
 * same one-message-at-a-time exchange as the UDP ping-pong, over one TCP
 * connection with Nagle off, so it can share a host with an iperf3 bulk
 * flow the way write_lat shares one with write_bw.
 */
#include "blast.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Accept one connection on --dport and echo every byte back, spinning. */
int tcp_pp_rx(const struct opts *o, struct result *r)
{
	static char buf[65536];
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)o->dport)};
	int one = 1, lfd, fd;
	double t0, end;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (void *)&a, sizeof(a)) || listen(lfd, 1)) {
		fprintf(stderr, "mroce_blast: TCP listen %d: %s\n", o->dport,
			strerror(errno));
		if (lfd >= 0)
			close(lfd);
		return 1;
	}
	signal_ready(o);
	r->mode = "tcp-pingpong-rx";
	fd = accept(lfd, NULL, NULL);
	close(lfd);
	if (fd < 0) {
		fprintf(stderr, "mroce_blast: TCP accept: %s\n",
			strerror(errno));
		return 1;
	}
	nodelay(fd);
	t0 = now_s();
	end = t0 + o->seconds;
	while (!stop) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT), w = 0;

		if (n == 0)
			break;	/* the pinger is done */
		if (n < 0) {
			if ((r->busy++ & 1023) == 0 && now_s() >= end)
				break;
			continue;
		}
		while (w < n) {
			ssize_t k = send(fd, buf + w, (size_t)(n - w), 0);

			if (k <= 0) {
				r->errors++;
				break;
			}
			w += k;
		}
		r->packets++;
		r->bytes += (uint64_t)n;
	}
	r->seconds = now_s() - t0;
	r->busy = 0;
	close(fd);
	return 0;
}

/* Connect to --dst:--dport, then --count times: send --size bytes that
 * start with the sequence number, spin until all of them are back. */
int tcp_pp_tx(const struct opts *o, struct result *r)
{
	static char buf[65536], in[65536];
	struct sockaddr_in dst;
	long count;
	size_t size;
	double t0;
	int fd, rc = pp_setup(o, r, &dst, &count, &size);

	if (rc)
		return rc;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (void *)&dst, sizeof(dst))) {
		fprintf(stderr, "mroce_blast: TCP connect %s:%d: %s\n", o->dst,
			o->dport, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	nodelay(fd);
	memset(buf, 0xa5, size);
	r->mode = "tcp-pingpong";
	t0 = now_s();
	for (uint64_t seq = 0; seq < (uint64_t)count && !stop; seq++) {
		double ts = now_s(), t = ts;
		size_t got = 0;

		memcpy(buf, &seq, sizeof(seq));
		if (send(fd, buf, size, 0) != (ssize_t)size) {
			r->errors++;
			break;
		}
		while (got < size && !stop) {
			ssize_t n = recv(fd, in + got, size - got, MSG_DONTWAIT);

			t = now_s();
			if (n == 0)
				break;
			if (n > 0)
				got += (size_t)n;
			else if (t - ts > 5)
				break;
		}
		if (got < size || memcmp(in, &seq, sizeof(seq))) {
			r->lost++;	/* a stream does not lose: an error */
			break;
		}
		r->bytes += size;
		r->lat[r->packets++] = (t - ts) * 1e6 / 2;
	}
	r->seconds = now_s() - t0;
	close(fd);
	qsort(r->lat, r->packets, sizeof(*r->lat), cmp_double);
	return r->packets && !r->lost && !r->errors ? 0 : 1;
}
