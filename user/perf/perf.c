// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce_perf: perftest-style benchmarks over libmroce (include/mroce/mroce.h).
 *
 * Same command line, header block and result columns as perftest's
 * ib_{write,read,send}_{bw,lat}, so scripts that parse those by position
 * keep working; plus the transport switch (MetaRoCE / RoCEv2), a byte-
 * exact --verify mode and a block describing how traffic was sprayed.
 *
 * Client and server talk over the rendezvous TCP socket of the first QP:
 *   client: "RUN <size> <verify>\n"  server: "OK\n"   (server is ready)
 *   client: "WROTE <q> <from> <end>\n"  (write_bw --verify, one per QP:
 *            the messages of this size it wrote, from..end - 1)
 *   client: "END <n>\n"  (n: its messages that consume a receive here)
 *   server: "RES <bad> <rx_data> <rx_ooo> <rx_dup> <q> <msg> <off> <want>
 *            <got> <what>\n"  (the last six: its first --verify failure)
 *   client: "BYE\n"
 * In between, the server only serves: it answers READs (engine), checks
 * received SENDs / WRITE_WITH_IMMs when --verify is on, and for the
 * latency tests answers each ping with a pong of the same size.
 * write_bw's WRITEs stream as in the benchmark; with --verify the server
 * checks, at END, the last message the client wrote into each slot. The
 * data phase needs nothing from the TCP socket, which may ride a path
 * the fabric has blackholed.
 *
 * This file: device and QP set-up, the control channel, the server and
 * main(); perf.h says where the other pieces are.
 */
#include "perf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

const char *prog = "mroce_perf";

void perf_die(int code, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", prog, msg);
	out_end(code, msg);
	exit(code);
}

/* The device's counters since setup(): in daemon mode they are the
 * daemon's, which ran earlier tests too (every row of a demo showed the
 * sum of the rows before it). Other applications of the same daemon
 * still count. */
void run_stats(struct ctx *c, struct mrv_dev_stats *st)
{
	mrv_query_stats(c->dev, st);
	st->tx_data_pkts -= c->st0.tx_data_pkts;
	st->rx_data_pkts -= c->st0.rx_data_pkts;
	st->retransmits -= c->st0.retransmits;
	st->rto_fires -= c->st0.rto_fires;
	st->rx_ooo -= c->st0.rx_ooo;
	st->rx_dup -= c->st0.rx_dup;
}

/* ------------------------------------------------------------------ */
/* Control channel                                                      */
/* ------------------------------------------------------------------ */
static void ctl_send(struct ctx *c, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (send(c->ctl, buf, (size_t)n, MSG_NOSIGNAL) != n)
		perf_die(1, "control connection lost");
}

/* Reads one line if available (wait_ms: -1 block while progressing, 0 no
 * wait). Returns 1 with a line, 0 with none. */
static int ctl_line(struct ctx *c, char *line, size_t cap, bool block)
{
	static char buf[512];
	static size_t have;

	for (;;) {
		char *nl = memchr(buf, '\n', have);
		struct pollfd p = {.fd = c->ctl, .events = POLLIN};
		ssize_t r;

		if (nl) {
			size_t len = (size_t)(nl - buf);

			if (len >= cap)
				len = cap - 1;
			memcpy(line, buf, len);
			line[len] = 0;
			have -= (size_t)(nl - buf) + 1;
			memmove(buf, nl + 1, have);
			return 1;
		}
		if (poll(&p, 1, 0) <= 0) {
			if (!block)
				return 0;
			(void)mrv_progress(c->dev);
			continue;
		}
		r = recv(c->ctl, buf + have, sizeof(buf) - have, 0);
		if (r <= 0)
			perf_die(1, "control connection closed by peer");
		have += (size_t)r;
	}
}

/* ------------------------------------------------------------------ */
/* Server                                                               */
/* ------------------------------------------------------------------ */
/* A receive completed: check the message it announces (SEND: in the
 * receive's slot; write_lat's WRITE_WITH_IMM: in slot 0, imm = it),
 * pong for latency tests, re-post. */
static void server_recv(struct ctx *c, const struct mrv_wc *w, uint64_t size)
{
	int q = qidx(c, w->qp_num);
	struct qpctx *x = &c->q[q];
	int s = (int)w->wr_id;
	uint64_t it = x->recvs++;

	if (c->o.verify) {
		uint8_t *p = w->opcode == MRV_WC_RECV ? slot(c, q, s)
						      : slot(c, q, 0);

		if (w->opcode == MRV_WC_RECV && w->byte_len != size)
			bad_msg(c, q, it, size, BAD_LEN, w->byte_len);
		else if (w->opcode != MRV_WC_RECV && w->imm_data != (uint32_t)it)
			bad_msg(c, q, it, size, BAD_ORDER, w->imm_data);
		else
			c->bad_bytes += check(c, p, q, it, size);
	}
	if (!c->o.bw)
		/* Pong with the same operation and size. */
		post_send(c, q,
			  c->o.kind == T_SEND ? MRV_WR_SEND
					      : MRV_WR_RDMA_WRITE_WITH_IMM,
			  pat(c, q, it), size, x->ri.buf_addr, 0, (uint32_t)it);
	post_recv(c, q, s);
}

/* The server's completions: receives are checked, its pongs counted.
 * Returns how many receives completed. */
static int serve_wc(struct ctx *c, const struct mrv_wc *wc, int k,
		    uint64_t size)
{
	int n = 0;

	for (int i = 0; i < k; i++) {
		int q;

		if (wc[i].opcode == MRV_WC_RECV ||
		    wc[i].opcode == MRV_WC_RECV_RDMA_WITH_IMM) {
			server_recv(c, &wc[i], size);
			n++;
			continue;
		}
		q = qidx(c, wc[i].qp_num);
		c->q[q].outstanding--;
	}
	return n;
}

/* END <n>: the client's messages that consume a receive here, counted
 * since the start. Check every one of them before answering: a message
 * the client saw complete is delivered here soon after (its completion
 * waits for the ones before it), so 10 s without it is a failure. */
static void serve_end(struct ctx *c, uint64_t want, uint64_t size)
{
	double end = now_s() + 10;
	uint64_t have = 0;

	for (int q = 0; q < c->o.qps; q++)
		have += c->q[q].recvs;
	while (have < want) {
		struct mrv_wc wc[32];
		int k = poll_wc(c, wc, 32);

		have += (uint64_t)serve_wc(c, wc, k, size);
		if (!k && now_s() > end) {
			bad_msg(c, 0, have, size * (want - have), BAD_MISSING,
				want - have);
			return;
		}
		if (!k)
			(void)mrv_wait_cq(c->cq, 1);
	}
}

/* write_bw --verify at END: the client's WRITEs have all completed, so
 * every slot holds the last message written into it (message it goes to
 * slot it % slots). Check those: a lost, misplaced, torn or late (an
 * older message placed after a newer one) WRITE shows as wrong bytes. */
static void check_writes(struct ctx *c, uint64_t size)
{
	for (int q = 0; q < c->o.qps; q++) {
		struct qpctx *x = &c->q[q];
		uint64_t it = x->wrote_from;

		if (x->wrote_end - it > (uint64_t)c->slots)
			it = x->wrote_end - (uint64_t)c->slots;
		for (; it < x->wrote_end; it++)
			c->bad_bytes += check(
				c, slot(c, q, (int)(it % (uint64_t)c->slots)),
				q, it, size);
		x->wrote_from = x->wrote_end = 0;
	}
}

static void serve(struct ctx *c)
{
	struct mrv_dev_stats st;
	char line[128];
	uint64_t size = 0, want, from, to;
	int q;

	for (;;) {
		struct mrv_wc wc[32];
		int k;

		k = poll_wc(c, wc, 32);
		serve_wc(c, wc, k, size);
		if (k)
			continue;
		if (!ctl_line(c, line, sizeof(line), false)) {
			(void)mrv_wait_cq(c->cq, 1);
			continue;
		}
		if (!strncmp(line, "RUN ", 4)) {
			char *end;

			size = strtoull(line + 4, &end, 10);
			/* The client decides whether bytes are checked. */
			c->o.verify = strtol(end, NULL, 10) != 0;
			if (size > c->slot_size) {
				/* perftest's rule: both sides get the same
				 * -s / -a / -t; say so instead of failing
				 * with remote access errors. */
				ctl_send(c, "ERR\n");
				perf_die(1,
					 "client asked for %" PRIu64 "-byte "
					 "messages; start the server with the "
					 "same "
					 "-s/-a/-t",
					 size);
			}
			if (c->o.kind == T_READ && c->o.verify)
				for (int q = 0; q < c->o.qps; q++)
					for (int s = 0; s < c->slots; s++)
						memcpy(slot(c, q, s),
						       pat(c, q, (uint64_t)s),
						       size);
			ctl_send(c, "OK\n");
		} else if (sscanf(line, "WROTE %d %" SCNu64 " %" SCNu64, &q,
				  &from, &to) == 3) {
			if (q < 0 || q >= c->o.qps || from > to)
				perf_die(1, "bad control message '%s'", line);
			c->q[q].wrote_from = from;
			c->q[q].wrote_end = to;
		} else if (sscanf(line, "END %" SCNu64, &want) == 1) {
			serve_end(c, want, size);
			if (c->o.verify && c->o.kind == T_WRITE && c->o.bw)
				check_writes(c, size);
			if (c->bad_bytes) {
				char where[160];

				bad_text(c, &c->bad, where, sizeof(where));
				fprintf(stderr,
					"%s: verify FAILED at size %" PRIu64
					": %" PRIu64 " bad bytes; first: %s\n",
					prog, size, c->bad_bytes, where);
			}
			run_stats(c, &st);
			ctl_send(c,
				 "RES %" PRIu64 " %" PRIu64 " %" PRIu64
				 " %" PRIu64 " %d %" PRIu64 " %" PRIu64
				 " %u %u %u\n",
				 c->bad_bytes, st.rx_data_pkts, st.rx_ooo,
				 st.rx_dup, c->bad.set ? c->bad.q : -1,
				 c->bad.msg, c->bad.off, c->bad.want,
				 c->bad.got, c->bad.what);
		} else if (!strcmp(line, "BYE")) {
			return;
		} else {
			perf_die(1, "bad control message '%s'", line);
		}
	}
}

/* ------------------------------------------------------------------ */
/* Setup                                                                */
/* ------------------------------------------------------------------ */
static void pick_local(struct ctx *c)
{
	struct addrinfo hints = {.ai_family = AF_INET,
				 .ai_socktype = SOCK_DGRAM};
	struct sockaddr_in me, *srv;
	socklen_t sl = sizeof(me);
	struct addrinfo *ai;
	int fd;

	if (c->o.local) {
		snprintf(c->local, sizeof(c->local), "%s", c->o.local);
		return;
	}
	if (!c->o.host) {
		snprintf(c->local, sizeof(c->local), "127.0.0.1");
		return;
	}
	if (getaddrinfo(c->o.host, NULL, &hints, &ai))
		perf_die(1, "cannot resolve '%s' (use --local)", c->o.host);
	srv = (struct sockaddr_in *)ai->ai_addr;
	srv->sin_port = htons(c->o.port);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	/* A connected UDP socket learns the route's source address. */
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) ||
	    getsockname(fd, (struct sockaddr *)&me, &sl))
		perf_die(1, "no route to '%s' (use --local)", c->o.host);
	close(fd);
	if (me.sin_addr.s_addr == srv->sin_addr.s_addr &&
	    (ntohl(me.sin_addr.s_addr) >> 24) == 127)
		me.sin_addr.s_addr = htonl(ntohl(me.sin_addr.s_addr) + 1);
	freeaddrinfo(ai);
	inet_ntop(AF_INET, &me.sin_addr, c->local, sizeof(c->local));
}

static void open_dev(struct ctx *c)
{
	struct mrv_dev_attr da = {
		.mode = MRV_MODE_EMBEDDED,
		.backend = c->o.backend,
		.transport = c->o.transport,
		.npaths = (uint8_t)c->o.paths,
		.ifname = c->o.ifname,
		.rto_min_us = (uint32_t)c->o.rto_min_us,
		.link_mbps = c->o.link_mbps,
		.queue_us = c->o.queue_us,
		.flags = c->o.no_ack_offload ? MRV_DEV_NO_ACK_OFFLOAD : 0,
	};
	int err;

	if (c->o.daemon) {
		const char *sock = c->o.daemon_sock ? c->o.daemon_sock
						    : "/run/mroce/mroced.sock";

		da.mode = MRV_MODE_DAEMON;
		da.daemon_sock = sock;
		snprintf(c->local, sizeof(c->local), "mroced");
		err = mrv_open_device(&da, &c->dev);
		if (err == -ENOENT || err == -ECONNREFUSED)
			perf_die(1, "mroced is not running (socket %s)", sock);
		if (err == -EACCES || err == -EPERM)
			perf_die(1, "no permission to use mroced's socket %s: "
				 "join the socket's group (mroced --sock-group; "
				 "'mroce' under systemd)", sock);
		if (err)
			perf_die(1, "cannot open device at mroced %s: %s", sock,
				 strerror(-err));
	} else {
		pick_local(c);
		da.local_addr = c->local;
		err = mrv_open_device(&da, &c->dev);
		if (err == -ENOENT && da.backend == MRV_BACKEND_AFXDP)
			perf_die(1, "no XDP program on %s (AF_XDP needs it): "
				 "attach it first with 'mrocectl attach %s'",
				 da.ifname, da.ifname);
		if (err)
			perf_die(1, "cannot open device on %s: %s", c->local,
				 strerror(-err));
	}
}

static void setup(struct ctx *c)
{
	uint64_t max = c->o.all ? MAX_ALL_SIZE : c->o.size;
	struct mrv_listener *l = NULL;
	int err;

	open_dev(c);
	if ((err = mrv_alloc_pd(c->dev, &c->pd)) ||
	    (err = mrv_create_cq(c->dev, c->o.qps * (4 * c->o.tx_depth + 16),
				 &c->cq)))
		perf_die(1, "setup: %s", strerror(-err));
	c->slot_size = max;
	/* Slots let --verify and receives use distinct buffers per message
	 * in flight; 2 x depth so a server never runs out of receives. */
	c->slots = 2 * c->o.tx_depth;
	while (c->slots > 2 && (uint64_t)c->slots * max > BUF_BUDGET)
		c->slots /= 2;
	c->mr_len = buf_len((uint64_t)c->slots, max);
	if (!c->o.host) {
		err = mrv_listen(c->dev, NULL, c->o.port, &l);
		if (err)
			perf_die(1, "cannot listen on TCP port %u: %s",
				 c->o.port, strerror(-err));
	}
	for (int q = 0; q < c->o.qps; q++) {
		struct qpctx *x = &c->q[q];
		struct mrv_qp_init_attr qa = {
			.send_cq = c->cq,
			.recv_cq = c->cq,
			.max_send_wr = (uint32_t)(2 * c->o.tx_depth + 8),
			.max_recv_wr = (uint32_t)c->slots + 8,
		};
		struct mrv_conn_param p = {.timeout_ms = 10000};

		err = mrv_create_qp(c->pd, &qa, &x->qp);
		if (!err)
			err = mrv_alloc_mr(c->pd, c->mr_len,
					   MRV_ACCESS_LOCAL_WRITE |
						   MRV_ACCESS_REMOTE_WRITE |
						   MRV_ACCESS_REMOTE_READ,
					   &x->mr);
		if (err)
			perf_die(1, "setup QP %d: %s", q, strerror(-err));
		p.buf_addr = (uintptr_t)x->mr->addr;
		p.buf_len = x->mr->length;
		p.buf_rkey = x->mr->rkey;
		if (!c->o.host) {
			/* The first client may take a while to show up. */
			p.timeout_ms = q ? 10000 : 24 * 3600 * 1000;
			err = mrv_accept(l, x->qp, &p, &x->ri);
		} else {
			err = mrv_connect(x->qp, c->o.host, c->o.port, &p,
					  &x->ri);
		}
		if (err == -EPROTONOSUPPORT)
			perf_die(1, "the peer runs the other transport: use the "
				 "same --transport on both sides");
		if (err)
			perf_die(1, "%s %s port %u: %s",
				 c->o.host ? "connect to" : "accept on",
				 c->o.host ? c->o.host : "TCP", c->o.port,
				 strerror(-err));
		if (q) {
			close(x->ri.sock);
			x->ri.sock = -1;
		}
	}
	c->ctl = c->q[0].ri.sock;
	for (int q = 0; c->o.host && q < c->o.qps; q++)
		if (c->q[q].ri.buf_len < c->mr_len)
			perf_die(1,
				 "server buffer too small (%" PRIu64 " bytes): "
				 "start it with the same -s/-a/-t",
				 c->q[q].ri.buf_len);
	mrv_listener_close(l);
	mrv_query_stats(c->dev, &c->st0);
	pat_init(c);
	/* Receives first: a peer may start sending right after RTS (SENDs,
	 * and the WRITE_WITH_IMMs of write_bw --verify and write_lat). */
	if (c->o.kind != T_READ)
		for (int q = 0; q < c->o.qps; q++)
			for (int s = 0; s < (c->o.bw ? c->slots : 4); s++)
				post_recv(c, q, s);
}

/* One size: RUN, measure, END; the server's answer says what its
 * receiver saw and whether every byte it checked was right. */
/* The client's messages that consume a receive at the server (SENDs,
 * latency pings), since the start: the server checks them all before it
 * answers END. */
static uint64_t server_recvs(const struct ctx *c)
{
	uint64_t n = 0;

	if (c->o.kind == T_READ || (c->o.kind == T_WRITE && c->o.bw))
		return 0;
	for (int q = 0; q < c->o.qps; q++)
		n += c->q[q].posted;
	return n;
}

/* The server's RES: counters, then where its first failure was. */
static void client_res(struct ctx *c, const char *line, struct spray *peer)
{
	uint64_t bad, a, b, d, msg, off;
	unsigned want, got, what;
	int q;

	if (sscanf(line,
		   "RES %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
		   " %d %" SCNu64 " %" SCNu64 " %u %u %u",
		   &bad, &a, &b, &d, &q, &msg, &off, &want, &got, &what) != 10)
		perf_die(1, "bad reply from server: '%s'", line);
	*peer = (struct spray){a, b, d};
	if (!bad)
		return;
	c->bad_bytes += bad;
	if (q >= 0 && q < c->o.qps && !c->bad.set)
		c->bad = (struct bad_at){true,		 q,	     msg,
					 off,		 (uint8_t)want,
					 (uint8_t)got, (uint8_t)what};
}

/* One size: RUN, measure, END; the server's answer says what its
 * receiver saw and whether every byte it checked was right. */
static void client_size(struct ctx *c, uint64_t size, struct spray *peer)
{
	char line[160], where[160];

	ctl_send(c, "RUN %" PRIu64 " %d\n", size, c->o.verify);
	ctl_line(c, line, sizeof(line), true);
	if (strcmp(line, "OK"))
		perf_die(1,
			 "server refused %" PRIu64 "-byte messages: "
			 "start it with the same -s/-a/-t",
			 size);
	if (c->o.bw) {
		struct bw_res r;
		uint64_t from[MAX_QPS];

		for (int q = 0; q < c->o.qps; q++)
			from[q] = c->q[q].posted;
		run_bw(c, size, &r);
		if (c->o.verify && c->o.kind == T_WRITE)
			for (int q = 0; q < c->o.qps; q++)
				ctl_send(c, "WROTE %d %" PRIu64 " %" PRIu64 "\n", q,
					 from[q], c->q[q].posted);
		if (c->o.interval)
			out_table_head(c);
		out_bw_row(c, size, &r);
		out_live(NULL);
		free(r.ivl);
		free(r.probe.idle);
		free(r.probe.loaded);
	} else {
		double *v;
		uint64_t n = run_lat(c, size, &v);

		out_lat_row(c, size, v, n);
		free(v);
	}
	ctl_send(c, "END %" PRIu64 "\n", server_recvs(c));
	ctl_line(c, line, sizeof(line), true);
	client_res(c, line, peer);
	if (!c->bad_bytes)
		return;
	bad_text(c, &c->bad, where, sizeof(where));
	perf_die(1,
		 "verify FAILED at size %" PRIu64 ": %" PRIu64
		 " bad bytes; first: %s",
		 size, c->bad_bytes, where);
}

int main(int argc, char **argv)
{
	static struct ctx c;
	struct spray peer = {0};
	uint64_t size, max;

	perf_parse(argc, argv, &c.o);
	out_begin(&c);
	setup(&c);
	out_header(&c);
	if (!c.o.host) {
		serve(&c);
		if (!c.o.json)
			printf(" Server done: %" PRIu64 " bad bytes seen\n",
			       c.bad_bytes);
		out_cpu(&c);
		return c.bad_bytes ? 1 : 0;
	}
	if (!c.o.interval)
		out_table_head(&c);
	size = c.o.all ? 2 : c.o.size;
	max = c.o.all ? MAX_ALL_SIZE : c.o.size;
	for (; size <= max; size *= 2) {
		client_size(&c, size, &peer);
		if (!c.o.all)
			break;
	}
	if (c.o.idle > 0) {
		struct timespec ts = {
			.tv_sec = (time_t)c.o.idle,
			.tv_nsec = (long)((c.o.idle - (double)(time_t)c.o.idle) *
					  1e9)};

		fflush(stdout);
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	ctl_send(&c, "BYE\n");
	out_spray(&c, &peer);
	if (c.o.verify && !c.o.json)
		printf(" Verify          : OK (%s)\n",
		       c.o.kind == T_WRITE && c.o.bw
			       ? "every slot's last message, every byte"
			       : "every byte of every message");
	out_cpu(&c);
	out_end(0, NULL);
	return 0;
}
