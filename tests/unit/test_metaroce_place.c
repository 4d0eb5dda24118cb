// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of the MetaRoCE engine: placement and delivery (place.c): byte-exact
 * WRITE, SEND, WRITE_IMM and READ; remote errors (keys, bounds, access, sizes);
 * RNR. Two (or more) engines through the in-test pump (metaroce_pair.h).
 */
#include "metaroce_pair.h"

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
	/* the connection survives for other streams: a new QP pair on it
	 * (no second handshake) moves data */
	{
		uint32_t q0 = new_qp(&s, 0), q1 = new_qp(&s, 1);

		ck_assert_int_eq(qp_connect(s.p.e[0], q0, s.p.peer[0][1], q1,
					    s.p.now),
				 0);
		ck_assert_int_eq(qp_connect(s.p.e[1], q1, s.p.peer[1][0], q0,
					    s.p.now),
				 0);
		wr.wr_id = 4;
		wr.sge.length = 1000;
		ck_assert_int_eq(mroce_post_send(s.p.e[0], q0, &wr, s.p.now),
				 0);
		ck_assert(run_until_wcs(&s, 3, 0, 1000000000ull));
		ck_assert_int_eq(s.s[0].wc[2].status, MROCE_WC_SUCCESS);
		ck_assert_uint_eq(s.s[0].wc[2].wr_id, 4);
		ck_assert(!memcmp(s.s[1].buf, s.s[0].buf, 1000));
		ck_assert_uint_eq(stats(&s, 0).handshakes, 1);
	}
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

MROCE_SUITE(metaroce_place_suite)
Suite *metaroce_place_suite(void)
{
	Suite *s = suite_create("metaroce_place");
	TCase *tc = tcase_create("place");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, write__byte_exact_sizes);
	tcase_add_test(tc, write__large_several_mib);
	tcase_add_test(tc, send__byte_exact_with_imm_and_recv_completion);
	tcase_add_test(tc, write_imm__consumes_a_receive);
	tcase_add_test(tc, read__byte_exact);
	tcase_add_test(tc, read__more_outstanding_than_rd_atomic);
	tcase_add_test(tc, remote__bad_rkey_access_error_qp_err_and_flush);
	tcase_add_test(tc, remote__out_of_bounds_is_access_error);
	tcase_add_test(tc, remote__missing_access_right_is_access_error);
	tcase_add_test(tc, remote__read_source_deregistered_before_response);
	tcase_add_test(tc, remote__send_longer_than_receive_is_invalid_request);
	tcase_add_test(tc, rnr__send_waits_for_late_receive);
	tcase_add_test(tc, rnr__large_send_resumes_after_hold);
	tcase_add_test(tc, rnr__retry_exhausted);
	suite_add_tcase(s, tc);
	return s;
}
