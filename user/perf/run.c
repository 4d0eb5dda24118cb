// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce_perf's measuring loops and the verbs they post: the --verify
 * pattern, buffer slots, the bandwidth loop (peak and average) and the
 * latency ping-pong. Every failure ends the run through perf_die().
 */
#include "perf.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

double now_s(void)
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

void fill(uint8_t *p, int q, uint64_t it, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++)
		p[i] = pat(q, it, i);
}

uint64_t check(const uint8_t *p, int q, uint64_t it, uint64_t len)
{
	uint64_t bad = 0;

	for (uint64_t i = 0; i < len; i++)
		bad += p[i] != pat(q, it, i);
	return bad;
}

uint8_t *slot(struct ctx *c, int q, int s)
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
uint8_t *chk(struct ctx *c, int q, int s)
{
	return slot(c, q, c->slots + s);
}

int qidx(struct ctx *c, uint32_t qpn)
{
	for (int i = 0; i < c->o.qps; i++)
		if (mrv_qp_num(c->q[i].qp) == qpn)
			return i;
	perf_die(1, "completion for unknown QP 0x%06x", qpn);
}

void post_send(struct ctx *c, int q, enum mrv_wr_opcode op, uint8_t *laddr,
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

/* --verify with WRITEs, one window at a time: WRITE up to depth messages
 * per QP to distinct slots, READ them all back into the check area,
 * compare. Returns the messages written. */
static uint64_t bw_verify_window(struct ctx *c, uint64_t size, int depth,
				 uint64_t *posted, double t0)
{
	int w[MAX_QPS] = {0}, pending = 0;
	uint64_t base[MAX_QPS], done = 0;
	struct mrv_wc wc[64];

	for (int q = 0; q < c->o.qps; q++) {
		struct qpctx *x = &c->q[q];

		base[q] = x->posted;
		for (; w[q] < depth && more(c, *posted, t0);
		     w[q]++, (*posted)++, pending++) {
			uint64_t it = x->posted++;
			int s = (int)(it % (uint64_t)c->slots);

			fill(slot(c, q, s), q, it, size);
			post_send(c, q, MRV_WR_RDMA_WRITE, slot(c, q, s), size,
				  x->ri.buf_addr + (uint64_t)s * c->slot_size,
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
			post_send(c, q, MRV_WR_RDMA_READ, chk(c, q, s), size,
				  c->q[q].ri.buf_addr +
					  (uint64_t)s * c->slot_size,
				  0, 0);
		}
	while (pending)
		pending -= poll_wc(c, wc, 64);
	for (int q = 0; q < c->o.qps; q++)
		for (int i = 0; i < w[q]; i++) {
			uint64_t it = base[q] + (uint64_t)i;
			int s = (int)(it % (uint64_t)c->slots);

			c->bad_bytes += check(chk(c, q, s), q, it, size);
		}
	return done;
}

/* Fills QP q's send queue up to depth with the test's operation. */
static void bw_post(struct ctx *c, int q, uint64_t size, int depth,
		    uint64_t *posted, double t0)
{
	struct qpctx *x = &c->q[q];

	while (x->outstanding < depth && more(c, *posted, t0)) {
		uint64_t it = x->posted++;
		uint64_t off = msg_off(c, it, size);
		uint8_t *l = (uint8_t *)x->mr->addr + off;
		uint64_t r = x->ri.buf_addr + off;

		switch (c->o.kind) {
		case T_WRITE:
			post_send(c, q, MRV_WR_RDMA_WRITE, l, size, r, it, 0);
			break;
		case T_READ:
			if (c->o.verify)
				memset(l, 0, size);
			post_send(c, q, MRV_WR_RDMA_READ, l, size, r, it, 0);
			break;
		case T_SEND:
			if (c->o.verify)
				fill(l, q, it, size);
			post_send(c, q, MRV_WR_SEND, l, size, 0, it, 0);
			break;
		}
		(*posted)++;
	}
}

void run_bw(struct ctx *c, uint64_t size, struct bw_res *res)
{
	int depth = c->o.tx_depth < c->slots ? c->o.tx_depth : c->slots;
	uint64_t posted = 0, done = 0;
	struct peak pk = {0};
	struct mrv_wc wc[64];
	double t0 = now_s();

	pk.t0 = pk.last_t = t0;
	if (c->o.verify && c->o.kind == T_WRITE) {
		while (more(c, posted, t0)) {
			done += bw_verify_window(c, size, depth, &posted, t0);
			peak_tick(&pk, done, size, now_s());
		}
		goto out;
	}
	while (more(c, posted, t0) || done < posted) {
		int k;

		for (int q = 0; q < c->o.qps; q++)
			bw_post(c, q, size, depth, &posted, t0);
		k = poll_wc(c, wc, 64);
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
uint64_t run_lat(struct ctx *c, uint64_t size, double **samples)
{
	struct qpctx *x = &c->q[0];
	uint64_t cap = c->o.duration ? 1u << 20 : (uint64_t)c->o.iters;
	uint64_t n = 0;
	double t0 = now_s();
	double *v = malloc(cap * sizeof(*v));

	if (!v)
		perf_die(1, "out of memory");
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
