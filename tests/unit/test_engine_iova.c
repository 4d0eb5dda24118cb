/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * mroce_reg_mr_iova(): a region known to SGEs and peers by an address that
 * is not where it lives in this process (the daemon registers memory an
 * application mapped elsewhere). Every operation, both transports: the
 * bytes land in / come from the backing memory, addressed by the iova.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_pump.h"
#include "../harness.h"

#define LEN 20000u
#define ACC                                                                    \
	(MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |                \
	 MROCE_ACCESS_REMOTE_READ)

struct iside {
	uint8_t *mem;	/* backing memory */
	uint64_t iova;	/* how SGEs and the peer name it */
	struct mroce_mr mr;
	int cq;
	uint32_t qpn;
	struct mroce_wc wc[16];
	int nwc;
};

struct ipair {
	struct pump p;
	struct iside s[2];
};

static int connect_qp(struct mroce_engine *e, uint32_t qpn, int peer,
		      uint32_t dest, uint64_t now)
{
	struct mroce_qp_attr a = { .state = MROCE_QPS_INIT, .access = ACC };
	int err = mroce_modify_qp(e, qpn, &a,
				  MROCE_QP_STATE | MROCE_QP_ACCESS_FLAGS, now);

	if (err)
		return err;
	a.state = MROCE_QPS_RTR;
	a.peer = peer;
	a.dest_qpn = dest;
	a.rq_psn = 100;
	a.sq_psn = 100;
	err = mroce_modify_qp(e, qpn, &a,
			      MROCE_QP_STATE | MROCE_QP_DEST | MROCE_QP_RQ_PSN,
			      now);
	if (err)
		return err;
	a.state = MROCE_QPS_RTS;
	return mroce_modify_qp(e, qpn, &a, MROCE_QP_STATE | MROCE_QP_SQ_PSN,
			       now);
}

static void ipair_setup(struct ipair *s, uint8_t transport)
{
	struct mroce_engine_cfg cfg = { .transport = transport, .seed = 9 };

	mroce_engine_cfg_default(&cfg);
	ck_assert_int_eq(pump_init(&s->p, 2, &cfg), 0);
	for (int i = 0; i < 2; i++) {
		struct iside *d = &s->s[i];
		struct mroce_qp_init_attr ia = { .max_send_wr = 16,
						 .max_recv_wr = 16 };
		int r;

		memset(d, 0, sizeof(*d));
		d->mem = malloc(LEN);
		ck_assert_ptr_nonnull(d->mem);
		for (uint32_t k = 0; k < LEN; k++)
			d->mem[k] = (uint8_t)(k * 13 + i * 71);
		/* Far from any real mapping: a bug that uses the iova as a
		 * pointer faults instead of passing by luck. */
		d->iova = 0x10000000000ull * (uint64_t)(i + 1) + 0x123;
		ck_assert_int_eq(mroce_reg_mr_iova(s->p.e[i], d->mem, LEN,
						   d->iova, ACC, &d->mr),
				 0);
		ck_assert_uint_eq(d->mr.addr, d->iova);
		d->cq = mroce_create_cq(s->p.e[i], 16);
		ck_assert_int_ge(d->cq, 0);
		ia.send_cq = ia.recv_cq = d->cq;
		r = mroce_create_qp(s->p.e[i], &ia);
		ck_assert_int_gt(r, 0);
		d->qpn = (uint32_t)r;
	}
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(connect_qp(s->p.e[i], s->s[i].qpn,
					    s->p.peer[i][1 - i],
					    s->s[1 - i].qpn, s->p.now),
				 0);
}

static void ipair_fini(struct ipair *s)
{
	pump_fini(&s->p);
	free(s->s[0].mem);
	free(s->s[1].mem);
}

struct iwant {
	struct ipair *s;
	int n0, n1;
};

static bool got_wcs(struct pump *p, void *arg)
{
	struct iwant *w = arg;

	for (int i = 0; i < 2; i++) {
		struct iside *d = &w->s->s[i];
		int n = mroce_poll_cq(p->e[i], d->cq, d->wc + d->nwc,
				      16 - d->nwc);

		if (n > 0)
			d->nwc += n;
	}
	return w->s->s[0].nwc >= w->n0 && w->s->s[1].nwc >= w->n1;
}

static void run_ops(uint8_t transport)
{
	struct ipair s;
	struct iside *a = &s.s[0], *b = &s.s[1];
	struct iwant w = { &s, 3, 1 };
	uint8_t *expect_b = malloc(LEN), *expect_a = malloc(LEN);
	struct mroce_send_wr wr = {
		.send_flags = MROCE_SEND_SIGNALED,
		.sge = { .lkey = 0, .length = 5000 },
	};
	struct mroce_recv_wr rw = { .wr_id = 9 };

	ipair_setup(&s, transport);
	memcpy(expect_b, b->mem, LEN);
	memcpy(expect_a, a->mem, LEN);
	wr.sge.lkey = a->mr.lkey;

	/* WRITE a[100..5100) -> b[2000..7000) */
	wr.wr_id = 1;
	wr.opcode = MROCE_WR_RDMA_WRITE;
	wr.sge.addr = a->iova + 100;
	wr.remote_addr = b->iova + 2000;
	wr.rkey = b->mr.rkey;
	memcpy(expect_b + 2000, a->mem + 100, 5000);
	ck_assert_int_eq(mroce_post_send(s.p.e[0], a->qpn, &wr, s.p.now), 0);

	/* READ b[10000..15000) -> a[12000..17000) */
	wr.wr_id = 2;
	wr.opcode = MROCE_WR_RDMA_READ;
	wr.sge.addr = a->iova + 12000;
	wr.remote_addr = b->iova + 10000;
	memcpy(expect_a + 12000, b->mem + 10000, 5000);
	ck_assert_int_eq(mroce_post_send(s.p.e[0], a->qpn, &wr, s.p.now), 0);

	/* SEND a[6000..11000) -> b[15000..20000) */
	rw.sge = (struct mroce_sge){ .addr = b->iova + 15000,
				     .length = 5000,
				     .lkey = b->mr.lkey };
	ck_assert_int_eq(mroce_post_recv(s.p.e[1], b->qpn, &rw), 0);
	wr.wr_id = 3;
	wr.opcode = MROCE_WR_SEND;
	wr.sge.addr = a->iova + 6000;
	memcpy(expect_b + 15000, a->mem + 6000, 5000);
	ck_assert_int_eq(mroce_post_send(s.p.e[0], a->qpn, &wr, s.p.now), 0);

	ck_assert(pump_run(&s.p, got_wcs, &w, 2000000000ull));
	for (int i = 0; i < a->nwc; i++)
		ck_assert_int_eq(a->wc[i].status, MROCE_WC_SUCCESS);
	ck_assert_int_eq(b->wc[0].status, MROCE_WC_SUCCESS);
	ck_assert_uint_eq(b->wc[0].byte_len, 5000);
	ck_assert(!memcmp(b->mem, expect_b, LEN));
	ck_assert(!memcmp(a->mem, expect_a, LEN));

	/* The real address is not an iova: a WRITE to it is refused. */
	wr.wr_id = 4;
	wr.opcode = MROCE_WR_RDMA_WRITE;
	wr.sge.addr = a->iova;
	wr.sge.length = 16;
	wr.remote_addr = (uint64_t)(uintptr_t)b->mem;
	w.n0 = 4;
	ck_assert_int_eq(mroce_post_send(s.p.e[0], a->qpn, &wr, s.p.now), 0);
	ck_assert(pump_run(&s.p, got_wcs, &w, 20000000000ull));
	ck_assert_int_eq(a->wc[3].status, MROCE_WC_REM_ACCESS_ERR);
	ck_assert(!memcmp(b->mem, expect_b, LEN));
	ipair_fini(&s);
	free(expect_a);
	free(expect_b);
}

START_TEST(reg_mr_iova__metaroce_every_op_by_iova)
{
	run_ops(MROCE_TRANSPORT_METAROCE);
}
END_TEST

START_TEST(reg_mr_iova__rocev2_every_op_by_iova)
{
	run_ops(MROCE_TRANSPORT_ROCEV2);
}
END_TEST

START_TEST(reg_mr_iova__rejects_wrapping_range)
{
	struct mroce_engine_cfg cfg = { .transport = MROCE_TRANSPORT_METAROCE };
	struct mroce_engine *e;
	struct mroce_mr mr;
	uint8_t buf[64];

	mroce_engine_cfg_default(&cfg);
	ck_assert_int_eq(mroce_engine_create(&cfg, &e), 0);
	ck_assert_int_eq(mroce_reg_mr_iova(e, buf, sizeof(buf), UINT64_MAX - 8,
					   MROCE_ACCESS_LOCAL_WRITE, &mr),
			 -EINVAL);
	ck_assert_int_eq(mroce_reg_mr_iova(e, buf, sizeof(buf), 4096,
					   MROCE_ACCESS_LOCAL_WRITE, &mr),
			 0);
	ck_assert_uint_eq(mr.addr, 4096);
	mroce_engine_destroy(e);
}
END_TEST

static Suite *engine_iova_suite(void)
{
	Suite *s = suite_create("engine_iova");
	TCase *tc = tcase_create("iova");

	tcase_add_test(tc, reg_mr_iova__metaroce_every_op_by_iova);
	tcase_add_test(tc, reg_mr_iova__rocev2_every_op_by_iova);
	tcase_add_test(tc, reg_mr_iova__rejects_wrapping_range);
	suite_add_tcase(s, tc);
	return s;
}
MROCE_SUITE(engine_iova_suite)
