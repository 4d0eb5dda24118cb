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
 *   client: "END\n"         server: "RES <bad> <rx_data> <rx_ooo> <rx_dup>\n"
 *   client: "BYE\n"
 * In between, the server only serves: it answers READs (engine), checks
 * received SENDs / WRITE_WITH_IMMs when --verify is on, and for the
 * latency tests answers each ping with a pong of the same size.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mroce/mroce.h"

#define MAX_QPS 64
#define DEF_PORT 18515
#define MAX_ALL_SIZE (1u << 23) /* -a goes 2 .. 8 MiB like perftest */
#define BUF_BUDGET (64u << 20)	/* bytes of slots per QP at most */

enum test_kind { T_WRITE, T_READ, T_SEND };

struct opts {
	enum test_kind kind;
	bool bw;
	const char *name;
	const char *host; /* NULL: server */
	uint64_t size;
	long iters;
	bool iters_set;
	int duration;
	int qps;
	bool all, gbits, verify, json;
	uint16_t port;
	uint8_t transport, backend;
	int paths;
	int tx_depth;
	uint64_t cycle_buffer;	/* --cycle_buffer: perftest's, a page */
	int rto_min_us;
	const char *ifname, *local;
	bool daemon;		 /* --daemon: mroced serves the device */
	const char *daemon_sock; /* NULL: the default socket */
};

struct qpctx {
	struct mrv_qp *qp;
	struct mrv_mr *mr; /* slots (+ check area with verify) */
	struct mrv_conn_info ri;
	uint64_t posted, done; /* sends posted / completed */
	uint64_t recvs;	       /* receives completed */
	int outstanding;
};

struct ctx {
	struct opts o;
	struct mrv_device *dev;
	struct mrv_pd *pd;
	struct mrv_cq *cq;
	struct qpctx q[MAX_QPS];
	uint64_t slot_size;
	int slots;
	int ctl;	    /* control socket (first QP's) */
	uint64_t bad_bytes; /* verify failures seen here */
	char local[64];
	struct mrv_dev_stats st0; /* the device's counters before the run */
};

static const char *prog = "mroce_perf";

static void die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

static void usage_err(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry '%s --help'.\n", prog);
	exit(2);
}

/* clang-format off: the help text is laid out as it prints. */
static void help(void)
{
	printf(
"NAME\n"
"    mroce_perf - perftest-style RDMA benchmarks over mroce\n"
"\n"
"SYNOPSIS\n"
"    mroce_perf TEST [options]            (server)\n"
"    mroce_perf TEST [options] HOST       (client)\n"
"\n"
"    TEST is one of write_bw, read_bw, send_bw, write_lat, read_lat,\n"
"    send_lat. Start the server first; the client connects to HOST over\n"
"    TCP (-p), both set up their QPs, the client runs the test and prints\n"
"    the results. As with perftest, give the server the same -s/-a/-t/-q\n"
"    and --transport as the client.\n"
"\n"
"DESCRIPTION\n"
"    Bandwidth tests keep up to --tx-depth operations in flight per QP and\n"
"    print perftest's columns:\n"
"      #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]\n"
"    ([Gb/sec] with --report_gbits; MB = 2^20 bytes). The peak is the best\n"
"    window of at least 10 ms between two completions. Latency tests\n"
"    ping-pong one message at a time (write and send: half the round trip;\n"
"    read: the whole READ) and print:\n"
"      #bytes #iterations t_min[usec] t_max[usec] t_typical[usec]\n"
"      t_avg[usec] t_stdev[usec] 99%% percentile[usec] 99.9%% percentile[usec]\n"
"    (t_typical is the median). A block on path spraying follows: paths,\n"
"    packets sent and retransmitted, the receiver's out-of-order share, and\n"
"    each path's share of the packets.\n"
"\n"
"OPTIONS\n"
"    -s, --size=BYTES       message size (bw: 65536, lat: 2)\n"
"    -n, --iters=N          iterations (bw: 5000, lat: 1000)\n"
"    -D, --duration=SECS    run for SECS seconds instead of -n\n"
"    -q, --qp=N             number of QPs (1..64, default 1)\n"
"    -a, --all              all sizes 2 .. 8388608 (powers of two)\n"
"    -t, --tx-depth=N       operations in flight per QP (default 128)\n"
"    -p, --port=PORT        TCP rendezvous port (default 18515)\n"
"        --cycle_buffer=B   without --verify, as perftest: messages of up\n"
"                           to B/2 bytes step through the first B bytes of\n"
"                           the buffer (cache-line aligned), larger ones\n"
"                           all use its start (default 4096, a page), so\n"
"                           a bandwidth test measures the transport, not\n"
"                           the memory bus. With --verify every message in\n"
"                           flight has its own slot\n"
"        --report_gbits     bandwidth in Gb/sec\n"
"        --transport=T      metaroce (default) or rocev2\n"
"        --paths=N          MetaRoCE paths per connection (default 8)\n"
"        --verify           check every byte: sources carry a pattern of\n"
"                           (QP, iteration, offset); SENDs and pings are\n"
"                           checked by the receiver, WRITEs are READ back,\n"
"                           READs compared by the client. Slower: not a\n"
"                           benchmark\n"
"        --json             print the results as one JSON object\n"
"        --backend=B        udp (default) or afxdp\n"
"        --ifname=IF        interface for --backend=afxdp\n"
"        --local=ADDR       local data address (server default 127.0.0.1;\n"
"                           client default: the route's source address, or\n"
"                           127.0.0.2 when that is the server's own)\n"
"        --daemon[=PATH]    use the mroced daemon at socket PATH (default\n"
"                           /run/mroce/mroced.sock): the address, backend,\n"
"                           MTU, paths and RTO are the daemon's, so\n"
"                           --backend, --ifname, --local, --paths and\n"
"                           --rto-min do not apply\n"
"        --rto-min=USEC     minimum retransmission timeout (default: the\n"
"                           engine's 200 us); processes sharing busy cores\n"
"                           want milliseconds, or they retransmit spuriously\n"
"    -h, --help             this text\n"
"\n"
"EXIT STATUS\n"
"    0 success; 1 run failed (connection, error completion, verify\n"
"    mismatch); 2 bad arguments.\n"
"\n"
"EXAMPLE\n"
"    mroce_perf write_bw --local 127.0.0.1 &\n"
"    mroce_perf write_bw -s 4096 -n 1000 --verify 127.0.0.1\n"
"    mroce_perf write_bw --daemon=/tmp/a.sock &\n"
"    mroce_perf write_bw --daemon=/tmp/b.sock --verify 127.0.0.1\n");
}
/* clang-format on */

static long parse_num(const char *s, const char *what, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max) {
		char msg[128];

		snprintf(msg, sizeof(msg), "invalid %s: '%%s'", what);
		usage_err(msg, s);
	}
	return v;
}

static void parse(int argc, char **argv, struct opts *o)
{
	enum {
		O_GBITS = 256,
		O_TRANSPORT,
		O_PATHS,
		O_VERIFY,
		O_JSON,
		O_BACKEND,
		O_IFNAME,
		O_LOCAL,
		O_DAEMON,
		O_RTO,
		O_CYCLE,
	};
	static const struct option lo[] = {
		{"size", required_argument, NULL, 's'},
		{"iters", required_argument, NULL, 'n'},
		{"duration", required_argument, NULL, 'D'},
		{"qp", required_argument, NULL, 'q'},
		{"all", no_argument, NULL, 'a'},
		{"tx-depth", required_argument, NULL, 't'},
		{"port", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{"report_gbits", no_argument, NULL, O_GBITS},
		{"transport", required_argument, NULL, O_TRANSPORT},
		{"paths", required_argument, NULL, O_PATHS},
		{"verify", no_argument, NULL, O_VERIFY},
		{"json", no_argument, NULL, O_JSON},
		{"backend", required_argument, NULL, O_BACKEND},
		{"ifname", required_argument, NULL, O_IFNAME},
		{"local", required_argument, NULL, O_LOCAL},
		{"rto-min", required_argument, NULL, O_RTO},
		{"daemon", optional_argument, NULL, O_DAEMON},
		{"cycle_buffer", required_argument, NULL, O_CYCLE},
		{0},
	};
	static const struct {
		const char *name;
		enum test_kind kind;
		bool bw;
	} tests[] = {
		{"write_bw", T_WRITE, true}, {"read_bw", T_READ, true},
		{"send_bw", T_SEND, true},   {"write_lat", T_WRITE, false},
		{"read_lat", T_READ, false}, {"send_lat", T_SEND, false},
	};
	bool size_set = false;
	int c;

	memset(o, 0, sizeof(*o));
	o->qps = 1;
	o->port = DEF_PORT;
	o->transport = MRV_TRANSPORT_METAROCE;
	o->backend = MRV_BACKEND_UDP;
	o->tx_depth = 128;
	o->cycle_buffer = 4096;
	while ((c = getopt_long(argc, argv, "s:n:D:q:at:p:h", lo, NULL)) !=
	       -1) {
		switch (c) {
		case 's':
			o->size = (uint64_t)parse_num(optarg, "size", 1,
						      MAX_ALL_SIZE);
			size_set = true;
			break;
		case 'n':
			o->iters = parse_num(optarg, "iteration count", 1,
					     1000000000L);
			o->iters_set = true;
			break;
		case 'D':
			o->duration =
				(int)parse_num(optarg, "duration", 1, 86400);
			break;
		case 'q':
			o->qps = (int)parse_num(optarg, "QP count", 1, MAX_QPS);
			break;
		case 'a':
			o->all = true;
			break;
		case 't':
			o->tx_depth =
				(int)parse_num(optarg, "tx depth", 1, 4096);
			break;
		case 'p':
			o->port = (uint16_t)parse_num(optarg, "port", 1, 65535);
			break;
		case 'h':
			help();
			exit(0);
		case O_GBITS:
			o->gbits = true;
			break;
		case O_TRANSPORT:
			if (!strcmp(optarg, "metaroce"))
				o->transport = MRV_TRANSPORT_METAROCE;
			else if (!strcmp(optarg, "rocev2"))
				o->transport = MRV_TRANSPORT_ROCEV2;
			else
				usage_err("unknown transport '%s' "
					  "(metaroce or rocev2)",
					  optarg);
			break;
		case O_PATHS:
			o->paths = (int)parse_num(optarg, "path count", 1, 64);
			break;
		case O_VERIFY:
			o->verify = true;
			break;
		case O_JSON:
			o->json = true;
			break;
		case O_BACKEND:
			if (!strcmp(optarg, "udp"))
				o->backend = MRV_BACKEND_UDP;
			else if (!strcmp(optarg, "afxdp"))
				o->backend = MRV_BACKEND_AFXDP;
			else
				usage_err("unknown backend '%s' (udp or afxdp)",
					  optarg);
			break;
		case O_IFNAME:
			o->ifname = optarg;
			break;
		case O_LOCAL:
			o->local = optarg;
			break;
		case O_DAEMON:
			o->daemon = true;
			o->daemon_sock = optarg;
			break;
		case O_RTO:
			o->rto_min_us = (int)parse_num(optarg, "RTO", 1,
						       10000000);
			break;
		case O_CYCLE:
			o->cycle_buffer = (uint64_t)parse_num(
				optarg, "cycle buffer size", 64, 1L << 30);
			break;
		default:
			fprintf(stderr, "Try '%s --help'.\n", prog);
			exit(2);
		}
	}
	if (optind >= argc)
		usage_err("%s", "missing TEST (write_bw, read_bw, send_bw, "
				"write_lat, read_lat, send_lat)");
	o->name = argv[optind++];
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!strcmp(o->name, tests[i].name)) {
			o->kind = tests[i].kind;
			o->bw = tests[i].bw;
			o->name = tests[i].name;
			goto found;
		}
	usage_err("unknown test '%s'", o->name);
found:
	if (optind < argc)
		o->host = argv[optind++];
	if (optind < argc)
		usage_err("unexpected argument '%s'", argv[optind]);
	if (o->backend == MRV_BACKEND_AFXDP && !o->ifname)
		usage_err("%s", "--backend=afxdp needs --ifname");
	if (o->all && size_set)
		usage_err("%s", "-a and -s are exclusive");
	if (o->duration && o->iters_set)
		usage_err("%s", "-D and -n are exclusive");
	if (!size_set)
		o->size = o->bw ? 65536 : 2;
	if (!o->iters_set)
		o->iters = o->bw ? 5000 : 1000;
	if (!o->bw && o->qps > 1)
		usage_err("%s", "latency tests use one QP (-q 1)");
}

/* ------------------------------------------------------------------ */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The --verify pattern: a function of (QP, iteration, offset) that
 * differs between neighbouring iterations and offsets. */
static uint8_t pat(int q, uint64_t it, uint64_t off)
{
	uint64_t x = it * 0x9e3779b97f4a7c15ull + off + ((uint64_t)q << 56);

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	return (uint8_t)(x >> 32) ^ (uint8_t)off;
}

static void fill(uint8_t *p, int q, uint64_t it, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++)
		p[i] = pat(q, it, i);
}

static uint64_t check(const uint8_t *p, int q, uint64_t it, uint64_t len)
{
	uint64_t bad = 0;

	for (uint64_t i = 0; i < len; i++)
		bad += p[i] != pat(q, it, i);
	return bad;
}

static uint8_t *slot(struct ctx *c, int q, int s)
{
	return (uint8_t *)c->q[q].mr->addr + (uint64_t)s * c->slot_size;
}

/* Where message `it` of `size` bytes starts in a QP's buffer, local and
 * remote alike. --verify: its own slot (the bytes of every message in
 * flight are checked, so they must not share). Otherwise perftest's rule
 * (--cycle_buffer): up to half the cycle buffer, messages step through
 * it in cache-line aligned strides; larger ones all start at 0. Cycling
 * through every slot instead made each message's source cold in the
 * sender's caches (2 x tx depth x size: 16 MiB at the defaults), a cost
 * perftest does not measure. */
static uint64_t msg_off(const struct ctx *c, uint64_t it, uint64_t size)
{
	uint64_t step = (size + 63) & ~63ull;

	if (c->o.verify)
		return (it % (uint64_t)c->slots) * c->slot_size;
	if (size > c->o.cycle_buffer / 2)
		return 0;
	return (it % (c->o.cycle_buffer / step)) * step;
}

/* Check area for READ-back: after the slots. */
static uint8_t *chk(struct ctx *c, int q, int s)
{
	return slot(c, q, c->slots + s);
}

static int qidx(struct ctx *c, uint32_t qpn)
{
	for (int i = 0; i < c->o.qps; i++)
		if (mrv_qp_num(c->q[i].qp) == qpn)
			return i;
	die(1, "completion for unknown QP 0x%06x", qpn);
	return -1;
}

static void post_send(struct ctx *c, int q, enum mrv_wr_opcode op,
		      uint8_t *laddr, uint64_t len, uint64_t raddr,
		      uint64_t wr_id, uint32_t imm)
{
	struct mrv_sge sg = {.addr = (uintptr_t)laddr,
			     .length = (uint32_t)len,
			     .lkey = c->q[q].mr->lkey};
	struct mrv_send_wr wr =
				   {
					   .wr_id = wr_id,
					   .sg_list = &sg,
					   .num_sge = 1,
					   .opcode = op,
					   .send_flags = MRV_SEND_SIGNALED,
					   .imm_data = imm,
					   .remote_addr = raddr,
					   .rkey = c->q[q].ri.buf_rkey,
				   },
			   *bad;
	int err = mrv_post_send(c->q[q].qp, &wr, &bad);

	if (err)
		die(1, "post_send: %s", strerror(-err));
	c->q[q].outstanding++;
}

static void post_recv(struct ctx *c, int q, int s)
{
	struct mrv_sge sg = {.addr = (uintptr_t)slot(c, q, s),
			     .length = (uint32_t)c->slot_size,
			     .lkey = c->q[q].mr->lkey};
	struct mrv_recv_wr wr = {.wr_id = (uint64_t)s,
				 .sg_list = &sg,
				 .num_sge = 1},
			   *bad;
	int err = mrv_post_recv(c->q[q].qp, &wr, &bad);

	if (err)
		die(1, "post_recv: %s", strerror(-err));
}

static int poll_wc(struct ctx *c, struct mrv_wc *wc, int n)
{
	int k = mrv_poll_cq(c->cq, n, wc);

	if (k < 0)
		die(1, "poll_cq: %s", strerror(-k));
	for (int i = 0; i < k; i++)
		if (wc[i].status != MRV_WC_SUCCESS)
			die(1, "completion error on QP 0x%06x: %s",
			    wc[i].qp_num, mrv_wc_status_str(wc[i].status));
	return k;
}

/* The device's counters since setup(): in daemon mode they are the
 * daemon's, which ran earlier tests too (every row of a demo showed the
 * sum of the rows before it). Other applications of the same daemon
 * still count. */
static void run_stats(struct ctx *c, struct mrv_dev_stats *st)
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
		die(1, "control connection lost");
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
			die(1, "control connection closed by peer");
		have += (size_t)r;
	}
}

/* ------------------------------------------------------------------ */
/* Server                                                               */
/* ------------------------------------------------------------------ */
static void server_recv(struct ctx *c, const struct mrv_wc *w, uint64_t size)
{
	int q = qidx(c, w->qp_num);
	struct qpctx *x = &c->q[q];
	int s = (int)w->wr_id;
	uint64_t it = x->recvs++;

	if (c->o.verify) {
		/* SEND: the payload is in our slot. WRITE_WITH_IMM (latency):
		 * the data went to slot 0; imm carries the iteration. */
		uint8_t *p = w->opcode == MRV_WC_RECV ? slot(c, q, s)
						      : slot(c, q, 0);
		uint64_t len = w->opcode == MRV_WC_RECV ? w->byte_len : size;

		if (w->opcode == MRV_WC_RECV && w->byte_len != size)
			c->bad_bytes += size;
		else
			c->bad_bytes += check(p, q, it, len);
	}
	if (!c->o.bw) {
		/* Pong with the same operation and size. */
		uint8_t *src = chk(c, q, 0);

		if (c->o.verify)
			fill(src, q, it, size);
		post_send(c, q,
			  c->o.kind == T_SEND ? MRV_WR_SEND
					      : MRV_WR_RDMA_WRITE_WITH_IMM,
			  src, size, x->ri.buf_addr, 0, (uint32_t)it);
	}
	post_recv(c, q, s);
}

static void serve(struct ctx *c)
{
	struct mrv_dev_stats st;
	char line[128];
	uint64_t size = 0;

	for (;;) {
		struct mrv_wc wc[32];
		int k;

		k = poll_wc(c, wc, 32);
		for (int i = 0; i < k; i++) {
			if (wc[i].opcode == MRV_WC_RECV ||
			    wc[i].opcode == MRV_WC_RECV_RDMA_WITH_IMM)
				server_recv(c, &wc[i], size);
			else
				c->q[qidx(c, wc[i].qp_num)].outstanding--;
		}
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
				die(1,
				    "client asked for %" PRIu64 "-byte "
				    "messages; start the server with the same "
				    "-s/-a/-t",
				    size);
			}
			if (c->o.kind == T_READ && c->o.verify)
				for (int q = 0; q < c->o.qps; q++)
					for (int s = 0; s < c->slots; s++)
						fill(slot(c, q, s), q,
						     (uint64_t)s, size);
			ctl_send(c, "OK\n");
		} else if (!strcmp(line, "END")) {
			/* Drain what already arrived before answering. */
			for (int r = 0; r < 100; r++) {
				k = poll_wc(c, wc, 32);
				for (int i = 0; i < k; i++)
					if (wc[i].opcode == MRV_WC_RECV ||
					    wc[i].opcode ==
						    MRV_WC_RECV_RDMA_WITH_IMM)
						server_recv(c, &wc[i], size);
			}
			run_stats(c, &st);
			ctl_send(c,
				 "RES %" PRIu64 " %" PRIu64 " %" PRIu64
				 " %" PRIu64 "\n",
				 c->bad_bytes, st.rx_data_pkts, st.rx_ooo,
				 st.rx_dup);
		} else if (!strcmp(line, "BYE")) {
			return;
		} else {
			die(1, "bad control message '%s'", line);
		}
	}
}

/* ------------------------------------------------------------------ */
/* Client: bandwidth                                                    */
/* ------------------------------------------------------------------ */
struct bw_res {
	uint64_t iters;
	double secs, peak_bps;
};

struct peak {
	double t0, last_t;
	uint64_t last_n;
	double best;
};

/* Peak bandwidth: the best rate over windows of at least 10 ms, each
 * from one completion to a later one. */
static void peak_tick(struct peak *p, uint64_t n, uint64_t size, double t)
{
	if (t - p->last_t >= 0.01) {
		double r = (double)(n - p->last_n) * (double)size /
			   (t - p->last_t);

		if (r > p->best)
			p->best = r;
		p->last_t = t;
		p->last_n = n;
	}
}

static bool more(const struct ctx *c, uint64_t posted, double t0)
{
	if (c->o.duration)
		return now_s() - t0 < c->o.duration;
	return posted < (uint64_t)c->o.iters;
}

static void run_bw(struct ctx *c, uint64_t size, struct bw_res *res)
{
	int depth = c->o.tx_depth < c->slots ? c->o.tx_depth : c->slots;
	uint64_t posted = 0, done = 0;
	struct peak pk = {0};
	struct mrv_wc wc[64];
	double t0 = now_s();

	pk.t0 = pk.last_t = t0;
	if (c->o.verify && c->o.kind == T_WRITE) {
		/* Windows: WRITE a batch to distinct slots, READ them all
		 * back into the check area, compare. */
		while (more(c, posted, t0)) {
			int w[MAX_QPS] = {0}, pending = 0;
			uint64_t base[MAX_QPS];

			for (int q = 0; q < c->o.qps; q++) {
				struct qpctx *x = &c->q[q];

				base[q] = x->posted;
				for (; w[q] < depth && more(c, posted, t0);
				     w[q]++, posted++, pending++) {
					uint64_t it = x->posted++;
					int s = (int)(it % (uint64_t)c->slots);

					fill(slot(c, q, s), q, it, size);
					post_send(c, q, MRV_WR_RDMA_WRITE,
						  slot(c, q, s), size,
						  x->ri.buf_addr +
							  (uint64_t)s *
								  c->slot_size,
						  it, 0);
				}
			}
			while (pending) {
				int k = poll_wc(c, wc, 64);

				pending -= k;
				done += (uint64_t)k;
			}
			for (int q = 0; q < c->o.qps; q++)
				for (int i = 0; i < w[q]; i++, pending++) {
					int s = (int)((base[q] + (uint64_t)i) %
						      (uint64_t)c->slots);

					memset(chk(c, q, s), 0, size);
					post_send(c, q, MRV_WR_RDMA_READ,
						  chk(c, q, s), size,
						  c->q[q].ri.buf_addr +
							  (uint64_t)s *
								  c->slot_size,
						  0, 0);
				}
			while (pending)
				pending -= poll_wc(c, wc, 64);
			for (int q = 0; q < c->o.qps; q++)
				for (int i = 0; i < w[q]; i++) {
					uint64_t it = base[q] + (uint64_t)i;
					int s = (int)(it % (uint64_t)c->slots);

					c->bad_bytes += check(chk(c, q, s), q,
							      it, size);
				}
			peak_tick(&pk, done, size, now_s());
		}
		goto out;
	}
	while (more(c, posted, t0) || done < posted) {
		for (int q = 0; q < c->o.qps; q++) {
			struct qpctx *x = &c->q[q];

			while (x->outstanding < depth && more(c, posted, t0)) {
				uint64_t it = x->posted++;
				uint64_t off = msg_off(c, it, size);
				uint8_t *l = (uint8_t *)x->mr->addr + off;
				uint64_t r = x->ri.buf_addr + off;

				switch (c->o.kind) {
				case T_WRITE:
					post_send(c, q, MRV_WR_RDMA_WRITE, l,
						  size, r, it, 0);
					break;
				case T_READ:
					if (c->o.verify)
						memset(l, 0, size);
					post_send(c, q, MRV_WR_RDMA_READ, l,
						  size, r, it, 0);
					break;
				case T_SEND:
					if (c->o.verify)
						fill(l, q, it, size);
					post_send(c, q, MRV_WR_SEND, l, size, 0,
						  it, 0);
					break;
				}
				posted++;
			}
		}
		int k = poll_wc(c, wc, 64);

		for (int i = 0; i < k; i++) {
			int q = qidx(c, wc[i].qp_num);
			uint64_t it = wc[i].wr_id;

			c->q[q].outstanding--;
			done++;
			if (c->o.verify && c->o.kind == T_READ)
				c->bad_bytes += check(
					slot(c, q,
					     (int)(it % (uint64_t)c->slots)),
					q, it % (uint64_t)c->slots, size);
		}
		/* Windows end at completions only: an idle stretch followed
		 * by one big completion must not look like a burst. */
		if (k)
			peak_tick(&pk, done, size, now_s());
	}
out:
	res->secs = now_s() - t0;
	res->iters = done;
	res->peak_bps = pk.best;
	if (res->secs > 0 &&
	    (double)done * (double)size / res->secs > res->peak_bps)
		res->peak_bps = (double)done * (double)size / res->secs;
}

/* ------------------------------------------------------------------ */
/* Client: latency                                                      */
/* ------------------------------------------------------------------ */
static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static uint64_t run_lat(struct ctx *c, uint64_t size, double **samples)
{
	struct qpctx *x = &c->q[0];
	uint64_t cap = c->o.duration ? 1u << 20 : (uint64_t)c->o.iters;
	uint64_t n = 0;
	double t0 = now_s();
	double *v = malloc(cap * sizeof(*v));

	if (!v)
		die(1, "out of memory");
	while (n < cap && more(c, n, t0)) {
		struct mrv_wc wc[4];
		uint64_t it = x->posted;
		double t1 = now_s();
		bool got = false;

		if (c->o.kind == T_READ) {
			if (c->o.verify)
				memset(slot(c, 0, 0), 0, size);
			post_send(c, 0, MRV_WR_RDMA_READ, slot(c, 0, 0), size,
				  x->ri.buf_addr, it, 0);
			x->posted++;
			while (!got) {
				int k = poll_wc(c, wc, 4);

				got = k > 0;
			}
			v[n++] = (now_s() - t1) * 1e6;
			if (c->o.verify)
				c->bad_bytes +=
					check(slot(c, 0, 0), 0, 0, size);
			continue;
		}
		/* Ping from the check area, pong lands in slot 0 (WRITE) or
		 * a receive slot (SEND). */
		if (c->o.verify)
			fill(chk(c, 0, 0), 0, it, size);
		post_send(c, 0,
			  c->o.kind == T_SEND ? MRV_WR_SEND
					      : MRV_WR_RDMA_WRITE_WITH_IMM,
			  chk(c, 0, 0), size, x->ri.buf_addr, it, (uint32_t)it);
		x->posted++;
		while (!got) {
			int k = poll_wc(c, wc, 4);

			for (int i = 0; i < k; i++) {
				if (wc[i].opcode != MRV_WC_RECV &&
				    wc[i].opcode != MRV_WC_RECV_RDMA_WITH_IMM)
					continue;
				got = true;
				if (c->o.verify)
					c->bad_bytes += check(
						wc[i].opcode == MRV_WC_RECV
							? slot(c, 0,
							       (int)wc[i].wr_id)
							: slot(c, 0, 0),
						0, it, size);
				post_recv(c, 0, (int)wc[i].wr_id);
			}
		}
		v[n++] = (now_s() - t1) * 1e6 / 2;
	}
	*samples = v;
	return n;
}

/* ------------------------------------------------------------------ */
/* Output                                                               */
/* ------------------------------------------------------------------ */
static const char *test_title(const struct opts *o)
{
	static const char *t[2][3] = {
		{"RDMA_Write Latency Test", "RDMA_Read Latency Test",
		 "Send Latency Test"},
		{"RDMA_Write BW Test", "RDMA_Read BW Test", "Send BW Test"},
	};

	return t[o->bw][o->kind];
}

static const char *tname(uint8_t t)
{
	return t == MRV_TRANSPORT_ROCEV2 ? "RoCEv2" : "MetaRoCE";
}

#define DASHES                                                                 \
	"--------------------------------------------------------------------" \
	"-------------------\n"

static void header(struct ctx *c)
{
	struct mrv_qp_attr a;

	if (c->o.json)
		return;
	printf(DASHES);
	printf("                    %s\n", test_title(&c->o));
	printf(" Dual-port       : OFF\t\tDevice         : mroce (%s)\n",
	       c->o.daemon			     ? "mroced"
	       : c->o.backend == MRV_BACKEND_AFXDP ? "embedded, afxdp"
						     : "embedded, udp");
	printf(" Number of qps   : %d\t\tTransport type : %s\n", c->o.qps,
	       tname(c->o.transport));
	printf(" Connection type : RC\t\tUsing SRQ      : OFF\n");
	if (c->o.bw)
		printf(" TX depth        : %d\n", c->o.tx_depth);
	printf(" Mtu             : %d[B]\n", mrv_device_mtu(c->dev));
	printf(" Link type       : Ethernet\n");
	printf(" Local address   : %s\n", c->local);
	printf(" Data ex. method : TCP rendezvous (port %u)\n", c->o.port);
	printf(DASHES);
	for (int q = 0; q < c->o.qps; q++) {
		mrv_query_qp(c->q[q].qp, &a);
		printf(" local address: QPN 0x%06x PSN 0x%06x RKey 0x%08x "
		       "VAddr 0x%016" PRIxPTR "\n",
		       mrv_qp_num(c->q[q].qp), a.sq_psn, c->q[q].mr->rkey,
		       (uintptr_t)c->q[q].mr->addr);
		printf(" remote address: QPN 0x%06x PSN 0x%06x RKey 0x%08x "
		       "VAddr 0x%016" PRIx64 "\n",
		       c->q[q].ri.qp_num, c->q[q].ri.psn, c->q[q].ri.buf_rkey,
		       c->q[q].ri.buf_addr);
	}
	printf(DASHES);
	fflush(stdout);
}

static void table_head(const struct ctx *c)
{
	if (c->o.json)
		return;
	if (c->o.bw)
		printf(" #bytes     #iterations    BW peak[%s]    "
		       "BW average[%s]   MsgRate[Mpps]\n",
		       c->o.gbits ? "Gb/sec" : "MB/sec",
		       c->o.gbits ? "Gb/sec" : "MB/sec");
	else
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  "
		       "t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
		       "99%% percentile[usec]   99.9%% percentile[usec] \n");
}

static double bw_unit(const struct ctx *c, double bps)
{
	return c->o.gbits ? bps * 8 / 1e9 : bps / (1024.0 * 1024.0);
}

static bool json_first = true;

static void json_sep(void)
{
	printf("%s", json_first ? "" : ",\n");
	json_first = false;
}

static void bw_row(const struct ctx *c, uint64_t size, const struct bw_res *r)
{
	double avg =
		r->secs > 0 ? (double)r->iters * (double)size / r->secs : 0;
	double mpps = r->secs > 0 ? (double)r->iters / r->secs / 1e6 : 0;

	if (c->o.json) {
		json_sep();
		printf("    {\"bytes\": %" PRIu64 ", \"iterations\": %" PRIu64
		       ", \"bw_peak\": %.2f, \"bw_average\": %.2f, "
		       "\"msg_rate_mpps\": %.6f}",
		       size, r->iters, bw_unit(c, r->peak_bps), bw_unit(c, avg),
		       mpps);
		return;
	}
	printf(" %-10" PRIu64 " %-10" PRIu64
	       "     %-15.2f    %-15.2f      %.6f\n",
	       size, r->iters, bw_unit(c, r->peak_bps), bw_unit(c, avg), mpps);
	fflush(stdout);
}

static void lat_row(const struct ctx *c, uint64_t size, double *v, uint64_t n)
{
	double sum = 0, sq = 0, avg, sd;

	if (!n) {
		fprintf(stderr, "%s: no latency samples\n", prog);
		return;
	}
	qsort(v, n, sizeof(*v), cmp_d);
	for (uint64_t i = 0; i < n; i++)
		sum += v[i];
	avg = sum / (double)n;
	for (uint64_t i = 0; i < n; i++)
		sq += (v[i] - avg) * (v[i] - avg);
	sd = sqrt(sq / (double)n);
#define PCT(p) v[(uint64_t)((double)(n - 1) * (p))]
	if (c->o.json) {
		json_sep();
		printf("    {\"bytes\": %" PRIu64 ", \"iterations\": %" PRIu64
		       ", \"t_min\": %.2f, \"t_max\": %.2f, \"t_typical\": "
		       "%.2f,"
		       " \"t_avg\": %.2f, \"t_stdev\": %.2f, \"p99\": %.2f, "
		       "\"p99_9\": %.2f}",
		       size, n, v[0], v[n - 1], PCT(0.5), avg, sd, PCT(0.99),
		       PCT(0.999));
		return;
	}
	printf(" %-7" PRIu64 " %-10" PRIu64 "     %-10.2f     %-10.2f     "
	       "%-10.2f         %-10.2f     %-10.2f        %-10.2f             "
	       " "
	       "%-10.2f\n",
	       size, n, v[0], v[n - 1], PCT(0.5), avg, sd, PCT(0.99),
	       PCT(0.999));
#undef PCT
	fflush(stdout);
}

struct spray {
	uint64_t rx_data, rx_ooo, rx_dup;
};

static void spray_block(struct ctx *c, const struct spray *peer)
{
	struct mrv_dev_stats st;
	struct mrv_path_info pi[64];
	uint64_t tot = 0;
	int np = 0;

	run_stats(c, &st);
	while (np < 64 && mrv_query_path(c->q[0].qp, np, &pi[np]) == 0)
		np++;
	for (int i = 0; i < np; i++)
		tot += pi[i].tx_pkts;
	if (c->o.json) {
		printf("\n  ],\n  \"spray\": {\"transport\": \"%s\", "
		       "\"paths\": %d, \"tx_data_pkts\": %" PRIu64
		       ", \"retransmits\": %" PRIu64 ", \"rto_fires\": %" PRIu64
		       ", \"peer_rx_data_pkts\": %" PRIu64
		       ", \"peer_rx_ooo\": %" PRIu64
		       ", \"peer_rx_dup\": %" PRIu64 ", \"per_path\": [",
		       tname(c->o.transport), np, st.tx_data_pkts,
		       st.retransmits, st.rto_fires, peer->rx_data,
		       peer->rx_ooo, peer->rx_dup);
		for (int i = 0; i < np; i++)
			printf("%s{\"sport\": %u, \"tx_pkts\": %" PRIu64
			       ", \"retransmits\": %" PRIu64
			       ", \"srtt_us\": %u}",
			       i ? ", " : "", pi[i].sport, pi[i].tx_pkts,
			       pi[i].retransmits, pi[i].srtt_us);
		printf("]}\n}\n");
		return;
	}
	printf(DASHES);
	printf(" Spraying        : %s, %d path%s (QP 0x%06x)\n",
	       tname(c->o.transport), np, np == 1 ? "" : "s",
	       mrv_qp_num(c->q[0].qp));
	printf(" Data packets    : %" PRIu64 " sent, %" PRIu64
	       " retransmitted, %" PRIu64 " timeouts\n",
	       st.tx_data_pkts, st.retransmits, st.rto_fires);
	printf(" Receiver        : %" PRIu64 " data packets, out-of-order "
	       "%.2f%%, duplicates %" PRIu64 "\n",
	       peer->rx_data,
	       peer->rx_data
		       ? 100.0 * (double)peer->rx_ooo / (double)peer->rx_data
		       : 0.0,
	       peer->rx_dup);
	if (np) {
		printf(" path  sport  alive  tx_pkts      share[%%]  "
		       "retransmits  srtt[usec]  cwnd[pkts]\n");
		for (int i = 0; i < np; i++)
			printf(" %-5d %-6u %-6s %-12" PRIu64
			       " %-9.1f %-12" PRIu64 " %-11u %u\n",
			       i, pi[i].sport, pi[i].alive ? "yes" : "no",
			       pi[i].tx_pkts,
			       tot ? 100.0 * (double)pi[i].tx_pkts / (double)tot
				   : 0.0,
			       pi[i].retransmits, pi[i].srtt_us,
			       pi[i].cwnd_pkts);
	}
	printf(DASHES);
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
		die(1, "cannot resolve '%s' (use --local)", c->o.host);
	srv = (struct sockaddr_in *)ai->ai_addr;
	srv->sin_port = htons(c->o.port);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	/* A connected UDP socket learns the route's source address. */
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) ||
	    getsockname(fd, (struct sockaddr *)&me, &sl))
		die(1, "no route to '%s' (use --local)", c->o.host);
	close(fd);
	if (me.sin_addr.s_addr == srv->sin_addr.s_addr &&
	    (ntohl(me.sin_addr.s_addr) >> 24) == 127)
		me.sin_addr.s_addr = htonl(ntohl(me.sin_addr.s_addr) + 1);
	freeaddrinfo(ai);
	inet_ntop(AF_INET, &me.sin_addr, c->local, sizeof(c->local));
}

static void setup(struct ctx *c)
{
	struct mrv_dev_attr da = {
		.mode = MRV_MODE_EMBEDDED,
		.backend = c->o.backend,
		.transport = c->o.transport,
		.npaths = (uint8_t)c->o.paths,
		.ifname = c->o.ifname,
		.rto_min_us = (uint32_t)c->o.rto_min_us,
	};
	uint64_t max = c->o.all ? MAX_ALL_SIZE : c->o.size;
	struct mrv_listener *l = NULL;
	int err;

	if (c->o.daemon) {
		const char *sock = c->o.daemon_sock ? c->o.daemon_sock
						    : "/run/mroce/mroced.sock";

		da.mode = MRV_MODE_DAEMON;
		da.daemon_sock = sock;
		snprintf(c->local, sizeof(c->local), "mroced");
		err = mrv_open_device(&da, &c->dev);
		if (err == -ENOENT || err == -ECONNREFUSED)
			die(1, "mroced is not running (socket %s)", sock);
		if (err)
			die(1, "cannot open device at mroced %s: %s", sock,
			    strerror(-err));
	} else {
		pick_local(c);
		da.local_addr = c->local;
		err = mrv_open_device(&da, &c->dev);
		if (err)
			die(1, "cannot open device on %s: %s", c->local,
			    strerror(-err));
	}
	if ((err = mrv_alloc_pd(c->dev, &c->pd)) ||
	    (err = mrv_create_cq(c->dev, c->o.qps * (4 * c->o.tx_depth + 16),
				 &c->cq)))
		die(1, "setup: %s", strerror(-err));
	c->slot_size = max;
	/* Slots let --verify and receives use distinct buffers per message
	 * in flight; 2 x depth so a server never runs out of receives. */
	c->slots = 2 * c->o.tx_depth;
	while (c->slots > 2 && (uint64_t)c->slots * max > BUF_BUDGET)
		c->slots /= 2;
	if (!c->o.host) {
		err = mrv_listen(c->dev, NULL, c->o.port, &l);
		if (err)
			die(1, "cannot listen on TCP port %u: %s", c->o.port,
			    strerror(-err));
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
			err = mrv_alloc_mr(c->pd, (uint64_t)c->slots * 2 * max,
					   MRV_ACCESS_LOCAL_WRITE |
						   MRV_ACCESS_REMOTE_WRITE |
						   MRV_ACCESS_REMOTE_READ,
					   &x->mr);
		if (err)
			die(1, "setup QP %d: %s", q, strerror(-err));
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
		if (err)
			die(1, "%s %s port %u: %s",
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
		if (c->q[q].ri.buf_len < (uint64_t)c->slots * 2 * max)
			die(1,
			    "server buffer too small (%" PRIu64 " bytes): "
			    "start it with the same -s/-a/-t",
			    c->q[q].ri.buf_len);
	mrv_listener_close(l);
	mrv_query_stats(c->dev, &c->st0);
	/* Receives first: a peer may start sending right after RTS. */
	if (c->o.kind == T_SEND || (!c->o.bw && c->o.kind == T_WRITE))
		for (int q = 0; q < c->o.qps; q++)
			for (int s = 0; s < (c->o.bw ? c->slots : 4); s++)
				post_recv(c, q, s);
}

int main(int argc, char **argv)
{
	static struct ctx c;
	struct spray peer = {0};
	uint64_t size, max;
	char line[128];

	parse(argc, argv, &c.o);
	setup(&c);
	header(&c);
	if (!c.o.host) {
		serve(&c);
		if (!c.o.json)
			printf(" Server done: %" PRIu64 " bad bytes seen\n",
			       c.bad_bytes);
		return c.bad_bytes ? 1 : 0;
	}
	if (c.o.json)
		printf("{\n  \"test\": \"%s\", \"transport\": \"%s\", "
		       "\"qps\": %d, \"verify\": %s, \"unit\": \"%s\",\n"
		       "  \"results\": [\n",
		       c.o.name, tname(c.o.transport), c.o.qps,
		       c.o.verify ? "true" : "false",
		       c.o.bw ? (c.o.gbits ? "Gb/sec" : "MB/sec") : "usec");
	table_head(&c);
	size = c.o.all ? 2 : c.o.size;
	max = c.o.all ? MAX_ALL_SIZE : c.o.size;
	for (; size <= max; size *= 2) {
		uint64_t bad, a, b, d;

		ctl_send(&c, "RUN %" PRIu64 " %d\n", size, c.o.verify);
		ctl_line(&c, line, sizeof(line), true);
		if (strcmp(line, "OK"))
			die(1,
			    "server refused %" PRIu64 "-byte messages: "
			    "start it with the same -s/-a/-t",
			    size);
		if (c.o.bw) {
			struct bw_res r;

			run_bw(&c, size, &r);
			bw_row(&c, size, &r);
		} else {
			double *v;
			uint64_t n = run_lat(&c, size, &v);

			lat_row(&c, size, v, n);
			free(v);
		}
		ctl_send(&c, "END\n");
		ctl_line(&c, line, sizeof(line), true);
		if (sscanf(line,
			   "RES %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
			   &bad, &a, &b, &d) != 4)
			die(1, "bad reply from server: '%s'", line);
		peer = (struct spray){a, b, d};
		c.bad_bytes += bad;
		if (c.bad_bytes)
			die(1,
			    "verify FAILED at size %" PRIu64 ": %" PRIu64
			    " bad bytes",
			    size, c.bad_bytes);
		if (!c.o.all)
			break;
	}
	ctl_send(&c, "BYE\n");
	spray_block(&c, &peer);
	if (c.o.verify && !c.o.json)
		printf(" Verify          : OK (every byte checked)\n");
	return 0;
}
