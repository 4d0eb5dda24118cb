// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of user/engine/metaroce.c: two (or more) engines wired through the
 * in-test packet pump (engine_pump.h), with chosen packets dropped,
 * duplicated or delayed.
 */
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

static struct mroce_engine_cfg base_cfg(void)
{
	struct mroce_engine_cfg c = { .transport = MROCE_TRANSPORT_METAROCE };

	c.seed = 7;
	c.mtu = 1024;
	mroce_engine_cfg_default(&c);
	return c;
}

static int qp_connect(struct mroce_engine *e, uint32_t qpn, int peer,
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
static uint32_t new_qp(struct pair *s, int i)
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
static void side_open(struct pair *s, int i)
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
static void connect_side(struct pair *s, int i)
{
	ck_assert_int_eq(qp_connect(s->p.e[i], s->s[i].qpn, s->p.peer[i][1 - i],
				    s->s[1 - i].qpn, s->p.now),
			 0);
}

static void pair_setup_cfg(struct pair *s, const struct mroce_engine_cfg *cfg,
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

static void pair_setup(struct pair *s, size_t len)
{
	struct mroce_engine_cfg cfg = base_cfg();

	pair_setup_cfg(s, &cfg, len, true);
}

static void pair_fini(struct pair *s)
{
	/* next_timer() never said "now" without there being work */
	ck_assert_uint_eq(s->p.spins, 0);
	pump_fini(&s->p);
	free(s->s[0].buf);
	free(s->s[1].buf);
}

static void collect(struct pair *s)
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

static bool cond_wcs(struct pump *p, void *arg)
{
	struct want *w = arg;

	collect(w->s);
	return w->s->s[0].nwc >= w->n0 && w->s->s[1].nwc >= w->n1;
}

static bool run_until_wcs(struct pair *s, int n0, int n1, uint64_t limit)
{
	struct want w = { s, n0, n1 };

	return pump_run(&s->p, cond_wcs, &w, limit);
}

static bool cond_established(struct pump *p, void *arg)
{
	for (int i = 0; i < p->n; i++) {
		struct mroce_engine_stats st;

		mroce_engine_get_stats(p->e[i], &st);
		if (!st.handshakes)
			return false;
	}
	return true;
}

static int post(struct pair *s, int i, enum mroce_wr_opcode op,
		uint64_t wr_id, uint32_t loff, uint32_t len, uint32_t roff)
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

static int post_recv(struct pair *s, int i, uint64_t wr_id, uint32_t off,
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

static struct mroce_engine_stats stats(struct pair *s, int i)
{
	struct mroce_engine_stats st;

	mroce_engine_get_stats(s->p.e[i], &st);
	return st;
}

static enum mroce_qp_state qp_state(struct pair *s, int i)
{
	struct mroce_qp_attr a;

	ck_assert_int_eq(mroce_query_qp(s->p.e[i], s->s[i].qpn, &a), 0);
	return a.state;
}

/* Runs until both sides have counted the connection up. */
static void establish(struct pair *s)
{
	ck_assert(pump_run(&s->p, cond_established, NULL, 100000000));
}

static void set_filter(struct pair *s, pump_filter_fn fn, void *ctx)
{
	s->p.filter = fn;
	s->p.ctx = ctx;
}

/* Path idx of side i's connection to the other side (it exists). */
static struct mroce_path_info path_of(struct pair *s, int i, int idx)
{
	struct mroce_path_info pi;

	ck_assert_int_eq(mroce_engine_path_info(s->p.e[i], s->p.peer[i][1 - i],
						idx, &pi),
			 0);
	return pi;
}

/* The source ports of side 0's eight paths. */
static void ports_of(struct pair *s, uint16_t sport[8])
{
	for (int i = 0; i < 8; i++)
		sport[i] = path_of(s, 0, i).sport;
}

/* None of side 0's eight paths was retired (all in generation 0). */
static void no_path_retired(struct pair *s)
{
	for (int i = 0; i < 8; i++)
		ck_assert_uint_eq(path_of(s, 0, i).gen, 0);
}

/* Side 0 writes its first len bytes to the second len bytes of side 1
 * (buffers of 2 * len), as work request 1 ... */
static void post_write_half(struct pair *s, size_t len)
{
	ck_assert_int_eq(post(s, 0, MROCE_WR_RDMA_WRITE, 1, 0, (uint32_t)len,
			      (uint32_t)len),
			 0);
}

/* ... which completes within limit ns, successfully and byte-exact. */
static void finish_write_half(struct pair *s, size_t len, uint64_t limit)
{
	ck_assert(run_until_wcs(s, 1, 0, limit));
	ck_assert_int_eq(s->s[0].wc[0].status, MROCE_WC_SUCCESS);
	ck_assert(!memcmp(s->s[0].buf, s->s[1].buf + len, len));
}

static void write_half(struct pair *s, size_t len, uint64_t limit)
{
	post_write_half(s, len);
	finish_write_half(s, len, limit);
}

/* Side 0 writes len bytes from its offset 0 to offset roff of side 1 as
 * wr_id: it completes, successfully, as side 0's nwc-th completion. */
static void write_ok(struct pair *s, uint64_t wr_id, uint32_t len,
		     uint32_t roff, int nwc)
{
	ck_assert_int_eq(post(s, 0, MROCE_WR_RDMA_WRITE, wr_id, 0, len, roff),
			 0);
	ck_assert(run_until_wcs(s, nwc, 0, 1000000000ull));
	ck_assert_int_eq(s->s[0].wc[nwc - 1].status, MROCE_WC_SUCCESS);
}

/* A step of the linear congruential generator the filters draw from. */
static uint32_t lcg(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*x >> 33);
}

/* ------------------------------------------------------------------ */
/* Receive-side SACK                                                    */
/* ------------------------------------------------------------------ */
static void mark_psn(struct mr_path *p, uint32_t psn)
{
	mr_rx_mark(p, psn - p->rx_cum);
}

START_TEST(mr_rx_mark__advances_over_contiguous_sack_only)
{
	struct mr_path p;

	memset(&p, 0, sizeof(p));
	p.rx_cum = 0xfffffff0u;	/* and wraps */
	for (uint32_t i = 1; i <= 64; i++)
		mark_psn(&p, 0xfffffff0u + i);
	for (uint32_t i = 66; i <= 100; i++)
		mark_psn(&p, 0xfffffff0u + i);
	ck_assert_uint_eq(p.rx_cum, 0xfffffff0u);
	mark_psn(&p, 0xfffffff0u);	/* the cum PSN arrives */
	ck_assert_uint_eq(p.rx_cum, 0xfffffff0u + 65);	/* stops at hole */
	ck_assert(p.sack[0] & 1);	/* 66 is still SACKed */
	mark_psn(&p, 0xfffffff0u + 65);
	ck_assert_uint_eq(p.rx_cum, 0xfffffff0u + 101);
	ck_assert_uint_eq(p.sack[0] | p.sack[1] | p.sack[2] | p.sack[3], 0);
	/* the whole window at once */
	for (uint32_t i = 1; i <= 256; i++)
		mr_rx_mark(&p, i);
	mr_rx_mark(&p, 0);
	ck_assert_uint_eq(p.rx_cum, 0xfffffff0u + 101 + 257);
	ck_assert_uint_eq(p.sack[0] | p.sack[1] | p.sack[2] | p.sack[3], 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Handshake                                                            */
/* ------------------------------------------------------------------ */
START_TEST(handshake__establishes_both_sides)
{
	struct pair s;

	pair_setup(&s, 64);
	ck_assert(pump_run(&s.p, cond_established, NULL, 10000000));
	ck_assert_uint_eq(stats(&s, 0).handshakes, 1);
	ck_assert_uint_eq(stats(&s, 1).handshakes, 1);
	pair_fini(&s);
}
END_TEST

static enum pump_verdict drop_first_two_hs(struct pump *p, int src, int dst,
					   const struct mroce_tx_pkt *t,
					   const struct mroce_meta_pkt *pk)
{
	int *n = p->ctx;

	if (pk && pk->opcode >= MROCE_OP_CONNECT_REQ && (*n)++ < 2)
		return PUMP_DROP;
	return PUMP_PASS;
}

START_TEST(handshake__retransmitted_on_loss)
{
	struct pair s;
	int n = 0;

	pair_setup(&s, 64);
	set_filter(&s, drop_first_two_hs, &n);
	establish(&s);
	ck_assert_int_ge(n, 3);
	pair_fini(&s);
}
END_TEST

/* Feed engine 1 a hand-made CONNECT_REQ and capture its CHALLENGE. */
static void get_challenge(struct pair *s, uint32_t src_id, uint64_t nonce,
			  struct mroce_meta_pkt *ch)
{
	struct mroce_meta_pkt pk = { .opcode = MROCE_OP_CONNECT_REQ };
	static uint8_t buf[PUMP_CAP];
	struct mroce_rx_meta m = { .peer = s->p.peer[1][0], .sport = 50000 };
	struct mroce_tx_pkt tx = { .buf = buf };
	int len;

	pk.conn.src_conn_id = src_id;
	pk.conn.nonce = nonce;
	pk.conn.isn = 1;
	pk.conn.mtu = 1024;
	pk.conn.max_paths = 8;
	len = mroce_meta_build(&pk, buf, sizeof(buf));
	ck_assert_int_gt(len, 0);
	ck_assert_int_eq(mroce_engine_rx(s->p.e[1], &m, buf, (size_t)len,
					 s->p.now),
			 0);
	ck_assert_int_eq(mroce_engine_tx(s->p.e[1], &tx, 1, PUMP_CAP,
					 s->p.now),
			 1);
	ck_assert_int_eq(mroce_meta_parse(buf, tx.len, ch), 0);
	ck_assert_uint_eq(ch->opcode, MROCE_OP_CONNECT_CHALLENGE);
	ck_assert_uint_eq(ch->conn_id, src_id);
	ck_assert_uint_eq(ch->conn.nonce, nonce);
}

static int send_confirm(struct pair *s, uint32_t src_id, uint64_t nonce,
			uint64_t cookie, uint32_t t, uint64_t now)
{
	struct mroce_meta_pkt pk = { .opcode = MROCE_OP_CONNECT_CONFIRM };
	static uint8_t buf[PUMP_CAP];
	struct mroce_rx_meta m = { .peer = s->p.peer[1][0], .sport = 50000 };
	int len;

	pk.conn.src_conn_id = src_id;
	pk.conn.nonce = nonce;
	pk.conn.isn = 1;
	pk.conn.cookie = cookie;
	pk.conn.cookie_time = t;
	pk.conn.mtu = 1024;
	pk.conn.max_paths = 8;
	len = mroce_meta_build(&pk, buf, sizeof(buf));
	ck_assert_int_gt(len, 0);
	return mroce_engine_rx(s->p.e[1], &m, buf, (size_t)len, now);
}

START_TEST(handshake__responder_keeps_no_state_and_checks_cookie)
{
	struct pair s;
	struct mroce_meta_pkt ch;
	struct mr_engine *t;

	pair_setup_cfg(&s, &(struct mroce_engine_cfg){ .seed = 3 }, 64,
		       false);
	get_challenge(&s, 0x1234, 0x5555, &ch);
	t = s.p.e[1]->tp;
	ck_assert_uint_eq(t->nconns, 0);	/* stateless */
	/* forged cookie */
	ck_assert_int_eq(send_confirm(&s, 0x1234, 0x5555, ch.conn.cookie ^ 1,
				      ch.conn.cookie_time, s.p.now),
			 -EACCES);
	/* cookie for another conn id / nonce */
	ck_assert_int_eq(send_confirm(&s, 0x1235, 0x5555, ch.conn.cookie,
				      ch.conn.cookie_time, s.p.now),
			 -EACCES);
	ck_assert_int_eq(send_confirm(&s, 0x1234, 0x5556, ch.conn.cookie,
				      ch.conn.cookie_time, s.p.now),
			 -EACCES);
	/* tampered time */
	ck_assert_int_eq(send_confirm(&s, 0x1234, 0x5555, ch.conn.cookie,
				      ch.conn.cookie_time + 1, s.p.now),
			 -EACCES);
	ck_assert_uint_eq(t->nconns, 0);
	ck_assert_uint_eq(stats(&s, 1).handshakes, 0);
	/* the genuine one is accepted */
	ck_assert_int_eq(send_confirm(&s, 0x1234, 0x5555, ch.conn.cookie,
				      ch.conn.cookie_time, s.p.now + 1000),
			 0);
	ck_assert_uint_eq(t->nconns, 1);
	ck_assert_uint_eq(stats(&s, 1).handshakes, 1);
	pair_fini(&s);
}
END_TEST

START_TEST(handshake__stale_cookie_rejected)
{
	struct pair s;
	struct mroce_meta_pkt ch;

	pair_setup_cfg(&s, &(struct mroce_engine_cfg){ .seed = 4 }, 64,
		       false);
	get_challenge(&s, 0x99, 0x77, &ch);
	ck_assert_int_eq(send_confirm(&s, 0x99, 0x77, ch.conn.cookie,
				      ch.conn.cookie_time,
				      s.p.now + 3000000000ull),
			 -EACCES);
	ck_assert_uint_eq(stats(&s, 1).handshakes, 0);
	pair_fini(&s);
}
END_TEST

static enum pump_verdict drop_accept(struct pump *p, int src, int dst,
				     const struct mroce_tx_pkt *t,
				     const struct mroce_meta_pkt *pk)
{
	return pk && pk->opcode == MROCE_OP_CONNECT_ACCEPT ? PUMP_DROP :
							     PUMP_PASS;
}

/* The responder established, every ACCEPT was lost, the initiator gave
 * up; its next attempt (new nonce) must still get in. */
START_TEST(handshake__initiator_retry_after_lost_accepts)
{
	struct pair s;
	struct mroce_qp_attr a = { .state = MROCE_QPS_RESET };

	pair_setup_cfg(&s, &(struct mroce_engine_cfg){ .seed = 5 }, 4096,
		       false);
	connect_side(&s, 0);
	s.p.filter = drop_accept;
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 1, 0, 10, 0), 0);
	ck_assert(run_until_wcs(&s, 1, 0, 60000000000ull));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_RETRY_EXC_ERR);
	ck_assert_uint_eq(stats(&s, 1).handshakes, 1);	/* responder did */
	ck_assert_uint_eq(stats(&s, 0).handshakes, 0);
	s.p.filter = NULL;
	ck_assert_int_eq(mroce_modify_qp(s.p.e[0], s.s[0].qpn, &a,
					 MROCE_QP_STATE, s.p.now),
			 0);
	connect_side(&s, 0);
	connect_side(&s, 1);
	write_ok(&s, 2, 1000, 0, 2);
	ck_assert(!memcmp(s.s[0].buf, s.s[1].buf, 1000));
	pair_fini(&s);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Data transfer                                                        */
/* ------------------------------------------------------------------ */
static void check_write(size_t len)
{
	struct pair s;

	pair_setup(&s, len * 2 + 16);
	write_half(&s, len, 2000000000ull);
	ck_assert_int_eq(s.s[0].wc[0].opcode, MROCE_WC_RDMA_WRITE);
	ck_assert_uint_eq(s.s[0].wc[0].wr_id, 1);
	/* nothing around it was touched */
	ck_assert_uint_eq(s.s[1].buf[len * 2],
			  (uint8_t)((len * 2) * 7 + 101 + ((len * 2) >> 11)));
	ck_assert_uint_eq(s.s[1].nwc, 0);
	pair_fini(&s);
}

START_TEST(write__byte_exact_sizes)
{
	check_write(0);
	check_write(1);
	check_write(1023);
	check_write(1024);
	check_write(1025);
	check_write(100000);
}
END_TEST

START_TEST(write__large_several_mib)
{
	check_write(3 * 1024 * 1024 + 17);
}
END_TEST

START_TEST(send__byte_exact_with_imm_and_recv_completion)
{
	struct pair s;

	pair_setup(&s, 1 << 16);
	ck_assert_int_eq(post_recv(&s, 1, 70, 0, 8192), 0);
	ck_assert_int_eq(post_recv(&s, 1, 71, 8192, 8192), 0);
	ck_assert_int_eq(post_recv(&s, 1, 72, 16384, 8192), 0);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_SEND, 1, 100, 5000, 0), 0);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_SEND_WITH_IMM, 2, 200, 1, 0), 0);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_SEND, 3, 0, 0, 0), 0);
	ck_assert(run_until_wcs(&s, 3, 3, 1000000000ull));
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(s.s[0].wc[i].status, MROCE_WC_SUCCESS);
		ck_assert_int_eq(s.s[0].wc[i].opcode, MROCE_WC_SEND);
		ck_assert_uint_eq(s.s[0].wc[i].wr_id, (uint64_t)i + 1);
		ck_assert_int_eq(s.s[1].wc[i].status, MROCE_WC_SUCCESS);
		ck_assert_int_eq(s.s[1].wc[i].opcode, MROCE_WC_RECV);
		ck_assert_uint_eq(s.s[1].wc[i].wr_id, (uint64_t)70 + i);
	}
	ck_assert_uint_eq(s.s[1].wc[0].byte_len, 5000);
	ck_assert_uint_eq(s.s[1].wc[0].flags, 0);
	ck_assert_uint_eq(s.s[1].wc[1].byte_len, 1);
	ck_assert_uint_eq(s.s[1].wc[1].flags, MROCE_WC_WITH_IMM);
	ck_assert_uint_eq(s.s[1].wc[1].imm, 0xabc00002u);
	ck_assert_uint_eq(s.s[1].wc[2].byte_len, 0);
	ck_assert(!memcmp(s.s[1].buf, s.s[0].buf + 100, 5000));
	ck_assert_uint_eq(s.s[1].buf[8192], s.s[0].buf[200]);
	pair_fini(&s);
}
END_TEST

START_TEST(write_imm__consumes_a_receive)
{
	struct pair s;

	pair_setup(&s, 1 << 16);
	ck_assert_int_eq(post_recv(&s, 1, 9, 0, 0), 0);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE_WITH_IMM, 5, 0, 3000,
			      4096),
			 0);
	ck_assert(run_until_wcs(&s, 1, 1, 1000000000ull));
	ck_assert_int_eq(s.s[1].wc[0].opcode, MROCE_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(s.s[1].wc[0].imm, 0xabc00005u);
	ck_assert_uint_eq(s.s[1].wc[0].byte_len, 3000);
	ck_assert_uint_eq(s.s[1].wc[0].wr_id, 9);
	ck_assert(!memcmp(s.s[1].buf + 4096, s.s[0].buf, 3000));
	pair_fini(&s);
}
END_TEST

START_TEST(read__byte_exact)
{
	struct pair s;

	pair_setup(&s, 1 << 20);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_READ, 8, 4096, 300000,
			      65536),
			 0);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_READ, 9, 0, 1, 3), 0);
	ck_assert(run_until_wcs(&s, 2, 0, 1000000000ull));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_SUCCESS);
	ck_assert_int_eq(s.s[0].wc[0].opcode, MROCE_WC_RDMA_READ);
	ck_assert_uint_eq(s.s[0].wc[0].wr_id, 8);
	ck_assert_uint_eq(s.s[0].wc[1].wr_id, 9);
	ck_assert(!memcmp(s.s[0].buf + 4096, s.s[1].buf + 65536, 300000));
	ck_assert_uint_eq(s.s[0].buf[0], s.s[1].buf[3]);
	ck_assert_uint_eq(s.s[1].nwc, 0);
	pair_fini(&s);
}
END_TEST

START_TEST(read__more_outstanding_than_rd_atomic)
{
	struct pair s;

	pair_setup(&s, 1 << 20);
	for (int i = 0; i < 40; i++)
		ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_READ, (uint64_t)i,
				      (uint32_t)i * 10000, 9000,
				      (uint32_t)i * 10000 + 7),
				 0);
	ck_assert(run_until_wcs(&s, 40, 0, 1000000000ull));
	for (int i = 0; i < 40; i++) {
		ck_assert_int_eq(s.s[0].wc[i].status, MROCE_WC_SUCCESS);
		ck_assert_uint_eq(s.s[0].wc[i].wr_id, (uint64_t)i);
		ck_assert(!memcmp(s.s[0].buf + i * 10000,
				  s.s[1].buf + i * 10000 + 7, 9000));
	}
	pair_fini(&s);
}
END_TEST

START_TEST(ack__coalesced_on_clean_transfer)
{
	struct pair s;
	struct mroce_engine_stats st;

	pair_setup(&s, 1 << 21);
	write_ok(&s, 1, 1 << 20, 1 << 20, 1);
	st = stats(&s, 1);
	ck_assert_uint_eq(st.rx_data_pkts, 1024);
	ck_assert_uint_lt(st.tx_acks, st.rx_data_pkts / 2);
	ck_assert_uint_gt(st.tx_acks, 0);
	pair_fini(&s);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Loss, duplicates, reordering                                         */
/* ------------------------------------------------------------------ */
struct lossctx {
	int ndata;		/* data packets seen */
	int drop_at;		/* index of the first-transmission to drop */
	uint32_t msn, offset;	/* what was dropped */
	int retx;		/* retransmissions seen */
	uint32_t retx_off[16];
};

static enum pump_verdict drop_one(struct pump *p, int src, int dst,
				  const struct mroce_tx_pkt *t,
				  const struct mroce_meta_pkt *pk)
{
	struct lossctx *l = p->ctx;

	if (!pk || src != 0 || pk->opcode != MROCE_OP_WRITE)
		return PUMP_PASS;
	if (pk->flags & MROCE_F_RETX) {
		if (l->retx < 16)
			l->retx_off[l->retx] = pk->offset;
		l->retx++;
		return PUMP_PASS;
	}
	if (l->ndata++ == l->drop_at) {
		l->msn = pk->msn;
		l->offset = pk->offset;
		return PUMP_DROP;
	}
	return PUMP_PASS;
}

START_TEST(loss__selective_retransmit_of_exactly_that_packet)
{
	struct pair s;
	struct lossctx l = { .drop_at = 5 };

	pair_setup(&s, 1 << 16);
	set_filter(&s, drop_one, &l);
	write_ok(&s, 1, 32 * 1024, 0, 1);
	ck_assert_int_eq(l.retx, 1);
	ck_assert_uint_eq(l.retx_off[0], l.offset);
	ck_assert_uint_eq(stats(&s, 0).retransmits, 1);
	ck_assert(!memcmp(s.s[0].buf, s.s[1].buf, 32 * 1024));
	pair_fini(&s);
}
END_TEST

static enum pump_verdict dup_all(struct pump *p, int src, int dst,
				 const struct mroce_tx_pkt *t,
				 const struct mroce_meta_pkt *pk)
{
	return PUMP_DUP;
}

START_TEST(dup__suppressed_and_completes_once)
{
	struct pair s;

	pair_setup(&s, 1 << 16);
	s.p.filter = dup_all;
	ck_assert_int_eq(post_recv(&s, 1, 1, 0, 20000), 0);
	ck_assert_int_eq(post_recv(&s, 1, 2, 20000, 20000), 0);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_SEND, 1, 0, 10000, 0), 0);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 2, 0, 10000, 40000),
			 0);
	ck_assert(run_until_wcs(&s, 2, 1, 1000000000ull));
	pump_run(&s.p, NULL, NULL, 10000000);
	collect(&s);
	ck_assert_int_eq(s.s[0].nwc, 2);
	ck_assert_int_eq(s.s[1].nwc, 1);
	ck_assert_uint_gt(stats(&s, 1).rx_dup, 0);
	ck_assert(!memcmp(s.s[1].buf, s.s[0].buf, 10000));
	ck_assert(!memcmp(s.s[1].buf + 40000, s.s[0].buf, 10000));
	pair_fini(&s);
}
END_TEST

static enum pump_verdict late_first_msg(struct pump *p, int src, int dst,
					const struct mroce_tx_pkt *t,
					const struct mroce_meta_pkt *pk)
{
	if (pk && pk->opcode == MROCE_OP_SEND && pk->msn == 0 &&
	    pk->offset == 0 && !(pk->flags & MROCE_F_RETX))
		return PUMP_LATE;
	return PUMP_PASS;
}

START_TEST(reorder__placed_out_of_order_completed_in_order)
{
	struct pair s;

	pair_setup(&s, 1 << 16);
	s.p.filter = late_first_msg;
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(post_recv(&s, 1, 10 + i, i * 8192, 8192), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(post(&s, 0, MROCE_WR_SEND, 20 + i, i * 8192,
				      4000, 0),
				 0);
	ck_assert(run_until_wcs(&s, 4, 4, 1000000000ull));
	for (int i = 0; i < 4; i++) {
		ck_assert_uint_eq(s.s[1].wc[i].wr_id, 10 + i);
		ck_assert_uint_eq(s.s[0].wc[i].wr_id, 20 + i);
		ck_assert(!memcmp(s.s[1].buf + i * 8192,
				  s.s[0].buf + i * 8192, 4000));
	}
	pair_fini(&s);
}
END_TEST

struct randloss {
	uint64_t x;
	int pct;
};

static enum pump_verdict random_loss(struct pump *p, int src, int dst,
				     const struct mroce_tx_pkt *t,
				     const struct mroce_meta_pkt *pk)
{
	struct randloss *r = p->ctx;

	return lcg(&r->x) % 100 < (uint32_t)r->pct ? PUMP_DROP : PUMP_PASS;
}

START_TEST(loss__random_5pct_both_ways_large_write_and_read)
{
	struct pair s;
	struct randloss r = { .x = 42, .pct = 5 };
	size_t len = 2 * 1024 * 1024;

	pair_setup(&s, 2 * len);
	establish(&s);
	set_filter(&s, random_loss, &r);
	post_write_half(&s, len);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_READ, 2, (uint32_t)len,
			      (uint32_t)len, 0),
			 0);
	ck_assert(run_until_wcs(&s, 2, 0, 5000000000ull));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_SUCCESS);
	ck_assert_int_eq(s.s[0].wc[1].status, MROCE_WC_SUCCESS);
	ck_assert(!memcmp(s.s[0].buf, s.s[1].buf + len, len));
	ck_assert(!memcmp(s.s[0].buf + len, s.s[1].buf, len));
	ck_assert_uint_gt(stats(&s, 0).retransmits, 0);
	pair_fini(&s);
}
END_TEST

/* Mixed traffic on several streams both ways through loss, duplication
 * and reordering: everything completes once, in order, byte-exact. */
struct chaos {
	uint64_t x;
	uint32_t loss;	/* percent */
};

static uint32_t chaos_rand(struct chaos *c)
{
	return lcg(&c->x);
}

static enum pump_verdict chaos_filter(struct pump *p, int src, int dst,
				      const struct mroce_tx_pkt *t,
				      const struct mroce_meta_pkt *pk)
{
	struct chaos *c = p->ctx;
	uint32_t r = chaos_rand(c) % 100;

	if (r < c->loss)
		return PUMP_DROP;
	if (r < c->loss + 2)
		return PUMP_DUP;
	if (r < c->loss + 5)
		return PUMP_LATE;
	return PUMP_PASS;
}

struct chaos_wr {
	int side, qp;
	enum mroce_wr_opcode op;
	uint32_t len, loff, roff;
};

/* Printed when a chaos run gets stuck, to say where. */
static void dump_engine(struct mroce_engine *e, const char *name)
{
	struct mr_engine *t = e->tp;
	struct mroce_list *l;

	for (l = t->conns.next; l != &t->conns; l = l->next) {
		struct mr_conn *c = mroce_container_of(l, struct mr_conn, link);

		fprintf(stderr, "%s conn st=%d resend=%u used=%u naks=%u\n",
			name, c->state, c->nresend, c->txe_used, c->nak_count);
		for (int i = 0; i < c->npaths; i++) {
			struct mr_path *p = &c->path[i];

			fprintf(stderr,
				" p%d gen=%u una=%u next=%u infl=%u lost=%u "
				"held=%u dl=%llu probed=%u cwnd=%u rxcum=%u "
				"ackdue=%llu\n",
				i, p->gen, p->una, p->next_psn, p->inflight,
				p->nlost, p->nheld,
				(unsigned long long)p->deadline, p->probed,
				mr_cc_cwnd_pkts(p), p->rx_cum,
				(unsigned long long)p->ack_due);
		}
		for (struct mroce_list *n = c->qps.next; n != &c->qps;
		     n = n->next) {
			struct mroce_qp *qp =
				mroce_container_of(n, struct mroce_qp, conn_link);
			struct mr_qp *q = qp->tp;

			fprintf(stderr,
				" qp %x st=%d sq=%u..%u sq_next=%u rx_next=%u "
				"rx_ssn=%u rq=%u..%u rd=%u..%u sched=%d\n",
				qp->qpn, qp->state, qp->sq_head, qp->sq_tail,
				q->sq_next, q->rx_next_msn, q->rx_ssn,
				qp->rq_head, qp->rq_tail, qp->rd_head,
				qp->rd_tail, mroce_list_linked(&qp->sched));
			for (uint32_t k = qp->sq_head; k != qp->sq_tail; k++) {
				struct mroce_wqe *w = mroce_sq_at(qp, k);

				fprintf(stderr,
					"  wqe msn=%u op=%d st=%d segs=%u/%u/%u "
					"hold=%llu\n",
					w->msn, w->wr.opcode, w->state,
					w->next_seg, w->segs_done, w->nsegs,
					(unsigned long long)w->hold_until);
			}
			for (int k = 0; k < MROCE_MAX_RD_ATOMIC; k++)
				if (q->rdrx[k].used)
					fprintf(stderr,
						"  rdrx msn=%u got=%u/%u\n",
						q->rdrx[k].msn,
						q->rdrx[k].st.got,
						q->rdrx[k].st.nsegs);
			fprintf(stderr, "  reads_out=%u\n", q->reads_out);
			for (int k = 0; k < MR_MSG_WIN; k++)
				if (q->rx[k].state)
					fprintf(stderr,
						"  rx msn=%u op=%d st=%d "
						"got=%u/%u\n",
						q->rx[k].msn, q->rx[k].op,
						q->rx[k].state, q->rx[k].st.got,
						q->rx[k].st.nsegs);
		}
	}
}

static void chaos_run(uint64_t seed)
{
	enum { NQ = 3, NWR = 40, REG = 8 << 20 };
	struct mroce_engine_cfg cfg = base_cfg();
	const char *loss = getenv("MROCE_CHAOS_LOSS");
	struct chaos ch = { .x = seed, .loss = loss ? atoi(loss) : 3 };
	static struct pump p;
	static struct chaos_wr w[2][NQ][NWR];
	uint8_t *buf[2];
	struct mroce_mr mr[2];
	int cq[2];
	uint32_t qpn[2][NQ], off[2] = { 0, 0 };
	int ndone[2][NQ], nrecv[2][NQ], want = 0, got = 0;
	static int rexp[2][NQ][NWR], nrexp[2][NQ];
	static struct {
		int side;
		struct mroce_recv_wr wr;
	} late[2 * NWR];
	int nlate = 0;
	uint64_t t_late;

	cfg.seed = seed;
	ck_assert_int_eq(pump_init(&p, 2, &cfg), 0);
	for (int i = 0; i < 2; i++) {
		buf[i] = malloc(REG);
		for (size_t k = 0; k < REG; k++)
			buf[i][k] = (uint8_t)(k * 31 + i + (k >> 9));
		ck_assert_int_eq(mroce_reg_mr(p.e[i], buf[i], REG, ACC_ALL,
					      &mr[i]),
				 0);
		cq[i] = mroce_create_cq(p.e[i], 1024);
		for (int q = 0; q < NQ; q++) {
			struct mroce_qp_init_attr ia = { cq[i], cq[i], NWR,
							 NWR };

			qpn[i][q] = (uint32_t)mroce_create_qp(p.e[i], &ia);
			ndone[i][q] = nrecv[i][q] = nrexp[i][q] = 0;
		}
	}
	for (int i = 0; i < 2; i++)
		for (int q = 0; q < NQ; q++)
			ck_assert_int_eq(qp_connect(p.e[i], qpn[i][q],
						    p.peer[i][1 - i],
						    qpn[1 - i][q], p.now),
					 0);
	p.filter = chaos_filter;
	p.ctx = &ch;
	/* Plan: source bytes at the sender, target bytes at the other side
	 * are disjoint per WR so each can be checked on its own. */
	for (int i = 0; i < 2; i++) {
		for (int q = 0; q < NQ; q++) {
			for (int k = 0; k < NWR; k++) {
				struct chaos_wr *c = &w[i][q][k];
				uint32_t r = chaos_rand(&ch);

				c->side = i;
				c->qp = q;
				c->op = (enum mroce_wr_opcode)(r % 5);
				c->len = (r >> 8) % 4 == 0 ?
						 (r >> 12) % 3 :
						 (r >> 12) % 60000;
				c->loff = off[i];
				off[i] += c->len + 1;
				c->roff = off[1 - i];
				off[1 - i] += c->len + 1;
			}
		}
	}
	ck_assert_uint_lt(off[0], REG);
	ck_assert_uint_lt(off[1], REG);
	for (int i = 0; i < 2; i++) {
		for (int q = 0; q < NQ; q++) {
			for (int k = 0; k < NWR; k++) {
				struct chaos_wr *c = &w[i][q][k];
				struct mroce_send_wr wr = {
					.wr_id = (uint64_t)k,
					.opcode = c->op,
					.send_flags = MROCE_SEND_SIGNALED,
					.sge = { (uint64_t)(uintptr_t)(buf[i] +
								       c->loff),
						 c->len, mr[i].lkey },
					.imm = (uint32_t)k,
					.remote_addr = (uint64_t)(uintptr_t)(
						buf[1 - i] + c->roff),
					.rkey = mr[1 - i].rkey,
				};

				if (c->op != MROCE_WR_RDMA_WRITE &&
				    c->op != MROCE_WR_RDMA_READ) {
					struct mroce_recv_wr rw = {
						.wr_id = (uint64_t)k,
						.sge = { wr.remote_addr,
							 c->len + 1,
							 mr[1 - i].lkey },
					};

					rexp[1 - i][q][nrexp[1 - i][q]++] = k;
					want++;
					/* Stream 0 posts its receives late:
					 * RNR under loss. */
					if (q == 0) {
						late[nlate].side = 1 - i;
						late[nlate++].wr = rw;
					} else {
						ck_assert_int_eq(
							mroce_post_recv(
								p.e[1 - i],
								qpn[1 - i][q],
								&rw),
							0);
					}
				}
				ck_assert_int_eq(mroce_post_send(p.e[i],
								 qpn[i][q],
								 &wr, p.now),
						 0);
				want++;
			}
		}
	}
	t_late = p.now + 300000;
	for (int iter = 0; got < want; iter++) {
		struct mroce_wc wc[64];

		if (nlate && p.now >= t_late) {
			for (int k = 0; k < nlate; k++)
				ck_assert_int_eq(
					mroce_post_recv(
						p.e[late[k].side],
						qpn[late[k].side][0],
						&late[k].wr),
					0);
			nlate = 0;
		}

		if (iter == 200000) {
			dump_engine(p.e[0], "e0");
			dump_engine(p.e[1], "e1");
		}
		ck_assert_msg(iter < 200000, "stuck: %d of %d (seed %llu)", got,
			      want, (unsigned long long)seed);
		pump_run(&p, NULL, NULL, 100000);
		for (int i = 0; i < 2; i++) {
			int n = mroce_poll_cq(p.e[i], cq[i], wc, 64);

			for (int k = 0; k < n; k++) {
				int q = -1;

				for (int j = 0; j < NQ; j++)
					if (qpn[i][j] == wc[k].qpn)
						q = j;
				ck_assert_int_ge(q, 0);
				ck_assert_msg(wc[k].status == MROCE_WC_SUCCESS,
					      "seed %llu side %d status %s",
					      (unsigned long long)seed, i,
					      mroce_wc_status_str(
						      wc[k].status));
				if (wc[k].opcode == MROCE_WC_RECV ||
				    wc[k].opcode ==
					    MROCE_WC_RECV_RDMA_WITH_IMM) {
					ck_assert_uint_eq(
						wc[k].wr_id,
						(uint64_t)rexp[i][q][nrecv[i][q]]);
					ck_assert_uint_eq(
						wc[k].byte_len,
						w[1 - i][q][wc[k].wr_id].len);
					nrecv[i][q]++;
				} else {
					ck_assert_uint_eq(wc[k].wr_id,
							  (uint64_t)ndone[i][q]);
					ndone[i][q]++;
				}
				got++;
			}
		}
	}
	/* next_timer() never said "now" without there being work */
	ck_assert_uint_eq(p.spins, 0);
	for (int i = 0; i < 2; i++) {
		for (int q = 0; q < NQ; q++) {
			for (int k = 0; k < NWR; k++) {
				struct chaos_wr *c = &w[i][q][k];
				const uint8_t *a = buf[i] + c->loff;
				const uint8_t *b = buf[1 - i] + c->roff;

				if (c->op == MROCE_WR_RDMA_READ)
					ck_assert(!memcmp(a, b, c->len));
				else
					ck_assert(!memcmp(b, a, c->len));
			}
		}
	}
	pump_fini(&p);
	free(buf[0]);
	free(buf[1]);
}

START_TEST(chaos__mixed_ops_loss_dup_reorder_complete_in_order)
{
	/* MROCE_CHAOS_SEEDS=n runs more seeds (soak, by hand). */
	const char *env = getenv("MROCE_CHAOS_SEEDS");
	const char *first = getenv("MROCE_CHAOS_FIRST");
	int n = env ? atoi(env) : 3;

	for (int i = first ? atoi(first) : 1; i <= n; i++)
		chaos_run((uint64_t)i);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Remote errors                                                        */
/* ------------------------------------------------------------------ */
static void check_remote_error(int kind)
{
	struct pair s;
	struct mroce_send_wr wr;
	struct mroce_mr ro;
	uint8_t *robuf = calloc(1, 4096);

	pair_setup(&s, 1 << 16);
	ck_assert_int_eq(mroce_reg_mr(s.p.e[1], robuf, 4096,
				      MROCE_ACCESS_REMOTE_READ, &ro),
			 0);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = MROCE_WR_RDMA_WRITE;
	wr.send_flags = MROCE_SEND_SIGNALED;
	wr.sge.addr = (uint64_t)(uintptr_t)s.s[0].buf;
	wr.sge.length = 2000;
	wr.sge.lkey = s.s[0].mr.lkey;
	wr.remote_addr = (uint64_t)(uintptr_t)s.s[1].buf;
	wr.rkey = s.s[1].mr.rkey;
	if (kind == 0)
		wr.rkey ^= 0x5a5a0000;	/* bad key */
	else if (kind == 1)
		wr.remote_addr += (1 << 16) - 1000;	/* out of bounds */
	else if (kind == 2) {
		wr.rkey = ro.rkey;	/* region without remote write */
		wr.remote_addr = (uint64_t)(uintptr_t)robuf;
	}
	ck_assert_int_eq(mroce_post_send(s.p.e[0], s.s[0].qpn, &wr, s.p.now),
			 0);
	wr.wr_id = 2;
	wr.rkey = s.s[1].mr.rkey;
	wr.remote_addr = (uint64_t)(uintptr_t)s.s[1].buf;
	ck_assert_int_eq(mroce_post_send(s.p.e[0], s.s[0].qpn, &wr, s.p.now),
			 0);
	ck_assert(run_until_wcs(&s, 2, 0, 1000000000ull));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_REM_ACCESS_ERR);
	ck_assert_uint_eq(s.s[0].wc[0].wr_id, 1);
	ck_assert_int_eq(s.s[0].wc[1].status, MROCE_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(s.s[0].wc[1].wr_id, 2);
	ck_assert_int_eq(qp_state(&s, 0), MROCE_QPS_ERR);
	ck_assert_uint_eq(stats(&s, 1).rx_bad_rkey, 1);
	ck_assert_uint_eq(robuf[0], 0);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 3, 0, 1, 0), -EPERM);
	/* the connection survives for other streams */
	pump_run(&s.p, NULL, NULL, 20000000);
	pair_fini(&s);
	free(robuf);
}

START_TEST(remote__bad_rkey_access_error_qp_err_and_flush)
{
	check_remote_error(0);
}
END_TEST

START_TEST(remote__out_of_bounds_is_access_error)
{
	check_remote_error(1);
}
END_TEST

START_TEST(remote__missing_access_right_is_access_error)
{
	check_remote_error(2);
}
END_TEST

/* The responder's region disappears between the READ request and its
 * response: the requester gets REM_ACCESS_ERR, nothing hangs. */
START_TEST(remote__read_source_deregistered_before_response)
{
	struct pair s;
	struct mroce_qp *rqp;
	int steps = 0;

	pair_setup(&s, 1 << 16);
	establish(&s);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_READ, 1, 0, 20000, 0), 0);
	rqp = mroce_qp_find(s.p.e[1], s.s[1].qpn);
	while (rqp->rd_tail == rqp->rd_head) {
		s.p.now += 500;
		pump_step(&s.p);
		ck_assert_int_lt(++steps, 1000);
	}
	ck_assert_int_eq(mroce_dereg_mr(s.p.e[1], s.s[1].mr.lkey), 0);
	ck_assert(run_until_wcs(&s, 1, 0, 1000000000ull));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_REM_ACCESS_ERR);
	ck_assert_int_eq(qp_state(&s, 0), MROCE_QPS_ERR);
	ck_assert_int_eq(qp_state(&s, 1), MROCE_QPS_ERR);
	pump_run(&s.p, NULL, NULL, 20000000);
	pair_fini(&s);
}
END_TEST

START_TEST(remote__send_longer_than_receive_is_invalid_request)
{
	struct pair s;

	pair_setup(&s, 1 << 16);
	ck_assert_int_eq(post_recv(&s, 1, 1, 0, 100), 0);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_SEND, 1, 0, 101, 0), 0);
	ck_assert(run_until_wcs(&s, 1, 1, 1000000000ull));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_REM_INV_REQ_ERR);
	ck_assert_int_eq(qp_state(&s, 0), MROCE_QPS_ERR);
	pair_fini(&s);
}
END_TEST

/* ------------------------------------------------------------------ */
/* RNR                                                                  */
/* ------------------------------------------------------------------ */
START_TEST(rnr__send_waits_for_late_receive)
{
	struct pair s;

	pair_setup(&s, 1 << 16);
	establish(&s);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_SEND, 1, 0, 3000, 0), 0);
	pump_run(&s.p, NULL, NULL, 300000);	/* 300 us: RNR NAKs */
	collect(&s);
	ck_assert_int_eq(s.s[0].nwc, 0);
	ck_assert_uint_gt(stats(&s, 0).rx_naks, 0);
	ck_assert_int_eq(post_recv(&s, 1, 5, 0, 4096), 0);
	ck_assert(run_until_wcs(&s, 1, 1, 1000000000ull));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_SUCCESS);
	ck_assert_int_eq(s.s[1].wc[0].status, MROCE_WC_SUCCESS);
	ck_assert(!memcmp(s.s[1].buf, s.s[0].buf, 3000));
	pair_fini(&s);
}
END_TEST

/* A SEND bigger than the first flight: its tail must resume after the
 * RNR hold (the stream was parked while held). */
START_TEST(rnr__large_send_resumes_after_hold)
{
	struct pair s;

	pair_setup(&s, 1 << 20);
	establish(&s);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_SEND, 1, 0, 300000, 0), 0);
	pump_run(&s.p, NULL, NULL, 120000);
	ck_assert_int_eq(post_recv(&s, 1, 5, 0, 300000), 0);
	ck_assert(run_until_wcs(&s, 1, 1, 1000000000ull));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_SUCCESS);
	ck_assert_int_eq(s.s[1].wc[0].status, MROCE_WC_SUCCESS);
	ck_assert_uint_eq(s.s[1].wc[0].byte_len, 300000);
	ck_assert(!memcmp(s.s[1].buf, s.s[0].buf, 300000));
	pair_fini(&s);
}
END_TEST

START_TEST(rnr__retry_exhausted)
{
	struct pair s;
	struct mroce_engine_cfg cfg = base_cfg();

	cfg.rnr_retry = 2;
	pair_setup_cfg(&s, &cfg, 1 << 16, true);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_SEND, 1, 0, 3000, 0), 0);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 2, 0, 10, 0), 0);
	ck_assert(run_until_wcs(&s, 2, 0, 1000000000ull));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_RNR_RETRY_EXC_ERR);
	ck_assert_int_eq(s.s[0].wc[1].status, MROCE_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(qp_state(&s, 0), MROCE_QPS_ERR);
	pair_fini(&s);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Retry exhaustion, blackholes, PSN wrap                               */
/* ------------------------------------------------------------------ */
static enum pump_verdict drop_data_from_0(struct pump *p, int src, int dst,
					  const struct mroce_tx_pkt *t,
					  const struct mroce_meta_pkt *pk)
{
	return src == 0 && pk && pk->opcode < MROCE_OP_CONNECT_REQ ?
		       PUMP_DROP :
		       PUMP_PASS;
}

START_TEST(retry__all_dropped_is_retry_exceeded)
{
	struct pair s;

	pair_setup(&s, 1 << 16);
	establish(&s);
	s.p.filter = drop_data_from_0;
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 1, 0, 5000, 0), 0);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_SEND, 2, 0, 10, 0), 0);
	ck_assert(run_until_wcs(&s, 2, 0, 60000000000ull));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_RETRY_EXC_ERR);
	ck_assert_int_eq(s.s[0].wc[1].status, MROCE_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(qp_state(&s, 0), MROCE_QPS_ERR);
	ck_assert_uint_gt(stats(&s, 0).rto_fires, 0);
	pair_fini(&s);
}
END_TEST

static enum pump_verdict drop_all_from_0(struct pump *p, int src, int dst,
					 const struct mroce_tx_pkt *t,
					 const struct mroce_meta_pkt *pk)
{
	return src == 0 ? PUMP_DROP : PUMP_PASS;
}

START_TEST(retry__handshake_to_silent_peer_fails_wr)
{
	struct pair s;

	pair_setup(&s, 64);
	s.p.filter = drop_all_from_0;
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 1, 0, 10, 0), 0);
	ck_assert(run_until_wcs(&s, 1, 0, 60000000000ull));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_RETRY_EXC_ERR);
	ck_assert_int_eq(qp_state(&s, 0), MROCE_QPS_ERR);
	ck_assert_uint_eq(stats(&s, 0).handshakes, 0);
	pair_fini(&s);
}
END_TEST

static enum pump_verdict drop_read_resp_and_naks(struct pump *p, int src,
						 int dst,
						 const struct mroce_tx_pkt *t,
						 const struct mroce_meta_pkt *pk)
{
	return src == 1 && pk && (pk->opcode == MROCE_OP_READ_RESP ||
				  pk->opcode == MROCE_OP_NAK) ?
		       PUMP_DROP :
		       PUMP_PASS;
}

/* Responses never arrive and neither does the responder's NAK when it
 * gives up: the requester's READ still completes (RETRY_EXC_ERR). */
START_TEST(retry__read_responses_all_lost)
{
	struct pair s;

	pair_setup(&s, 1 << 16);
	establish(&s);
	s.p.filter = drop_read_resp_and_naks;
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_READ, 1, 0, 5000, 0), 0);
	ck_assert(run_until_wcs(&s, 1, 0, 60000000000ull));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_RETRY_EXC_ERR);
	ck_assert_int_eq(qp_state(&s, 0), MROCE_QPS_ERR);
	ck_assert_int_eq(qp_state(&s, 1), MROCE_QPS_ERR);
	pair_fini(&s);
}
END_TEST

struct bh {
	uint16_t sport;
	int dropped;
	int src;	/* the engine whose packets from sport are lost */
};

static enum pump_verdict blackhole_port(struct pump *p, int src, int dst,
					const struct mroce_tx_pkt *t,
					const struct mroce_meta_pkt *pk)
{
	struct bh *b = p->ctx;

	if (src == b->src && t->sport == b->sport) {
		b->dropped++;
		return PUMP_DROP;
	}
	return PUMP_PASS;
}

START_TEST(path__blackhole_rerolled_and_transfer_completes)
{
	struct pair s;
	struct bh b = { .src = 0 };
	struct mroce_path_info pi;
	size_t len = 256 * 1024;

	pair_setup(&s, 2 * len);
	establish(&s);
	pi = path_of(&s, 0, 3);
	b.sport = pi.sport;
	b.dropped = 0;
	ck_assert_uint_eq(pi.gen, 0);
	set_filter(&s, blackhole_port, &b);
	write_half(&s, len, 2000000000ull);
	ck_assert_int_gt(b.dropped, 0);
	pi = path_of(&s, 0, 3);
	ck_assert_uint_ge(pi.gen, 1);
	ck_assert_uint_ne(pi.sport, b.sport);
	ck_assert_uint_ge(stats(&s, 0).path_rerolls, 1);
	ck_assert_int_eq(mroce_engine_path_info(s.p.e[0], s.p.peer[0][1], 8,
						&pi),
			 -ENOENT);
	pair_fini(&s);
}
END_TEST

/* ACKs leave on the receiver's own ports in rotation (ack_sport), never
 * pinned to the data's port: a dead reverse plane then costs every path
 * a share of its ACKs instead of silencing the paths whose ACKs crossed
 * it. A PROBE that says our ACKs went missing (no CHECK flag, and we
 * acknowledged all it names a while ago) is answered twice, from two
 * ports; the port checks of idle ports carry CHECK. */
struct ackports {
	uint16_t sport[64];
	int n, acks, data_sport_acks;
	uint16_t data_sport[MROCE_MAX_PATHS];
	int probe_answers, probe_pairs;
	int drop;		/* drop this many plain ACKs of engine 1 */
	int checks;		/* PROBEs with CHECK seen */
	uint8_t last_path;
	uint32_t last_tsecr;
	uint16_t last_sport;
};

static enum pump_verdict record_ack_ports(struct pump *p, int src, int dst,
					  const struct mroce_tx_pkt *t,
					  const struct mroce_meta_pkt *pk)
{
	struct ackports *a = p->ctx;
	int i;

	(void)dst;
	if (!pk)
		return PUMP_PASS;
	if (src == 0 && pk->opcode != MROCE_OP_ACK && pk->path < MROCE_MAX_PATHS)
		a->data_sport[pk->path] = t->sport;
	if (pk->opcode == MROCE_OP_PROBE && (pk->flags & MROCE_F_CHECK))
		a->checks++;
	if (src != 1 || pk->opcode != MROCE_OP_ACK)
		return PUMP_PASS;
	if (a->drop > 0 && !(pk->ack.flags & MROCE_ACKF_PROBE)) {
		a->drop--;
		return PUMP_DROP;
	}
	a->acks++;
	for (i = 0; i < a->n && a->sport[i] != t->sport; i++)
		;
	if (i == a->n && a->n < 64)
		a->sport[a->n++] = t->sport;
	if (pk->ack.flags & MROCE_ACKF_PROBE) {
		if (a->probe_answers && pk->path == a->last_path &&
		    pk->ack.tsecr == a->last_tsecr && t->sport != a->last_sport)
			a->probe_pairs++;
		a->probe_answers++;
		a->last_path = pk->path;
		a->last_tsecr = pk->ack.tsecr;
		a->last_sport = t->sport;
	}
	return PUMP_PASS;
}

START_TEST(ack__sprayed_over_the_receivers_own_ports)
{
	struct pair s;
	struct ackports a;
	struct mroce_path_info pi;
	int own = 0;

	memset(&a, 0, sizeof(a));
	a.drop = 40;	/* the sender's paths fall quiet: PTO probes */
	pair_setup(&s, 1 << 21);
	set_filter(&s, record_ack_ports, &a);
	write_ok(&s, 1, 1 << 20, 1 << 20, 1);
	ck_assert_int_gt(a.acks, 8);
	/* every ACK port is one of the receiver's own path ports ... */
	for (int i = 0; i < a.n; i++) {
		bool found = false;

		for (int k = 0;
		     !mroce_engine_path_info(s.p.e[1], s.p.peer[1][0], k, &pi);
		     k++)
			found |= pi.sport == a.sport[i];
		own += found;
	}
	/* (the one after the ACCEPT leaves on path 0's port, also ours) */
	ck_assert_int_eq(own, a.n);
	/* ... and they rotate over several of them */
	ck_assert_int_ge(a.n, 4);
	/* the sender's PROBEs after the lost ACKs were answered on two
	 * ports; the receiver's idle ports were checked (CHECK) */
	ck_assert_int_gt(a.probe_answers, 0);
	ck_assert_int_gt(a.probe_pairs, 0);
	ck_assert_int_gt(a.checks, 0);
	pair_fini(&s);
}
END_TEST

/* One of the receiver's ports lands on a dead plane in its direction
 * (every packet it sends from that port is lost). It carries only ACKs,
 * so nothing else would notice: it is probed every MR_ACK_PROBE_EVERY
 * ACKs, retired after two unanswered probes and replaced, and the
 * transfer completes byte-exact without an error. */
START_TEST(ack_port__dead_reverse_port_retired_and_replaced)
{
	struct pair s;
	struct bh r = { .src = 1 };
	struct mroce_path_info pi;
	size_t len = 4u << 20;

	pair_setup(&s, 2 * len);
	establish(&s);
	pi = path_of(&s, 1, 2);
	r.sport = pi.sport;
	set_filter(&s, blackhole_port, &r);
	write_half(&s, len, 4000000000ull);
	ck_assert_int_gt(r.dropped, 0);
	pi = path_of(&s, 1, 2);
	ck_assert_uint_ne(pi.sport, r.sport);
	ck_assert_uint_ge(pi.gen, 1);
	ck_assert_uint_ge(stats(&s, 1).path_rerolls, 1);
	ck_assert_uint_gt(stats(&s, 1).probes_sent, 0);
	pair_fini(&s);
}
END_TEST

/* The timer heap: once a transfer is over and acknowledged nothing is
 * due (next_timer() says never, so a driver sleeps), and a new post is
 * due at once. */
START_TEST(next_timer__never_when_quiet_and_now_after_post)
{
	struct pair s;

	pair_setup(&s, 1 << 16);
	write_ok(&s, 1, 32 * 1024, 0, 1);
	pump_run(&s.p, NULL, NULL, 1000000);
	for (int i = 0; i < 2; i++)
		ck_assert_uint_eq(mroce_engine_next_timer(s.p.e[i], s.p.now),
				  UINT64_MAX);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 2, 0, 1024, 0), 0);
	ck_assert_uint_eq(mroce_engine_next_timer(s.p.e[0], s.p.now),
			  s.p.now);
	ck_assert(run_until_wcs(&s, 2, 0, 1000000000ull));
	ck_assert_int_eq(s.s[0].wc[1].status, MROCE_WC_SUCCESS);
	pair_fini(&s);
}
END_TEST

struct gen_wait {
	struct pair *s;
	uint8_t gen;
};

static bool cond_path3_gen(struct pump *p, void *arg)
{
	struct gen_wait *g = arg;
	struct mroce_path_info pi;

	collect(g->s);
	return !mroce_engine_path_info(p->e[0], p->peer[0][1], 3, &pi) &&
	       pi.gen >= g->gen;
}

/* A path that falls silent mid-transfer while its siblings keep acking
 * is rerolled within a few RTTs (PTO-based, no RTO and no retry charged
 * to the messages), and a fresh port carries no data until its PROBE is
 * answered. */
START_TEST(path__silent_path_rerolled_within_few_rtts)
{
	struct pair s;
	struct bh b = { 0 };
	struct mroce_path_info pi;
	struct gen_wait g;
	size_t len = 4 << 20;
	uint64_t t0, rtt;

	pair_setup(&s, 2 * len);
	establish(&s);
	post_write_half(&s, len);
	/* let the paths measure their RTT, then kill path 3 */
	pump_run(&s.p, NULL, NULL, 100000);
	ck_assert_int_eq(s.s[0].nwc, 0);
	pi = path_of(&s, 0, 3);
	ck_assert_uint_eq(pi.gen, 0);
	ck_assert_uint_gt(pi.srtt_us, 0);
	b.sport = pi.sport;
	set_filter(&s, blackhole_port, &b);
	t0 = s.p.now;
	rtt = 2 * s.p.delay;
	g.s = &s;
	g.gen = 1;
	ck_assert(pump_run(&s.p, cond_path3_gen, &g, 100 * rtt));
	/* 10 RTTs, plus the receiver's ACK coalescing delay: a path whose
	 * packets may wait that long for their ACK is not silent before it
	 * (an earlier verdict retired healthy paths in mroce_sim) */
	ck_assert_uint_le(s.p.now - t0, 10 * rtt + MR_ACK_DELAY_NS);
	ck_assert_uint_eq(stats(&s, 0).rto_fires, 0);
	finish_write_half(&s, len, 2000000000ull);
	ck_assert_int_gt(b.dropped, 0);
	pair_fini(&s);
}
END_TEST

/* The rerolled port lands on the dead plane again (its probe is dropped
 * too): it gets no data and is rerolled again, the transfer completes
 * on the others with no RTO. */
static enum pump_verdict blackhole_path3(struct pump *p, int src, int dst,
					 const struct mroce_tx_pkt *t,
					 const struct mroce_meta_pkt *pk)
{
	struct bh *b = p->ctx;

	if (src == 0 && pk && pk->path == 3 && pk->path_gen < 2) {
		b->dropped++;
		return PUMP_DROP;
	}
	return PUMP_PASS;
}

START_TEST(path__reroll_probation_keeps_data_off_unproven_port)
{
	struct pair s;
	struct bh b = { 0 };
	struct mroce_path_info pi;
	struct gen_wait g;
	size_t len = 4 << 20;
	uint64_t tx_before;

	pair_setup(&s, 2 * len);
	establish(&s);
	post_write_half(&s, len);
	pump_run(&s.p, NULL, NULL, 100000);
	set_filter(&s, blackhole_path3, &b);
	g.s = &s;
	g.gen = 1;
	ck_assert(pump_run(&s.p, cond_path3_gen, &g, 10000000));
	pi = path_of(&s, 0, 3);
	tx_before = pi.tx_pkts;
	g.gen = 2;
	ck_assert(pump_run(&s.p, cond_path3_gen, &g, 10000000));
	pi = path_of(&s, 0, 3);
	/* generation 1 was never answered: it carried no data */
	ck_assert_uint_eq(pi.tx_pkts, tx_before);
	finish_write_half(&s, len, 2000000000ull);
	ck_assert_uint_eq(stats(&s, 0).rto_fires, 0);
	pair_fini(&s);
}
END_TEST

static enum pump_verdict congest_port(struct pump *p, int src, int dst,
				      const struct mroce_tx_pkt *t,
				      const struct mroce_meta_pkt *pk)
{
	struct bh *b = p->ctx;

	return src == 0 && t->sport == b->sport ? PUMP_CE_LATE : PUMP_PASS;
}

/* One path is slow and ECN-marked: the spraying sends it much less than
 * its share, and nothing is lost or retransmitted needlessly. */
START_TEST(spray__moves_traffic_off_congested_path)
{
	struct pair s;
	struct bh b = { 0 };
	struct mroce_path_info pi;
	uint64_t others = 0, slow;
	size_t len = 2 << 20;

	pair_setup(&s, 2 * len);
	establish(&s);
	pi = path_of(&s, 0, 5);
	b.sport = pi.sport;
	set_filter(&s, congest_port, &b);
	post_write_half(&s, len);
	ck_assert(run_until_wcs(&s, 1, 0, 2000000000ull));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_SUCCESS);
	pi = path_of(&s, 0, 5);
	slow = pi.tx_pkts;
	ck_assert_uint_gt(pi.ce_marks, 0);
	for (int i = 0; i < 8; i++) {
		pi = path_of(&s, 0, i);
		if (i != 5)
			others += pi.tx_pkts;
	}
	/* fair share would be others / 7 */
	ck_assert_uint_lt(slow * 7 * 2, others);
	ck_assert_uint_eq(stats(&s, 0).retransmits, 0);
	pair_fini(&s);
}
END_TEST

/* A fabric of four planes of a quarter of the line rate each, ECMP by
 * source port: the connection's first eight ports all hash onto planes
 * 0-2 (plane 3 gets none); any later port hashes onto one of the four.
 * Each plane is a FIFO queue (marking CE above 2 us) that the filter
 * models itself: it queues the packet at its departure time and tells
 * the pump to drop the original. */
struct planes {
	uint16_t sport0[8];
	uint64_t free_at[4];
	uint64_t pkts[4];
	uint64_t bps;
	bool no_ecn;	/* plain queues (tbf): delay only, no CE */
};

static int plane_of(const struct planes *pl, uint16_t sport)
{
	for (int i = 0; i < 8; i++)
		if (pl->sport0[i] == sport)
			return i % 3;
	return (int)(((sport * 2654435761u) >> 16) % 4);
}

static enum pump_verdict plane_queue(struct pump *p, int src, int dst,
				     const struct mroce_tx_pkt *t,
				     const struct mroce_meta_pkt *pk)
{
	struct planes *pl = p->ctx;
	uint64_t start;
	int k;

	if (src != 0)
		return PUMP_PASS;
	k = plane_of(pl, t->sport);
	start = pl->free_at[k] > p->now ? pl->free_at[k] : p->now;
	pl->free_at[k] = start + (uint64_t)(t->len + 64) * 8000000000ull /
					 pl->bps;
	pl->pkts[k]++;
	pump_enqueue(p, src, dst, t, pl->free_at[k] + p->delay,
		     !pl->no_ecn && start - p->now > 2000 && t->ect);
	return PUMP_DROP;
}

/* Side 0 (configured by cfg) writes 8 MiB through filter fn (ctx) over
 * the planes pl, whose first eight ports are side 0's: at least one path
 * moves, and plane 3 carries more than 1 / div of the packets; with
 * keep_gen no path was retired either (moves keep the generation). */
static void write_onto_plane3(const struct mroce_engine_cfg *cfg,
			      struct planes *pl, pump_filter_fn fn, void *ctx,
			      uint64_t div, bool keep_gen)
{
	struct pair s;
	size_t len = 8 << 20;
	uint64_t total = 0;

	pair_setup_cfg(&s, cfg, 2 * len, true);
	establish(&s);
	ports_of(&s, pl->sport0);
	set_filter(&s, fn, ctx);
	write_half(&s, len, 2000000000ull);
	for (int k = 0; k < 4; k++)
		total += pl->pkts[k];
	ck_assert_uint_ge(stats(&s, 0).path_rerolls, 1);
	ck_assert_uint_gt(pl->pkts[3] * div, total);
	if (keep_gen)
		no_path_retired(&s);
	pair_fini(&s);
}

/* Exploration: with one plane empty the connection, window-limited and
 * well below its line rate, rerolls paths until one lands on the empty
 * plane, which then carries a fair part of the data. Without it no
 * packet ever crosses plane 3. */
START_TEST(path_explore__finds_the_empty_plane)
{
	struct planes pl = { .bps = 25000000000ull };
	struct mroce_engine_cfg cfg = base_cfg();

	write_onto_plane3(&cfg, &pl, plane_queue, &pl, 10, false);
}
END_TEST

struct lossy {
	uint16_t sport;
	uint64_t x;
};

static enum pump_verdict lossy_port(struct pump *p, int src, int dst,
				    const struct mroce_tx_pkt *t,
				    const struct mroce_meta_pkt *pk)
{
	struct lossy *l = p->ctx;

	if (lcg(&l->x) % 2 && src == 0 && t->sport == l->sport)
		return PUMP_DROP;
	return PUMP_PASS;
}

/* A path that keeps losing half its packets gets a new port. */
START_TEST(path__lossy_path_rerolled)
{
	struct pair s;
	struct lossy l = { .x = 3 };
	struct mroce_path_info pi;
	size_t len = 4 << 20;

	pair_setup(&s, 2 * len);
	establish(&s);
	pi = path_of(&s, 0, 2);
	l.sport = pi.sport;
	set_filter(&s, lossy_port, &l);
	write_half(&s, len, 2000000000ull);
	pi = path_of(&s, 0, 2);
	/* the port is gone: retired for loss (new generation) or, when
	 * exploration got there first, moved as the path that delivered
	 * least (same generation) */
	ck_assert_uint_ne(pi.sport, l.sport);
	ck_assert_uint_ge(stats(&s, 0).path_rerolls, 1);
	pair_fini(&s);
}
END_TEST

struct nth_drop {
	int accepts;		/* ACCEPTs seen */
	int writes, probes;	/* data / PROBE packets of side 0 seen */
	int drop_writes, drop_probes;	/* drop the first this many */
};

static enum pump_verdict drop_first_accept(struct pump *p, int src, int dst,
					   const struct mroce_tx_pkt *t,
					   const struct mroce_meta_pkt *pk)
{
	struct nth_drop *d = p->ctx;

	if (pk && pk->opcode == MROCE_OP_CONNECT_ACCEPT && d->accepts++ == 0)
		return PUMP_DROP;
	return PUMP_PASS;
}

/* The responder's ACCEPT is lost; the ACK that follows it (or any packet
 * of the established peer) tells the initiator its CONFIRM was adopted:
 * it resends the CONFIRM at once, the responder answers with another
 * ACCEPT, and the connection is up a few RTTs later instead of after the
 * 1 ms handshake timer. */
START_TEST(handshake__lost_accept_recovered_without_timer)
{
	struct pair s;
	struct nth_drop d = { 0 };

	pair_setup_cfg(&s, &(struct mroce_engine_cfg){ .seed = 5 }, 4096,
		       false);
	connect_side(&s, 0);
	connect_side(&s, 1);
	set_filter(&s, drop_first_accept, &d);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 1, 0, 1000, 0), 0);
	/* 100 us: 25 pump RTTs, a tenth of the handshake timer */
	ck_assert(run_until_wcs(&s, 1, 0, 100000));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_SUCCESS);
	ck_assert_int_ge(d.accepts, 2);
	ck_assert_uint_eq(stats(&s, 0).handshakes, 1);
	ck_assert_uint_eq(stats(&s, 1).handshakes, 1);
	pair_fini(&s);
}
END_TEST

static enum pump_verdict drop_first_data(struct pump *p, int src, int dst,
					 const struct mroce_tx_pkt *t,
					 const struct mroce_meta_pkt *pk)
{
	struct nth_drop *d = p->ctx;

	if (!pk || src != 0)
		return PUMP_PASS;
	if (pk->opcode == MROCE_OP_WRITE && d->writes++ < d->drop_writes)
		return PUMP_DROP;
	if (pk->opcode == MROCE_OP_PROBE && d->probes++ < d->drop_probes)
		return PUMP_DROP;
	return PUMP_PASS;
}

/* The first flight is lost, and so is the probe behind it. No path has
 * an RTT sample yet; the handshake's round trip is one, so the loss is
 * found a few RTTs later, not after rto_min (200 us). */
START_TEST(path__first_flight_loss_timed_by_handshake_rtt)
{
	struct pair s;
	struct nth_drop d = { .drop_writes = 1, .drop_probes = 1 };
	uint64_t t0;

	pair_setup(&s, 8192);
	establish(&s);
	set_filter(&s, drop_first_data, &d);
	t0 = s.p.now;
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 1, 0, 1000, 4096),
			 0);
	ck_assert(run_until_wcs(&s, 1, 0, 1000000));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_SUCCESS);
	ck_assert(!memcmp(s.s[0].buf, s.s[1].buf + 4096, 1000));
	ck_assert_int_eq(d.writes, 2);
	ck_assert_uint_lt(s.p.now - t0, 100000);
	pair_fini(&s);
}
END_TEST

struct rand_loss {
	uint64_t x;
	uint32_t permille;
	uint64_t dropped;
};

static enum pump_verdict rand_loss_filter(struct pump *p, int src, int dst,
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

/* 5% random loss of the data packets on every path: every path has it,
 * so none is retired (no new generation: neither silent nor lossy), and
 * the transfer completes with every byte. (A lost ACK of a path whose
 * window is full can still look like silence: see docs/engine.md.) */
START_TEST(path__random_loss_retires_no_path)
{
	struct pair s;
	struct rand_loss l = { .x = 11, .permille = 50 };
	size_t len = 4 << 20;

	pair_setup(&s, 2 * len);
	establish(&s);
	set_filter(&s, rand_loss_filter, &l);
	write_half(&s, len, 2000000000ull);
	ck_assert_uint_gt(l.dropped, 100);
	no_path_retired(&s);
	pair_fini(&s);
}
END_TEST

struct lossy_planes {
	struct planes pl;
	struct rand_loss l;
};

static enum pump_verdict lossy_plane_queue(struct pump *p, int src, int dst,
					   const struct mroce_tx_pkt *t,
					   const struct mroce_meta_pkt *pk)
{
	struct lossy_planes *lp = p->ctx;
	enum pump_verdict v;

	p->ctx = &lp->l;
	v = rand_loss_filter(p, src, dst, t, pk);
	p->ctx = &lp->pl;
	if (v == PUMP_PASS)
		v = plane_queue(p, src, dst, t, pk);
	p->ctx = lp;
	return v;
}

/* Exploration under 3% random loss (it used to judge no interval with
 * more than 2% loss, so a connection on 3 of 4 planes stayed there): the
 * empty plane is found, and moves keep the generation (a path moves once
 * drained: nothing is resent or dropped as stale). */
START_TEST(path_explore__finds_the_empty_plane_under_loss)
{
	struct lossy_planes lp = { .pl = { .bps = 25000000000ull },
				   .l = { .x = 5, .permille = 30 } };
	struct mroce_engine_cfg cfg = base_cfg();

	write_onto_plane3(&cfg, &lp.pl, lossy_plane_queue, &lp, 10, true);
}
END_TEST

/* Pacing bursts: a software endpoint (jitter_us) that was idle sends up
 * to MR_PACE_BURST data packets in one tx() call at one instant (its
 * driver hands them to the kernel in one system call); a hardware-like
 * one (jitter_us 0) paces them out one per packet time. */
static int data_in_one_tx(uint32_t jitter_us)
{
	struct mroce_engine_cfg cfg = base_cfg();
	struct mroce_tx_pkt pk[64];
	static uint8_t bufs[64][PUMP_CAP];
	struct pair s;
	int n, data = 0;

	cfg.jitter_us = jitter_us;
	pair_setup_cfg(&s, &cfg, 1 << 20, true);
	/* a first message: established, the receiver's rate hint known */
	write_ok(&s, 1, 8192, 0, 1);
	s.p.now += 1000000;	/* idle */
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 2, 0, 1 << 19, 0),
			 0);
	for (int i = 0; i < 64; i++) {
		memset(&pk[i], 0, sizeof(pk[i]));
		pk[i].buf = bufs[i];
	}
	n = mroce_engine_tx(s.p.e[0], pk, 64, PUMP_CAP, s.p.now);
	for (int i = 0; i < n; i++) {
		struct mroce_meta_pkt m;

		if (!mroce_meta_parse(pk[i].buf, pk[i].len, &m) &&
		    m.opcode == MROCE_OP_WRITE)
			data++;
	}
	pair_fini(&s);
	return data;
}

START_TEST(pace__software_endpoint_sends_a_burst)
{
	int sw = data_in_one_tx(10000), hw = data_in_one_tx(0);

	ck_assert_int_eq(hw, 1);
	ck_assert_int_gt(sw, 8);
	ck_assert_int_le(sw, MR_PACE_BURST);
}
END_TEST

/* ACK coalescing on software endpoints (jitter_us): 64 WRITEs posted at
 * once, each 8 packets over the 8 paths. A hardware-like receiver flushes
 * every path's ACK at each message end (ACK_REQ|LAST); a software sender
 * asks for that only on the last message posted, and a software receiver
 * coalesces the rest by count and MR_ACK_DELAY_SW_NS: far fewer ACKs for
 * the same data, and the stream still completes. A lone message (nothing
 * posted behind it) still asks at once: it completes in a few round trips,
 * not after the coalescing delay. */
static uint64_t acks_for_stream(uint32_t jitter_us, uint64_t *lone_ns)
{
	struct mroce_engine_cfg cfg = base_cfg();
	struct mroce_engine_stats a, b;
	struct pair s;
	uint64_t t0;
	const int nmsg = 64;

	cfg.jitter_us = jitter_us;
	pair_setup_cfg(&s, &cfg, 1 << 20, true);
	write_ok(&s, 1, 8192, 0, 1);	/* established */
	s.p.now += 1000000;
	t0 = s.p.now;
	write_ok(&s, 2, 8192, 8192, 2);
	*lone_ns = s.p.now - t0;
	mroce_engine_get_stats(s.p.e[1], &a);
	for (int i = 0; i < nmsg; i++)
		ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE,
				      (uint64_t)(10 + i), 0, 8192,
				      (uint32_t)(i % 64) * 8192),
				 0);
	ck_assert(run_until_wcs(&s, 2 + nmsg, 0, 1000000000ull));
	for (int i = 0; i < 2 + nmsg; i++)
		ck_assert_int_eq(s.s[0].wc[i].status, MROCE_WC_SUCCESS);
	mroce_engine_get_stats(s.p.e[1], &b);
	ck_assert_uint_eq(b.rx_data_pkts - a.rx_data_pkts, (uint64_t)nmsg * 8);
	pair_fini(&s);
	return b.tx_acks - a.tx_acks;
}

START_TEST(ack__software_receiver_coalesces_a_stream_of_messages)
{
	uint64_t lone_sw, lone_hw;
	uint64_t sw = acks_for_stream(10000, &lone_sw),
		 hw = acks_for_stream(0, &lone_hw);

	/* hardware-like: at least one ACK per message end */
	ck_assert_uint_ge(hw, 64);
	/* software: by count (8 per path), at most a quarter of that */
	ck_assert_uint_le(sw * 4, hw);
	ck_assert_uint_gt(sw, 0);
	/* the lone message did not wait for the coalescing delay */
	ck_assert_uint_lt(lone_sw, MR_ACK_DELAY_SW_NS / 4);
}
END_TEST

/* Software endpoints (cfg.jitter_us): their RTT jitters by the hosts'
 * scheduling and their rate is usually the host's, so they judge the
 * planes by a queue that stays on every path. Here the planes limit:
 * four plain queues (no ECN, like tbf) of 1 Gbit/s, the first eight
 * ports on planes 0-2. Every path then sits on a queue near the CC's
 * target (base + jitter_us); a moved port's PROBE answers in the base
 * RTT over plane 3 and behind a queue elsewhere, and the connection
 * ends up using plane 3. */
START_TEST(path_explore__software_endpoint_finds_the_idle_plane)
{
	struct planes pl = { .bps = 1000000000ull, .no_ecn = true };
	struct mroce_engine_cfg cfg = base_cfg();

	cfg.jitter_us = 100;
	write_onto_plane3(&cfg, &pl, plane_queue, &pl, 8, false);
}
END_TEST

/* Host stalls: the planes run at the line rate (nothing queues), but in
 * three of four periods the sender's host stalls for the first 2/3 of
 * the period: the ACKs that reach it then are taken in at the stall's
 * end (FIFO kept). */
struct stalls {
	struct planes pl;
	uint64_t x, period, stall, stalled;
};

static enum pump_verdict stall_filter(struct pump *p, int src, int dst,
				      const struct mroce_tx_pkt *t,
				      const struct mroce_meta_pkt *pk)
{
	struct stalls *st = p->ctx;
	uint64_t k = p->now / st->period, x = st->x ^ (k * 0x9e3779b97f4a7c15ull);

	if (src == 0) {
		st->pl.pkts[plane_of(&st->pl, t->sport)]++;
		return PUMP_PASS;
	}
	if (lcg(&x) % 4 == 0 || p->now - k * st->period >= st->stall)
		return PUMP_PASS;
	st->stalled++;
	pump_enqueue(p, src, dst, t, k * st->period + st->stall + p->delay,
		     false);
	return PUMP_DROP;
}

/* A software endpoint (jitter_us 1 ms, 10 Gbit/s) on a clean fabric with
 * an empty plane, whose host stalls for 0.8 ms at a time: the stalls
 * fill its windows (window-limited) and keep its rate well below the
 * line, so the rate rule of hardware endpoints moves a port here
 * (checked by hand); but no queue lasts through an interval, and no
 * path moves. */
START_TEST(path_explore__software_endpoint_still_on_a_clean_fabric)
{
	struct pair s;
	struct stalls st = { .pl = { .bps = 10000000000ull }, .x = 11 };
	struct mroce_engine_cfg cfg = base_cfg();
	size_t len = 16 << 20;

	cfg.jitter_us = 1000;
	cfg.link_bps = 10000000000ull;
	st.period = 1200000;
	st.stall = 800000;
	pair_setup_cfg(&s, &cfg, 2 * len, true);
	establish(&s);
	ports_of(&s, st.pl.sport0);
	set_filter(&s, stall_filter, &st);
	write_half(&s, len, 2000000000ull);
	ck_assert_uint_gt(st.stalled, 100);
	ck_assert_uint_eq(stats(&s, 0).path_rerolls, 0);
	ck_assert_uint_eq(st.pl.pkts[3], 0);
	no_path_retired(&s);
	pair_fini(&s);
}
END_TEST

START_TEST(psn__wraps_at_2_32)
{
	struct pair s;
	struct mroce_engine_cfg cfg = base_cfg();
	struct mr_conn *c;
	size_t len = 300 * 1024;

	cfg.npaths = 1;
	pair_setup_cfg(&s, &cfg, 2 * len, true);
	/* Before the REQ leaves: move engine 0's ISN next to the wrap. */
	c = ((struct mr_engine *)s.p.e[0]->tp)->by_peer[s.p.peer[0][1]];
	ck_assert_ptr_nonnull(c);
	c->tx_isn = 0xffffff00u;
	c->path[0].next_psn = c->path[0].una = c->path[0].loss_scan =
		c->path[0].high_acked = mroce_path_isn(c->tx_isn, 0, 0);
	write_half(&s, len, 2000000000ull);
	ck_assert_uint_lt(c->path[0].next_psn, 0x1000);	/* it wrapped */
	pair_fini(&s);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Hostile input                                                        */
/* ------------------------------------------------------------------ */
struct capture {
	int n;
	int dst[256];
	uint32_t len[256];
	uint8_t *pkt[256];
};

static enum pump_verdict capture_all(struct pump *p, int src, int dst,
				     const struct mroce_tx_pkt *t,
				     const struct mroce_meta_pkt *pk)
{
	struct capture *c = p->ctx;

	if (c->n < 256) {
		c->pkt[c->n] = malloc(t->len);
		memcpy(c->pkt[c->n], t->buf, t->len);
		c->len[c->n] = t->len;
		c->dst[c->n] = dst;
		c->n++;
	}
	return PUMP_PASS;
}

/* Mutated copies of real packets with a valid ICRC (so they get past the
 * codec into the engine): nothing crashes (ASan), nothing outside the
 * registered regions changes. */
START_TEST(rx__mutated_packets_never_write_outside_regions)
{
	enum { GUARD = 4096, LEN = 1 << 16 };
	struct pair s;
	struct capture cap = { 0 };
	struct chaos rnd = { .x = 99 };
	uint8_t *mem[2], *pkt = malloc(PUMP_CAP);

	pair_setup(&s, 16);
	/* Replace the regions by guarded ones. */
	for (int i = 0; i < 2; i++) {
		mem[i] = malloc(LEN + 2 * GUARD);
		memset(mem[i], 0xee, LEN + 2 * GUARD);
		ck_assert_int_eq(mroce_dereg_mr(s.p.e[i], s.s[i].mr.lkey), 0);
		free(s.s[i].buf);
		s.s[i].buf = mem[i] + GUARD;
		ck_assert_int_eq(mroce_reg_mr(s.p.e[i], s.s[i].buf, LEN,
					      ACC_ALL, &s.s[i].mr),
				 0);
	}
	set_filter(&s, capture_all, &cap);
	ck_assert_int_eq(post_recv(&s, 1, 1, 0, 8192), 0);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_SEND_WITH_IMM, 1, 0, 5000, 0), 0);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 2, 0, 9000, 100), 0);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_READ, 3, 0, 9000, 100), 0);
	ck_assert(run_until_wcs(&s, 3, 1, 1000000000ull));
	s.p.filter = NULL;
	ck_assert_int_gt(cap.n, 10);
	const char *env = getenv("MROCE_RX_FUZZ_ITERS");	/* soak */
	int iters = env ? atoi(env) : 30000;

	for (int it = 0; it < iters; it++) {
		int k = (int)(chaos_rand(&rnd) % (uint32_t)cap.n);
		uint32_t len = cap.len[k], nmut = 1 + chaos_rand(&rnd) % 4;
		struct mroce_rx_meta m = { .peer = s.p.peer[cap.dst[k]]
							   [1 - cap.dst[k]],
					   .sport = 49152 };
		uint32_t crc;

		memcpy(pkt, cap.pkt[k], len);
		for (uint32_t j = 0; j < nmut; j++) {
			uint32_t r = chaos_rand(&rnd);
			uint32_t at = (r >> 8) % (len < 64 ? len : 64);

			pkt[at] ^= (uint8_t)(1u << (r % 8));
			if (r % 7 == 0)
				pkt[at] = (uint8_t)(r >> 16);
		}
		if (len > 4) {
			crc = mroce_meta_icrc(pkt, len - 4);
			pkt[len - 4] = (uint8_t)(crc >> 24);
			pkt[len - 3] = (uint8_t)(crc >> 16);
			pkt[len - 2] = (uint8_t)(crc >> 8);
			pkt[len - 1] = (uint8_t)crc;
		}
		mroce_engine_rx(s.p.e[cap.dst[k]], &m, pkt, len, s.p.now);
		if (it % 64 == 0) {
			s.p.now += 1000;
			pump_step(&s.p);
		}
	}
	pump_run(&s.p, NULL, NULL, 50000000);
	for (int i = 0; i < 2; i++) {
		for (int g = 0; g < GUARD; g++) {
			ck_assert_uint_eq(mem[i][g], 0xee);
			ck_assert_uint_eq(mem[i][GUARD + LEN + g], 0xee);
		}
	}
	for (int i = 0; i < cap.n; i++)
		free(cap.pkt[i]);
	free(pkt);
	pump_fini(&s.p);
	free(mem[0]);
	free(mem[1]);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Introspection                                                        */
/* ------------------------------------------------------------------ */
/* A receiver that is not polled for a while (a process descheduled, a
 * driver busy elsewhere) looks like a blackhole to the sender: it probes
 * and rerolls its paths one by one. When the receiver resumes it answers
 * the old probes on the rerolled paths' new generations, still echoing
 * ACKF_PROBE and the old probe's tsval. Such an echo must not be taken
 * for the answer to a probe of the new generation: the old probe's PSN
 * lies in another PSN space, and walking to it from the new una stalled
 * the sender for seconds (lib_conn hung over UDP sockets). */
struct freeze {
	bool on;
	int n;
	struct {
		uint16_t sport;
		uint32_t len;
		uint8_t buf[PUMP_CAP];
	} pkt[64];
};

static enum pump_verdict freeze_1(struct pump *p, int src, int dst,
				  const struct mroce_tx_pkt *t,
				  const struct mroce_meta_pkt *pk)
{
	struct freeze *f = p->ctx;

	if (!f->on || dst != 1)
		return PUMP_PASS;
	/* Not polled: the packets wait in its socket buffer. */
	if (f->n < 64) {
		f->pkt[f->n].sport = t->sport;
		f->pkt[f->n].len = t->len;
		memcpy(f->pkt[f->n].buf, t->buf, t->len);
		f->n++;
	}
	return PUMP_DROP;
}

START_TEST(path__receiver_paused_then_resumed_completes)
{
	static struct freeze f;
	struct pair s;
	struct mr_conn *c;

	pair_setup(&s, 4096);
	establish(&s);
	/* let the handshake's trailing ACK and hint settle */
	ck_assert(pump_run(&s.p, NULL, NULL, 1000000));
	memset(&f, 0, sizeof(f));
	f.on = true;
	set_filter(&s, freeze_1, &f);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 1, 0, 1000, 2000),
			 0);
	/* The receiver sleeps for 10 ms (dozens of PTOs). */
	pump_run(&s.p, NULL, NULL, 10000000);
	ck_assert_uint_ge(stats(&s, 0).path_rerolls, 1);
	c = ((struct mr_engine *)s.p.e[0]->tp)->by_peer[s.p.peer[0][1]];
	for (int i = 0; i < c->npaths; i++) {
		const struct mr_path *p = &c->path[i];

		/* An outstanding probe is one of this generation. */
		ck_assert_uint_le(p->probe_psn - p->una, p->next_psn - p->una);
	}
	/* It wakes up and reads everything that waited for it at once. */
	f.on = false;
	for (int k = 0; k < f.n; k++) {
		struct mroce_rx_meta m = { .peer = s.p.peer[1][0],
					   .sport = f.pkt[k].sport };

		mroce_engine_rx(s.p.e[1], &m, f.pkt[k].buf, f.pkt[k].len,
				s.p.now);
	}
	ck_assert(run_until_wcs(&s, 1, 0, 100000000));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_SUCCESS);
	ck_assert(!memcmp(s.s[0].buf, s.s[1].buf + 2000, 1000));
	for (int i = 0; i < c->npaths; i++) {
		const struct mr_path *p = &c->path[i];

		ck_assert_uint_le(p->probe_psn - p->una, p->next_psn - p->una);
	}
	pair_fini(&s);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Peer restart                                                         */
/* ------------------------------------------------------------------ */
struct evlog {
	struct mroce_engine_event ev[64];
	int n;
};

static void ev_drain(struct mroce_engine *e, struct evlog *l)
{
	struct mroce_engine_event v;

	while (mroce_engine_poll_event(e, &v) == 1) {
		ck_assert_int_lt(l->n, 64);
		l->ev[l->n++] = v;
	}
}

/* Engine 1 loses all its state: destroyed, and a fresh one (another
 * seed, same address and secret) takes its place with a new CQ, QP and
 * registration of the same buffer. Packets in flight to it stay
 * queued, as on a wire. */
static void restart_1(struct pair *s, uint64_t seed)
{
	struct mroce_engine_cfg cfg = base_cfg();
	struct mroce_peer_addr a = { .family = AF_INET };

	mroce_engine_destroy(s->p.e[1]);
	cfg.seed = seed;
	memset(cfg.secret, 0x41, sizeof(cfg.secret));
	ck_assert_int_eq(mroce_engine_create(&cfg, &s->p.e[1]), 0);
	a.addr[0] = 10;
	a.addr[3] = 1;
	a.local[0] = 10;
	a.local[3] = 2;
	s->p.peer[1][0] = mroce_peer_add(s->p.e[1], &a);
	ck_assert_int_ge(s->p.peer[1][0], 0);
	s->s[1].nwc = 0;
	side_open(s, 1);
}

/* A new QP on engine 0 for the restarted engine 1, both connected. */
static uint32_t reconnect_0(struct pair *s)
{
	uint32_t old = s->s[0].qpn;

	s->s[0].qpn = new_qp(s, 0);
	connect_side(s, 1);
	connect_side(s, 0);
	return old;
}

static enum pump_verdict drop_to_1(struct pump *p, int src, int dst,
				   const struct mroce_tx_pkt *t,
				   const struct mroce_meta_pkt *pk)
{
	return dst == 1 ? PUMP_DROP : PUMP_PASS;
}

static bool cond_established_1(struct pump *p, void *arg)
{
	struct mroce_engine_stats st;

	mroce_engine_get_stats(p->e[1], &st);
	return st.handshakes > 0;
}

/* The connection id engine 0 uses for engine 1 (its last CONN_UP). */
static uint32_t conn_id_0(const struct evlog *l, uint32_t *peer_id)
{
	for (int i = l->n - 1; i >= 0; i--)
		if (l->ev[i].type == MROCE_EV_CONN_UP && l->ev[i].peer_id) {
			*peer_id = l->ev[i].peer_id;
			return l->ev[i].id;
		}
	ck_abort_msg("no CONN_UP with a peer id");
	return 0;
}

/* The survivor of a peer restart learns it from the first packet it
 * sends: the restarted engine does not know the connection id and answers
 * NAK NO_CONN (spec 9.5), which fails the old QP's work at once
 * (RETRY_EXC_ERR, as after a restart seen by handshake) instead of after
 * the retries run out; a new QP pair then works. */
static enum pump_verdict drop_naks_from_1(struct pump *p, int src, int dst,
					  const struct mroce_tx_pkt *t,
					  const struct mroce_meta_pkt *pk)
{
	(void)p;
	(void)dst;
	(void)t;
	return src == 1 && pk && pk->opcode == MROCE_OP_NAK ? PUMP_DROP :
							      PUMP_PASS;
}

static uint64_t survivor_fail_ns(bool no_conn)
{
	struct pair s;
	uint64_t t0, dt;

	pair_setup(&s, 65536);
	write_ok(&s, 1, 4096, 0, 1);
	restart_1(&s, 99);
	if (!no_conn)
		s.p.filter = drop_naks_from_1;
	t0 = s.p.now;
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 2, 0, 8192, 0), 0);
	ck_assert(run_until_wcs(&s, 2, 0, 10000000000ull));
	dt = s.p.now - t0;
	ck_assert_int_eq(s.s[0].wc[1].status, MROCE_WC_RETRY_EXC_ERR);
	ck_assert_uint_eq(s.s[0].wc[1].wr_id, 2);
	ck_assert_int_eq(qp_state(&s, 0), MROCE_QPS_ERR);
	if (no_conn) {
		ck_assert_uint_ge(stats(&s, 1).tx_naks, 1);
		ck_assert_uint_ge(stats(&s, 0).rx_naks, 1);
		/* a new QP pair reaches the restarted peer */
		s.p.filter = NULL;
		reconnect_0(&s);
		ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 3, 0, 8192,
				      0),
				 0);
		ck_assert(run_until_wcs(&s, 3, 0, 1000000000ull));
		ck_assert_int_eq(s.s[0].wc[2].status, MROCE_WC_SUCCESS);
		ck_assert(!memcmp(s.s[1].buf, s.s[0].buf, 8192));
	}
	pair_fini(&s);
	return dt;
}

START_TEST(no_conn__restarted_peer_fails_survivor_at_once)
{
	uint64_t fast = survivor_fail_ns(true);
	uint64_t slow = survivor_fail_ns(false);

	/* a round trip or two, against the whole retry budget */
	ck_assert_uint_lt(fast, 100000);
	ck_assert_uint_gt(slow, 10 * fast);
}
END_TEST

/* A NO_CONN that names nothing outstanding, or another connection id,
 * changes nothing (a blind attacker cannot tear a connection down). */
START_TEST(no_conn__forged_nak_ignored)
{
	struct pair s;
	struct evlog l0 = { .n = 0 };
	struct mroce_meta_pkt pk = { .opcode = MROCE_OP_NAK };
	struct mroce_rx_meta m = { .sport = 50000 };
	static uint8_t buf[PUMP_CAP];
	uint32_t peer_id;
	int len;

	pair_setup(&s, 65536);
	write_ok(&s, 1, 4096, 0, 1);
	ev_drain(s.p.e[0], &l0);
	conn_id_0(&l0, &peer_id);
	m.peer = s.p.peer[0][1];
	pk.nak.code = MROCE_NAK_NO_CONN;
	/* right id, but no PSN of path 0 is outstanding */
	pk.conn_id = peer_id;
	pk.nak.psn = 12345;
	len = mroce_meta_build(&pk, buf, sizeof(buf));
	ck_assert_int_gt(len, 0);
	ck_assert_int_lt(mroce_engine_rx(s.p.e[0], &m, buf, (size_t)len,
					 s.p.now),
			 0);
	/* another id */
	pk.conn_id = peer_id ^ 0x100;
	len = mroce_meta_build(&pk, buf, sizeof(buf));
	ck_assert_int_eq(mroce_engine_rx(s.p.e[0], &m, buf, (size_t)len,
					 s.p.now),
			 -ENOENT);
	ck_assert_int_eq(qp_state(&s, 0), MROCE_QPS_RTS);
	write_ok(&s, 2, 4096, 0, 2);
	pair_fini(&s);
}
END_TEST

START_TEST(restart__peer_restarted_gets_new_connection)
{
	struct pair s;
	struct evlog l0 = { .n = 0 }, l1 = { .n = 0 };
	uint32_t old_qpn, old_id, old_peer_id, new_id, new_peer_id;
	int errs[3] = { 0, 0, 0 }, ndown = 0, nold = 0, up_new = -1;
	int down_old = -1;
	struct mroce_qp_attr a;

	pair_setup(&s, 65536);
	write_ok(&s, 1, 4096, 0, 1);
	ev_drain(s.p.e[0], &l0);
	old_id = conn_id_0(&l0, &old_peer_id);
	l0.n = 0;
	/* Outstanding work when engine 1 dies: it never gets there. */
	s.p.filter = drop_to_1;
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 10 + i,
				      8192 * (uint32_t)i, 8192, 0),
				 0);
	pump_run(&s.p, NULL, NULL, 1000000);
	collect(&s);
	ck_assert_int_eq(s.s[0].nwc, 1);
	s.p.filter = NULL;
	restart_1(&s, 99);
	s.p.now += 2000000;
	old_qpn = reconnect_0(&s);
	/* The restarted side posts at once (its handshake is under way). */
	ck_assert_int_eq(post_recv(&s, 0, 30, 57344, 4096), 0);
	ck_assert_int_eq(post(&s, 1, MROCE_WR_RDMA_WRITE, 20, 0, 20000,
			      32768),
			 0);
	ck_assert_int_eq(post(&s, 1, MROCE_WR_SEND, 21, 1000, 3000, 0), 0);
	ck_assert(run_until_wcs(&s, 1 + 3 + 1, 2, 1000000000ull));
	for (int i = 1; i < s.s[0].nwc; i++) {
		struct mroce_wc *w = &s.s[0].wc[i];

		if (w->qpn == old_qpn) {
			ck_assert_uint_ge(w->wr_id, 10);
			ck_assert_uint_le(w->wr_id, 12);
			errs[w->wr_id - 10]++;
			ck_assert_int_eq(w->status,
					 w->wr_id == 10 ?
						 MROCE_WC_RETRY_EXC_ERR :
						 MROCE_WC_WR_FLUSH_ERR);
			nold++;
		} else {
			ck_assert_uint_eq(w->qpn, s.s[0].qpn);
			ck_assert_uint_eq(w->wr_id, 30);
			ck_assert_int_eq(w->status, MROCE_WC_SUCCESS);
			ck_assert_uint_eq(w->byte_len, 3000);
		}
	}
	ck_assert_int_eq(nold, 3);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(errs[i], 1);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(s.s[1].wc[i].status, MROCE_WC_SUCCESS);
	ck_assert(!memcmp(s.s[0].buf + 32768, s.s[1].buf, 20000));
	ck_assert(!memcmp(s.s[0].buf + 57344, s.s[1].buf + 1000, 3000));
	ck_assert_int_eq(mroce_query_qp(s.p.e[0], old_qpn, &a), 0);
	ck_assert_int_eq(a.state, MROCE_QPS_ERR);
	ck_assert_int_eq(qp_state(&s, 0), MROCE_QPS_RTS);
	/* The survivor's new QP sends to the restarted peer too. */
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 40, 0, 10000,
			      40000),
			 0);
	ck_assert(run_until_wcs(&s, 6, 2, 1000000000ull));
	ck_assert_int_eq(s.s[0].wc[5].status, MROCE_WC_SUCCESS);
	ck_assert_uint_eq(s.s[0].wc[5].wr_id, 40);
	ck_assert(!memcmp(s.s[1].buf + 40000, s.s[0].buf, 10000));
	/* Nothing completes twice, nothing hangs. */
	pump_run(&s.p, NULL, NULL, 100000000);
	collect(&s);
	ck_assert_int_eq(s.s[0].nwc, 6);
	ck_assert_int_eq(s.s[1].nwc, 2);
	ck_assert_uint_eq(stats(&s, 0).handshakes, 2);
	/* Events: DOWN(old id), then UP(new id) and its peer id update. */
	ev_drain(s.p.e[0], &l0);
	ev_drain(s.p.e[1], &l1);
	new_id = conn_id_0(&l0, &new_peer_id);
	ck_assert_uint_ne(new_id, old_id);
	for (int i = 0; i < l1.n; i++)
		if (l1.ev[i].type == MROCE_EV_CONN_UP)
			ck_assert_uint_eq(l1.ev[i].id, new_peer_id);
	ck_assert_uint_ne(new_peer_id, old_peer_id);
	for (int i = 0; i < l0.n; i++) {
		if (l0.ev[i].type == MROCE_EV_CONN_DOWN) {
			ndown++;
			down_old = i;
			ck_assert_uint_eq(l0.ev[i].id, old_id);
		}
		if (l0.ev[i].type == MROCE_EV_CONN_UP &&
		    l0.ev[i].id == new_id && up_new < 0)
			up_new = i;
	}
	ck_assert_int_eq(ndown, 1);
	ck_assert_int_ge(down_old, 0);
	ck_assert_int_gt(up_new, down_old);
	pair_fini(&s);
}
END_TEST

struct capture1 {
	uint8_t buf[PUMP_CAP];
	uint32_t len;
	uint16_t sport;
};

static enum pump_verdict capture_confirm_1(struct pump *p, int src, int dst,
					   const struct mroce_tx_pkt *t,
					   const struct mroce_meta_pkt *pk)
{
	struct capture1 *c = p->ctx;

	if (src == 1 && pk && pk->opcode == MROCE_OP_CONNECT_CONFIRM &&
	    !c->len) {
		memcpy(c->buf, t->buf, t->len);
		c->len = t->len;
		c->sport = t->sport;
	}
	return PUMP_PASS;
}

static int replay_to_0(struct pair *s, const struct capture1 *c)
{
	struct mroce_rx_meta m = { .peer = s->p.peer[0][1],
				   .sport = c->sport };

	return mroce_engine_rx(s->p.e[0], &m, c->buf, c->len, s->p.now);
}

/* A duplicate CONFIRM of the established peer is answered again (never
 * a teardown); one of an older incarnation, arriving after the restarted
 * peer's connection, is ignored. */
START_TEST(restart__replayed_confirm_never_tears_down)
{
	struct pair s;
	struct capture1 cap = { .len = 0 };
	struct evlog l0 = { .n = 0 };
	uint32_t id, pid, id2, pid2;

	pair_setup(&s, 65536);
	set_filter(&s, capture_confirm_1, &cap);
	write_ok(&s, 1, 4096, 0, 1);
	s.p.filter = NULL;
	ck_assert_uint_gt(cap.len, 0);
	ev_drain(s.p.e[0], &l0);
	id = conn_id_0(&l0, &pid);
	l0.n = 0;
	/* same incarnation: re-ACCEPT, connection kept */
	ck_assert_int_eq(replay_to_0(&s, &cap), 0);
	write_ok(&s, 2, 8192, 0, 2);
	ev_drain(s.p.e[0], &l0);
	ck_assert_int_eq(l0.n, 0);
	ck_assert_uint_eq(stats(&s, 0).handshakes, 1);
	/* engine 1 restarts; the old CONFIRM comes late */
	pump_run(&s.p, NULL, NULL, 5000000);
	s.p.now += 5000000;
	restart_1(&s, 77);
	reconnect_0(&s);
	ck_assert(pump_run(&s.p, cond_established_1, NULL, 1000000000ull));
	pump_run(&s.p, NULL, NULL, 1000000);
	ev_drain(s.p.e[0], &l0);
	id2 = conn_id_0(&l0, &pid2);
	ck_assert_uint_ne(id2, id);
	ck_assert_uint_ne(pid2, pid);
	l0.n = 0;
	ck_assert_int_eq(replay_to_0(&s, &cap), -ESTALE);
	write_ok(&s, 3, 8192, 100, 3);
	ck_assert(!memcmp(s.s[1].buf + 100, s.s[0].buf, 8192));
	ev_drain(s.p.e[0], &l0);
	ck_assert_int_eq(l0.n, 0);
	ck_assert_uint_eq(stats(&s, 0).handshakes, 2);
	pair_fini(&s);
}
END_TEST

START_TEST(conn_mem__at_most_16_kib_for_8_paths)
{
	struct mroce_engine *e;
	struct mroce_engine_cfg cfg = { .npaths = 8 };

	ck_assert_int_eq(mroce_engine_create(&cfg, &e), 0);
	ck_assert_uint_gt(mroce_engine_conn_mem(e), 8 * 1024);
	ck_assert_uint_le(mroce_engine_conn_mem(e), 16 * 1024);
	mroce_engine_destroy(e);
}
END_TEST

MROCE_SUITE(engine_metaroce_suite)
Suite *engine_metaroce_suite(void)
{
	Suite *s = suite_create("engine_metaroce");
	TCase *tc = tcase_create("metaroce");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, mr_rx_mark__advances_over_contiguous_sack_only);
	tcase_add_test(tc, handshake__establishes_both_sides);
	tcase_add_test(tc, handshake__retransmitted_on_loss);
	tcase_add_test(tc, handshake__responder_keeps_no_state_and_checks_cookie);
	tcase_add_test(tc, handshake__stale_cookie_rejected);
	tcase_add_test(tc, handshake__initiator_retry_after_lost_accepts);
	tcase_add_test(tc, write__byte_exact_sizes);
	tcase_add_test(tc, write__large_several_mib);
	tcase_add_test(tc, send__byte_exact_with_imm_and_recv_completion);
	tcase_add_test(tc, write_imm__consumes_a_receive);
	tcase_add_test(tc, read__byte_exact);
	tcase_add_test(tc, read__more_outstanding_than_rd_atomic);
	tcase_add_test(tc, ack__coalesced_on_clean_transfer);
	tcase_add_test(tc, loss__selective_retransmit_of_exactly_that_packet);
	tcase_add_test(tc, dup__suppressed_and_completes_once);
	tcase_add_test(tc, reorder__placed_out_of_order_completed_in_order);
	tcase_add_test(tc, loss__random_5pct_both_ways_large_write_and_read);
	tcase_add_test(tc, chaos__mixed_ops_loss_dup_reorder_complete_in_order);
	tcase_add_test(tc, remote__bad_rkey_access_error_qp_err_and_flush);
	tcase_add_test(tc, remote__out_of_bounds_is_access_error);
	tcase_add_test(tc, remote__missing_access_right_is_access_error);
	tcase_add_test(tc, remote__read_source_deregistered_before_response);
	tcase_add_test(tc, remote__send_longer_than_receive_is_invalid_request);
	tcase_add_test(tc, rnr__send_waits_for_late_receive);
	tcase_add_test(tc, rnr__large_send_resumes_after_hold);
	tcase_add_test(tc, rnr__retry_exhausted);
	tcase_add_test(tc, retry__all_dropped_is_retry_exceeded);
	tcase_add_test(tc, retry__handshake_to_silent_peer_fails_wr);
	tcase_add_test(tc, retry__read_responses_all_lost);
	tcase_add_test(tc, path__blackhole_rerolled_and_transfer_completes);
	tcase_add_test(tc, path__silent_path_rerolled_within_few_rtts);
	tcase_add_test(tc, next_timer__never_when_quiet_and_now_after_post);
	tcase_add_test(tc, path__reroll_probation_keeps_data_off_unproven_port);
	tcase_add_test(tc, spray__moves_traffic_off_congested_path);
	tcase_add_test(tc, path_explore__finds_the_empty_plane);
	tcase_add_test(tc, path__lossy_path_rerolled);
	tcase_add_test(tc, handshake__lost_accept_recovered_without_timer);
	tcase_add_test(tc, path__first_flight_loss_timed_by_handshake_rtt);
	tcase_add_test(tc, path__random_loss_retires_no_path);
	tcase_add_test(tc, path_explore__finds_the_empty_plane_under_loss);
	tcase_add_test(tc, path_explore__software_endpoint_finds_the_idle_plane);
	tcase_add_test(tc, path_explore__software_endpoint_still_on_a_clean_fabric);
	tcase_add_test(tc, pace__software_endpoint_sends_a_burst);
	tcase_add_test(tc, ack__software_receiver_coalesces_a_stream_of_messages);
	tcase_add_test(tc, path__receiver_paused_then_resumed_completes);
	tcase_add_test(tc, psn__wraps_at_2_32);
	tcase_add_test(tc, rx__mutated_packets_never_write_outside_regions);
	tcase_add_test(tc, conn_mem__at_most_16_kib_for_8_paths);
	tcase_add_test(tc, restart__peer_restarted_gets_new_connection);
	tcase_add_test(tc, restart__replayed_confirm_never_tears_down);
	tcase_add_test(tc, ack__sprayed_over_the_receivers_own_ports);
	tcase_add_test(tc, ack_port__dead_reverse_port_retired_and_replaced);
	tcase_add_test(tc, no_conn__restarted_peer_fails_survivor_at_once);
	tcase_add_test(tc, no_conn__forged_nak_ignored);
	suite_add_tcase(s, tc);
	return s;
}
