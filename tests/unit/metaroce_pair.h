/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Helpers of the MetaRoCE engine tests (tests/unit/test_metaroce_*.c): a
 * pair of engines (side 0 and side 1, one QP each, connected) wired
 * through the in-test packet pump (engine_pump.h), whose filters drop,
 * duplicate or delay chosen packets; posting, waiting for completions,
 * and reading stats and paths.
 *
 * Header-only (static inline functions), like engine_pump.h, so each test
 * file can use it without a shared object in the test build.
 */
#ifndef MROCE_TESTS_METAROCE_PAIR_H
#define MROCE_TESTS_METAROCE_PAIR_H

#include "../harness.h"
#include <stdio.h>

#include "engine_pump.h"
#include "../../user/engine/metaroce/metaroce_int.h"

#define ACC_ALL                                                                \
	(MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |                \
	 MROCE_ACCESS_REMOTE_READ)

struct side {
	int cq;
	uint32_t qpn;
	uint8_t *buf;
	struct mroce_mr mr;
	struct mroce_wc wc[512];
	int nwc;
};

struct pair {
	struct pump p;
	struct side s[2];
	size_t len;
};

static inline struct mroce_engine_cfg base_cfg(void)
{
	struct mroce_engine_cfg c = { .transport = MROCE_TRANSPORT_METAROCE };

	c.seed = 7;
	c.mtu = 1024;
	mroce_engine_cfg_default(&c);
	return c;
}

static inline int qp_connect(struct mroce_engine *e, uint32_t qpn, int peer,
			     uint32_t dest, uint64_t now)
{
	struct mroce_qp_attr a = { .state = MROCE_QPS_INIT,
				   .access = MROCE_ACCESS_REMOTE_WRITE |
					     MROCE_ACCESS_REMOTE_READ };
	int err = mroce_modify_qp(e, qpn, &a,
				  MROCE_QP_STATE | MROCE_QP_ACCESS_FLAGS, now);

	if (err)
		return err;
	a.state = MROCE_QPS_RTR;
	a.peer = peer;
	a.dest_qpn = dest;
	err = mroce_modify_qp(e, qpn, &a, MROCE_QP_STATE | MROCE_QP_DEST, now);
	if (err)
		return err;
	a.state = MROCE_QPS_RTS;
	return mroce_modify_qp(e, qpn, &a, MROCE_QP_STATE, now);
}

/* A new QP of side i on its CQ (256 WRs each way); its number. */
static inline uint32_t new_qp(struct pair *s, int i)
{
	struct mroce_qp_init_attr ia = { .max_send_wr = 256,
					 .max_recv_wr = 256 };
	int r;

	ia.send_cq = ia.recv_cq = s->s[i].cq;
	r = mroce_create_qp(s->p.e[i], &ia);
	ck_assert_int_gt(r, 0);
	return (uint32_t)r;
}

/* Side i's CQ and QP on its engine, and its buffer (s->len bytes)
 * registered there. */
static inline void side_open(struct pair *s, int i)
{
	struct side *d = &s->s[i];

	d->cq = mroce_create_cq(s->p.e[i], 1024);
	ck_assert_int_ge(d->cq, 0);
	d->qpn = new_qp(s, i);
	ck_assert_int_eq(mroce_reg_mr(s->p.e[i], d->buf, s->len, ACC_ALL,
				      &d->mr),
			 0);
}

/* Side i's QP to the other side's, through INIT and RTR to RTS. */
static inline void connect_side(struct pair *s, int i)
{
	ck_assert_int_eq(qp_connect(s->p.e[i], s->s[i].qpn, s->p.peer[i][1 - i],
				    s->s[1 - i].qpn, s->p.now),
			 0);
}

static inline void pair_setup_cfg(struct pair *s,
				  const struct mroce_engine_cfg *cfg,
				  size_t len, bool connect)
{
	ck_assert_int_eq(pump_init(&s->p, 2, cfg), 0);
	s->len = len;
	for (int i = 0; i < 2; i++) {
		struct side *d = &s->s[i];

		memset(d, 0, sizeof(*d));
		d->buf = malloc(len ? len : 1);
		for (size_t k = 0; k < len; k++)
			d->buf[k] = (uint8_t)(k * 7 + i * 101 + (k >> 11));
		side_open(s, i);
	}
	if (!connect)
		return;
	for (int i = 0; i < 2; i++)
		connect_side(s, i);
}

static inline void pair_setup(struct pair *s, size_t len)
{
	struct mroce_engine_cfg cfg = base_cfg();

	pair_setup_cfg(s, &cfg, len, true);
}

static inline void pair_fini(struct pair *s)
{
	/* next_timer() never said "now" without there being work */
	ck_assert_uint_eq(s->p.spins, 0);
	pump_fini(&s->p);
	free(s->s[0].buf);
	free(s->s[1].buf);
}

static inline void collect(struct pair *s)
{
	for (int i = 0; i < 2; i++) {
		struct side *d = &s->s[i];
		int n = mroce_poll_cq(s->p.e[i], d->cq, d->wc + d->nwc,
				      512 - d->nwc);

		if (n > 0)
			d->nwc += n;
	}
}

struct want {
	struct pair *s;
	int n0, n1;
};

static inline bool cond_wcs(struct pump *p, void *arg)
{
	struct want *w = arg;

	collect(w->s);
	return w->s->s[0].nwc >= w->n0 && w->s->s[1].nwc >= w->n1;
}

static inline bool run_until_wcs(struct pair *s, int n0, int n1, uint64_t limit)
{
	struct want w = { s, n0, n1 };

	return pump_run(&s->p, cond_wcs, &w, limit);
}

static inline bool cond_established(struct pump *p, void *arg)
{
	for (int i = 0; i < p->n; i++) {
		struct mroce_engine_stats st;

		mroce_engine_get_stats(p->e[i], &st);
		if (!st.handshakes)
			return false;
	}
	return true;
}

static inline int post(struct pair *s, int i, enum mroce_wr_opcode op,
		       uint64_t wr_id, uint32_t loff, uint32_t len,
		       uint32_t roff)
{
	struct side *d = &s->s[i], *o = &s->s[1 - i];
	struct mroce_send_wr wr = {
		.wr_id = wr_id,
		.opcode = op,
		.send_flags = MROCE_SEND_SIGNALED,
		.sge = { .addr = (uint64_t)(uintptr_t)(d->buf + loff),
			 .length = len,
			 .lkey = d->mr.lkey },
		.imm = 0xabc00000u + (uint32_t)wr_id,
		.remote_addr = (uint64_t)(uintptr_t)(o->buf + roff),
		.rkey = o->mr.rkey,
	};

	return mroce_post_send(s->p.e[i], d->qpn, &wr, s->p.now);
}

static inline int post_recv(struct pair *s, int i, uint64_t wr_id, uint32_t off,
			    uint32_t len)
{
	struct side *d = &s->s[i];
	struct mroce_recv_wr wr = {
		.wr_id = wr_id,
		.sge = { .addr = (uint64_t)(uintptr_t)(d->buf + off),
			 .length = len,
			 .lkey = d->mr.lkey },
	};

	return mroce_post_recv(s->p.e[i], d->qpn, &wr);
}

static inline struct mroce_engine_stats stats(struct pair *s, int i)
{
	struct mroce_engine_stats st;

	mroce_engine_get_stats(s->p.e[i], &st);
	return st;
}

static inline enum mroce_qp_state qp_state(struct pair *s, int i)
{
	struct mroce_qp_attr a;

	ck_assert_int_eq(mroce_query_qp(s->p.e[i], s->s[i].qpn, &a), 0);
	return a.state;
}

/* Runs until both sides have counted the connection up. */
static inline void establish(struct pair *s)
{
	ck_assert(pump_run(&s->p, cond_established, NULL, 100000000));
}

static inline void set_filter(struct pair *s, pump_filter_fn fn, void *ctx)
{
	s->p.filter = fn;
	s->p.ctx = ctx;
}

/* Path idx of side i's connection to the other side (it exists). */
static inline struct mroce_path_info path_of(struct pair *s, int i, int idx)
{
	struct mroce_path_info pi;

	ck_assert_int_eq(mroce_engine_path_info(s->p.e[i], s->p.peer[i][1 - i],
						idx, &pi),
			 0);
	return pi;
}

/* The source ports of side 0's eight paths. */
static inline void ports_of(struct pair *s, uint16_t sport[8])
{
	for (int i = 0; i < 8; i++)
		sport[i] = path_of(s, 0, i).sport;
}

/* None of side 0's eight paths was retired (all in generation 0). */
static inline void no_path_retired(struct pair *s)
{
	for (int i = 0; i < 8; i++)
		ck_assert_uint_eq(path_of(s, 0, i).gen, 0);
}

/* Side 0 writes its first len bytes to the second len bytes of side 1
 * (buffers of 2 * len), as work request 1 ... */
static inline void post_write_half(struct pair *s, size_t len)
{
	ck_assert_int_eq(post(s, 0, MROCE_WR_RDMA_WRITE, 1, 0, (uint32_t)len,
			      (uint32_t)len),
			 0);
}

/* ... which completes within limit ns, successfully and byte-exact. */
static inline void finish_write_half(struct pair *s, size_t len, uint64_t limit)
{
	ck_assert(run_until_wcs(s, 1, 0, limit));
	ck_assert_int_eq(s->s[0].wc[0].status, MROCE_WC_SUCCESS);
	ck_assert(!memcmp(s->s[0].buf, s->s[1].buf + len, len));
}

static inline void write_half(struct pair *s, size_t len, uint64_t limit)
{
	post_write_half(s, len);
	finish_write_half(s, len, limit);
}

/* Side 0 writes len bytes from its offset 0 to offset roff of side 1 as
 * wr_id: it completes, successfully, as side 0's nwc-th completion. */
static inline void write_ok(struct pair *s, uint64_t wr_id, uint32_t len,
			    uint32_t roff, int nwc)
{
	ck_assert_int_eq(post(s, 0, MROCE_WR_RDMA_WRITE, wr_id, 0, len, roff),
			 0);
	ck_assert(run_until_wcs(s, nwc, 0, 1000000000ull));
	ck_assert_int_eq(s->s[0].wc[nwc - 1].status, MROCE_WC_SUCCESS);
}

/* A step of the linear congruential generator the filters draw from. */
static inline uint32_t lcg(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*x >> 33);
}

/* Random loss of side 0's data packets (PROBEs spared), permille of
 * them. */
struct rand_loss {
	uint64_t x;
	uint32_t permille;
	uint64_t dropped;
};

static inline enum pump_verdict
rand_loss_filter(struct pump *p, int src, int dst,
		 const struct mroce_tx_pkt *t,
		 const struct mroce_meta_pkt *pk)
{
	struct rand_loss *l = p->ctx;
	uint32_t r = lcg(&l->x);

	if (pk && src == 0 && pk->opcode != MROCE_OP_PROBE &&
	    pk->opcode < MROCE_OP_CONNECT_REQ && r % 1000 < l->permille) {
		l->dropped++;
		return PUMP_DROP;
	}
	return PUMP_PASS;
}

/* The state of the filters that drop the first packets of a kind. */
struct nth_drop {
	int accepts;		/* ACCEPTs seen */
	int writes, probes;	/* data / PROBE packets of side 0 seen */
	int drop_writes, drop_probes;	/* drop the first this many */
};

/* Drop side 0's first drop_writes WRITE and first drop_probes PROBE
 * packets (struct nth_drop). */
static inline enum pump_verdict
nth_drop_filter(struct pump *p, int src, int dst, const struct mroce_tx_pkt *t,
		const struct mroce_meta_pkt *pk)
{
	struct nth_drop *d = p->ctx;

	(void)dst;
	(void)t;
	if (!pk || src != 0)
		return PUMP_PASS;
	if (pk->opcode == MROCE_OP_WRITE && d->writes++ < d->drop_writes)
		return PUMP_DROP;
	if (pk->opcode == MROCE_OP_PROBE && d->probes++ < d->drop_probes)
		return PUMP_DROP;
	return PUMP_PASS;
}

/* The random source (and loss rate) of the chaos and mutation runs. */
struct chaos {
	uint64_t x;
	uint32_t loss;	/* percent */
};

static inline uint32_t chaos_rand(struct chaos *c)
{
	return lcg(&c->x);
}

/* A blackhole: every packet engine src sends from sport is lost. */
struct bh {
	uint16_t sport;
	int dropped;
	int src;	/* the engine whose packets from sport are lost */
};

static inline enum pump_verdict
blackhole_port(struct pump *p, int src, int dst, const struct mroce_tx_pkt *t,
	       const struct mroce_meta_pkt *pk)
{
	struct bh *b = p->ctx;

	if (src == b->src && t->sport == b->sport) {
		b->dropped++;
		return PUMP_DROP;
	}
	return PUMP_PASS;
}

#endif /* MROCE_TESTS_METAROCE_PAIR_H */
