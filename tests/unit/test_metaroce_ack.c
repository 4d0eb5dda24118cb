// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of the MetaRoCE engine: ACK and NAK processing (ack.c): ACK coalescing,
 * selective retransmission, duplicates, reordering, random loss and chaos runs,
 * retry exhaustion. Two (or more) engines through the in-test pump
 * (metaroce_pair.h).
 */
#include "metaroce_pair.h"

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

		fprintf(stderr, "%s conn st=%s resend=%u used=%u naks=%u\n",
			name, mr_conn_state_names[c->state], c->nresend,
			c->txe_used, c->naks.count);
		for (int i = 0; i < c->npaths; i++) {
			struct mr_path *p = &c->path[i];

			fprintf(stderr,
				" p%d gen=%u %s una=%u next=%u infl=%u lost=%u "
				"held=%u dl=%llu probed=%u cwnd=%u rxcum=%u "
				"ackdue=%llu\n",
				i, p->gen, mr_path_life_names[p->life], p->una,
				p->next_psn, p->inflight, p->nlost, p->nheld,
				(unsigned long long)p->deadline, p->probed,
				mr_cc_cwnd_pkts(p), p->rx_cum,
				(unsigned long long)p->ack_due);
		}
		for (struct mroce_list *n = c->qps.next; n != &c->qps;
		     n = n->next) {
			struct mroce_qp *qp = mr_qp_of(n);
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
				struct mr_wqe *mw = mrw(qp, w);

				fprintf(stderr,
					"  wqe msn=%u op=%d st=%d segs=%u/%u/%u "
					"hold=%llu\n",
					mw->msn, w->wr.opcode, w->state,
					mw->next_seg, w->segs_done, w->nsegs,
					(unsigned long long)mw->hold_until);
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

MROCE_SUITE(metaroce_ack_suite)
Suite *metaroce_ack_suite(void)
{
	Suite *s = suite_create("metaroce_ack");
	TCase *tc = tcase_create("ack");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, ack__coalesced_on_clean_transfer);
	tcase_add_test(tc, loss__selective_retransmit_of_exactly_that_packet);
	tcase_add_test(tc, dup__suppressed_and_completes_once);
	tcase_add_test(tc, reorder__placed_out_of_order_completed_in_order);
	tcase_add_test(tc, loss__random_5pct_both_ways_large_write_and_read);
	tcase_add_test(tc, chaos__mixed_ops_loss_dup_reorder_complete_in_order);
	tcase_add_test(tc, retry__all_dropped_is_retry_exceeded);
	tcase_add_test(tc, retry__read_responses_all_lost);
	suite_add_tcase(s, tc);
	return s;
}
