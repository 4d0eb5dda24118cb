// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of user/engine/engine.c: configuration, RNG, peers, MRs, CQs, the
 * QP state machine, work request validation and flushing.
 */
#include <sys/socket.h>

#include "../harness.h"
#include "../../user/engine/engine_int.h"

#define ACC_ALL                                                                \
	(MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |                \
	 MROCE_ACCESS_REMOTE_READ)

static struct mroce_engine *mk(uint64_t seed)
{
	struct mroce_engine_cfg cfg = { .seed = seed };
	struct mroce_engine *e;

	ck_assert_int_eq(mroce_engine_create(&cfg, &e), 0);
	return e;
}

static int mk_peer(struct mroce_engine *e, uint8_t last)
{
	struct mroce_peer_addr a = { .family = AF_INET };

	a.addr[0] = 10;
	a.addr[3] = last;
	return mroce_peer_add(e, &a);
}

static uint32_t mk_qp(struct mroce_engine *e, int cq, uint32_t nsend,
		      uint32_t nrecv)
{
	struct mroce_qp_init_attr a = { .send_cq = cq, .recv_cq = cq,
					.max_send_wr = nsend,
					.max_recv_wr = nrecv };
	int r = mroce_create_qp(e, &a);

	ck_assert_int_gt(r, 0);
	return (uint32_t)r;
}

static int to_state(struct mroce_engine *e, uint32_t qpn,
		    enum mroce_qp_state s, int peer)
{
	struct mroce_qp_attr a = { .peer = peer, .dest_qpn = 0x123 };
	enum mroce_qp_state path[] = { MROCE_QPS_INIT, MROCE_QPS_RTR,
				       MROCE_QPS_RTS };
	int err;

	if (s == MROCE_QPS_RESET)
		return 0;
	if (s == MROCE_QPS_ERR) {
		a.state = MROCE_QPS_ERR;
		return mroce_modify_qp(e, qpn, &a, MROCE_QP_STATE, 0);
	}
	for (int i = 0; i < 3; i++) {
		a.state = path[i];
		err = mroce_modify_qp(e, qpn, &a,
				      MROCE_QP_STATE |
					      (path[i] == MROCE_QPS_RTR ?
						       MROCE_QP_DEST :
						       0),
				      0);
		if (err)
			return err;
		if (path[i] == s)
			return 0;
	}
	return 0;
}

static enum mroce_qp_state state_of(struct mroce_engine *e, uint32_t qpn)
{
	struct mroce_qp_attr a;

	ck_assert_int_eq(mroce_query_qp(e, qpn, &a), 0);
	return a.state;
}

/* ------------------------------------------------------------------ */
START_TEST(mroce_engine_cfg_default__fills_only_zero_fields)
{
	struct mroce_engine_cfg c = { .mtu = 1024, .retry_cnt = 3 };

	mroce_engine_cfg_default(&c);
	ck_assert_uint_eq(c.transport, MROCE_TRANSPORT_METAROCE);
	ck_assert_uint_eq(c.npaths, 8);
	ck_assert_uint_eq(c.mtu, 1024);
	ck_assert_uint_eq(c.retry_cnt, 3);
	ck_assert_uint_eq(c.rnr_retry, 7);
	ck_assert_uint_eq(c.max_qps, 4096);
	ck_assert_uint_eq(c.rto_min_us, 200);
}
END_TEST

START_TEST(mroce_engine_create__rejects_bad_config)
{
	struct mroce_engine *e;
	struct mroce_engine_cfg c = { .transport = 3 };

	ck_assert_int_eq(mroce_engine_create(&c, &e), -EINVAL);
	c = (struct mroce_engine_cfg){ .npaths = MROCE_MAX_PATHS + 1 };
	ck_assert_int_eq(mroce_engine_create(&c, &e), -EINVAL);
	c = (struct mroce_engine_cfg){ .mtu = 100 };
	ck_assert_int_eq(mroce_engine_create(&c, &e), -EINVAL);
	c = (struct mroce_engine_cfg){ .mtu = MROCE_MAX_PAYLOAD + 4 };
	ck_assert_int_eq(mroce_engine_create(&c, &e), -EINVAL);
	ck_assert_int_eq(mroce_engine_create(NULL, &e), -EINVAL);
	mroce_engine_destroy(NULL);
}
END_TEST

START_TEST(mroce_rng__same_seed_same_sequence)
{
	struct mroce_engine *a = mk(5), *b = mk(5), *c = mk(6);
	int same = 0;

	for (int i = 0; i < 100; i++) {
		uint64_t x = mroce_rng_u64(a);

		ck_assert_uint_eq(x, mroce_rng_u64(b));
		same += x == mroce_rng_u64(c);
	}
	ck_assert_int_lt(same, 2);
	for (int i = 0; i < 1000; i++)
		ck_assert_uint_lt(mroce_rng_below(a, 7), 7);
	mroce_engine_destroy(a);
	mroce_engine_destroy(b);
	mroce_engine_destroy(c);
}
END_TEST

START_TEST(mroce_peer_add__same_address_same_id)
{
	struct mroce_engine *e = mk(1);
	struct mroce_peer_addr bad = { .family = 99 };

	ck_assert_int_eq(mk_peer(e, 1), 0);
	ck_assert_int_eq(mk_peer(e, 2), 1);
	ck_assert_int_eq(mk_peer(e, 1), 0);
	ck_assert_int_eq(mroce_peer_add(e, &bad), -EINVAL);
	for (int i = 3; i < 40; i++)	/* grows */
		ck_assert_int_eq(mk_peer(e, (uint8_t)i), i - 1);
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mroce_reg_mr__keys_random_nonzero_and_checked)
{
	struct mroce_engine_cfg cfg = { .max_mrs = 3 };
	struct mroce_engine *e;
	struct mroce_mr m[3], x;
	static uint8_t buf[4096];

	ck_assert_int_eq(mroce_engine_create(&cfg, &e), 0);
	ck_assert_int_eq(mroce_reg_mr(e, buf, 100, MROCE_ACCESS_REMOTE_WRITE,
				      &x),
			 -EINVAL);	/* remote write needs local write */
	ck_assert_int_eq(mroce_reg_mr(e, buf, 100, 0x80, &x), -EINVAL);
	ck_assert_int_eq(mroce_reg_mr(e, NULL, 100, 0, &x), -EINVAL);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(mroce_reg_mr(e, buf + i, 100, ACC_ALL, &m[i]),
				 0);
		ck_assert_uint_ne(m[i].lkey, 0);
		ck_assert_uint_ne(m[i].rkey, 0);
		ck_assert_uint_ne(m[i].lkey, m[i].rkey);
		ck_assert_uint_eq(m[i].addr, (uint64_t)(uintptr_t)(buf + i));
	}
	ck_assert_uint_ne(m[0].rkey, m[1].rkey);
	ck_assert_int_eq(mroce_reg_mr(e, buf, 100, ACC_ALL, &x), -ENOMEM);
	ck_assert_int_eq(mroce_dereg_mr(e, m[1].rkey), -ENOENT);
	ck_assert_int_eq(mroce_dereg_mr(e, m[1].lkey), 0);
	ck_assert_int_eq(mroce_dereg_mr(e, m[1].lkey), -ENOENT);
	ck_assert_int_eq(mroce_reg_mr(e, buf, 100, ACC_ALL, &x), 0);
	ck_assert_uint_ne(x.lkey, m[1].lkey);	/* fresh key, same slot */
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mroce_rkey_check__bounds_access_and_bad_key)
{
	struct mroce_engine *e = mk(2);
	static uint8_t buf[1000];
	struct mroce_mr rw, ro;
	struct mroce_qp qp = { .access = MROCE_ACCESS_REMOTE_WRITE |
					 MROCE_ACCESS_REMOTE_READ };
	uint64_t a = (uint64_t)(uintptr_t)buf;
	const uint32_t W = MROCE_ACCESS_REMOTE_WRITE;

	ck_assert_int_eq(mroce_reg_mr(e, buf, 1000, ACC_ALL, &rw), 0);
	ck_assert_int_eq(mroce_reg_mr(e, buf, 500, MROCE_ACCESS_REMOTE_READ,
				      &ro),
			 0);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, rw.rkey, a, 1000, W),
			 MROCE_MRC_OK);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, rw.rkey, a + 999, 1, W),
			 MROCE_MRC_OK);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, rw.rkey, a + 999, 2, W),
			 MROCE_MRC_BOUNDS);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, rw.rkey, a - 1, 2, W),
			 MROCE_MRC_BOUNDS);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, rw.rkey, UINT64_MAX, 2, W),
			 MROCE_MRC_BOUNDS);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, rw.rkey, a, UINT64_MAX, W),
			 MROCE_MRC_BOUNDS);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, rw.lkey, a, 1, W),
			 MROCE_MRC_BAD_KEY);	/* lkey is not an rkey */
	ck_assert_int_eq(mroce_rkey_check(e, &qp, rw.rkey ^ 0x100000, a, 1, W),
			 MROCE_MRC_BAD_KEY);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, ro.rkey, a, 1, W),
			 MROCE_MRC_ACCESS);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, ro.rkey, a, 1,
					  MROCE_ACCESS_REMOTE_READ),
			 MROCE_MRC_OK);
	qp.access = MROCE_ACCESS_REMOTE_READ;	/* the QP forbids writes */
	ck_assert_int_eq(mroce_rkey_check(e, &qp, rw.rkey, a, 1, W),
			 MROCE_MRC_ACCESS);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, 0, a, 0, W), MROCE_MRC_OK);
	ck_assert_int_eq(mroce_lkey_check(e, rw.lkey, a, 1000,
					  MROCE_ACCESS_LOCAL_WRITE, NULL),
			 MROCE_MRC_OK);
	ck_assert_int_eq(mroce_lkey_check(e, ro.lkey, a, 10,
					  MROCE_ACCESS_LOCAL_WRITE, NULL),
			 MROCE_MRC_ACCESS);
	ck_assert_int_eq(mroce_lkey_check(e, rw.rkey, a, 1, 0, NULL),
			 MROCE_MRC_BAD_KEY);
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mroce_create_cq__destroy_busy_and_reuse)
{
	struct mroce_engine *e = mk(3);
	int cq = mroce_create_cq(e, 4), cq2;
	uint32_t qpn;

	ck_assert_int_ge(cq, 0);
	ck_assert_int_eq(mroce_create_cq(e, 0), -EINVAL);
	qpn = mk_qp(e, cq, 4, 4);
	ck_assert_int_eq(mroce_destroy_cq(e, cq), -EBUSY);
	ck_assert_int_eq(mroce_destroy_qp(e, qpn), 0);
	ck_assert_int_eq(mroce_destroy_cq(e, cq), 0);
	ck_assert_int_eq(mroce_destroy_cq(e, cq), -ENOENT);
	cq2 = mroce_create_cq(e, 4);
	ck_assert_int_eq(cq2, cq);
	ck_assert_int_eq(mroce_poll_cq(e, 99, NULL, 0), -ENOENT);
	ck_assert_int_eq(mroce_poll_cq(e, cq2, NULL, -1), -EINVAL);
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mroce_cq_push__overflow_moves_qps_to_err)
{
	struct mroce_engine *e = mk(4);
	int cq = mroce_create_cq(e, 2), other = mroce_create_cq(e, 8);
	uint32_t a = mk_qp(e, cq, 4, 4), b = mk_qp(e, other, 4, 4);
	struct mroce_wc wc = { .wr_id = 1 }, out[4];

	ck_assert_int_eq(to_state(e, a, MROCE_QPS_INIT, 0), 0);
	ck_assert_int_eq(to_state(e, b, MROCE_QPS_INIT, 0), 0);
	ck_assert_int_eq(mroce_cq_push(e, cq, &wc), 0);
	ck_assert_int_eq(mroce_cq_push(e, cq, &wc), 0);
	ck_assert_int_eq(mroce_cq_push(e, cq, &wc), -ENOSPC);
	ck_assert_int_eq(state_of(e, a), MROCE_QPS_ERR);
	ck_assert_int_eq(state_of(e, b), MROCE_QPS_INIT);
	ck_assert(e->cqs[cq].overflowed);
	ck_assert_int_eq(mroce_poll_cq(e, cq, out, 4), 2);
	ck_assert_int_eq(mroce_poll_cq(e, cq, out, 4), 0);
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mroce_create_qp__numbers_and_limits)
{
	struct mroce_engine_cfg cfg = { .max_qps = 40 };
	struct mroce_engine *e;
	struct mroce_qp_init_attr bad = { .send_cq = 0, .recv_cq = 5,
					  .max_send_wr = 1 };
	uint32_t q[40];
	int cq;

	ck_assert_int_eq(mroce_engine_create(&cfg, &e), 0);
	cq = mroce_create_cq(e, 8);
	ck_assert_int_eq(mroce_create_qp(e, &bad), -ENOENT);
	bad.recv_cq = cq;
	bad.max_send_wr = 0;
	ck_assert_int_eq(mroce_create_qp(e, &bad), -EINVAL);
	for (int i = 0; i < 40; i++) {
		q[i] = mk_qp(e, cq, 1, 0);
		ck_assert_uint_le(q[i], 0xffffff);
	}
	bad.max_send_wr = 1;
	ck_assert_int_eq(mroce_create_qp(e, &bad), -ENOMEM);
	/* delete every other one: the rest must still be found */
	for (int i = 0; i < 40; i += 2)
		ck_assert_int_eq(mroce_destroy_qp(e, q[i]), 0);
	for (int i = 0; i < 40; i++)
		ck_assert_int_eq(mroce_qp_find(e, q[i]) != NULL, i % 2);
	ck_assert_int_eq(mroce_destroy_qp(e, q[0]), -ENOENT);
	mroce_engine_destroy(e);
}
END_TEST

/* Every (from, to) pair of the state machine. */
START_TEST(mroce_modify_qp__every_transition)
{
	static const bool ok[5][5] = {
		/*            RESET  INIT   RTR    RTS    ERR */
		[MROCE_QPS_RESET] = { 1, 1, 0, 0, 1 },
		[MROCE_QPS_INIT] = { 1, 1, 1, 0, 1 },
		[MROCE_QPS_RTR] = { 1, 0, 0, 1, 1 },
		[MROCE_QPS_RTS] = { 1, 0, 0, 1, 1 },
		[MROCE_QPS_ERR] = { 1, 0, 0, 0, 1 },
	};
	struct mroce_engine *e = mk(5);
	int cq = mroce_create_cq(e, 64), peer = mk_peer(e, 9);

	for (int from = 0; from < 5; from++) {
		for (int to = 0; to < 5; to++) {
			uint32_t qpn = mk_qp(e, cq, 4, 4);
			struct mroce_qp_attr a = { .state = to, .peer = peer,
						   .dest_qpn = 77 };
			uint32_t mask = MROCE_QP_STATE;
			int err;

			ck_assert_int_eq(to_state(e, qpn, from, peer), 0);
			ck_assert_int_eq(state_of(e, qpn), from);
			if (from == MROCE_QPS_INIT && to == MROCE_QPS_RTR)
				mask |= MROCE_QP_DEST;
			err = mroce_modify_qp(e, qpn, &a, mask, 0);
			if (ok[from][to]) {
				ck_assert_msg(err == 0, "%s->%s: %d",
					      mroce_qp_state_name(from),
					      mroce_qp_state_name(to), err);
				ck_assert_int_eq(state_of(e, qpn), to);
			} else {
				ck_assert_msg(err == -EPERM, "%s->%s: %d",
					      mroce_qp_state_name(from),
					      mroce_qp_state_name(to), err);
				ck_assert_int_eq(state_of(e, qpn), from);
			}
			ck_assert_int_eq(mroce_destroy_qp(e, qpn), 0);
		}
	}
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mroce_modify_qp__attribute_rules)
{
	struct mroce_engine *e = mk(6);
	int cq = mroce_create_cq(e, 64), peer = mk_peer(e, 9);
	uint32_t qpn = mk_qp(e, cq, 4, 4);
	struct mroce_qp_attr a = { .state = MROCE_QPS_INIT, .access = 0x80 };

	ck_assert_int_eq(mroce_modify_qp(e, qpn, &a,
					 MROCE_QP_STATE | MROCE_QP_ACCESS_FLAGS,
					 0),
			 -EINVAL);	/* unknown access bit */
	a.access = MROCE_ACCESS_REMOTE_WRITE;
	ck_assert_int_eq(mroce_modify_qp(e, qpn, &a,
					 MROCE_QP_STATE | MROCE_QP_SQ_PSN, 0),
			 -EINVAL);	/* SQ PSN belongs to RTR->RTS */
	ck_assert_int_eq(mroce_modify_qp(e, qpn, &a,
					 MROCE_QP_STATE | MROCE_QP_ACCESS_FLAGS,
					 0),
			 0);
	a.state = MROCE_QPS_RTR;
	ck_assert_int_eq(mroce_modify_qp(e, qpn, &a, MROCE_QP_STATE, 0),
			 -EINVAL);	/* RTR needs DEST */
	a.peer = 42;
	a.dest_qpn = 5;
	ck_assert_int_eq(mroce_modify_qp(e, qpn, &a,
					 MROCE_QP_STATE | MROCE_QP_DEST, 0),
			 -EINVAL);	/* no such peer */
	a.peer = peer;
	a.dest_qpn = 0x1000000;
	ck_assert_int_eq(mroce_modify_qp(e, qpn, &a,
					 MROCE_QP_STATE | MROCE_QP_DEST, 0),
			 -EINVAL);	/* 24-bit QPN */
	a.dest_qpn = 5;
	a.rq_psn = 99;
	ck_assert_int_eq(mroce_modify_qp(e, qpn, &a,
					 MROCE_QP_STATE | MROCE_QP_DEST |
						 MROCE_QP_RQ_PSN,
					 0),
			 0);
	ck_assert_int_eq(mroce_query_qp(e, qpn, &a), 0);
	ck_assert_int_eq(a.state, MROCE_QPS_RTR);
	ck_assert_int_eq(a.peer, peer);
	ck_assert_uint_eq(a.dest_qpn, 5);
	ck_assert_uint_eq(a.rq_psn, 99);
	ck_assert_uint_eq(a.access, MROCE_ACCESS_REMOTE_WRITE);
	ck_assert_int_eq(mroce_modify_qp(e, 0x999999, &a, MROCE_QP_STATE, 0),
			 -ENOENT);
	ck_assert_int_eq(mroce_query_qp(e, 0x999999, &a), -ENOENT);
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mroce_post_send__errors_in_every_state)
{
	struct mroce_engine *e = mk(7);
	int cq = mroce_create_cq(e, 64), peer = mk_peer(e, 9);
	static uint8_t buf[4096];
	struct mroce_mr mr, ro;
	struct mroce_send_wr wr = { .opcode = MROCE_WR_SEND };

	ck_assert_int_eq(mroce_reg_mr(e, buf, 4096, ACC_ALL, &mr), 0);
	ck_assert_int_eq(mroce_reg_mr(e, buf, 4096, MROCE_ACCESS_REMOTE_READ,
				      &ro),
			 0);
	wr.sge.addr = (uint64_t)(uintptr_t)buf;
	wr.sge.length = 100;
	wr.sge.lkey = mr.lkey;
	for (int s = 0; s < 5; s++) {
		uint32_t qpn = mk_qp(e, cq, 2, 2);

		ck_assert_int_eq(to_state(e, qpn, s, peer), 0);
		ck_assert_int_eq(mroce_post_send(e, qpn, &wr, 0),
				 s == MROCE_QPS_RTS ? 0 : -EPERM);
		ck_assert_int_eq(mroce_destroy_qp(e, qpn), 0);
	}
	{
		uint32_t qpn = mk_qp(e, cq, 2, 2);
		struct mroce_send_wr w = wr;

		ck_assert_int_eq(to_state(e, qpn, MROCE_QPS_RTS, peer), 0);
		w.opcode = 17;
		ck_assert_int_eq(mroce_post_send(e, qpn, &w, 0), -EINVAL);
		w = wr;
		w.sge.lkey ^= 0x1000;
		ck_assert_int_eq(mroce_post_send(e, qpn, &w, 0), -EINVAL);
		w = wr;
		w.sge.length = 4097;
		ck_assert_int_eq(mroce_post_send(e, qpn, &w, 0), -EINVAL);
		w = wr;
		w.send_flags = 0x100;
		ck_assert_int_eq(mroce_post_send(e, qpn, &w, 0), -EINVAL);
		w = wr;	/* READ needs a locally writable sink */
		w.opcode = MROCE_WR_RDMA_READ;
		w.sge.lkey = ro.lkey;
		ck_assert_int_eq(mroce_post_send(e, qpn, &w, 0), -EINVAL);
		w.sge.length = 0;	/* zero length checks no key */
		ck_assert_int_eq(mroce_post_send(e, qpn, &w, 0), 0);
		ck_assert_int_eq(mroce_post_send(e, qpn, &wr, 0), 0);
		ck_assert_int_eq(mroce_post_send(e, qpn, &wr, 0), -EAGAIN);
		ck_assert_int_eq(mroce_post_send(e, 0x777777, &wr, 0),
				 -ENOENT);
	}
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mroce_post_recv__states_and_checks)
{
	struct mroce_engine *e = mk(8);
	int cq = mroce_create_cq(e, 64), peer = mk_peer(e, 9);
	static uint8_t buf[4096];
	struct mroce_mr mr, ro;
	struct mroce_recv_wr wr = { .wr_id = 1 };
	uint32_t qpn = mk_qp(e, cq, 2, 2);

	ck_assert_int_eq(mroce_reg_mr(e, buf, 4096, ACC_ALL, &mr), 0);
	ck_assert_int_eq(mroce_reg_mr(e, buf, 4096, MROCE_ACCESS_REMOTE_READ,
				      &ro),
			 0);
	wr.sge.addr = (uint64_t)(uintptr_t)buf;
	wr.sge.length = 100;
	wr.sge.lkey = mr.lkey;
	ck_assert_int_eq(mroce_post_recv(e, qpn, &wr), -EPERM);	/* RESET */
	ck_assert_int_eq(to_state(e, qpn, MROCE_QPS_INIT, peer), 0);
	wr.sge.lkey = ro.lkey;
	ck_assert_int_eq(mroce_post_recv(e, qpn, &wr), -EINVAL);
	wr.sge.lkey = mr.lkey;
	ck_assert_int_eq(mroce_post_recv(e, qpn, &wr), 0);
	ck_assert_int_eq(mroce_post_recv(e, qpn, &wr), 0);
	ck_assert_int_eq(mroce_post_recv(e, qpn, &wr), -EAGAIN);
	ck_assert_int_eq(to_state(e, qpn, MROCE_QPS_ERR, peer), 0);
	ck_assert_int_eq(mroce_post_recv(e, qpn, &wr), -EPERM);
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mroce_qp_to_err__flushes_everything_in_order)
{
	struct mroce_engine *e = mk(9);
	int cq = mroce_create_cq(e, 64), peer = mk_peer(e, 9);
	static uint8_t buf[4096];
	struct mroce_mr mr;
	struct mroce_send_wr wr = { .opcode = MROCE_WR_RDMA_WRITE };
	struct mroce_recv_wr rwr = { 0 };
	struct mroce_wc wc[8];
	uint32_t qpn = mk_qp(e, cq, 4, 4);

	ck_assert_int_eq(mroce_reg_mr(e, buf, 4096, ACC_ALL, &mr), 0);
	ck_assert_int_eq(to_state(e, qpn, MROCE_QPS_RTS, peer), 0);
	wr.sge.addr = (uint64_t)(uintptr_t)buf;
	wr.sge.length = 10;
	wr.sge.lkey = mr.lkey;
	for (int i = 0; i < 2; i++) {
		wr.wr_id = 10 + i;	/* unsignaled: flushes still report */
		ck_assert_int_eq(mroce_post_send(e, qpn, &wr, 0), 0);
		rwr.wr_id = 20 + i;
		ck_assert_int_eq(mroce_post_recv(e, qpn, &rwr), 0);
	}
	ck_assert_int_eq(to_state(e, qpn, MROCE_QPS_ERR, peer), 0);
	ck_assert_int_eq(mroce_poll_cq(e, cq, wc, 8), 4);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(wc[i].status, MROCE_WC_WR_FLUSH_ERR);
		ck_assert_uint_eq(wc[i].qpn, qpn);
	}
	ck_assert_uint_eq(wc[0].wr_id, 10);
	ck_assert_uint_eq(wc[1].wr_id, 11);
	ck_assert_int_eq(wc[0].opcode, MROCE_WC_RDMA_WRITE);
	ck_assert_uint_eq(wc[2].wr_id, 20);
	ck_assert_int_eq(wc[2].opcode, MROCE_WC_RECV);
	/* again: nothing more (idempotent) */
	ck_assert_int_eq(to_state(e, qpn, MROCE_QPS_ERR, peer), 0);
	ck_assert_int_eq(mroce_poll_cq(e, cq, wc, 8), 0);
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mroce_modify_qp__reset_drops_queues_silently)
{
	struct mroce_engine *e = mk(10);
	int cq = mroce_create_cq(e, 64), peer = mk_peer(e, 9);
	struct mroce_recv_wr rwr = { .wr_id = 1 };
	struct mroce_qp_attr a = { .state = MROCE_QPS_RESET };
	struct mroce_wc wc[4];
	uint32_t qpn = mk_qp(e, cq, 4, 4);

	ck_assert_int_eq(to_state(e, qpn, MROCE_QPS_INIT, peer), 0);
	ck_assert_int_eq(mroce_post_recv(e, qpn, &rwr), 0);
	ck_assert_int_eq(mroce_modify_qp(e, qpn, &a, MROCE_QP_STATE, 0), 0);
	ck_assert_int_eq(mroce_poll_cq(e, cq, wc, 4), 0);
	ck_assert_int_eq(mroce_query_qp(e, qpn, &a), 0);
	ck_assert_int_eq(a.peer, -1);
	ck_assert_uint_eq(mroce_qp_find(e, qpn)->rq_tail -
				  mroce_qp_find(e, qpn)->rq_head,
			  0);
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mroce_wc_status_str__names)
{
	ck_assert_str_eq(mroce_wc_status_str(MROCE_WC_SUCCESS), "success");
	ck_assert_str_eq(mroce_wc_status_str(MROCE_WC_WR_FLUSH_ERR),
			 "Work Request Flushed Error");
	ck_assert_str_eq(mroce_wc_status_str(99), "unknown");
	ck_assert_str_eq(mroce_qp_state_name(MROCE_QPS_RTS), "RTS");
	ck_assert_str_eq(mroce_qp_state_name(42), "UNKNOWN");
}
END_TEST

MROCE_SUITE(engine_suite)
Suite *engine_suite(void)
{
	Suite *s = suite_create("engine");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, mroce_engine_cfg_default__fills_only_zero_fields);
	tcase_add_test(tc, mroce_engine_create__rejects_bad_config);
	tcase_add_test(tc, mroce_rng__same_seed_same_sequence);
	tcase_add_test(tc, mroce_peer_add__same_address_same_id);
	tcase_add_test(tc, mroce_reg_mr__keys_random_nonzero_and_checked);
	tcase_add_test(tc, mroce_rkey_check__bounds_access_and_bad_key);
	tcase_add_test(tc, mroce_create_cq__destroy_busy_and_reuse);
	tcase_add_test(tc, mroce_cq_push__overflow_moves_qps_to_err);
	tcase_add_test(tc, mroce_create_qp__numbers_and_limits);
	tcase_add_test(tc, mroce_modify_qp__every_transition);
	tcase_add_test(tc, mroce_modify_qp__attribute_rules);
	tcase_add_test(tc, mroce_post_send__errors_in_every_state);
	tcase_add_test(tc, mroce_post_recv__states_and_checks);
	tcase_add_test(tc, mroce_qp_to_err__flushes_everything_in_order);
	tcase_add_test(tc, mroce_modify_qp__reset_drops_queues_silently);
	tcase_add_test(tc, mroce_wc_status_str__names);
	suite_add_tcase(s, tc);
	return s;
}
