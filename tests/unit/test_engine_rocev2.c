// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of user/engine/rocev2.c: two engines in RoCEv2 mode wired back to
 * back through a tiny in-test pump (tx of one side -> rx of the other) that
 * can drop, duplicate or hold back (reorder) chosen packets. Virtual time
 * advances 1 us per pump round and jumps to the next timer when idle.
 * RV2_TEST_VERBOSE=1 prints both engines' counters at the end of each
 * test (to stderr), for looking at how a recovery went.
 */
#include "../harness.h"
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

static uint64_t xs(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
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
static void qp_to_rtr(struct world *w, int d, int i, uint32_t access,
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
static int qp_to_rts(struct world *w, int d, int i, uint32_t sq_psn)
{
	struct mroce_qp_attr at = { .state = MROCE_QPS_RTS, .sq_psn = sq_psn };

	return mroce_modify_qp(w->s[d].e, w->s[d].qpn[i], &at,
			       MROCE_QP_STATE | MROCE_QP_SQ_PSN, w->now);
}

static void world_init(struct world *w, const struct wcfg *c)
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

static void world_fini(struct world *w)
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

static struct mroce_engine_stats stats(struct world *w, int d)
{
	struct mroce_engine_stats st;

	mroce_engine_get_stats(w->s[d].e, &st);
	return st;
}

static enum mroce_qp_state qp_state(struct world *w, int d, int i)
{
	struct mroce_qp_attr a;

	ck_assert_int_eq(mroce_query_qp(w->s[d].e, w->s[d].qpn[i], &a), 0);
	return a.state;
}

/* ------------------------------------------------------------------ */
/* The pump                                                             */
/* ------------------------------------------------------------------ */
static void deliver(struct world *w, int d, const uint8_t *buf, uint32_t len,
		    uint16_t sport)
{
	struct side *r = &w->s[1 - d];
	struct mroce_rx_meta m = { .peer = r->peer, .sport = sport };

	/* Drops (out of sequence, RNR, ...) are legitimate here. */
	(void)mroce_engine_rx(r->e, &m, buf, len, w->now);
}

static void release_held(struct world *w, int d)
{
	if (!w->held[d].used)
		return;
	w->held[d].used = false;
	deliver(w, d, w->held[d].buf, w->held[d].len, w->held[d].sport);
}

static void note_sport(struct world *w, int d, uint32_t dqpn, uint16_t sport)
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

static bool is_request(uint8_t op)
{
	return op <= ROCEV2_OP_READ_REQ;
}

static void handle(struct world *w, int d, const struct mroce_tx_pkt *pk)
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

static void check_inflight(struct world *w)
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
static void pump(struct world *w, uint64_t until)
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

static void collect(struct world *w)
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
static void settle(struct world *w)
{
	pump(w, UINT64_MAX);
	collect(w);
}

static void wc_reset(struct world *w)
{
	w->s[0].nwc = 0;
	w->s[1].nwc = 0;
}

/* Filter f with parameters param[0..n-1] (nparam = n). */
static void set_filter(struct world *w, filter_fn f, const uint64_t *param,
		       int n)
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
static int post(struct world *w, int d, int qi, uint64_t wr_id,
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

static void post_recv(struct world *w, int d, int qi, uint64_t wr_id,
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

static void check_mem(const uint8_t *got, const uint8_t *want, size_t n)
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
static void xfer_check(struct world *w, int d, enum mroce_wr_opcode op,
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

static void sizes_for(uint16_t mtu, uint32_t *sz)
{
	sz[0] = 0;
	sz[1] = 1;
	sz[2] = mtu - 1u;
	sz[3] = mtu;
	sz[4] = mtu + 1u;
	sz[5] = (3u << 20) + 7;
}

static void op_sizes(enum mroce_wr_opcode op, uint16_t mtu)
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

/* ------------------------------------------------------------------ */
/* Byte-exact transfers                                                 */
/* ------------------------------------------------------------------ */
START_TEST(rv2_send__sizes_byte_exact)
{
	op_sizes(MROCE_WR_SEND, 1024);
}
END_TEST

START_TEST(rv2_send_imm__sizes_byte_exact)
{
	op_sizes(MROCE_WR_SEND_WITH_IMM, 1024);
}
END_TEST

START_TEST(rv2_write__sizes_byte_exact)
{
	op_sizes(MROCE_WR_RDMA_WRITE, 1024);
}
END_TEST

START_TEST(rv2_write_imm__sizes_byte_exact)
{
	op_sizes(MROCE_WR_RDMA_WRITE_WITH_IMM, 1024);
}
END_TEST

START_TEST(rv2_read__sizes_byte_exact)
{
	op_sizes(MROCE_WR_RDMA_READ, 1024);
}
END_TEST

START_TEST(rv2_all_ops__mtu_4096_unaligned_mtu)
{
	/* jumbo MTU, and an MTU that is not a multiple of 4 (pad) */
	static const uint16_t mtus[] = { 4096, 1499 };

	for (int m = 0; m < 2; m++)
		for (int op = MROCE_WR_SEND; op <= MROCE_WR_RDMA_READ; op++) {
			struct world w;
			struct wcfg c = { .mtu = mtus[m], .psn = { 7, 9 } };
			uint32_t sz[6];

			sizes_for(mtus[m], sz);
			world_init(&w, &c);
			for (int i = 0; i < 5; i++)
				xfer_check(&w, 0, op, sz[i], (uint64_t)i + 1);
			xfer_check(&w, 0, op, 300000, 9);
			world_fini(&w);
		}
}
END_TEST

/* Many messages of every kind in flight at once complete in order. */
START_TEST(rv2_mixed__pipelined_in_order)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 1, 2 } };
	const int n = 60;
	uint32_t len[60];
	uint64_t s = 99;
	int nrecv = 0;

	world_init(&w, &c);
	fill(w.s[0].mem, DST_OFF, 1);
	fill(w.s[1].mem, DST_OFF, 2);
	for (int i = 0; i < n; i++) {
		enum mroce_wr_opcode op = (enum mroce_wr_opcode)(i % 5);
		uint32_t off = (uint32_t)i * 65536;

		len[i] = (uint32_t)(xs(&s) % 65536);
		if (op != MROCE_WR_RDMA_WRITE && op != MROCE_WR_RDMA_READ)
			post_recv(&w, 1, 0, 1000 + i, DST_OFF + off, 65536);
		if (op == MROCE_WR_RDMA_READ)
			ck_assert_int_eq(post(&w, 0, 0, i, op, DST_OFF + off,
					      len[i], off, 0),
					 0);
		else
			ck_assert_int_eq(post(&w, 0, 0, i, op, off, len[i],
					      DST_OFF + off, i),
					 0);
	}
	settle(&w);
	ck_assert_int_eq(w.s[0].nwc, n);
	for (int i = 0; i < n; i++) {
		uint32_t off = (uint32_t)i * 65536;

		ck_assert_uint_eq(w.s[0].wc[i].wr_id, i);
		ck_assert_int_eq(w.s[0].wc[i].status, MROCE_WC_SUCCESS);
		if (i % 5 == MROCE_WR_RDMA_READ)
			check_mem(w.s[0].mem + DST_OFF + off, w.s[1].mem + off,
				  len[i]);
		else
			check_mem(w.s[1].mem + DST_OFF + off, w.s[0].mem + off,
				  len[i]);
		if (i % 5 != MROCE_WR_RDMA_WRITE &&
		    i % 5 != MROCE_WR_RDMA_READ) {
			ck_assert_uint_eq(w.s[1].wc[nrecv].wr_id, 1000 + i);
			ck_assert_uint_eq(w.s[1].wc[nrecv].byte_len, len[i]);
			nrecv++;
		}
	}
	ck_assert_int_eq(w.s[1].nwc, nrecv);
	world_fini(&w);
}
END_TEST

/* Count packets with SE (param[0]) and with AckReq (param[1]). */
static enum act f_count_flags(struct world *w, int d, uint64_t idx,
			      const struct mroce_rv2_pkt *p)
{
	if (d == 0) {
		w->param[0] += p->se;
		w->param[1] += p->ackreq;
		if (p->se)
			w->param[2] = p->opcode;
	}
	return ACT_PASS;
}

START_TEST(rv2_flags__solicited_and_ackreq)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 1, 2 } };
	struct mroce_send_wr wr = {
		.wr_id = 1,
		.opcode = MROCE_WR_SEND,
		.send_flags = MROCE_SEND_SIGNALED | MROCE_SEND_SOLICITED,
		.sge = { .length = 100 * 1024 },
	};

	world_init(&w, &c);
	w.filter = f_count_flags;
	wr.sge.addr = (uint64_t)(uintptr_t)w.s[0].mem;
	wr.sge.lkey = w.s[0].mr.lkey;
	post_recv(&w, 1, 0, 5, DST_OFF, 100 * 1024);
	ck_assert_int_eq(mroce_post_send(w.s[0].e, w.s[0].qpn[0], &wr, 0), 0);
	/* a solicited WRITE without immediate carries no SE */
	wr.opcode = MROCE_WR_RDMA_WRITE;
	wr.remote_addr = (uint64_t)(uintptr_t)w.s[1].mem;
	wr.rkey = w.s[1].mr.rkey;
	wr.sge.length = 10;
	ck_assert_int_eq(mroce_post_send(w.s[0].e, w.s[0].qpn[0], &wr, 0), 0);
	settle(&w);
	ck_assert_int_eq(w.s[0].nwc, 2);
	ck_assert_uint_eq(w.param[0], 1);
	ck_assert_uint_eq(w.param[2], ROCEV2_OP_SEND_LAST);
	/* AckReq: packets 32, 64, 96 and the last of each message */
	ck_assert_uint_eq(w.param[1], 3 + 1 + 1);
	/* 101 packets, coalesced into a handful of ACKs */
	ck_assert_uint_le(stats(&w, 1).tx_acks, 5);
	world_fini(&w);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Loss, reordering, duplicates                                         */
/* ------------------------------------------------------------------ */

/* Drop the packets of side param[0] whose send index is in param[1..]. */
static enum act f_drop_idx(struct world *w, int d, uint64_t idx,
			   const struct mroce_rv2_pkt *p)
{
	if (d != (int)w->param[0])
		return ACT_PASS;
	for (int i = 1; i < w->nparam; i++)
		if (idx == w->param[i])
			return ACT_DROP;
	return ACT_PASS;
}

/* Several multi-packet SENDs: recvs and sends complete exactly once and
 * in order, data byte-exact. */
static void sends_check(struct world *w, int nmsg, uint32_t len)
{
	fill(w->s[0].mem, (size_t)nmsg * len, 4242);
	for (int i = 0; i < nmsg; i++)
		post_recv(w, 1, 0, 500 + i, DST_OFF + (uint32_t)i * len, len);
	for (int i = 0; i < nmsg; i++)
		ck_assert_int_eq(post(w, 0, 0, i, MROCE_WR_SEND,
				      (uint32_t)i * len, len, 0, 0),
				 0);
	settle(w);
	ck_assert_int_eq(w->s[0].nwc, nmsg);
	ck_assert_int_eq(w->s[1].nwc, nmsg);
	for (int i = 0; i < nmsg; i++) {
		ck_assert_uint_eq(w->s[0].wc[i].wr_id, i);
		ck_assert_int_eq(w->s[0].wc[i].status, MROCE_WC_SUCCESS);
		ck_assert_uint_eq(w->s[1].wc[i].wr_id, 500 + i);
		ck_assert_int_eq(w->s[1].wc[i].status, MROCE_WC_SUCCESS);
		ck_assert_uint_eq(w->s[1].wc[i].byte_len, len);
	}
	check_mem(w->s[1].mem + DST_OFF, w->s[0].mem, (size_t)nmsg * len);
}

START_TEST(rv2_loss__single_drop_nak_go_back_n)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 0x1000, 0x2000 } };
	struct mroce_engine_stats a, b;

	world_init(&w, &c);
	FILTER(&w, f_drop_idx, 0, 70);	/* 7th packet of the 2nd message */
	sends_check(&w, 4, 64 * 1024);
	a = stats(&w, 0);
	b = stats(&w, 1);
	ck_assert_uint_eq(w.dropped[0], 1);
	ck_assert_uint_eq(w.drop_psn, 0x1000 + 70);
	/* exactly one NAK, go back to exactly the lost PSN, no timeout */
	ck_assert_uint_eq(b.tx_naks, 1);
	ck_assert_uint_eq(a.rx_naks, 1);
	ck_assert(w.first_rexmit_seen[0]);
	ck_assert_uint_eq(w.first_rexmit_psn[0], 0x1000 + 70);
	ck_assert_uint_eq(a.rto_fires, 0);
	ck_assert_uint_gt(a.retransmits, 0);
	ck_assert_uint_ge(b.rx_ooo, 1);
	world_fini(&w);
}
END_TEST

START_TEST(rv2_loss__last_packet_lost_recovers_by_timeout)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 10, 20 } };

	world_init(&w, &c);
	FILTER(&w, f_drop_idx, 0, 3);	/* last of a 4-packet message */
	sends_check(&w, 1, 4000);
	ck_assert_uint_eq(stats(&w, 0).rto_fires, 1);
	ck_assert_uint_eq(stats(&w, 1).tx_naks, 0);
	ck_assert_uint_ge(w.now, 200000);	/* waited one RTO */
	world_fini(&w);
}
END_TEST

/* Drop request PSN param[0] the first param[1] times it is sent, and PSN
 * param[2] the first param[3] times. */
static enum act f_drop_psn_times(struct world *w, int d, uint64_t idx,
				 const struct mroce_rv2_pkt *p)
{
	if (d != 0 || !is_request(p->opcode))
		return ACT_PASS;
	for (int i = 0; i < 4; i += 2)
		if (p->psn == w->param[i] && w->param[4 + i]++ < w->param[i + 1])
			return ACT_DROP;
	return ACT_PASS;
}

START_TEST(rv2_timeout__backoff_doubles_then_resets_on_progress)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 10, 20 } };
	uint64_t t1;

	world_init(&w, &c);
	/* message 1 (one packet) twice, the last packet of message 2 once */
	FILTER(&w, f_drop_psn_times, 10, 2, 14, 1);
	xfer_check(&w, 0, MROCE_WR_SEND, 1000, 1);
	/* timeouts at 200 us and 200 + 400 us */
	ck_assert_uint_eq(stats(&w, 0).rto_fires, 2);
	ck_assert_uint_ge(w.now, 600000);
	ck_assert_uint_lt(w.now, 700000);
	t1 = w.now;
	xfer_check(&w, 0, MROCE_WR_SEND, 4000, 2);
	/* progress reset the timeout to its base */
	ck_assert_uint_eq(stats(&w, 0).rto_fires, 3);
	ck_assert_uint_ge(w.now - t1, 200000);
	ck_assert_uint_lt(w.now - t1, 300000);
	world_fini(&w);
}
END_TEST

START_TEST(rv2_loss__lost_acks_reacked_duplicates)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 10, 20 } };

	world_init(&w, &c);
	FILTER(&w, f_drop_idx, 1, 0, 1, 2);	/* responder's first 3 ACKs */
	sends_check(&w, 3, 2048);
	ck_assert_uint_eq(w.dropped[1], 3);
	ck_assert_uint_ge(stats(&w, 0).rto_fires, 1);
	ck_assert_uint_ge(stats(&w, 1).rx_dup, 1);
	world_fini(&w);
}
END_TEST

/* Hold back the packets of side 0 listed in param[1..]: each is delivered
 * after the next packet (a swap of neighbours). */
static enum act f_hold_idx(struct world *w, int d, uint64_t idx,
			   const struct mroce_rv2_pkt *p)
{
	if (d != (int)w->param[0])
		return ACT_PASS;
	for (int i = 1; i < w->nparam; i++)
		if (idx == w->param[i])
			return ACT_HOLD;
	return ACT_PASS;
}

START_TEST(rv2_reorder__go_back_n_still_correct)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 0x500, 0x900 } };

	world_init(&w, &c);
	FILTER(&w, f_hold_idx, 0, 5, 40, 77, 78);
	sends_check(&w, 5, 30000);
	ck_assert_uint_ge(stats(&w, 1).rx_ooo, 2);
	ck_assert_uint_ge(stats(&w, 1).tx_naks, 1);
	ck_assert_uint_gt(stats(&w, 0).retransmits, 0);
	world_fini(&w);
}
END_TEST

/* Reordered READ responses and ACKs (side 1's packets held back). */
START_TEST(rv2_reorder__responses_and_acks)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 0x500, 0x900 } };

	world_init(&w, &c);
	FILTER(&w, f_hold_idx, 1, 2, 9, 30);
	xfer_check(&w, 0, MROCE_WR_RDMA_READ, 40000, 3);
	xfer_check(&w, 0, MROCE_WR_RDMA_WRITE, 40000, 4);
	ck_assert_uint_ge(stats(&w, 0).rx_ooo + stats(&w, 0).rx_dup, 1);
	world_fini(&w);
}
END_TEST

/* Duplicate every 3rd packet of side 0 and every 2nd of side 1. */
static enum act f_dup(struct world *w, int d, uint64_t idx,
		      const struct mroce_rv2_pkt *p)
{
	return idx % (d ? 2 : 3) == 0 ? ACT_DUP : ACT_PASS;
}

START_TEST(rv2_dup__reacked_and_ignored)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 0x500, 0x900 } };

	world_init(&w, &c);
	w.filter = f_dup;
	sends_check(&w, 4, 20000);
	xfer_check(&w, 0, MROCE_WR_RDMA_WRITE_WITH_IMM, 50000, 5);
	xfer_check(&w, 0, MROCE_WR_RDMA_READ, 50000, 6);
	ck_assert_uint_ge(stats(&w, 1).rx_dup, 10);
	ck_assert_uint_ge(stats(&w, 0).rx_dup, 10);
	ck_assert_uint_eq(stats(&w, 1).tx_naks, 0);
	world_fini(&w);
}
END_TEST

/* Drop one READ response in the middle: the requester sees the next one
 * skip a PSN (implied NAK) and asks again from the missing PSN. */
static enum act f_drop_read_resp(struct world *w, int d, uint64_t idx,
				 const struct mroce_rv2_pkt *p)
{
	if (d == 1 && p->opcode == ROCEV2_OP_READ_RESP_MIDDLE &&
	    ++w->param[0] == 5)
		return ACT_DROP;
	return ACT_PASS;
}

START_TEST(rv2_loss__read_response_implied_nak)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 0x300, 0x700 } };

	world_init(&w, &c);
	w.filter = f_drop_read_resp;
	xfer_check(&w, 0, MROCE_WR_RDMA_READ, 64 * 1024, 8);
	ck_assert_uint_eq(w.dropped[1], 1);
	ck_assert_uint_ge(stats(&w, 0).rx_ooo, 1);
	ck_assert_uint_eq(stats(&w, 0).rto_fires, 0);
	/* the responder answered part of the READ twice */
	ck_assert_uint_gt(stats(&w, 1).retransmits, 0);
	world_fini(&w);
}
END_TEST

/* Random loss in both directions, every kind of operation. */
static enum act f_random(struct world *w, int d, uint64_t idx,
			 const struct mroce_rv2_pkt *p)
{
	return xs(&w->rng) % 1000 < w->param[0] ? ACT_DROP : ACT_PASS;
}

START_TEST(rv2_loss__random_2pct_all_ops_byte_exact)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 0xfff000, 0x10 } };

	world_init(&w, &c);
	FILTER(&w, f_random, 20);
	for (int op = MROCE_WR_SEND; op <= MROCE_WR_RDMA_READ; op++) {
		xfer_check(&w, 0, op, 1u << 20, (uint64_t)op + 1);
		xfer_check(&w, 1, op, 100000, (uint64_t)op + 21);
	}
	ck_assert_uint_gt(w.dropped[0] + w.dropped[1], 20);
	ck_assert_uint_gt(stats(&w, 0).retransmits, 0);
	world_fini(&w);
}
END_TEST

/* ------------------------------------------------------------------ */
/* PSN wrap, window, source port                                        */
/* ------------------------------------------------------------------ */
static enum act f_drop_psn(struct world *w, int d, uint64_t idx,
			   const struct mroce_rv2_pkt *p)
{
	if (d == 0 && is_request(p->opcode) && p->psn == w->param[0] &&
	    !w->param[1]++)
		return ACT_DROP;
	return ACT_PASS;
}

START_TEST(rv2_psn__wraps_at_2_24)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 0xffffc0, 0xfffffe } };

	world_init(&w, &c);
	FILTER(&w, f_drop_psn, 2);	/* just past the wrap */
	xfer_check(&w, 0, MROCE_WR_SEND, 200 * 1024, 1);
	ck_assert(w.saw_psn[0][0] && w.saw_psn[0][1]);
	ck_assert_uint_eq(w.dropped[0], 1);
	ck_assert_uint_eq(w.first_rexmit_psn[0], 2);
	xfer_check(&w, 0, MROCE_WR_RDMA_WRITE, 100 * 1024, 2);
	xfer_check(&w, 0, MROCE_WR_RDMA_READ, 100 * 1024, 3);
	/* side 1 starts 2 below the wrap */
	/* side 1 starts 2 below the wrap: READ responses wrap */
	xfer_check(&w, 1, MROCE_WR_RDMA_READ, 10 * 1024, 4);
	xfer_check(&w, 1, MROCE_WR_SEND_WITH_IMM, 10 * 1024, 5);
	world_fini(&w);
}
END_TEST

/* The responder's first ACKs are lost: the requester fills its window,
 * stops, and resumes after a timeout. */
static enum act f_drop_first_acks(struct world *w, int d, uint64_t idx,
				  const struct mroce_rv2_pkt *p)
{
	return d == 1 && idx < w->param[0] ? ACT_DROP : ACT_PASS;
}

START_TEST(rv2_window__inflight_bounded)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 1, 1 } };

	world_init(&w, &c);
	w.check_inflight = true;
	FILTER(&w, f_drop_first_acks, 40);
	xfer_check(&w, 0, MROCE_WR_RDMA_WRITE, 6u << 20, 1);
	/* the window filled exactly, and never overflowed */
	ck_assert_uint_eq(w.max_inflight, 1024);
	ck_assert_uint_ge(stats(&w, 0).rto_fires, 1);
	world_fini(&w);
}
END_TEST

static uint16_t sport_of(const struct world *w, int d, uint32_t dqpn)
{
	for (int i = 0; i < w->nsport[d]; i++)
		if (w->sport_qpn[d][i] == dqpn)
			return w->sport[d][i];
	return 0;
}

START_TEST(rv2_sport__fixed_per_qp)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 5, 6 }, .nqp = MAX_QP };
	struct mroce_path_info pi;
	uint16_t sp[MAX_QP];
	int distinct = 0;

	world_init(&w, &c);
	fill(w.s[0].mem, 8 * 20000, 3);
	for (int i = 0; i < MAX_QP; i++) {
		post_recv(&w, 1, i, i, DST_OFF + i * 20000, 20000);
		ck_assert_int_eq(post(&w, 0, i, i, MROCE_WR_SEND, i * 20000,
				      20000, 0, 0),
				 0);
		ck_assert_int_eq(post(&w, 1, i, i, MROCE_WR_RDMA_READ,
				      DST_OFF + (4u << 20) + i * 20000, 20000,
				      0, 0),
				 0);
	}
	settle(&w);
	ck_assert_int_eq(w.s[0].nwc, MAX_QP);		/* SENDs */
	ck_assert_int_eq(w.s[1].nwc, 2 * MAX_QP);	/* recvs + READs */
	for (int i = 0; i < w.s[1].nwc; i++)
		ck_assert_int_eq(w.s[1].wc[i].status, MROCE_WC_SUCCESS);
	/* The pump checked every packet against the first port seen for
	 * its QP. Here: both ends of a QP pair use the same port, QPs are
	 * spread over ports, and path_info reports them. */
	ck_assert_int_eq(w.nsport[0], MAX_QP);
	ck_assert_int_eq(w.nsport[1], MAX_QP);
	for (int i = 0; i < MAX_QP; i++) {
		bool seen = false;

		sp[i] = sport_of(&w, 0, w.s[1].qpn[i]);
		ck_assert_uint_ne(sp[i], 0);
		ck_assert_uint_eq(sport_of(&w, 1, w.s[0].qpn[i]), sp[i]);
		for (int j = 0; j < i; j++)
			seen |= sp[j] == sp[i];
		distinct += !seen;
	}
	ck_assert_int_ge(distinct, MAX_QP - 1);
	for (int i = 0; i < MAX_QP; i++) {
		bool found = false;

		ck_assert_int_eq(mroce_engine_path_info(w.s[0].e, w.s[0].peer,
							i, &pi),
				 0);
		ck_assert(pi.alive);
		ck_assert_uint_gt(pi.tx_pkts, 0);
		ck_assert_uint_eq(pi.inflight, 0);
		for (int j = 0; j < MAX_QP; j++)
			found |= pi.sport == sp[j];
		ck_assert(found);
	}
	ck_assert_int_eq(mroce_engine_path_info(w.s[0].e, w.s[0].peer, MAX_QP,
						&pi),
			 -ENOENT);
	world_fini(&w);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Errors                                                               */
/* ------------------------------------------------------------------ */
enum bad_kind { BAD_RKEY, BAD_BOUNDS, BAD_ACCESS };

static void access_error(enum mroce_wr_opcode op, enum bad_kind k)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 1, 2 } };
	struct mroce_send_wr wr = {
		.wr_id = 1,
		.opcode = op,
		.send_flags = MROCE_SEND_SIGNALED,
		.sge = { .length = 5000 },
	};

	if (k == BAD_ACCESS)	/* QP allows no remote access at all */
		c.access = MROCE_ACCESS_LOCAL_WRITE;
	world_init(&w, &c);
	wr.sge.addr = (uint64_t)(uintptr_t)w.s[0].mem;
	wr.sge.lkey = w.s[0].mr.lkey;
	wr.remote_addr = (uint64_t)(uintptr_t)w.s[1].mem;
	wr.rkey = w.s[1].mr.rkey;
	if (k == BAD_RKEY)
		wr.rkey ^= 0x10000;
	if (k == BAD_BOUNDS)
		wr.remote_addr += MEM_SIZE - 4999;
	memset(w.s[1].mem, 0x5a, 16384);
	post_recv(&w, 1, 0, 77, 0, 100);
	ck_assert_int_eq(mroce_post_send(w.s[0].e, w.s[0].qpn[0], &wr, 0), 0);
	ck_assert_int_eq(post(&w, 0, 0, 2, MROCE_WR_SEND, 0, 10, 0, 0), 0);
	ck_assert_int_eq(post(&w, 0, 0, 3, MROCE_WR_RDMA_WRITE, 0, 10, 0, 0),
			 0);
	settle(&w);
	ck_assert_int_eq(w.s[0].nwc, 3);
	ck_assert_uint_eq(w.s[0].wc[0].wr_id, 1);
	ck_assert_msg(w.s[0].wc[0].status == MROCE_WC_REM_ACCESS_ERR,
		      "status %s", mroce_wc_status_str(w.s[0].wc[0].status));
	ck_assert_uint_eq(w.s[0].wc[1].wr_id, 2);
	ck_assert_int_eq(w.s[0].wc[1].status, MROCE_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(w.s[0].wc[2].wr_id, 3);
	ck_assert_int_eq(w.s[0].wc[2].status, MROCE_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(qp_state(&w, 0, 0), MROCE_QPS_ERR);
	/* the responder went to ERR too and flushed its receive */
	ck_assert_int_eq(qp_state(&w, 1, 0), MROCE_QPS_ERR);
	ck_assert_int_eq(w.s[1].nwc, 1);
	ck_assert_int_eq(w.s[1].wc[0].status, MROCE_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(stats(&w, 1).rx_bad_rkey, 1);
	ck_assert_uint_eq(stats(&w, 1).tx_naks, 1);
	/* and never wrote a byte */
	for (int i = 0; i < 16384; i++)
		ck_assert_uint_eq(w.s[1].mem[i], 0x5a);
	/* a QP in ERR refuses new work */
	ck_assert_int_eq(post(&w, 0, 0, 4, MROCE_WR_SEND, 0, 10, 0, 0),
			 -EPERM);
	world_fini(&w);
}

START_TEST(rv2_write__bad_rkey_rem_access_err_and_flush)
{
	access_error(MROCE_WR_RDMA_WRITE, BAD_RKEY);
}
END_TEST

START_TEST(rv2_write__out_of_bounds_rem_access_err)
{
	access_error(MROCE_WR_RDMA_WRITE_WITH_IMM, BAD_BOUNDS);
}
END_TEST

START_TEST(rv2_read__bad_rkey_rem_access_err)
{
	access_error(MROCE_WR_RDMA_READ, BAD_RKEY);
}
END_TEST

START_TEST(rv2_read__no_remote_access_rem_access_err)
{
	access_error(MROCE_WR_RDMA_READ, BAD_ACCESS);
}
END_TEST

START_TEST(rv2_send__longer_than_receive_rem_inv_req)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 1, 2 } };

	world_init(&w, &c);
	post_recv(&w, 1, 0, 77, DST_OFF, 3000);
	ck_assert_int_eq(post(&w, 0, 0, 1, MROCE_WR_SEND, 0, 3001, 0, 0), 0);
	settle(&w);
	ck_assert_int_eq(w.s[0].nwc, 1);
	ck_assert_int_eq(w.s[0].wc[0].status, MROCE_WC_REM_INV_REQ_ERR);
	ck_assert_int_eq(w.s[1].nwc, 1);
	ck_assert_int_eq(w.s[1].wc[0].status, MROCE_WC_LOC_LEN_ERR);
	ck_assert_int_eq(qp_state(&w, 0, 0), MROCE_QPS_ERR);
	ck_assert_int_eq(qp_state(&w, 1, 0), MROCE_QPS_ERR);
	world_fini(&w);
}
END_TEST

START_TEST(rv2_rnr__retry_after_timer)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 1, 2 } };
	uint64_t t0;

	world_init(&w, &c);
	fill(w.s[0].mem, 5000, 1);
	ck_assert_int_eq(post(&w, 0, 0, 1, MROCE_WR_SEND, 0, 5000, 0, 0), 0);
	ck_assert_int_eq(post(&w, 0, 0, 2, MROCE_WR_RDMA_WRITE_WITH_IMM, 0,
			      100, DST_OFF + 8192, 7),
			 0);
	pump(&w, 2000000);	/* 2 ms: RNR NAKs at 0, 0.64, 1.28, 1.92 */
	collect(&w);
	ck_assert_int_eq(w.s[0].nwc, 0);
	ck_assert_uint_eq(stats(&w, 0).rx_naks, 4);
	ck_assert_uint_eq(stats(&w, 0).rto_fires, 0);
	ck_assert_int_eq(qp_state(&w, 0, 0), MROCE_QPS_RTS);
	/* the SEND goes through at the next retry; then the WRITE_IMM
	 * finds no receive and is refused in turn */
	post_recv(&w, 1, 0, 10, DST_OFF, 5000);
	t0 = w.now;
	pump(&w, w.now + 3000000);
	collect(&w);
	ck_assert_int_eq(w.s[0].nwc, 1);
	ck_assert_int_eq(w.s[1].nwc, 1);
	ck_assert_int_eq(w.s[1].wc[0].byte_len, 5000);
	check_mem(w.s[1].mem + DST_OFF, w.s[0].mem, 5000);
	ck_assert_uint_ge(w.now, t0 + 640000);
	post_recv(&w, 1, 0, 11, 0, 0);
	settle(&w);
	ck_assert_int_eq(w.s[0].nwc, 2);
	ck_assert_int_eq(w.s[0].wc[1].status, MROCE_WC_SUCCESS);
	ck_assert_int_eq(w.s[1].nwc, 2);
	ck_assert_int_eq(w.s[1].wc[1].opcode, MROCE_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(w.s[1].wc[1].imm, 7);
	ck_assert_uint_eq(w.s[1].wc[1].byte_len, 100);
	check_mem(w.s[1].mem + DST_OFF + 8192, w.s[0].mem, 100);
	ck_assert_uint_eq(stats(&w, 0).rto_fires, 0);
	world_fini(&w);
}
END_TEST

START_TEST(rv2_rnr__retry_exhausted)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 1, 2 }, .rnr_retry = 2 };

	world_init(&w, &c);
	ck_assert_int_eq(post(&w, 0, 0, 1, MROCE_WR_SEND, 0, 100, 0, 0), 0);
	ck_assert_int_eq(post(&w, 0, 0, 2, MROCE_WR_SEND, 0, 100, 0, 0), 0);
	settle(&w);
	ck_assert_int_eq(w.s[0].nwc, 2);
	ck_assert_int_eq(w.s[0].wc[0].status, MROCE_WC_RNR_RETRY_EXC_ERR);
	ck_assert_int_eq(w.s[0].wc[1].status, MROCE_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(qp_state(&w, 0, 0), MROCE_QPS_ERR);
	ck_assert_uint_eq(stats(&w, 0).rx_naks, 3);	/* 1 + 2 retries */
	ck_assert_int_eq(qp_state(&w, 1, 0), MROCE_QPS_RTS);
	world_fini(&w);
}
END_TEST

static enum act f_drop_all_0(struct world *w, int d, uint64_t idx,
			     const struct mroce_rv2_pkt *p)
{
	return d == 0 ? ACT_DROP : ACT_PASS;
}

START_TEST(rv2_timeout__all_dropped_retry_exc_err)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 1, 2 }, .retry_cnt = 3 };

	world_init(&w, &c);
	w.filter = f_drop_all_0;
	post_recv(&w, 1, 0, 9, DST_OFF, 1 << 20);
	ck_assert_int_eq(post(&w, 0, 0, 1, MROCE_WR_SEND, 0, 10000, 0, 0), 0);
	ck_assert_int_eq(post(&w, 0, 0, 2, MROCE_WR_RDMA_READ, DST_OFF, 100,
			      0, 0),
			 0);
	settle(&w);
	ck_assert_int_eq(w.s[0].nwc, 2);
	ck_assert_int_eq(w.s[0].wc[0].status, MROCE_WC_RETRY_EXC_ERR);
	ck_assert_int_eq(w.s[0].wc[1].status, MROCE_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(qp_state(&w, 0, 0), MROCE_QPS_ERR);
	/* 3 retries, then the 4th timeout gives up; the timeout doubles
	 * each time: 200 + 400 + 800 + 1600 us */
	ck_assert_uint_eq(stats(&w, 0).rto_fires, 4);
	ck_assert_uint_eq(stats(&w, 0).tx_data_pkts, 4 * 11);
	ck_assert_uint_eq(stats(&w, 0).retransmits, 3 * 11);
	ck_assert_uint_ge(w.now, 3000000);
	ck_assert_uint_lt(w.now, 3100000);
	/* the responder never saw anything and is fine */
	ck_assert_int_eq(qp_state(&w, 1, 0), MROCE_QPS_RTS);
	world_fini(&w);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Receive-path validation                                              */
/* ------------------------------------------------------------------ */
START_TEST(rv2_rx__rejects_malformed_and_strangers)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 1, 2 } };
	struct mroce_rv2_pkt p = {
		.opcode = ROCEV2_OP_SEND_ONLY,
		.pkey = ROCEV2_DEFAULT_PKEY,
		.psn = 1,
	};
	struct mroce_rx_meta m = { .peer = 0 };
	uint8_t buf[256] = { 0x55, 0 };
	struct mroce_peer_addr other = { .family = AF_INET, .addr = { 9 } };
	int len;

	world_init(&w, &c);
	post_recv(&w, 1, 0, 1, DST_OFF, 100);
	/* unknown opcode */
	ck_assert_int_lt(mroce_engine_rx(w.s[1].e, &m, buf, 40, 0), 0);
	ck_assert_uint_eq(stats(&w, 1).rx_malformed, 1);
	/* unknown QP */
	p.dqpn = w.s[1].qpn[0] ^ 1;
	len = mroce_rv2_build(&p, buf, sizeof(buf));
	ck_assert_int_gt(len, 0);
	ck_assert_int_eq(mroce_engine_rx(w.s[1].e, &m, buf, len, 0), -ENOENT);
	/* right QP, wrong peer */
	p.dqpn = w.s[1].qpn[0];
	len = mroce_rv2_build(&p, buf, sizeof(buf));
	m.peer = mroce_peer_add(w.s[1].e, &other);
	ck_assert_int_eq(mroce_engine_rx(w.s[1].e, &m, buf, len, 0), -ENOENT);
	ck_assert_uint_eq(stats(&w, 1).rx_no_conn, 2);
	/* right peer, a PSN far ahead: dropped, one NAK */
	m.peer = w.s[1].peer;
	p.psn = 500;
	len = mroce_rv2_build(&p, buf, sizeof(buf));
	ck_assert_int_lt(mroce_engine_rx(w.s[1].e, &m, buf, len, 0), 0);
	ck_assert_int_lt(mroce_engine_rx(w.s[1].e, &m, buf, len, 0), 0);
	pump(&w, 0);
	ck_assert_uint_eq(stats(&w, 1).tx_naks, 1);
	ck_assert_uint_eq(stats(&w, 1).rx_ooo, 2);
	collect(&w);
	ck_assert_int_eq(w.s[1].nwc, 0);
	/* a MIDDLE without a FIRST is an invalid request */
	p.opcode = ROCEV2_OP_SEND_MIDDLE;
	p.psn = 1;
	p.payload_len = 1024;
	p.payload = w.s[0].mem;
	len = mroce_rv2_build(&p, buf, 0);
	ck_assert_int_lt(len, 0);
	{
		static uint8_t big[2048];

		len = mroce_rv2_build(&p, big, sizeof(big));
		ck_assert_int_gt(len, 0);
		ck_assert_int_lt(mroce_engine_rx(w.s[1].e, &m, big, len, 0),
				 0);
	}
	ck_assert_int_eq(qp_state(&w, 1, 0), MROCE_QPS_ERR);
	world_fini(&w);
}
END_TEST

/* Flip a random header byte of 5% of the packets (the ICRC, which would
 * catch it, is the framing layer's job): nothing may crash, hang or touch
 * memory outside the registered regions (ASan), whatever the outcome. */
static enum act f_corrupt(struct world *w, int d, uint64_t idx,
			  const struct mroce_rv2_pkt *p)
{
	uint8_t *h = (uint8_t *)(uintptr_t)p->payload -
		     p->desc->hdr_len;

	if (xs(&w->rng) % 100 < 5)
		h[xs(&w->rng) % p->desc->hdr_len] ^=
			(uint8_t)(1u << (xs(&w->rng) % 8));
	return ACT_PASS;
}

START_TEST(rv2_rx__survives_corrupted_headers)
{
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct world w;
		struct wcfg c = { .mtu = 1024, .psn = { 0xfffff0, 3 } };

		world_init(&w, &c);
		w.rng = seed;
		w.filter = f_corrupt;
		fill(w.s[0].mem, 1 << 20, seed);
		for (int i = 0; i < 8; i++) {
			post_recv(&w, 1, 0, i, DST_OFF + i * 65536, 65536);
			ck_assert_int_eq(post(&w, 0, 0, i,
					      (enum mroce_wr_opcode)(i % 5),
					      i * 65536, 20000 + i * 999,
					      DST_OFF + i * 65536, i),
					 0);
		}
		settle(&w);
		/* every send WR completed exactly once, in order */
		ck_assert_int_eq(w.s[0].nwc, 8);
		for (int i = 0; i < 8; i++)
			ck_assert_uint_eq(w.s[0].wc[i].wr_id, i);
		world_fini(&w);
	}
}
END_TEST

START_TEST(rv2_tx__small_buffer_rejected)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 1, 2 } };
	struct mroce_tx_pkt pk;
	uint8_t buf[512];

	world_init(&w, &c);
	pk.buf = buf;
	ck_assert_int_eq(post(&w, 0, 0, 1, MROCE_WR_SEND, 0, 10, 0, 0), 0);
	ck_assert_int_eq(mroce_engine_tx(w.s[0].e, &pk, 1, sizeof(buf), 0),
			 -EINVAL);
	ck_assert_int_eq(mroce_engine_next_timer(w.s[0].e, 0), 0);
	world_fini(&w);
}
END_TEST

START_TEST(rv2_qp__reset_and_reconnect)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 1, 2 } };
	struct mroce_qp_attr at = { .state = MROCE_QPS_RESET };

	world_init(&w, &c);
	xfer_check(&w, 0, MROCE_WR_SEND, 3000, 1);
	/* back through RESET with fresh PSNs on both sides */
	for (int d = 0; d < 2; d++) {
		ck_assert_int_eq(mroce_modify_qp(w.s[d].e, w.s[d].qpn[0], &at,
						 MROCE_QP_STATE, w.now),
				 0);
		qp_to_rtr(&w, d, 0,
			  MROCE_ACCESS_REMOTE_READ | MROCE_ACCESS_REMOTE_WRITE,
			  0x777);
		/* not a 24-bit PSN */
		ck_assert_int_eq(qp_to_rts(&w, d, 0, 0x1000000), -EINVAL);
		ck_assert_int_eq(qp_to_rts(&w, d, 0, 0x777), 0);
	}
	xfer_check(&w, 0, MROCE_WR_RDMA_READ, 3000, 2);
	xfer_check(&w, 1, MROCE_WR_SEND, 3000, 3);
	world_fini(&w);
}
END_TEST

MROCE_SUITE(engine_rocev2_suite)
Suite *engine_rocev2_suite(void)
{
	Suite *s = suite_create("engine_rocev2");
	TCase *tc = tcase_create("transfers");
	TCase *tl = tcase_create("recovery");
	TCase *te = tcase_create("errors");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, rv2_send__sizes_byte_exact);
	tcase_add_test(tc, rv2_send_imm__sizes_byte_exact);
	tcase_add_test(tc, rv2_write__sizes_byte_exact);
	tcase_add_test(tc, rv2_write_imm__sizes_byte_exact);
	tcase_add_test(tc, rv2_read__sizes_byte_exact);
	tcase_add_test(tc, rv2_all_ops__mtu_4096_unaligned_mtu);
	tcase_add_test(tc, rv2_mixed__pipelined_in_order);
	tcase_add_test(tc, rv2_flags__solicited_and_ackreq);
	tcase_add_test(tc, rv2_psn__wraps_at_2_24);
	tcase_add_test(tc, rv2_window__inflight_bounded);
	tcase_add_test(tc, rv2_sport__fixed_per_qp);
	suite_add_tcase(s, tc);

	tcase_set_timeout(tl, 120);
	tcase_add_test(tl, rv2_loss__single_drop_nak_go_back_n);
	tcase_add_test(tl, rv2_loss__last_packet_lost_recovers_by_timeout);
	tcase_add_test(tl, rv2_timeout__backoff_doubles_then_resets_on_progress);
	tcase_add_test(tl, rv2_loss__lost_acks_reacked_duplicates);
	tcase_add_test(tl, rv2_reorder__go_back_n_still_correct);
	tcase_add_test(tl, rv2_reorder__responses_and_acks);
	tcase_add_test(tl, rv2_dup__reacked_and_ignored);
	tcase_add_test(tl, rv2_loss__read_response_implied_nak);
	tcase_add_test(tl, rv2_loss__random_2pct_all_ops_byte_exact);
	suite_add_tcase(s, tl);

	tcase_set_timeout(te, 60);
	tcase_add_test(te, rv2_write__bad_rkey_rem_access_err_and_flush);
	tcase_add_test(te, rv2_write__out_of_bounds_rem_access_err);
	tcase_add_test(te, rv2_read__bad_rkey_rem_access_err);
	tcase_add_test(te, rv2_read__no_remote_access_rem_access_err);
	tcase_add_test(te, rv2_send__longer_than_receive_rem_inv_req);
	tcase_add_test(te, rv2_rnr__retry_after_timer);
	tcase_add_test(te, rv2_rnr__retry_exhausted);
	tcase_add_test(te, rv2_timeout__all_dropped_retry_exc_err);
	tcase_add_test(te, rv2_rx__rejects_malformed_and_strangers);
	tcase_add_test(te, rv2_rx__survives_corrupted_headers);
	tcase_add_test(te, rv2_tx__small_buffer_rejected);
	tcase_add_test(te, rv2_qp__reset_and_reconnect);
	suite_add_tcase(s, te);
	return s;
}
