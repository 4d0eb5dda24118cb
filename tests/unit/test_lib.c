// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of libmroce's embedded mode (user/lib/verbs.c, embedded.c):
 * objects, the QP state machine, error conventions and real transfers
 * between two devices of one process over loopback UDP, on the fixture of
 * lib_fixture.h (addresses 127.a.b.c with a, b from the pid).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../harness.h"
#include "lib_fixture.h"
#include "mroce/mroce.h"
#include "mroce/version.h"

static void open_local(struct side *s, uint8_t host, uint8_t transport)
{
	char addr[46];
	struct mrv_dev_attr a = {.transport = transport, .local_addr = addr};

	side_addr(host, addr, sizeof(addr));
	side_open(s, &a, addr, 0);
}

static void connect_pair(struct side *a, struct side *b, uint8_t ha, uint8_t hb,
			 uint8_t transport)
{
	open_local(a, ha, transport);
	open_local(b, hb, transport);
	side_connect(a, b);
}

/* Poll `want` completions from x's CQ, driving y meanwhile (one thread
 * runs both ends). Fails after ~5 s. */
static void poll_both(struct side *x, struct side *y, struct mrv_wc *wc,
		      int want)
{
	int got = 0;

	for (long i = 0; got < want && i < 5000000; i++) {
		int k = mrv_poll_cq(x->cq, want - got, wc + got);

		ck_assert_int_ge(k, 0);
		got += k;
		ck_assert_int_ge(mrv_progress(y->dev), 0);
		if (!k && i % 64 == 63)
			usleep(100);
	}
	ck_assert_int_eq(got, want);
}

/* ------------------------------------------------------------------ */

/* Daemon mode, and its absence (-ENOENT), is tested in
 * tests/unit/test_daemon.c. */

START_TEST(mroce_version__is_the_headers)
{
	ck_assert_str_eq(mroce_version(), MROCE_VERSION);
}
END_TEST

START_TEST(mrv_open_device__metaroce_over_afxdp_needs_attach)
{
	struct mrv_dev_attr a = {.backend = MRV_BACKEND_AFXDP,
				 .ifname = "lo",
				 .local_addr = "127.0.0.1"};
	struct mrv_device *d = (void *)1;
	int err = mrv_open_device(&a, &d);

	/* MetaRoCE runs over AF_XDP (the endpoint registers connection
	 * ids); without `mrocectl attach lo` the backend finds no pinned
	 * maps (-ENOENT, or -EPERM without CAP_BPF). */
	ck_assert_msg(err == -ENOENT || err == -EPERM, "err %d", err);
	ck_assert_ptr_null(d);
}
END_TEST

START_TEST(mrv_open_device__bad_attrs_are_einval)
{
	struct mrv_dev_attr a = {.local_addr = "not-an-address"};
	struct mrv_device *d;

	ck_assert_int_eq(mrv_open_device(&a, &d), -EINVAL);
	a.local_addr = NULL;
	ck_assert_int_eq(mrv_open_device(&a, &d), -EINVAL);
	a.local_addr = "127.0.0.1";
	a.transport = 7;
	ck_assert_int_eq(mrv_open_device(&a, &d), -EINVAL);
	a.transport = 0;
	a.backend = MRV_BACKEND_AFXDP; /* needs ifname */
	ck_assert_int_eq(mrv_open_device(&a, &d), -EINVAL);
	ck_assert_int_eq(mrv_open_device(NULL, &d), -EINVAL);
}
END_TEST

START_TEST(mrv_close_device__busy_while_objects_exist)
{
	struct side s;

	open_local(&s, 1, MRV_TRANSPORT_METAROCE);
	ck_assert_int_eq(mrv_close_device(s.dev), -EBUSY);
	ck_assert_int_eq(mrv_dealloc_pd(s.pd), -EBUSY);
	ck_assert_int_eq(mrv_destroy_cq(s.cq), -EBUSY);
	side_close(&s);
}
END_TEST

START_TEST(mrv_alloc_mr__page_aligned_zeroed_memfd)
{
	struct side s;
	struct mrv_mr *mr;
	long page = sysconf(_SC_PAGESIZE);

	open_local(&s, 2, MRV_TRANSPORT_METAROCE);
	ck_assert_int_eq(mrv_alloc_mr(s.pd, 100, MRV_ACCESS_LOCAL_WRITE, &mr),
			 0);
	ck_assert_uint_eq((uintptr_t)mr->addr % (uintptr_t)page, 0);
	ck_assert_uint_eq(mr->length, (size_t)page);
	ck_assert_int_ge(mr->fd, 0);
	ck_assert_uint_ne(mr->lkey, 0);
	ck_assert_uint_ne(mr->rkey, 0);
	for (long i = 0; i < page; i++)
		ck_assert_uint_eq(((uint8_t *)mr->addr)[i], 0);
	ck_assert_int_eq(mrv_dereg_mr(mr), 0);
	ck_assert_int_eq(mrv_alloc_mr(s.pd, 0, 0, &mr), -EINVAL);
	side_close(&s);
}
END_TEST

START_TEST(mrv_reg_mr__application_memory_and_bad_args)
{
	struct side s;
	struct mrv_mr *mr;
	static char buf[1000];

	open_local(&s, 3, MRV_TRANSPORT_METAROCE);
	ck_assert_int_eq(
		mrv_reg_mr(s.pd, buf, sizeof(buf), MRV_ACCESS_LOCAL_WRITE, &mr),
		0);
	ck_assert_ptr_eq(mr->addr, buf);
	ck_assert_int_eq(mr->fd, -1);
	ck_assert_int_eq(mrv_dereg_mr(mr), 0);
	ck_assert_int_eq(mrv_reg_mr(s.pd, NULL, 10, 0, &mr), -EINVAL);
	ck_assert_int_eq(mrv_reg_mr(s.pd, buf, 0, 0, &mr), -EINVAL);
	ck_assert_int_eq(mrv_reg_mr(s.pd, buf, 10, 1u << 20, &mr), -EINVAL);
	side_close(&s);
}
END_TEST

START_TEST(mrv_modify_qp__skipping_a_state_is_eperm)
{
	struct side s;
	struct mrv_qp_attr a = {.qp_state = MRV_QPS_RTS};

	open_local(&s, 4, MRV_TRANSPORT_METAROCE);
	ck_assert_int_eq(mrv_modify_qp(s.qp, &a, MRV_QP_STATE), -EPERM);
	ck_assert_int_eq(mrv_query_qp(s.qp, &a), 0);
	ck_assert_int_eq(a.qp_state, MRV_QPS_RESET);
	a.qp_state = MRV_QPS_ERR;
	ck_assert_int_eq(mrv_modify_qp(s.qp, &a, MRV_QP_STATE), 0);
	ck_assert_int_eq(mrv_query_qp(s.qp, &a), 0);
	ck_assert_int_eq(a.qp_state, MRV_QPS_ERR);
	ck_assert_str_eq(mrv_qp_state_str(MRV_QPS_ERR),
			 mrv_qp_state_str(a.qp_state));
	side_close(&s);
}
END_TEST

START_TEST(mrv_modify_qp__bad_dest_address_is_einval)
{
	struct side s;
	struct mrv_qp_attr a = {.qp_state = MRV_QPS_INIT};

	open_local(&s, 5, MRV_TRANSPORT_METAROCE);
	ck_assert_int_eq(mrv_modify_qp(s.qp, &a, MRV_QP_STATE), 0);
	a.qp_state = MRV_QPS_RTR;
	snprintf(a.dest_addr, sizeof(a.dest_addr), "nowhere");
	a.dest_qp_num = 5;
	ck_assert_int_eq(mrv_modify_qp(s.qp, &a, MRV_QP_STATE | MRV_QP_DEST),
			 -EINVAL);
	side_close(&s);
}
END_TEST

START_TEST(mrv_post_send__before_rts_is_eperm_with_bad_wr)
{
	struct side s;
	struct mrv_sge sg;
	struct mrv_send_wr wr = {.opcode = MRV_WR_SEND, .num_sge = 1};
	struct mrv_send_wr *bad = NULL;

	open_local(&s, 6, MRV_TRANSPORT_METAROCE);
	sg = side_sge(&s, 0, 8);
	wr.sg_list = &sg;
	ck_assert_int_eq(mrv_post_send(s.qp, &wr, &bad), -EPERM);
	ck_assert_ptr_eq(bad, &wr);
	side_close(&s);
}
END_TEST

START_TEST(mrv_post_recv__in_reset_is_eperm_and_list_stops_at_bad)
{
	struct side s;
	struct mrv_sge sg;
	struct mrv_recv_wr w2 = {.wr_id = 2, .num_sge = 2};
	struct mrv_recv_wr w1 = {.wr_id = 1, .num_sge = 1, .next = &w2};
	struct mrv_recv_wr *bad = NULL;
	struct mrv_qp_attr a = {.qp_state = MRV_QPS_INIT};

	open_local(&s, 7, MRV_TRANSPORT_METAROCE);
	sg = side_sge(&s, 0, 64);
	w1.sg_list = w2.sg_list = &sg;
	ck_assert_int_eq(mrv_post_recv(s.qp, &w1, &bad), -EPERM);
	ck_assert_ptr_eq(bad, &w1);
	ck_assert_int_eq(mrv_modify_qp(s.qp, &a, MRV_QP_STATE), 0);
	/* First one posts, the second (two SGEs: not in v0) is refused. */
	ck_assert_int_eq(mrv_post_recv(s.qp, &w1, &bad), -EINVAL);
	ck_assert_ptr_eq(bad, &w2);
	side_close(&s);
}
END_TEST

static void write_read_send(uint8_t transport, uint8_t ha, uint8_t hb)
{
	struct side a, b;
	struct mrv_wc wc[4];
	struct mrv_sge sg, rsg;
	struct mrv_send_wr wr, *bad;
	struct mrv_recv_wr rw, *rbad;
	uint8_t *pa, *pb;

	connect_pair(&a, &b, ha, hb, transport);
	pa = a.mr->addr;
	pb = b.mr->addr;
	for (int i = 0; i < 20000; i++)
		pa[i] = (uint8_t)(i * 31 + 7);

	/* WRITE 20000 bytes (several packets) a -> b at offset 100. */
	sg = side_sge(&a, 0, 20000);
	wr = side_rdma_wr(11, MRV_WR_RDMA_WRITE, &sg, &b, 100);
	ck_assert_int_eq(mrv_post_send(a.qp, &wr, &bad), 0);
	ck_assert_ptr_null(bad);
	poll_both(&a, &b, wc, 1);
	ck_assert_int_eq(wc[0].status, MRV_WC_SUCCESS);
	ck_assert_uint_eq(wc[0].wr_id, 11);
	ck_assert_int_eq(wc[0].opcode, MRV_WC_RDMA_WRITE);
	ck_assert_mem_eq(pb + 100, pa, 20000);

	/* READ it back into a at offset 30000. */
	sg = side_sge(&a, 30000, 20000);
	wr.wr_id = 12;
	wr.opcode = MRV_WR_RDMA_READ;
	ck_assert_int_eq(mrv_post_send(a.qp, &wr, &bad), 0);
	poll_both(&a, &b, wc, 1);
	ck_assert_int_eq(wc[0].status, MRV_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, MRV_WC_RDMA_READ);
	ck_assert_mem_eq(pa + 30000, pa, 20000);

	/* SEND_WITH_IMM b -> a into a posted receive. */
	rsg = side_sge(&a, 60000, 5000);
	rw = (struct mrv_recv_wr){.wr_id = 21, .sg_list = &rsg, .num_sge = 1};
	ck_assert_int_eq(mrv_post_recv(a.qp, &rw, &rbad), 0);
	sg = side_sge(&b, 100, 4999);
	wr = (struct mrv_send_wr){.wr_id = 13,
				  .sg_list = &sg,
				  .num_sge = 1,
				  .opcode = MRV_WR_SEND_WITH_IMM,
				  .imm_data = 0xfeed,
				  .send_flags = MRV_SEND_SIGNALED};
	ck_assert_int_eq(mrv_post_send(b.qp, &wr, &bad), 0);
	poll_both(&a, &b, wc, 1);
	ck_assert_int_eq(wc[0].status, MRV_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, MRV_WC_RECV);
	ck_assert_uint_eq(wc[0].byte_len, 4999);
	ck_assert(wc[0].wc_flags & MRV_WC_WITH_IMM);
	ck_assert_uint_eq(wc[0].imm_data, 0xfeed);
	ck_assert_mem_eq(pa + 60000, pa, 4999);
	poll_both(&b, &a, wc, 1);
	ck_assert_int_eq(wc[0].opcode, MRV_WC_SEND);
	side_close(&a);
	side_close(&b);
}

START_TEST(mrv_post_send__write_read_send_metaroce)
{
	write_read_send(MRV_TRANSPORT_METAROCE, 10, 11);
}
END_TEST

START_TEST(mrv_post_send__write_read_send_rocev2)
{
	write_read_send(MRV_TRANSPORT_ROCEV2, 12, 13);
}
END_TEST

START_TEST(mrv_post_send__bad_lkey_fails)
{
	struct side a, b;
	struct mrv_sge sg;
	struct mrv_send_wr wr, *bad;
	struct mrv_wc wc;
	int err;

	connect_pair(&a, &b, 14, 15, MRV_TRANSPORT_METAROCE);
	sg = side_sge(&a, 0, 64);
	sg.lkey ^= 0x5a5a;
	wr = side_rdma_wr(3, MRV_WR_RDMA_WRITE, &sg, &b, 0);
	err = mrv_post_send(a.qp, &wr, &bad);
	/* refused at post time, named, nothing queued: no completion */
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_ptr_eq(bad, &wr);
	ck_assert_int_eq(mrv_poll_cq(a.cq, 1, &wc), 0);
	/* and the QP still works */
	sg = side_sge(&a, 0, 64);
	wr = side_rdma_wr(4, MRV_WR_RDMA_WRITE, &sg, &b, 0);
	ck_assert_int_eq(mrv_post_send(a.qp, &wr, &bad), 0);
	poll_both(&a, &b, &wc, 1);
	ck_assert_int_eq(wc.status, MRV_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, 4);
	side_close(&a);
	side_close(&b);
}
END_TEST

START_TEST(mrv_post_send__bad_rkey_is_remote_access_error)
{
	struct side a, b;
	struct mrv_sge sg;
	struct mrv_send_wr wr, *bad;
	struct mrv_wc wc;

	connect_pair(&a, &b, 16, 17, MRV_TRANSPORT_METAROCE);
	memset(b.mr->addr, 0, 64);
	sg = side_sge(&a, 0, 64);
	memset(a.mr->addr, 0xee, 64);
	wr = side_rdma_wr(4, MRV_WR_RDMA_WRITE, &sg, &b, 0);
	wr.rkey ^= 0x1234;
	ck_assert_int_eq(mrv_post_send(a.qp, &wr, &bad), 0);
	poll_both(&a, &b, &wc, 1);
	ck_assert_int_eq(wc.status, MRV_WC_REM_ACCESS_ERR);
	ck_assert_uint_eq(((uint8_t *)b.mr->addr)[0], 0);
	side_close(&a);
	side_close(&b);
}
END_TEST

START_TEST(mrv_wait_cq__times_out_when_idle)
{
	struct side s;

	open_local(&s, 18, MRV_TRANSPORT_METAROCE);
	ck_assert_int_eq(mrv_wait_cq(s.cq, 20), -ETIMEDOUT);
	side_close(&s);
}
END_TEST

START_TEST(mrv_query_stats__counts_traffic)
{
	struct side a, b;
	struct mrv_dev_stats st;
	struct mrv_path_info pi;
	struct mrv_sge sg;
	struct mrv_send_wr wr, *bad;
	struct mrv_wc wc;

	connect_pair(&a, &b, 19, 20, MRV_TRANSPORT_METAROCE);
	sg = side_sge(&a, 0, 4096);
	wr = side_rdma_wr(0, MRV_WR_RDMA_WRITE, &sg, &b, 0);
	ck_assert_int_eq(mrv_post_send(a.qp, &wr, &bad), 0);
	poll_both(&a, &b, &wc, 1);
	ck_assert_int_eq(mrv_query_stats(a.dev, &st), 0);
	ck_assert_uint_ge(st.tx_data_pkts, 1);
	ck_assert_int_eq(mrv_query_stats(b.dev, &st), 0);
	ck_assert_uint_ge(st.rx_data_pkts, 1);
	ck_assert_int_eq(mrv_query_path(a.qp, 0, &pi), 0);
	ck_assert_uint_ge(pi.sport, 0xC000);
	ck_assert_int_eq(mrv_query_path(a.qp, 1000, &pi), -ENOENT);
	side_close(&a);
	side_close(&b);
}
END_TEST

static uint64_t tx_pkts(const struct side *s)
{
	struct mrv_dev_stats st;

	ck_assert_int_eq(mrv_query_stats(s->dev, &st), 0);
	return st.tx_pkts;
}

/* Embedded mode: a poll that returns completions transmits nothing; the
 * ACKs it owes leave with the next call into the library, behind the
 * reply when that call posts one. So a's SEND does not complete while b
 * makes no call, and b's reply and its ACK leave in b's post. */
static void ack_waits_for_the_next_call(uint8_t transport, uint8_t ha,
					uint8_t hb, bool reply)
{
	struct side a, b;
	struct mrv_wc wc[2];
	struct mrv_sge sg, rsg;
	struct mrv_send_wr wr, *bad;
	struct mrv_recv_wr rw, *rbad;
	uint64_t before = 0, sent;
	int k = 0;

	connect_pair(&a, &b, ha, hb, transport);
	rsg = side_sge(&b, 0, 64);
	rw = (struct mrv_recv_wr){.wr_id = 1, .sg_list = &rsg, .num_sge = 1};
	ck_assert_int_eq(mrv_post_recv(b.qp, &rw, &rbad), 0);
	rsg = side_sge(&a, 0, 64);
	ck_assert_int_eq(mrv_post_recv(a.qp, &rw, &rbad), 0);
	sg = side_sge(&a, 100, 8);
	wr = (struct mrv_send_wr){.wr_id = 2, .sg_list = &sg, .num_sge = 1,
				  .opcode = MRV_WR_SEND,
				  .send_flags = MRV_SEND_SIGNALED};
	ck_assert_int_eq(mrv_post_send(a.qp, &wr, &bad), 0);
	for (long i = 0; !k && i < 1000000; i++) {
		before = tx_pkts(&b);
		k = mrv_poll_cq(b.cq, 2, wc);
		ck_assert_int_ge(k, 0);
		ck_assert_int_ge(mrv_progress(a.dev), 0);
		if (!k && i % 64 == 63)
			usleep(100);
	}
	ck_assert_int_eq(k, 1);
	ck_assert_int_eq(wc[0].opcode, MRV_WC_RECV);
	ck_assert_uint_eq(tx_pkts(&b), before);	/* the ACK is owed */
	for (int i = 0; i < 50; i++) {
		ck_assert_int_eq(mrv_poll_cq(a.cq, 2, wc), 0);
		usleep(100);
	}
	if (reply) {
		sg = side_sge(&b, 100, 8);
		wr.wr_id = 3;
		ck_assert_int_eq(mrv_post_send(b.qp, &wr, &bad), 0);
		sent = tx_pkts(&b) - before;
		ck_assert_uint_ge(sent, 2);	/* the reply and the ACK */
	} else {
		ck_assert_int_eq(mrv_poll_cq(b.cq, 2, wc), 0);
		ck_assert_uint_gt(tx_pkts(&b), before); /* the ACK */
	}
	poll_both(&a, &b, wc, reply ? 2 : 1);
	for (int i = 0; i < (reply ? 2 : 1); i++) {
		ck_assert_int_eq(wc[i].status, MRV_WC_SUCCESS);
		ck_assert(wc[i].opcode == MRV_WC_SEND ||
			  (reply && wc[i].opcode == MRV_WC_RECV));
	}
	side_close(&a);
	side_close(&b);
}

START_TEST(mrv_poll_cq__a_poll_that_returns_completions_owes_its_acks)
{
	ack_waits_for_the_next_call(MRV_TRANSPORT_METAROCE, 23, 24, false);
	ack_waits_for_the_next_call(MRV_TRANSPORT_METAROCE, 25, 26, true);
	ack_waits_for_the_next_call(MRV_TRANSPORT_ROCEV2, 27, 28, false);
	ack_waits_for_the_next_call(MRV_TRANSPORT_ROCEV2, 29, 30, true);
}
END_TEST

Suite *lib_suite(void)
{
	Suite *s = suite_create("lib");
	TCase *tc = tcase_create("objects");
	TCase *tx = tcase_create("loopback");

	tcase_add_test(tc, mroce_version__is_the_headers);
	tcase_add_test(tc, mrv_open_device__metaroce_over_afxdp_needs_attach);
	tcase_add_test(tc, mrv_open_device__bad_attrs_are_einval);
	tcase_add_test(tc, mrv_close_device__busy_while_objects_exist);
	tcase_add_test(tc, mrv_alloc_mr__page_aligned_zeroed_memfd);
	tcase_add_test(tc, mrv_reg_mr__application_memory_and_bad_args);
	tcase_add_test(tc, mrv_modify_qp__skipping_a_state_is_eperm);
	tcase_add_test(tc, mrv_modify_qp__bad_dest_address_is_einval);
	tcase_add_test(tc, mrv_post_send__before_rts_is_eperm_with_bad_wr);
	tcase_add_test(tc,
		       mrv_post_recv__in_reset_is_eperm_and_list_stops_at_bad);
	tcase_add_test(tc, mrv_wait_cq__times_out_when_idle);
	suite_add_tcase(s, tc);
	tcase_add_test(tx, mrv_post_send__write_read_send_metaroce);
	tcase_add_test(tx, mrv_poll_cq__a_poll_that_returns_completions_owes_its_acks);
	tcase_add_test(tx, mrv_post_send__write_read_send_rocev2);
	tcase_add_test(tx, mrv_post_send__bad_lkey_fails);
	tcase_add_test(tx, mrv_post_send__bad_rkey_is_remote_access_error);
	tcase_add_test(tx, mrv_query_stats__counts_traffic);
	tcase_set_timeout(tx, 60);
	suite_add_tcase(s, tx);
	return s;
}
MROCE_SUITE(lib_suite)
