// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * RoCEv2 errors (user/engine/rocev2/: fatal NAKs, RNR, retry exhaustion)
 * and the receive path's validation of malformed and foreign packets;
 * QP reset and reconnect. The world: rocev2_world.h.
 */
#include "../harness.h"
#include "rocev2_world.h"

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

MROCE_SUITE(rocev2_errors_suite)
Suite *rocev2_errors_suite(void)
{
	Suite *s = suite_create("rocev2_errors");
	TCase *tc = tcase_create("errors");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, rv2_write__bad_rkey_rem_access_err_and_flush);
	tcase_add_test(tc, rv2_write__out_of_bounds_rem_access_err);
	tcase_add_test(tc, rv2_read__bad_rkey_rem_access_err);
	tcase_add_test(tc, rv2_read__no_remote_access_rem_access_err);
	tcase_add_test(tc, rv2_send__longer_than_receive_rem_inv_req);
	tcase_add_test(tc, rv2_rnr__retry_after_timer);
	tcase_add_test(tc, rv2_rnr__retry_exhausted);
	tcase_add_test(tc, rv2_timeout__all_dropped_retry_exc_err);
	tcase_add_test(tc, rv2_rx__rejects_malformed_and_strangers);
	tcase_add_test(tc, rv2_rx__survives_corrupted_headers);
	tcase_add_test(tc, rv2_tx__small_buffer_rejected);
	tcase_add_test(tc, rv2_qp__reset_and_reconnect);
	suite_add_tcase(s, tc);
	return s;
}
