// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce_perf's measuring loops and the verbs they post: the --verify
 * pattern, buffer slots, the bandwidth loop (peak and average) and the
 * latency ping-pong. Every failure ends the run through perf_die().
 */
#include "perf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ */
/* Verification (docs/libmroce.md, "mroce_perf --verify")               */
/* ------------------------------------------------------------------ */
/*
 * Message `it` of QP q carries PAT window (q, it): the bytes of one
 * pseudo-random pattern, generated alike on both sides, starting at a
 * shift that moves by PAT_STEP bytes from one message to the next. A
 * sender posts straight from the pattern (nothing is written per
 * message), a receiver compares with memcmp as each message completes:
 * verification costs the receiver one pass over the bytes and the sender
 * nothing. Neighbouring messages, and the message a slot held before, sit
 * at other shifts, so a byte of the wrong message is caught like any other
 * wrong byte (each byte differs with probability 255/256).
 */
#define PAT_STEP 64u
#define PAT_SHIFTS 509u /* prime: no power-of-two slot count divides it */
#define PAT_SPAN ((uint64_t)PAT_STEP * PAT_SHIFTS)
#define PAT_QP_SKEW 131u /* QPs start at different shifts */

static uint64_t round64(uint64_t x)
{
	return (x + 63) & ~63ull;
}

uint64_t buf_len(uint64_t slots, uint64_t max)
{
	return round64(slots * max + max + PAT_SPAN);
}

uint8_t *slot(struct ctx *c, int q, int s)
{
	return (uint8_t *)c->q[q].mr->addr + (uint64_t)s * c->slot_size;
}

static uint8_t *pat_area(struct ctx *c, int q)
{
	return slot(c, q, c->slots);
}

/* The pattern (splitmix64, a fixed seed: both sides make the same one)
 * in every QP's buffer, after the slots. */
void pat_init(struct ctx *c)
{
	uint64_t len = c->slot_size + PAT_SPAN, x = 0x6d726f6365ull;
	uint8_t *p0 = pat_area(c, 0);

	for (uint64_t i = 0; i < len; i += 8) {
		uint64_t z = (x += 0x9e3779b97f4a7c15ull);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
		memcpy(p0 + i, &z, len - i < 8 ? len - i : 8);
	}
	for (int q = 1; q < c->o.qps; q++)
		memcpy(pat_area(c, q), p0, len);
}

const uint8_t *pat(struct ctx *c, int q, uint64_t it)
{
	uint64_t k = (it + (uint64_t)q * PAT_QP_SKEW) % PAT_SHIFTS;

	return pat_area(c, q) + k * PAT_STEP;
}

/* Wrong bytes of message it of QP q at p; the first one is kept in
 * c->bad (QP, message, offset, expected and found byte). */
uint64_t check(struct ctx *c, const uint8_t *p, int q, uint64_t it,
	       uint64_t len)
{
	const uint8_t *w = pat(c, q, it);
	uint64_t bad = 0;

	if (!memcmp(p, w, len))
		return 0;
	for (uint64_t i = 0; i < len; i++) {
		if (p[i] == w[i])
			continue;
		if (!c->bad.set)
			c->bad = (struct bad_at){true, q, it, i, w[i], p[i],
						 BAD_BYTE};
		bad++;
	}
	return bad;
}

void bad_msg(struct ctx *c, int q, uint64_t it, uint64_t size,
	     enum bad_what what, uint64_t off)
{
	if (!c->bad.set)
		c->bad = (struct bad_at){true, q, it, off, 0, 0, (uint8_t)what};
	c->bad_bytes += size;
}

void bad_text(struct ctx *c, const struct bad_at *b, char *buf, size_t cap)
{
	int n;

	if (b->what == BAD_MISSING) { /* counted over all QPs, not one */
		snprintf(buf, cap,
			 "%" PRIu64 " of the client's %" PRIu64
			 " messages (all QPs) never arrived",
			 b->off, b->msg + b->off);
		return;
	}
	n = snprintf(buf, cap, "QP %d (QPN 0x%06x), message %" PRIu64,
			 b->q, b->q < c->o.qps ? mrv_qp_num(c->q[b->q].qp) : 0,
			 b->msg);

	if (n < 0 || (size_t)n >= cap)
		return;
	buf += n;
	cap -= (size_t)n;
	switch (b->what) {
	case BAD_BYTE:
		snprintf(buf, cap,
			 ", offset %" PRIu64 ": expected 0x%02x, got 0x%02x",
			 b->off, b->want, b->got);
		break;
	case BAD_LEN:
		snprintf(buf, cap, ": wrong length %" PRIu64, b->off);
		break;
	case BAD_ORDER:
		snprintf(buf, cap, ": out of order (immediate %" PRIu64 ")",
			 b->off);
		break;
	default:
		break;
	}
}

/* Where a message to send comes from: its pattern window, except for
 * the one --corrupt names, which is copied to its own slot with one
 * byte changed (a wrong byte that really crosses the wire). */
static const uint8_t *src(struct ctx *c, int q, uint64_t it, uint64_t len)
{
	uint8_t *p;

	if (!c->o.corrupt || q || it != c->o.corrupt_msg ||
	    c->o.corrupt_off >= len)
		return pat(c, q, it);
	p = slot(c, q, (int)(it % (uint64_t)c->slots));
	memcpy(p, pat(c, q, it), len);
	p[c->o.corrupt_off] ^= 0x5a;
	return p;
}

/* Where message `it` of `size` bytes starts in a QP's buffer, local and
 * remote alike. --verify: its own slot (a message in flight must not
 * share its target with another). Otherwise perftest's rule
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

int qidx(struct ctx *c, uint32_t qpn)
{
	for (int i = 0; i < c->o.qps; i++)
		if (mrv_qp_num(c->q[i].qp) == qpn)
			return i;
	perf_die(1, "completion for unknown QP 0x%06x", qpn);
}

void post_send(struct ctx *c, int q, enum mrv_wr_opcode op,
	       const uint8_t *laddr,
	       uint64_t len, uint64_t raddr, uint64_t wr_id, uint32_t imm)
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
		perf_die(1, "post_send: %s", strerror(-err));
	c->q[q].outstanding++;
}

void post_recv(struct ctx *c, int q, int s)
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
		perf_die(1, "post_recv: %s", strerror(-err));
}

int poll_wc(struct ctx *c, struct mrv_wc *wc, int n)
{
	int k = mrv_poll_cq(c->cq, n, wc);

	if (k < 0)
		perf_die(1, "poll_cq: %s", strerror(-k));
	for (int i = 0; i < k; i++)
		if (wc[i].status != MRV_WC_SUCCESS)
			perf_die(1, "completion error on QP 0x%06x: %s",
				 wc[i].qp_num, mrv_wc_status_str(wc[i].status));
	return k;
}

/* ------------------------------------------------------------------ */
/* Client: bandwidth                                                    */
/* ------------------------------------------------------------------ */
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

/* Fills QP q's send queue up to depth with the test's operation.
 * --verify sends the same operations, from the message's pattern window
 * (write_bw: the server checks every slot's last message at END). */
static void bw_post(struct ctx *c, int q, uint64_t size, int depth,
		    uint64_t *posted, double t0)
{
	struct qpctx *x = &c->q[q];

	while (x->outstanding < depth && more(c, *posted, t0)) {
		uint64_t it = x->posted;
		uint64_t off = msg_off(c, it, size);
		uint8_t *l = (uint8_t *)x->mr->addr + off;
		uint64_t r = x->ri.buf_addr + off;

		x->posted++;
		switch (c->o.kind) {
		case T_WRITE:
			post_send(c, q, MRV_WR_RDMA_WRITE,
				  c->o.verify ? src(c, q, it, size) : l, size,
				  r, it, 0);
			break;
		case T_READ:
			if (c->o.verify)
				memset(l, 0, size);
			post_send(c, q, MRV_WR_RDMA_READ, l, size, r, it, 0);
			break;
		case T_SEND:
			post_send(c, q, MRV_WR_SEND,
				  c->o.verify ? src(c, q, it, size) : l, size,
				  0, it, 0);
			break;
		}
		(*posted)++;
	}
}

/* --interval: the intervals that ended by t (seconds since the start)
 * get the bytes completed since the previous one; at the end of the run
 * (last) the partial interval gets the rest, so they add up to the
 * run's total. */
struct ivl_run {
	double next;	/* end of the open interval */
	uint64_t done0; /* completions before it */
	size_t cap;
};

static void ivl_tick(struct ctx *c, struct ivl_run *v, struct bw_res *r,
		     uint64_t done, uint64_t size, double t, bool last)
{
	double len = c->o.interval;

	for (;;) {
		bool full = t >= v->next;
		struct ivl *n;

		if (!full && (!last || (done == v->done0 &&
					t - (v->next - len) < 1e-3)))
			return; /* open, or nothing left to report */
		if (r->n_ivl == v->cap) {
			v->cap = v->cap ? 2 * v->cap : 64;
			r->ivl = realloc(r->ivl, v->cap * sizeof(*r->ivl));
			if (!r->ivl)
				perf_die(1, "out of memory");
		}
		n = &r->ivl[r->n_ivl++];
		n->start = v->next - len;
		n->end = full ? v->next : t;
		n->bytes = (done - v->done0) * size;
		out_interval(c, n);
		v->done0 = done;
		if (!full)
			return;
		v->next += len;
	}
}

/* --probe: QP pq's next 8-byte WRITE, into the start of the server's
 * buffer (no bulk QP writes there: each QP has its own). */
#define PROBE_LEN	8
#define PROBE_WARMUP	100
#define PROBE_IDLE_N	2000

static void probe_post(struct ctx *c, int pq)
{
	struct qpctx *x = &c->q[pq];

	post_send(c, pq, MRV_WR_RDMA_WRITE, x->mr->addr, PROBE_LEN,
		  x->ri.buf_addr, x->posted++, 0);
}

static void probe_add(double **v, uint64_t *n, uint64_t *cap, double us)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 4096;
		*v = realloc(*v, *cap * sizeof(**v));
		if (!*v)
			perf_die(1, "out of memory");
	}
	(*v)[(*n)++] = us;
}

/* The probe alone: PROBE_WARMUP round trips, then PROBE_IDLE_N or 1 s. */
static void probe_idle(struct ctx *c, int pq, struct probe_res *p)
{
	uint64_t cap = 0;
	double t0 = now_s();

	for (int i = 0; i < PROBE_WARMUP + PROBE_IDLE_N; i++) {
		struct mrv_wc wc[4];
		double t = now_s();
		int k = 0;

		if (i >= PROBE_WARMUP && t - t0 > 1)
			break;
		probe_post(c, pq);
		while (!k)
			k = poll_wc(c, wc, 4);
		c->q[pq].outstanding--;
		if (i >= PROBE_WARMUP)
			probe_add(&p->idle, &p->n_idle, &cap,
				  (now_s() - t) * 1e6);
		else
			t0 = now_s();
	}
}

void run_bw(struct ctx *c, uint64_t size, struct bw_res *res)
{
	int depth = c->o.tx_depth < c->slots ? c->o.tx_depth : c->slots;
	uint64_t posted = 0, done = 0;
	struct peak pk = {0};
	struct ivl_run iv = {.next = c->o.interval};
	struct mrv_wc wc[64];
	struct timespec wall;
	/* --probe: the last QP; pt is when its WRITE in flight was posted */
	int nbulk = c->o.qps - c->o.probe, pq = c->o.probe ? nbulk : -1;
	double t0, pt = 0;

	*res = (struct bw_res){0};
	if (c->o.probe)
		probe_idle(c, pq, &res->probe);
	t0 = now_s();
	clock_gettime(CLOCK_REALTIME, &wall);
	res->start_unix = (double)wall.tv_sec + (double)wall.tv_nsec * 1e-9;
	pk.t0 = pk.last_t = t0;
	out_live(res);
	while (more(c, posted, t0) || done < posted ||
	       (pq >= 0 && c->q[pq].outstanding)) {
		int k;

		for (int q = 0; q < nbulk; q++)
			bw_post(c, q, size, depth, &posted, t0);
		if (pq >= 0 && !c->q[pq].outstanding && more(c, posted, t0)) {
			pt = now_s();
			probe_post(c, pq);
		}
		k = poll_wc(c, wc, 64);
		for (int i = 0; i < k; i++) {
			int q = qidx(c, wc[i].qp_num);
			uint64_t it = wc[i].wr_id;
			int s = (int)(it % (uint64_t)c->slots);

			c->q[q].outstanding--;
			if (q == pq) {
				probe_add(&res->probe.loaded,
					  &res->probe.n_loaded,
					  &res->probe.cap_loaded,
					  (now_s() - pt) * 1e6);
				continue;
			}
			done++;
			if (c->o.verify && c->o.kind == T_READ)
				c->bad_bytes += check(c, slot(c, q, s), q,
						      (uint64_t)s, size);
		}
		/* Windows end at completions only: an idle stretch followed
		 * by one big completion must not look like a burst. */
		if (k)
			peak_tick(&pk, done, size, now_s());
		if (c->o.interval)
			ivl_tick(c, &iv, res, done, size, now_s() - t0, false);
	}
	res->secs = now_s() - t0;
	res->iters = done;
	res->peak_bps = pk.best;
	if (c->o.interval)
		ivl_tick(c, &iv, res, done, size, res->secs, true);
	if (res->secs > 0 &&
	    (double)done * (double)size / res->secs > res->peak_bps)
		res->peak_bps = (double)done * (double)size / res->secs;
}

/* ------------------------------------------------------------------ */
/* Client: latency                                                      */
/* ------------------------------------------------------------------ */
/* One latency iteration: a READ, or a ping and its pong. Returns the
 * sample in microseconds (write and send: half the round trip). */
static double lat_once(struct ctx *c, uint64_t size)
{
	struct qpctx *x = &c->q[0];
	uint64_t it = x->posted;
	double t1 = now_s();
	struct mrv_wc wc[4];
	bool got = false;

	if (c->o.kind == T_READ) {
		if (c->o.verify)
			memset(slot(c, 0, 0), 0, size);
		post_send(c, 0, MRV_WR_RDMA_READ, slot(c, 0, 0), size,
			  x->ri.buf_addr, it, 0);
		x->posted++;
		while (!got)
			got = poll_wc(c, wc, 4) > 0;
		t1 = (now_s() - t1) * 1e6;
		if (c->o.verify)
			c->bad_bytes += check(c, slot(c, 0, 0), 0, 0, size);
		return t1;
	}
	/* Ping from the pattern, pong lands in slot 0 (WRITE) or a receive
	 * slot (SEND). */
	post_send(c, 0,
		  c->o.kind == T_SEND ? MRV_WR_SEND : MRV_WR_RDMA_WRITE_WITH_IMM,
		  pat(c, 0, it), size, x->ri.buf_addr, it, (uint32_t)it);
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
					c,
					wc[i].opcode == MRV_WC_RECV
						? slot(c, 0, (int)wc[i].wr_id)
						: slot(c, 0, 0),
					0, it, size);
			post_recv(c, 0, (int)wc[i].wr_id);
		}
	}
	return (now_s() - t1) * 1e6 / 2;
}

uint64_t run_lat(struct ctx *c, uint64_t size, double **samples)
{
	uint64_t cap = c->o.duration ? 1u << 20 : (uint64_t)c->o.iters;
	uint64_t n = 0;
	double t0;
	double *v = malloc(cap * sizeof(*v));

	if (!v)
		perf_die(1, "out of memory");
	/* --warmup: iterations that are run and checked, not counted */
	for (long i = 0; i < c->o.warmup; i++)
		(void)lat_once(c, size);
	t0 = now_s();
	while (n < cap && more(c, n, t0))
		v[n++] = lat_once(c, size);
	*samples = v;
	return n;
}
