// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of the MetaRoCE engine: connections (conn.c, timer.c): the timer heap
 * going quiet, the memory of a connection, a restarted peer (NAK NO_CONN, a new
 * connection, replayed CONFIRMs), the connection-state and path-lifecycle
 * transitions (an illegal one refused and counted). Two (or more) engines
 * through the in-test pump (metaroce_pair.h).
 */
#include "metaroce_pair.h"

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

/* The state lists name every state (logs and dumps print the names). */
START_TEST(state_names__every_conn_state_and_path_life_named)
{
	for (int i = 0; i < MR_CONN_NSTATES; i++)
		ck_assert_ptr_nonnull(mr_conn_state_names[i]);
	for (int i = 0; i < MR_PATH_NLIVES; i++)
		ck_assert_ptr_nonnull(mr_path_life_names[i]);
	ck_assert_str_eq(mr_conn_state_names[MR_CONN_ESTABLISHED],
			 "established");
	ck_assert_str_eq(mr_path_life_names[MR_PATH_PROBATION], "probation");
}
END_TEST

/* The first connection of engine i of an established pair. */
static struct mr_conn *first_conn(struct pair *s, int i)
{
	return mroce_container_of(T(s->p.e[i])->conns.next, struct mr_conn,
				  link);
}

/* Exactly the transitions documented in metaroce_int.h are taken; any
 * other (and a state out of range) is refused, leaves the state as it
 * was and is counted in state_errors: never an abort of the
 * application. */
START_TEST(set_state__illegal_refused_and_counted)
{
	static const bool legal[MR_CONN_NSTATES][MR_CONN_NSTATES] = {
		[MR_CONN_IDLE][MR_CONN_REQ_SENT] = true,
		[MR_CONN_IDLE][MR_CONN_ESTABLISHED] = true,
		[MR_CONN_REQ_SENT][MR_CONN_CONFIRM_SENT] = true,
		[MR_CONN_REQ_SENT][MR_CONN_ESTABLISHED] = true,
		[MR_CONN_REQ_SENT][MR_CONN_IDLE] = true,
		[MR_CONN_CONFIRM_SENT][MR_CONN_ESTABLISHED] = true,
		[MR_CONN_CONFIRM_SENT][MR_CONN_IDLE] = true,
	};
	struct mroce_engine *e;
	struct mr_conn *c;
	uint64_t errs = 0;
	struct pair s;

	pair_setup(&s, 4096);
	establish(&s);
	e = s.p.e[0];
	c = first_conn(&s, 0);
	for (int from = 0; from < MR_CONN_NSTATES; from++) {
		for (int to = 0; to <= MR_CONN_NSTATES; to++) {
			bool ok = to < MR_CONN_NSTATES && legal[from][to];

			c->state = (uint8_t)from;
			ck_assert_int_eq(mr_conn_set_state(e, c, to),
					 ok ? 0 : -EINVAL);
			ck_assert_uint_eq(c->state, ok ? to : from);
			errs += !ok;
			ck_assert_uint_eq(stats(&s, 0).state_errors, errs);
		}
	}
	c->state = MR_CONN_ESTABLISHED;
	e->stats.state_errors = 0;	/* provoked here: pair_fini checks */
	pair_fini(&s);
}
END_TEST

/* The same for a path's lifecycle. */
START_TEST(set_life__illegal_refused_and_counted)
{
	static const bool legal[MR_PATH_NLIVES][MR_PATH_NLIVES] = {
		[MR_PATH_ACTIVE][MR_PATH_ACTIVE] = true,
		[MR_PATH_ACTIVE][MR_PATH_MOVING] = true,
		[MR_PATH_ACTIVE][MR_PATH_PROBATION] = true,
		[MR_PATH_MOVING][MR_PATH_ACTIVE] = true,
		[MR_PATH_PROBATION][MR_PATH_ACTIVE] = true,
		[MR_PATH_PROBATION][MR_PATH_PROBATION] = true,
	};
	struct mroce_engine *e;
	struct mr_path *p;
	uint64_t errs = 0;
	struct pair s;

	pair_setup(&s, 4096);
	establish(&s);
	e = s.p.e[0];
	p = &first_conn(&s, 0)->path[0];
	for (int from = 0; from < MR_PATH_NLIVES; from++) {
		for (int to = 0; to <= MR_PATH_NLIVES; to++) {
			bool ok = to < MR_PATH_NLIVES && legal[from][to];

			p->life = (uint8_t)from;
			ck_assert_int_eq(mr_path_set_life(e, p, to),
					 ok ? 0 : -EINVAL);
			ck_assert_uint_eq(p->life, ok ? to : from);
			errs += !ok;
			ck_assert_uint_eq(stats(&s, 0).state_errors, errs);
		}
	}
	p->life = MR_PATH_ACTIVE;
	e->stats.state_errors = 0;	/* provoked here: pair_fini checks */
	pair_fini(&s);
}
END_TEST

MROCE_SUITE(metaroce_conn_suite)
Suite *metaroce_conn_suite(void)
{
	Suite *s = suite_create("metaroce_conn");
	TCase *tc = tcase_create("conn");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, next_timer__never_when_quiet_and_now_after_post);
	tcase_add_test(tc, conn_mem__at_most_16_kib_for_8_paths);
	tcase_add_test(tc, restart__peer_restarted_gets_new_connection);
	tcase_add_test(tc, restart__replayed_confirm_never_tears_down);
	tcase_add_test(tc, no_conn__restarted_peer_fails_survivor_at_once);
	tcase_add_test(tc, no_conn__forged_nak_ignored);
	tcase_add_test(tc, state_names__every_conn_state_and_path_life_named);
	tcase_add_test(tc, set_state__illegal_refused_and_counted);
	tcase_add_test(tc, set_life__illegal_refused_and_counted);
	suite_add_tcase(s, tc);
	return s;
}
