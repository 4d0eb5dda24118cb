// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of the MetaRoCE engine: the handshake (handshake.c): establishment,
 * retransmission, the stateless responder and its cookie, lost ACCEPTs, a
 * silent peer. Two (or more) engines through the in-test pump
 * (metaroce_pair.h).
 */
#include "metaroce_pair.h"

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

MROCE_SUITE(metaroce_handshake_suite)
Suite *metaroce_handshake_suite(void)
{
	Suite *s = suite_create("metaroce_handshake");
	TCase *tc = tcase_create("handshake");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, handshake__establishes_both_sides);
	tcase_add_test(tc, handshake__retransmitted_on_loss);
	tcase_add_test(tc, handshake__responder_keeps_no_state_and_checks_cookie);
	tcase_add_test(tc, handshake__stale_cookie_rejected);
	tcase_add_test(tc, handshake__initiator_retry_after_lost_accepts);
	tcase_add_test(tc, retry__handshake_to_silent_peer_fails_wr);
	tcase_add_test(tc, handshake__lost_accept_recovered_without_timer);
	suite_add_tcase(s, tc);
	return s;
}
