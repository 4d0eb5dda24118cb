// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Connections: one per peer, created when a QP of that peer reaches RTR, found
 * by the connection id a packet carries; the QP binding (which QPs ride on a
 * connection, what they still owe), the peer-restart path, and the transport
 * hooks the generic engine calls (struct mroce_transport_ops).
 */
#include <stdlib.h>

#include "metaroce_int.h"

const char *const mr_conn_state_names[MR_CONN_NSTATES] = {
#define MR_X(name, str) [MR_CONN_##name] = str,
	MR_CONN_STATES(MR_X)
#undef MR_X
};

/* Bit t of legal_next[s]: s -> t is a transition (see metaroce_int.h). */
static const uint8_t legal_next[MR_CONN_NSTATES] = {
	[MR_CONN_IDLE] = 1u << MR_CONN_REQ_SENT | 1u << MR_CONN_ESTABLISHED,
	[MR_CONN_REQ_SENT] = 1u << MR_CONN_CONFIRM_SENT |
			     1u << MR_CONN_ESTABLISHED | 1u << MR_CONN_IDLE,
	[MR_CONN_CONFIRM_SENT] = 1u << MR_CONN_ESTABLISHED | 1u << MR_CONN_IDLE,
};

/* The one place a connection changes state. An illegal transition is a
 * bug of ours: it is counted (state_errors) and refused, never a crash
 * of the application. 0, or -EINVAL when refused. */
int mr_conn_set_state(struct mroce_engine *e, struct mr_conn *c,
		      enum mr_conn_state s)
{
	if ((unsigned)s >= MR_CONN_NSTATES ||
	    !(legal_next[c->state] & (1u << s))) {
		MROCE_STAT_INC(e, state_errors);
		return -EINVAL;
	}
	c->state = (uint8_t)s;
	return 0;
}

struct mr_conn *mr_conn_new(struct mroce_engine *e, int peer)
{
	struct mr_engine *t = T(e);
	uint8_t np = e->cfg.npaths;
	struct mr_conn *c;
	uint16_t *rings;

	if (mroce_ev_reserve(e, 3) < 0) /* its CONN_UP, update, CONN_DOWN */
		return NULL;
	c = calloc(1, sizeof(*c) + np * sizeof(struct mr_path));
	if (!c)
		return NULL;
	c->txe = calloc(MR_TXE_MAX, sizeof(*c->txe));
	rings = malloc((size_t)np * MR_PATH_WIN * sizeof(*rings));
	if (!c->txe || !rings) {
		free(c->txe);
		free(rings);
		free(c);
		return NULL;
	}
	c->peer = peer;
	c->npaths = np;
	c->mtu = e->cfg.mtu;
	mr_cc_conn_mtu(e, c);
	do
		c->local_id = (mroce_rng_u32(e) << t->peer_bits) |
			      (uint32_t)peer;
	while (c->local_id == 0);
	c->tx_isn = mroce_rng_u32(e);
	if (e->cfg.isn_fixed)
		c->tx_isn = e->cfg.isn;
	for (int i = 0; i < MR_TXE_MAX / 64; i++)
		c->txe_free[i] = ~0ull;
	for (int i = 0; i < np; i++) {
		c->path[i].ring = rings + (size_t)i * MR_PATH_WIN;
		c->path[i].gen = e->cfg.first_gen;
		mr_path_tx_init(e, c, i);
	}
	mr_pub_reset(e, (uint32_t)peer);
	mroce_list_init(&c->qps);
	mroce_list_init(&c->sched);
	mroce_list_add_tail(&t->conns, &c->link);
	c->eng = t;
	c->heap.due = UINT64_MAX;
	mr_conn_kick(c);
	t->by_peer[peer] = c;
	t->nconns++;
	mroce_ev_conn_up(e, peer, c->local_id, (uint32_t)peer);
	return c;
}

static void conn_free(struct mroce_engine *e, struct mr_conn *c)
{
	mroce_ev_conn_down(e, c->peer, c->local_id, (uint32_t)c->peer);
	mr_pub_reset(e, (uint32_t)c->peer);
	mroce_list_del(&c->link);
	mroce_list_del(&c->alink);
	free(c->path[0].ring);
	free(c->txe);
	free(c);
}

/* Connection of a received conn_id, or NULL. */
struct mr_conn *mr_conn_by_id(const struct mroce_engine *e, uint32_t id)
{
	const struct mr_engine *t = T(e);
	uint32_t idx = id & ((1u << t->peer_bits) - 1);
	struct mr_conn *c;

	if (idx >= e->cfg.max_conns)
		return NULL;
	c = t->by_peer[idx];
	if (!c || c->local_id != id)
		return NULL;
	return c;
}

int mr_txe_alloc(struct mr_conn *c)
{
	for (int w = 0; w < MR_TXE_MAX / 64; w++) {
		if (c->txe_free[w]) {
			int b = __builtin_ctzll(c->txe_free[w]);

			c->txe_free[w] &= ~(1ull << b);
			c->txe_used++;
			return w * 64 + b;
		}
	}
	return -1;
}

void mr_txe_release(struct mr_conn *c, int idx)
{
	if (c->txe_resend[idx / 64] & (1ull << (idx % 64))) {
		c->txe_resend[idx / 64] &= ~(1ull << (idx % 64));
		c->nresend--;
	}
	memset(&c->txe[idx], 0, sizeof(c->txe[idx]));
	c->txe_free[idx / 64] |= 1ull << (idx % 64);
	c->txe_used--;
}

struct mroce_rdjob *mr_rd_find(struct mroce_qp *qp, uint32_t msn)
{
	for (uint32_t i = qp->rd_head; i != qp->rd_tail; i++) {
		struct mroce_rdjob *j = &qp->rd[i % MROCE_MAX_RD_ATOMIC];

		if (j->used && j->msn == msn)
			return j;
	}
	return NULL;
}

/* WQE with message number msn if it is still on the SQ, else NULL. MSNs
 * are assigned in post order, so this is O(1). */
struct mroce_wqe *mr_sq_by_msn(const struct mroce_qp *qp, uint32_t msn)
{
	uint32_t n = mroce_sq_count(qp);
	uint32_t d;

	if (!n)
		return NULL;
	d = msn - mrw(qp, mroce_sq_at(qp, qp->sq_head))->msn;
	if (d >= n)
		return NULL;
	return mroce_sq_at(qp, qp->sq_head + d);
}

/* New packets a connection may have in flight. Until the receiver's
 * first fair-share hint arrives (one RTT) only MR_FIRST_FLIGHT: a new
 * sender does not know whether it joins an idle receiver or one with
 * thousands of senders, and in the latter case a full first window from
 * each of them is a burst no buffer holds. The hint then sets the pace. */
uint32_t mr_conn_flight_cap(const struct mr_conn *c)
{
	return c->pace.hint_bps ? MR_TXE_MAX : MR_FIRST_FLIGHT;
}

/* Connection has (possibly) work or changed: it joins the active list
 * and its due instant is recomputed before the call returns (or at the
 * next next_timer()/tx()/tick()), so thousands of idle connections cost
 * nothing. */
void mr_conn_kick(struct mr_conn *c)
{
	struct mr_engine *t = c->eng;

	if (!mroce_list_linked(&c->alink))
		mroce_list_add_tail(&t->active, &c->alink);
	if (!c->heap.dirty) {
		c->heap.dirty = 1;
		t->dirty[t->ndirty++] = c;
	}
}

bool mr_conn_idle(const struct mr_conn *c)
{
	if (mr_conn_handshaking(c) || c->hs.want || c->hs.want_accept ||
	    c->naks.count || c->txe_used || c->hold_until ||
	    !mroce_list_empty(&c->sched))
		return false;
	for (int i = 0; i < c->npaths; i++) {
		const struct mr_path *p = &c->path[i];

		if (p->ack_due || p->deadline || p->hold_until ||
		    p->want_probe || p->want_reroll)
			return false;
	}
	for (const struct mroce_list *n = c->qps.next; n != &c->qps;
	     n = n->next) {
		if (QP(mr_qp_of(n))->reads_out)
			return false;	/* READ watchdog */
	}
	return true;
}

/* A READ whose responses stop coming (the responder gave up, and its
 * NAK was lost too) must not hang: fail it after this long without any
 * response progress - longer than the responder's own retries take. */
uint64_t mr_read_timeout(const struct mroce_engine *e)
{
	return ((uint64_t)e->cfg.rto_min_us * 1000 << 6) *
	       (e->cfg.retry_cnt + 2u);
}

void mr_qp_kick(struct mroce_qp *qp)
{
	struct mr_qp *q = QP(qp);

	if (q && q->conn) {
		if (!mroce_list_linked(&qp->sched))
			mroce_list_add_tail(&q->conn->sched, &qp->sched);
		mr_conn_kick(q->conn);
	}
}

/* Work of the QP bound to the connection's current peer incarnation:
 * a send not yet completed, a READ awaited, a READ response being
 * served, or an incoming message not yet delivered. */
static bool qp_busy(const struct mroce_qp *qp)
{
	const struct mr_qp *q = QP(qp);

	for (uint32_t i = qp->sq_head; i != qp->sq_tail; i++)
		if (mroce_sq_at((struct mroce_qp *)(uintptr_t)qp, i)->state !=
		    MROCE_WQE_DONE)
			return true;
	if (q->reads_out || qp->rd_head != qp->rd_tail)
		return true;
	for (int i = 0; i < MR_MSG_WIN; i++)
		if (q->rx[i].state != MR_RX_FREE)
			return true;
	return false;
}

/* The peer lost its state (it restarted: a valid CONFIRM names another
 * src_conn_id than our established connection). Every QP of the old
 * incarnation moves to ERR: like an RC requester whose responder stopped
 * answering, one with work in flight ends its oldest unfinished send
 * with RETRY_EXC_ERR (the rest, and its receives, flushed). A QP that
 * joined the connection after the last packet of the old incarnation
 * and has no work yet (set up against the restarted peer before its
 * handshake got here) carries over to the new connection. The old one
 * is discarded (CONN_DOWN) and a fresh one (CONN_UP) takes the peer's
 * slot; NULL when that allocation fails (all QPs then go to ERR). */
struct mr_conn *mr_conn_restart(struct mroce_engine *e, struct mr_conn *c,
				uint64_t now)
{
	struct mr_engine *t = T(e);
	struct mroce_list keep, *n, *nx;
	int peer = c->peer;
	struct mr_conn *nc;

	mroce_list_init(&keep);
	for (n = c->qps.next; n != &c->qps; n = nx) {
		struct mroce_qp *qp = mr_qp_of(n);
		uint32_t i;

		nx = n->next;
		mroce_list_del(&qp->sched);
		if (qp->state != MROCE_QPS_ERR &&
		    QP(qp)->joined > c->last_rx && !qp_busy(qp)) {
			mroce_list_del(&QP(qp)->link);
			mroce_list_add_tail(&keep, &QP(qp)->link);
			continue;
		}
		for (i = qp->sq_head; i != qp->sq_tail; i++)
			if (mroce_sq_at(qp, i)->state != MROCE_WQE_DONE)
				break;
		if (i != qp->sq_tail)
			mroce_sq_fail(e, qp, mroce_sq_at(qp, i),
				      MROCE_WC_RETRY_EXC_ERR);
		else
			mroce_qp_to_err(e, qp, now);
		mroce_list_del(&QP(qp)->link);
		mroce_list_del(&qp->sched);
		QP(qp)->conn = NULL;
	}
	/* Forget c everywhere before freeing it: heap, dirty set, slot. */
	if (c->heap.hidx)
		mr_heap_remove(t, c);
	for (uint32_t i = 0; i < t->ndirty; i++)
		if (t->dirty[i] == c)
			t->dirty[i--] = t->dirty[--t->ndirty];
	t->by_peer[peer] = NULL;
	t->nconns--;
	conn_free(e, c);
	nc = mr_conn_new(e, peer);
	for (n = keep.next; n != &keep; n = nx) {
		struct mroce_qp *qp = mr_qp_of(n);

		nx = n->next;
		mroce_list_del(&QP(qp)->link);
		QP(qp)->conn = nc;
		if (nc) {
			mroce_list_add_tail(&nc->qps, &QP(qp)->link);
		} else {
			mroce_qp_to_err(e, qp, now);
			mroce_list_del(&qp->sched);
		}
	}
	return nc;
}

/* The last time the peer was heard from: progress of our data, or any
 * packet of it (a receiver of data has no progress of its own). */
uint64_t mr_conn_heard(const struct mr_conn *c)
{
	return c->last_ack > c->last_rx ? c->last_ack : c->last_rx;
}

static int mr_init(struct mroce_engine *e)
{
	struct mr_engine *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->by_peer = calloc(e->cfg.max_conns, sizeof(*t->by_peer));
	t->heap = calloc(e->cfg.max_conns, sizeof(*t->heap));
	t->dirty = calloc(e->cfg.max_conns, sizeof(*t->dirty));
	t->work = calloc(e->cfg.max_conns, sizeof(*t->work));
	if (!t->by_peer || !t->heap || !t->dirty || !t->work) {
		free(t->by_peer);
		free(t->heap);
		free(t->dirty);
		free(t->work);
		free(t);
		return -ENOMEM;
	}
	t->peer_bits = 1;
	while ((1u << t->peer_bits) < e->cfg.max_conns)
		t->peer_bits++;
	mroce_list_init(&t->conns);
	mroce_list_init(&t->active);
	e->tp = t;
	return 0;
}

static void mr_fini(struct mroce_engine *e)
{
	struct mr_engine *t = T(e);

	while (!mroce_list_empty(&t->conns))
		conn_free(e, mroce_container_of(t->conns.next, struct mr_conn,
						link));
	free(t->by_peer);
	free(t->heap);
	free(t->dirty);
	free(t->work);
	free(t);
}

static int mr_qp_create(struct mroce_engine *e, struct mroce_qp *qp)
{
	struct mr_qp *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	q->wqe = calloc(qp->sq_cap, sizeof(*q->wqe));
	if (!q->wqe) {
		free(q);
		return -ENOMEM;
	}
	q->qp = qp;
	qp->tp = q;
	return 0;
}

static void qp_rx_clear(struct mroce_qp *qp)
{
	struct mr_qp *q = QP(qp);

	for (int i = 0; i < MR_MSG_WIN; i++) {
		mr_st_free(&q->rx[i].st);
		q->rx[i].state = MR_RX_FREE;
	}
	for (int i = 0; i < MROCE_MAX_RD_ATOMIC; i++) {
		mr_st_free(&q->rdrx[i].st);
		q->rdrx[i].used = false;
	}
	q->reads_out = 0;
}

static void mr_qp_destroy(struct mroce_engine *e, struct mroce_qp *qp)
{
	if (!qp->tp)
		return;
	qp_rx_clear(qp);
	mroce_list_del(&QP(qp)->link);
	mroce_list_del(&qp->sched);
	if (QP(qp)->conn)
		mr_conn_kick(QP(qp)->conn);
	free(QP(qp)->wqe);
	free(qp->tp);
	qp->tp = NULL;
}

static int mr_qp_modify_one(struct mroce_engine *e, struct mroce_qp *qp,
			    enum mroce_qp_state old,
			    const struct mroce_qp_attr *attr, uint32_t mask,
			    uint64_t now)
{
	struct mr_qp *q = QP(qp);
	struct mr_conn *c;

	switch (qp->state) {
	case MROCE_QPS_RTR:
		if (old != MROCE_QPS_INIT)
			return 0;
		c = T(e)->by_peer[qp->peer];
		if (!c)
			c = mr_conn_new(e, qp->peer);
		if (!c)
			return -ENOMEM;
		q->conn = c;
		q->joined = now;
		mroce_list_add_tail(&c->qps, &q->link);
		if (c->state == MR_CONN_IDLE)
			mr_hs_start(e, c, now);
		return 0;
	case MROCE_QPS_RTS:
		mr_qp_kick(qp);
		return 0;
	case MROCE_QPS_ERR:
		/* Entries of this QP still on paths are resolved lazily
		 * (acked: forgotten; lost: the path is retired). */
		qp_rx_clear(qp);
		mroce_list_del(&qp->sched);
		for (int i = 0; i < MROCE_MAX_RD_ATOMIC; i++)
			qp->rd[i].used = false;
		qp->rd_head = qp->rd_tail;
		return 0;
	case MROCE_QPS_RESET:
		qp_rx_clear(qp);
		mroce_list_del(&q->link);
		mroce_list_del(&qp->sched);
		/* Forget everything but what the QP's life keeps: the WQE
		 * states are set afresh at each post. */
		*q = (struct mr_qp){ .qp = qp, .wqe = q->wqe };
		return 0;
	default:
		return 0;
	}
}

static int mr_qp_modify(struct mroce_engine *e, struct mroce_qp *qp,
			enum mroce_qp_state old,
			const struct mroce_qp_attr *attr, uint32_t mask,
			uint64_t now)
{
	int r = mr_qp_modify_one(e, qp, old, attr, mask, now);

	if (qp->tp && QP(qp)->conn)
		mr_conn_kick(QP(qp)->conn);
	return r;
}

/* Messages that consume a receive at the responder (ssn counts them). */
static bool wr_consumes_recv(enum mroce_wr_opcode op)
{
	return op == MROCE_WR_SEND || op == MROCE_WR_SEND_WITH_IMM ||
	       op == MROCE_WR_RDMA_WRITE_WITH_IMM;
}

static int mr_post_send(struct mroce_engine *e, struct mroce_qp *qp,
			struct mroce_wqe *w, uint64_t now)
{
	struct mr_qp *q = QP(qp);
	struct mr_conn *c = q->conn;

	*mrw(qp, w) = (struct mr_wqe){
		.msn = q->next_msn,
		.ssn = q->next_ssn,
	};
	if (c && c->state == MR_CONN_IDLE)
		mr_hs_start(e, c, now);
	mr_qp_kick(qp);
	if (c)
		mr_conn_kick(c);
	q->next_msn++;
	if (wr_consumes_recv(w->wr.opcode))
		q->next_ssn++;
	return 0;
}

static void mr_post_recv(struct mroce_engine *e, struct mroce_qp *qp)
{
	if (QP(qp)->conn) {
		mr_rx_deliver(e, qp);	/* a WRITE_IMM may wait for it */
		mr_conn_kick(QP(qp)->conn);
	}
}

static int mr_path_info(const struct mroce_engine *e, int peer, int idx,
			struct mroce_path_info *out)
{
	const struct mr_conn *c;
	const struct mr_path *p;

	if (peer < 0 || (uint32_t)peer >= e->cfg.max_conns)
		return -ENOENT;
	c = T(e)->by_peer[peer];
	if (!c || idx < 0 || idx >= c->npaths)
		return -ENOENT;
	p = &c->path[idx];
	memset(out, 0, sizeof(*out));
	out->sport = p->sport;
	out->gen = p->gen;
	out->alive = c->state == MR_CONN_ESTABLISHED && !p->probed;
	out->srtt_us = p->rtt.srtt_us;
	out->cwnd_pkts = mr_cc_cwnd_pkts(p);
	out->inflight = p->inflight;
	out->tx_pkts = p->tx_pkts;
	out->retransmits = p->retransmits;
	out->ce_marks = p->ce_marks;
	out->next_psn = p->next_psn;
	out->rx_psn = p->rx_high;
	return 0;
}

static size_t mr_conn_mem(const struct mroce_engine *e)
{
	size_t np = e->cfg.npaths;

	return sizeof(struct mr_conn) + np * sizeof(struct mr_path) +
	       MR_TXE_MAX * sizeof(struct mr_txe) +
	       np * MR_PATH_WIN * sizeof(uint16_t);
}

const struct mroce_transport_ops mroce_metaroce_ops = {
	.name = "metaroce",
	.init = mr_init,
	.fini = mr_fini,
	.qp_create = mr_qp_create,
	.qp_destroy = mr_qp_destroy,
	.qp_modify = mr_qp_modify,
	.post_send = mr_post_send,
	.post_recv = mr_post_recv,
	.rx = mr_rx,
	.tx = mr_tx,
	.tick = mr_tick,
	.next_timer = mr_next_timer,
	.path_info = mr_path_info,
	.conn_mem = mr_conn_mem,
};
