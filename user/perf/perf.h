/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * mroce_perf's pieces (tool only): options.c parses the command line,
 * perf.c sets up and runs the server and the control channel, run.c
 * drives the bandwidth and latency loops, output.c prints perftest's
 * table, the spraying block and the JSON documents.
 *
 * Errors end the run through perf_die(), which still completes the JSON
 * document (with an "error" object) when --json is on.
 */
#ifndef MROCE_PERF_H
#define MROCE_PERF_H

#include <stdbool.h>
#include <stdint.h>

#include "mroce/mroce.h"

#define MAX_QPS 64
#define DEF_PORT 18515
#define MAX_ALL_SIZE (1u << 23) /* -a goes 2 .. 8 MiB like perftest */
#define BUF_BUDGET (64u << 20)	/* bytes of slots per QP at most */
#define PERFTEST_JSON_FILE "perftest_out.json" /* perftest's default */

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
	const char *out_json;	/* --out_json: perftest's file, or NULL */
	uint16_t port;
	uint8_t transport, backend;
	int paths;
	int tx_depth;
	uint64_t cycle_buffer;	/* --cycle_buffer: perftest's, a page */
	int rto_min_us;
	uint32_t link_mbps;	 /* --link-gbps, 0 = the interface's */
	uint32_t queue_us;	 /* --queue-us, 0 = the library's */
	bool no_ack_offload;	 /* --no-ack-offload */
	const char *ifname, *local;
	bool daemon;		 /* --daemon: mroced serves the device */
	const char *daemon_sock; /* NULL: the default socket */
	double interval;	 /* --interval: seconds, 0 = off */
	double idle;		 /* --idle: seconds quiet before the test */
	bool probe;		 /* --probe: the last QP is a latency probe */
	long warmup;		 /* --warmup: latency iterations not counted */
	bool corrupt;		 /* --corrupt: test hook, see options.c */
	uint64_t corrupt_msg, corrupt_off;
};

struct qpctx {
	struct mrv_qp *qp;
	struct mrv_mr *mr; /* slots, then the pattern (buf_len()) */
	struct mrv_conn_info ri;
	uint64_t posted, done; /* sends posted / completed */
	uint64_t recvs;	       /* receives completed */
	int outstanding;
	/* write_bw --verify, at the server: the client's WRITEs of this
	 * size ran from message wrote_from to wrote_end - 1 (WROTE). */
	uint64_t wrote_from, wrote_end;
};

/* The first failure a --verify check found: a wrong byte (at off, want
 * and got), a SEND of the wrong length (off = its length), a completion
 * out of order (off = the immediate it carried), or messages that never
 * arrived (msg = how many did, off = how many did not, over all QPs). */
enum bad_what { BAD_BYTE, BAD_LEN, BAD_ORDER, BAD_MISSING };

struct bad_at {
	bool set;
	int q;
	uint64_t msg, off;
	uint8_t want, got;
	uint8_t what; /* enum bad_what */
};

struct ctx {
	struct opts o;
	struct mrv_device *dev;
	struct mrv_pd *pd;
	struct mrv_cq *cq;
	struct qpctx q[MAX_QPS];
	uint64_t slot_size;
	int slots;
	uint64_t mr_len; /* every QP's buffer: slots, pattern */
	int ctl;	    /* control socket (first QP's) */
	uint64_t bad_bytes; /* verify failures seen here */
	struct bad_at bad;  /* where the first one was */
	char local[64];
	struct mrv_dev_stats st0; /* the device's counters before the run */
};

/* One --interval line: bytes completed in [start, end) of the run. */
struct ivl {
	double start, end;
	uint64_t bytes;
};

/* write_bw --probe: round trips (us) of the probe's 8-byte WRITEs, post
 * to completion, alone before the run (idle) and during it (loaded). */
struct probe_res {
	double *idle, *loaded;
	uint64_t n_idle, n_loaded, cap_loaded;
};

struct bw_res {
	uint64_t iters;
	struct probe_res probe;
	double secs, peak_bps;
	double start_unix; /* wall clock at the start (aligns intervals) */
	struct ivl *ivl;   /* --interval: malloc'd, n_ivl of them */
	uint64_t n_ivl;
};

/* What the server's receiver saw (its "RES" answer). */
struct spray {
	uint64_t rx_data, rx_ooo, rx_dup;
};

extern const char *prog;

/* options.c */
void perf_parse(int argc, char **argv, struct opts *o);

/* perf.c: print "prog: message" on stderr, complete the JSON document
 * with an error object when --json is on, and exit with code. */
__attribute__((noreturn, format(printf, 2, 3))) void
perf_die(int code, const char *fmt, ...);
void run_stats(struct ctx *c, struct mrv_dev_stats *st);

/* run.c */
double now_s(void);
/* The buffer of every QP, the same layout on both sides: the slots, then
 * the --verify pattern. */
uint64_t buf_len(uint64_t slots, uint64_t max);
void pat_init(struct ctx *c);
const uint8_t *pat(struct ctx *c, int q, uint64_t it);
uint64_t check(struct ctx *c, const uint8_t *p, int q, uint64_t it,
	       uint64_t len);
/* A whole message of size bytes is wrong (enum bad_what, not BAD_BYTE). */
void bad_msg(struct ctx *c, int q, uint64_t it, uint64_t size,
	     enum bad_what what, uint64_t off);
/* "QP 0 (QPN 0x...), message 17, offset 4095: expected 0x3c, got 0x66" */
void bad_text(struct ctx *c, const struct bad_at *b, char *buf, size_t cap);
uint8_t *slot(struct ctx *c, int q, int s);
int qidx(struct ctx *c, uint32_t qpn);
void post_send(struct ctx *c, int q, enum mrv_wr_opcode op,
	       const uint8_t *laddr, uint64_t len, uint64_t raddr, uint64_t wr_id, uint32_t imm);
void post_recv(struct ctx *c, int q, int s);
int poll_wc(struct ctx *c, struct mrv_wc *wc, int n);
void run_bw(struct ctx *c, uint64_t size, struct bw_res *res);
/* Samples in *samples (malloc'd, the caller frees), their count returned. */
uint64_t run_lat(struct ctx *c, uint64_t size, double **samples);

/* output.c */
void out_begin(const struct ctx *c);
void out_header(struct ctx *c);
void out_table_head(const struct ctx *c);
void out_bw_row(const struct ctx *c, uint64_t size, struct bw_res *r);
void out_interval(const struct ctx *c, const struct ivl *v);
/* The run whose intervals a failure still reports (NULL: none). */
void out_live(const struct bw_res *r);
void out_lat_row(const struct ctx *c, uint64_t size, double *v, uint64_t n);
void out_spray(struct ctx *c, const struct spray *peer);
/* End the --json document (error: NULL, or what ended the run early). */
void out_cpu(const struct ctx *c);
void out_end(int code, const char *error);

#endif
