/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The RoCEv2 tests' world (tests/unit/test_rocev2_*.c): two engines in
 * RoCEv2 mode wired back to back through a tiny in-test pump (tx of one
 * side -> rx of the other) that can drop, duplicate or hold back (reorder)
 * chosen packets. Virtual time advances 1 us per pump round and jumps to
 * the next timer when idle. RV2_TEST_VERBOSE=1 prints both engines'
 * counters at the end of each test (to stderr), for looking at how a
 * recovery went. Include after ../harness.h.
 */
#ifndef MROCE_TEST_ROCEV2_WORLD_H
#define MROCE_TEST_ROCEV2_WORLD_H

#include "mroce/codec.h"
#include "mroce/engine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define PKT_CAP		9216
#define MEM_SIZE	(16u << 20)
#define DST_OFF		(8u << 20)	/* destination half of each region */
#define MAX_WC		8192
#define MAX_QP		8
#define BATCH		16

enum act { ACT_PASS, ACT_DROP, ACT_DUP, ACT_HOLD };

struct world;
/* Decide the fate of the idx-th packet sent by side dir. */
typedef enum act (*filter_fn)(struct world *w, int dir, uint64_t idx,
			      const struct mroce_rv2_pkt *p);

struct side {
	struct mroce_engine *e;
	int peer;		/* the other side, in this engine */
	int cq;
	uint32_t qpn[MAX_QP];
	uint8_t *mem;
	struct mroce_mr mr;
	struct mroce_wc wc[MAX_WC];
	int nwc;
};

struct world {
	struct side s[2];
	int nqp;
	uint16_t mtu;
	uint64_t now;
	filter_fn filter;
	/* filter parameters */
	uint64_t param[8];
	int nparam;
	uint64_t rng;
	/* observations */
	uint64_t sent[2], dropped[2];
	uint32_t sport_qpn[2][MAX_QP];	/* dqpn seen ... */
	uint16_t sport[2][MAX_QP];	/* ... and its one source port */
	int nsport[2];
	uint32_t max_psn[2];		/* highest request PSN seen (diff) */
	bool any_psn[2];
	bool first_rexmit_seen[2];
	uint32_t first_rexmit_psn[2];
	uint32_t drop_psn;		/* PSN of the last dropped packet */
	bool saw_psn[2][2];		/* saw 0xffffff / 0x000000 */
	uint32_t max_inflight;
	bool check_inflight;
	struct {
		bool used;
		uint8_t buf[PKT_CAP];
		uint32_t len;
		uint16_t sport;
	} held[2];
};

static inline uint64_t xs(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static inline void fill(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(xs(&s) >> 24);
}

/* ------------------------------------------------------------------ */
/* World setup                                                          */
/* ------------------------------------------------------------------ */
struct wcfg {
	uint16_t mtu;
	uint32_t psn[2];	/* sq_psn of side 0 / 1 */
	uint8_t retry_cnt, rnr_retry;
	int nqp;
	uint32_t access;	/* remote access of the QPs */
};

/* QP i of side d, in RESET, through INIT (remote access as given) to
 * RTR towards QP i of the other side, expecting PSN rq_psn. */
static inline void qp_to_rtr(struct world *w, int d, int i, uint32_t access,
			     uint32_t rq_psn)
{
	struct side *s = &w->s[d];
	struct mroce_qp_attr at = { .state = MROCE_QPS_INIT,
				    .access = access };

	ck_assert_int_eq(mroce_modify_qp(s->e, s->qpn[i], &at,
					 MROCE_QP_STATE | MROCE_QP_ACCESS_FLAGS,
					 w->now),
			 0);
	at.state = MROCE_QPS_RTR;
	at.peer = s->peer;
	at.dest_qpn = w->s[1 - d].qpn[i];
	at.rq_psn = rq_psn;
	ck_assert_int_eq(mroce_modify_qp(s->e, s->qpn[i], &at,
					 MROCE_QP_STATE | MROCE_QP_DEST |
						 MROCE_QP_RQ_PSN,
					 w->now),
			 0);
}

/* ... and on to RTS, sending from PSN sq_psn: the engine's answer. */
static inline int qp_to_rts(struct world *w, int d, int i, uint32_t sq_psn)
{
	struct mroce_qp_attr at = { .state = MROCE_QPS_RTS, .sq_psn = sq_psn };

	return mroce_modify_qp(w->s[d].e, w->s[d].qpn[i], &at,
			       MROCE_QP_STATE | MROCE_QP_SQ_PSN, w->now);
}

static inline void world_init(struct world *w, const struct wcfg *c)
{
	memset(w, 0, sizeof(*w));
	w->mtu = c->mtu ? c->mtu : 1024;
	w->nqp = c->nqp ? c->nqp : 1;
	w->rng = 12345;
	for (int d = 0; d < 2; d++) {
		struct side *s = &w->s[d];
		struct mroce_engine_cfg cfg = {
			.transport = MROCE_TRANSPORT_ROCEV2,
			.mtu = w->mtu,
			.seed = 1000 + d,
			.retry_cnt = c->retry_cnt,
			.rnr_retry = c->rnr_retry,
		};
		struct mroce_peer_addr a = { .family = AF_INET };

		ck_assert_int_eq(mroce_engine_create(&cfg, &s->e), 0);
		a.addr[0] = 10, a.addr[3] = (uint8_t)(2 - d);
		a.local[0] = 10, a.local[3] = (uint8_t)(1 + d);
		s->peer = mroce_peer_add(s->e, &a);
		ck_assert_int_ge(s->peer, 0);
		s->cq = mroce_create_cq(s->e, MAX_WC);
		ck_assert_int_ge(s->cq, 0);
		s->mem = calloc(1, MEM_SIZE);
		ck_assert_ptr_nonnull(s->mem);
		ck_assert_int_eq(mroce_reg_mr(s->e, s->mem, MEM_SIZE,
					      MROCE_ACCESS_LOCAL_WRITE |
						      MROCE_ACCESS_REMOTE_WRITE |
						      MROCE_ACCESS_REMOTE_READ,
					      &s->mr),
				 0);
		for (int i = 0; i < w->nqp; i++) {
			struct mroce_qp_init_attr ia = {
				.send_cq = s->cq,
				.recv_cq = s->cq,
				.max_send_wr = 256,
				.max_recv_wr = 256,
			};
			int qpn = mroce_create_qp(s->e, &ia);

			ck_assert_int_gt(qpn, 0);
			s->qpn[i] = (uint32_t)qpn;
		}
	}
	for (int d = 0; d < 2; d++) {
		for (int i = 0; i < w->nqp; i++) {
			qp_to_rtr(w, d, i,
				  c->access ? c->access :
					      MROCE_ACCESS_REMOTE_WRITE |
						      MROCE_ACCESS_REMOTE_READ,
				  (c->psn[1 - d] + 1000u * i) & 0xffffff);
			ck_assert_int_eq(qp_to_rts(w, d, i,
						   (c->psn[d] + 1000u * i) &
							   0xffffff),
					 0);
		}
	}
}

static inline void world_fini(struct world *w)
{
	if (getenv("RV2_TEST_VERBOSE")) {
		for (int d = 0; d < 2; d++) {
			struct mroce_engine_stats st;

			mroce_engine_get_stats(w->s[d].e, &st);
#define PR(n) fprintf(stderr, " " #n "=%llu", (unsigned long long)st.n);
			fprintf(stderr, "side%d t=%lluus sent=%llu drop=%llu:", d,
				(unsigned long long)w->now / 1000,
				(unsigned long long)w->sent[d],
				(unsigned long long)w->dropped[d]);
			MROCE_ENGINE_STATS(PR)
#undef PR
			fprintf(stderr, "\n");
		}
	}
	for (int d = 0; d < 2; d++) {
		mroce_engine_destroy(w->s[d].e);
		free(w->s[d].mem);
	}
}

static inline struct mroce_engine_stats stats(struct world *w, int d)
{
	struct mroce_engine_stats st;

	mroce_engine_get_stats(w->s[d].e, &st);
	return st;
}

static inline enum mroce_qp_state qp_state(struct world *w, int d, int i)
{
	struct mroce_qp_attr a;

	ck_assert_int_eq(mroce_query_qp(w->s[d].e, w->s[d].qpn[i], &a), 0);
	return a.state;
}

/* ------------------------------------------------------------------ */
/* The pump                                                             */
/* ------------------------------------------------------------------ */
static inline void deliver(struct world *w, int d, const uint8_t *buf,
			   uint32_t len, uint16_t sport)
{
	struct side *r = &w->s[1 - d];
	struct mroce_rx_meta m = { .peer = r->peer, .sport = sport };

	/* Drops (out of sequence, RNR, ...) are legitimate here. */
	(void)mroce_engine_rx(r->e, &m, buf, len, w->now);
}

static inline void release_held(struct world *w, int d)
{
	if (!w->held[d].used)
		return;
	w->held[d].used = false;
	deliver(w, d, w->held[d].buf, w->held[d].len, w->held[d].sport);
}

static inline void note_sport(struct world *w, int d, uint32_t dqpn,
			      uint16_t sport)
{
	ck_assert_uint_ge(sport, MROCE_SPORT_MIN);
	for (int i = 0; i < w->nsport[d]; i++) {
		if (w->sport_qpn[d][i] == dqpn) {
			ck_assert_uint_eq(w->sport[d][i], sport);
			return;
		}
	}
	ck_assert_int_lt(w->nsport[d], MAX_QP);
	w->sport_qpn[d][w->nsport[d]] = dqpn;
	w->sport[d][w->nsport[d]++] = sport;
}

static inline bool is_request(uint8_t op)
{
	return op <= ROCEV2_OP_READ_REQ;
}

static inline void handle(struct world *w, int d, const struct mroce_tx_pkt *pk)
{
	struct mroce_rv2_pkt p;
	uint64_t idx = w->sent[d]++;
	enum act a = ACT_PASS;

	ck_assert_int_eq(pk->dport, ROCEV2_UDP_PORT);
	ck_assert_int_eq(pk->peer, w->s[d].peer);
	ck_assert_int_eq(mroce_rv2_parse_l4(pk->buf, pk->len, &p), 0);
	ck_assert_uint_le(p.payload_len, w->mtu);
	note_sport(w, d, p.dqpn, pk->sport);
	if (is_request(p.opcode)) {
		if (p.psn == 0xffffff)
			w->saw_psn[d][0] = true;
		if (p.psn == 0)
			w->saw_psn[d][1] = true;
		if (!w->any_psn[d] ||
		    rocev2_psn_diff(p.psn, w->max_psn[d]) > 0) {
			w->max_psn[d] = p.psn;
			w->any_psn[d] = true;
		} else if (!w->first_rexmit_seen[d]) {
			w->first_rexmit_seen[d] = true;
			w->first_rexmit_psn[d] = p.psn;
		}
	}
	if (w->filter)
		a = w->filter(w, d, idx, &p);
	switch (a) {
	case ACT_PASS:
		deliver(w, d, pk->buf, pk->len, pk->sport);
		release_held(w, d);
		break;
	case ACT_DROP:
		w->dropped[d]++;
		w->drop_psn = p.psn;
		break;
	case ACT_DUP:
		deliver(w, d, pk->buf, pk->len, pk->sport);
		deliver(w, d, pk->buf, pk->len, pk->sport);
		break;
	case ACT_HOLD:
		release_held(w, d);
		memcpy(w->held[d].buf, pk->buf, pk->len);
		w->held[d].len = pk->len;
		w->held[d].sport = pk->sport;
		w->held[d].used = true;
		break;
	}
}

static inline void check_inflight(struct world *w)
{
	struct mroce_path_info pi;

	for (int d = 0; d < 2; d++) {
		for (int i = 0;
		     mroce_engine_path_info(w->s[d].e, w->s[d].peer, i, &pi) ==
		     0;
		     i++) {
			ck_assert_uint_le(pi.inflight, 1024);
			if (pi.inflight > w->max_inflight)
				w->max_inflight = pi.inflight;
		}
	}
}

/* Run until both engines are idle or virtual time passes `until`. */
static inline void pump(struct world *w, uint64_t until)
{
	static struct mroce_tx_pkt pk[BATCH];
	static uint8_t bufs[BATCH][PKT_CAP];
	int spins = 0;

	for (int i = 0; i < BATCH; i++)
		pk[i].buf = bufs[i];
	for (long iter = 0; iter < 50000000L; iter++) {
		bool moved = false;
		uint64_t t;

		for (int d = 0; d < 2; d++) {
			int n = mroce_engine_tx(w->s[d].e, pk, BATCH, PKT_CAP,
						w->now);

			ck_assert_int_ge(n, 0);
			for (int i = 0; i < n; i++)
				handle(w, d, &pk[i]);
			if (n)
				moved = true;
		}
		if (w->check_inflight)
			check_inflight(w);
		if (moved) {
			w->now += 1000;
			spins = 0;
			continue;
		}
		if (w->held[0].used || w->held[1].used) {
			release_held(w, 0);
			release_held(w, 1);
			continue;
		}
		t = mroce_engine_next_timer(w->s[0].e, w->now);
		if (mroce_engine_next_timer(w->s[1].e, w->now) < t)
			t = mroce_engine_next_timer(w->s[1].e, w->now);
		if (t == UINT64_MAX || t > until)
			return;
		if (t > w->now) {
			w->now = t;
			spins = 0;
		} else {
			/* next_timer says "now" yet tx had nothing */
			ck_assert_int_lt(++spins, 4);
		}
		mroce_engine_tick(w->s[0].e, w->now);
		mroce_engine_tick(w->s[1].e, w->now);
	}
	ck_abort_msg("pump did not settle");
}

static inline void collect(struct world *w)
{
	for (int d = 0; d < 2; d++) {
		struct side *s = &w->s[d];
		int n;

		do {
			n = mroce_poll_cq(s->e, s->cq, s->wc + s->nwc,
					  MAX_WC - s->nwc);
			ck_assert_int_ge(n, 0);
			s->nwc += n;
		} while (n > 0 && s->nwc < MAX_WC);
	}
}

/* Runs until both engines are idle; their completions collected. */
static inline void settle(struct world *w)
{
	pump(w, UINT64_MAX);
	collect(w);
}

static inline void wc_reset(struct world *w)
{
	w->s[0].nwc = 0;
	w->s[1].nwc = 0;
}

/* Filter f with parameters param[0..n-1] (nparam = n). */
static inline void set_filter(struct world *w, filter_fn f,
			      const uint64_t *param, int n)
{
	w->filter = f;
	memcpy(w->param, param, (size_t)n * sizeof(*param));
	w->nparam = n;
}

#define FILTER(w, f, ...)                                                   \
	set_filter(w, f, (const uint64_t[]){ __VA_ARGS__ },                 \
		   (int)(sizeof((const uint64_t[]){ __VA_ARGS__ }) /        \
			 sizeof(uint64_t)))

/* ------------------------------------------------------------------ */
/* Work requests                                                        */
/* ------------------------------------------------------------------ */
static inline int post(struct world *w, int d, int qi, uint64_t wr_id,
		       enum mroce_wr_opcode op, uint32_t src_off, uint32_t len,
		       uint32_t dst_off, uint32_t imm)
{
	struct side *s = &w->s[d], *o = &w->s[1 - d];
	struct mroce_send_wr wr = {
		.wr_id = wr_id,
		.opcode = op,
		.send_flags = MROCE_SEND_SIGNALED,
		.sge = { .addr = (uint64_t)(uintptr_t)(s->mem + src_off),
			 .length = len,
			 .lkey = s->mr.lkey },
		.imm = imm,
		.remote_addr = (uint64_t)(uintptr_t)(o->mem + dst_off),
		.rkey = o->mr.rkey,
	};

	return mroce_post_send(s->e, s->qpn[qi], &wr, w->now);
}

static inline void post_recv(struct world *w, int d, int qi, uint64_t wr_id,
			     uint32_t off, uint32_t len)
{
	struct side *s = &w->s[d];
	struct mroce_recv_wr wr = {
		.wr_id = wr_id,
		.sge = { .addr = (uint64_t)(uintptr_t)(s->mem + off),
			 .length = len,
			 .lkey = s->mr.lkey },
	};

	ck_assert_int_eq(mroce_post_recv(s->e, s->qpn[qi], &wr), 0);
}

static inline void check_mem(const uint8_t *got, const uint8_t *want, size_t n)
{
	if (memcmp(got, want, n)) {
		size_t i = 0;

		while (got[i] == want[i])
			i++;
		ck_abort_msg("data differs at byte %zu of %zu", i, n);
	}
}

/* Requester side `d` transfers `len` bytes with `op` on QP 0 (receive
 * posted when needed), then both sides' completions and data are
 * checked. */
static inline void xfer_check(struct world *w, int d, enum mroce_wr_opcode op,
			      uint32_t len, uint64_t seed)
{
	struct side *rq = &w->s[d], *rs = &w->s[1 - d];
	const uint8_t *src, *dst;
	bool recv = op == MROCE_WR_SEND || op == MROCE_WR_SEND_WITH_IMM ||
		    op == MROCE_WR_RDMA_WRITE_WITH_IMM;
	uint32_t imm = 0xa5000000u | (uint32_t)seed;

	fill(rq->mem, len, seed);
	fill(rs->mem, len, seed + 77);
	memset(rq->mem + DST_OFF, 0, len + 16);
	memset(rs->mem + DST_OFF, 0, len + 16);
	wc_reset(w);
	if (recv)
		post_recv(w, 1 - d, 0, 900 + seed, DST_OFF, len + 16);
	if (op == MROCE_WR_RDMA_READ)
		ck_assert_int_eq(post(w, d, 0, seed, op, DST_OFF, len, 0, 0), 0);
	else
		ck_assert_int_eq(post(w, d, 0, seed, op, 0, len, DST_OFF, imm),
				 0);
	settle(w);

	ck_assert_int_eq(rq->nwc, 1);
	ck_assert_uint_eq(rq->wc[0].wr_id, seed);
	ck_assert_msg(rq->wc[0].status == MROCE_WC_SUCCESS, "status %s",
		      mroce_wc_status_str(rq->wc[0].status));
	ck_assert_int_eq(rq->wc[0].opcode,
			 op == MROCE_WR_RDMA_READ ? MROCE_WC_RDMA_READ :
			 op == MROCE_WR_RDMA_WRITE ||
					 op == MROCE_WR_RDMA_WRITE_WITH_IMM ?
						   MROCE_WC_RDMA_WRITE :
						   MROCE_WC_SEND);
	ck_assert_uint_eq(rq->wc[0].byte_len, len);
	if (recv) {
		ck_assert_int_eq(rs->nwc, 1);
		ck_assert_uint_eq(rs->wc[0].wr_id, 900 + seed);
		ck_assert_int_eq(rs->wc[0].status, MROCE_WC_SUCCESS);
		ck_assert_uint_eq(rs->wc[0].byte_len, len);
		ck_assert_int_eq(rs->wc[0].opcode,
				 op == MROCE_WR_RDMA_WRITE_WITH_IMM ?
					 MROCE_WC_RECV_RDMA_WITH_IMM :
					 MROCE_WC_RECV);
		if (op == MROCE_WR_SEND) {
			ck_assert_uint_eq(rs->wc[0].flags, 0);
		} else {
			ck_assert_uint_eq(rs->wc[0].flags, MROCE_WC_WITH_IMM);
			ck_assert_uint_eq(rs->wc[0].imm, imm);
		}
	} else {
		ck_assert_int_eq(rs->nwc, 0);
	}
	if (op == MROCE_WR_RDMA_READ) {
		src = rs->mem;
		dst = rq->mem + DST_OFF;
	} else {
		src = rq->mem;
		dst = rs->mem + DST_OFF;
	}
	check_mem(dst, src, len);
	/* nothing beyond the message was touched */
	for (int i = 0; i < 16; i++)
		ck_assert_uint_eq(dst[len + i], 0);
	ck_assert_int_eq(qp_state(w, 0, 0), MROCE_QPS_RTS);
	ck_assert_int_eq(qp_state(w, 1, 0), MROCE_QPS_RTS);
}

static inline void sizes_for(uint16_t mtu, uint32_t *sz)
{
	sz[0] = 0;
	sz[1] = 1;
	sz[2] = mtu - 1u;
	sz[3] = mtu;
	sz[4] = mtu + 1u;
	sz[5] = (3u << 20) + 7;
}

static inline void op_sizes(enum mroce_wr_opcode op, uint16_t mtu)
{
	struct world w;
	struct wcfg c = { .mtu = mtu, .psn = { 100, 5000 } };
	uint32_t sz[6];

	sizes_for(mtu, sz);
	world_init(&w, &c);
	for (int i = 0; i < 6; i++)
		xfer_check(&w, 0, op, sz[i], (uint64_t)i + 1);
	/* and the other direction on the same QP pair */
	for (int i = 0; i < 6; i++)
		xfer_check(&w, 1, op, sz[i], (uint64_t)i + 11);
	ck_assert_uint_eq(stats(&w, 0).retransmits, 0);
	ck_assert_uint_eq(stats(&w, 1).retransmits, 0);
	ck_assert_uint_eq(stats(&w, 0).tx_naks + stats(&w, 1).tx_naks, 0);
	world_fini(&w);
}

#endif /* MROCE_TEST_ROCEV2_WORLD_H */
