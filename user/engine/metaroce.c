// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * MetaRoCE transport: one connection per peer, one ordered stream per QP,
 * npaths paths per connection (one UDP source port each). See
 * docs/engine.md for the algorithms; the key invariants are:
 *
 *  - A PSN is acknowledged (cum_psn / SACK) only when its packet was
 *    accepted: data placed, request recorded. A refused packet (RNR, bad
 *    rkey, ...) leaves a hole and gets a NAK, so an ACK can never make the
 *    sender believe refused data arrived, even if the NAK is lost.
 *  - Holes are filled by retransmitting the SAME PSN on the same path
 *    generation, or discarded by retiring the path (new generation, new
 *    PSN space, new source port); entries of a retired path are resent
 *    on other paths with new PSNs.
 *  - Message-level duplicate suppression uses a per-message segment
 *    bitmap at the receiver; completions are delivered in msn order.
 */
#include <stdlib.h>

#include "metaroce_int.h"

static inline struct mr_engine *T(const struct mroce_engine *e)
{
	return e->tp;
}

static inline uint32_t now_us(uint64_t now)
{
	return (uint32_t)(now / 1000);
}

static inline bool gen_newer(uint8_t a, uint8_t b)
{
	return (int8_t)(a - b) > 0;
}

static inline uint32_t nsegs_of(uint32_t len, uint32_t mtu)
{
	return len ? (len + mtu - 1) / mtu : 1;
}

static inline uint32_t seg_len(uint32_t msg_len, uint32_t seg, uint32_t mtu)
{
	uint64_t off = (uint64_t)seg * mtu;

	if (off >= msg_len)
		return 0;
	return msg_len - off < mtu ? (uint32_t)(msg_len - off) : mtu;
}

static inline struct mr_qp *QP(const struct mroce_qp *qp)
{
	return qp->tp;
}

/* ------------------------------------------------------------------ */
/* Segment trackers                                                     */
/* ------------------------------------------------------------------ */
static int st_init(struct mr_segtrack *st, uint32_t nsegs)
{
	st->nsegs = nsegs;
	st->got = 0;
	st->inl = 0;
	st->ext = NULL;
	if (nsegs > 64) {
		/* One allocation per large message (> 64 packets), never
		 * per packet. */
		st->ext = calloc((nsegs + 63) / 64, sizeof(uint64_t));
		if (!st->ext)
			return -ENOMEM;
	}
	return 0;
}

static bool st_has(const struct mr_segtrack *st, uint32_t seg)
{
	const uint64_t *w = st->ext ? &st->ext[seg / 64] : &st->inl;

	return *w & (1ull << (seg % 64));
}

static void st_set(struct mr_segtrack *st, uint32_t seg)
{
	uint64_t *w = st->ext ? &st->ext[seg / 64] : &st->inl;

	*w |= 1ull << (seg % 64);
	st->got++;
}

static void st_free(struct mr_segtrack *st)
{
	free(st->ext);
	st->ext = NULL;
}

/* ------------------------------------------------------------------ */
/* Connections and paths                                                */
/* ------------------------------------------------------------------ */
static uint16_t new_sport(struct mroce_engine *e, const struct mr_conn *c,
			  int slot)
{
	uint16_t sp;

	for (int tries = 0;; tries++) {
		bool clash = false;

		sp = MROCE_SPORT_MIN +
		     mroce_rng_below(e, MROCE_SPORT_MAX - MROCE_SPORT_MIN + 1);
		for (int i = 0; i < c->npaths && tries < 16; i++)
			if (i != slot && c->path[i].sport == sp)
				clash = true;
		if (!clash && sp != c->path[slot].sport)
			return sp;
	}
}

static void path_tx_init(struct mroce_engine *e, struct mr_conn *c, int slot)
{
	struct mr_path *p = &c->path[slot];
	uint32_t isn = mroce_path_isn(c->tx_isn, (uint8_t)slot, p->gen);

	p->sport = new_sport(e, c, slot);
	p->next_psn = p->una = p->loss_scan = p->high_acked = isn;
	p->coal_psn = isn;
	p->inflight = p->nlost = p->nheld = 0;
	p->probed = p->probation = p->tlp = p->moving = p->hops = 0;
	p->deadline = 0;
	p->hold_until = 0;
	p->srtt_us = p->rttvar_us = 0;
	p->dupthresh = 1;
	p->rtx_head = p->rtx_n = 0;
	p->rtx_total = p->probe_rtx = 0;
	/* Forget the retired generation's PROBE: the peer's first ACK of
	 * the new one may still carry its echo (ACKF_PROBE and its tsval),
	 * and probe_psn lies in the old PSN space, which rx_ack would walk
	 * from the new una (up to 2^31 PSNs, a stall of seconds). */
	p->probe_ts = 0;
	p->probe_psn = isn;
	for (int i = 0; i < MR_PATH_WIN; i++)
		p->ring[i] = MR_TXE_NONE;
	mr_cc_init(e, p);
}

/* Nothing of the path is in flight, waiting for a resend or held. */
static inline bool path_empty(const struct mr_path *p)
{
	return !(p->inflight + p->nlost + p->nheld);
}

/* The transmit entry PSN psn of path p occupies, or -1 (none, or the ring
 * slot holds another PSN). */
static inline int path_txe(const struct mr_conn *c, const struct mr_path *p,
			   uint32_t psn)
{
	uint16_t idx = p->ring[psn % MR_PATH_WIN];

	return idx != MR_TXE_NONE && c->txe[idx].psn == psn ? idx : -1;
}

static void conn_kick(struct mr_conn *c);
static void ack_port_check(struct mroce_engine *e, struct mr_conn *c,
			   struct mr_path *p, uint64_t now, bool now_due);
static void heap_remove(struct mr_engine *t, struct mr_conn *c);

static struct mr_conn *conn_new(struct mroce_engine *e, int peer)
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
	do
		c->local_id = (mroce_rng_u32(e) << t->peer_bits) |
			      (uint32_t)peer;
	while (c->local_id == 0);
	c->tx_isn = mroce_rng_u32(e);
	for (int i = 0; i < MR_TXE_MAX / 64; i++)
		c->txe_free[i] = ~0ull;
	for (int i = 0; i < np; i++) {
		c->path[i].ring = rings + (size_t)i * MR_PATH_WIN;
		path_tx_init(e, c, i);
	}
	mroce_list_init(&c->qps);
	mroce_list_init(&c->sched);
	mroce_list_add_tail(&t->conns, &c->link);
	c->eng = t;
	c->due = UINT64_MAX;
	conn_kick(c);
	t->by_peer[peer] = c;
	e->peers[peer].conn = c;
	t->nconns++;
	mroce_ev_conn_up(e, peer, c->local_id, (uint32_t)peer);
	return c;
}

static void conn_free(struct mroce_engine *e, struct mr_conn *c)
{
	mroce_ev_conn_down(e, c->peer, c->local_id, (uint32_t)c->peer);
	mroce_list_del(&c->link);
	mroce_list_del(&c->alink);
	free(c->path[0].ring);
	free(c->txe);
	free(c);
}

/* Connection of a received conn_id, or NULL. */
static struct mr_conn *conn_by_id(const struct mroce_engine *e, uint32_t id)
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

/* ------------------------------------------------------------------ */
/* Transmit entries                                                     */
/* ------------------------------------------------------------------ */
static int txe_alloc(struct mr_conn *c)
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

static void txe_release(struct mr_conn *c, int idx)
{
	if (c->txe_resend[idx / 64] & (1ull << (idx % 64))) {
		c->txe_resend[idx / 64] &= ~(1ull << (idx % 64));
		c->nresend--;
	}
	memset(&c->txe[idx], 0, sizeof(c->txe[idx]));
	c->txe_free[idx / 64] |= 1ull << (idx % 64);
	c->txe_used--;
}

static struct mroce_rdjob *rd_find(struct mroce_qp *qp, uint32_t msn)
{
	for (uint32_t i = qp->rd_head; i != qp->rd_tail; i++) {
		struct mroce_rdjob *j = &qp->rd[i % MROCE_MAX_RD_ATOMIC];

		if (j->used && j->msn == msn)
			return j;
	}
	return NULL;
}


/* New packets a connection may have in flight. Until the receiver's
 * first fair-share hint arrives (one RTT) only MR_FIRST_FLIGHT: a new
 * sender does not know whether it joins an idle receiver or one with
 * thousands of senders, and in the latter case a full first window from
 * each of them is a burst no buffer holds. The hint then sets the pace. */
static uint32_t conn_flight_cap(const struct mr_conn *c)
{
	return c->hint_bps ? MR_TXE_MAX : MR_FIRST_FLIGHT;
}

/* Connection has (possibly) work or changed: it joins the active list
 * and its due instant is recomputed before the call returns (or at the
 * next next_timer()/tx()/tick()), so thousands of idle connections cost
 * nothing. */
static void conn_kick(struct mr_conn *c)
{
	struct mr_engine *t = c->eng;

	if (!mroce_list_linked(&c->alink))
		mroce_list_add_tail(&t->active, &c->alink);
	if (!c->dirty) {
		c->dirty = 1;
		t->dirty[t->ndirty++] = c;
	}
}

static bool conn_idle(const struct mr_conn *c)
{
	if (c->state == MR_CONN_REQ_SENT || c->state == MR_CONN_CONFIRM_SENT ||
	    c->want_hs || c->want_accept || c->nak_count || c->txe_used ||
	    c->hold_until ||
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
		const struct mroce_qp *qp =
			mroce_container_of(n, struct mroce_qp, conn_link);

		if (qp->tp && ((const struct mr_qp *)qp->tp)->reads_out)
			return false;	/* READ watchdog */
	}
	return true;
}

/* A READ whose responses stop coming (the responder gave up, and its
 * NAK was lost too) must not hang: fail it after this long without any
 * response progress - longer than the responder's own retries take. */
static uint64_t read_timeout(const struct mroce_engine *e)
{
	return ((uint64_t)e->cfg.rto_min_us * 1000 << 6) *
	       (e->cfg.retry_cnt + 2u);
}

static void qp_kick(struct mroce_qp *qp)
{
	struct mr_qp *q = QP(qp);

	if (q && q->conn) {
		if (!mroce_list_linked(&qp->sched))
			mroce_list_add_tail(&q->conn->sched, &qp->sched);
		conn_kick(q->conn);
	}
}

/* ------------------------------------------------------------------ */
/* Handshake                                                            */
/* ------------------------------------------------------------------ */
static uint64_t cookie_mac(const struct mroce_engine *e,
			   const struct mroce_peer_addr *a, uint32_t src_id,
			   uint64_t nonce, uint32_t t)
{
	uint8_t b[1 + 16 + 16 + 4 + 8 + 4];
	size_t o = 0;

	b[o++] = a->family;
	memcpy(b + o, a->addr, 16);
	o += 16;
	memcpy(b + o, a->local, 16);
	o += 16;
	memcpy(b + o, &src_id, 4);
	o += 4;
	memcpy(b + o, &nonce, 8);
	o += 8;
	memcpy(b + o, &t, 4);
	o += 4;
	return mroce_siphash24(e->cfg.secret, b, o);
}

static inline uint32_t cookie_clock(uint64_t now)
{
	return (uint32_t)(now / 1000000);	/* ms */
}

/* Handshake retransmission timeout of try `tries`: rto_min (no RTT is
 * known yet for a REQ; a CONFIRM's is at least twice the REQ's round
 * trip), doubling per try up to x64, and never below MR_HS_RTO_MIN_NS.
 * It used to be 1 ms flat: at 5% loss one lost handshake packet in 20
 * connections idled a connection for longer than a 64 MiB transfer. The
 * responder keeps no state, so an early resend costs one small packet. */
static uint64_t hs_rto(const struct mroce_engine *e,
		       const struct mr_conn *c, uint8_t tries)
{
	uint64_t rto = (uint64_t)e->cfg.rto_min_us * 1000;

	if (c->hs_rtt_us && rto < 2ull * c->hs_rtt_us * 1000)
		rto = 2ull * c->hs_rtt_us * 1000;
	if (rto < MR_HS_RTO_MIN_NS)
		rto = MR_HS_RTO_MIN_NS;
	return rto << (tries < 6 ? tries : 6);
}

/* The next handshake deadline: hs_rto plus up to as much again at
 * random, so that the connections of an incast, which all lost their
 * handshake packets in the same burst, do not all resend in the next. */
static uint64_t hs_deadline(struct mroce_engine *e, const struct mr_conn *c,
			    uint8_t tries, uint64_t now)
{
	uint64_t rto = hs_rto(e, c, tries);

	return now + rto +
	       mroce_rng_below(e, rto < UINT32_MAX ? (uint32_t)rto : UINT32_MAX);
}

/* Queues a stateless reply (CHALLENGE, NAK NO_CONN) to the sender of m;
 * NULL when the queue is full (the sender asks again). */
static struct mr_hsreply *hsq_push(struct mr_engine *t, uint8_t opcode,
				   const struct mroce_rx_meta *m,
				   uint32_t conn_id)
{
	struct mr_hsreply *r;

	if (t->nhs >= MR_HSQ)
		return NULL;
	r = &t->hsq[(t->hs_head + t->nhs++) % MR_HSQ];
	memset(r, 0, sizeof(*r));
	r->opcode = opcode;
	r->peer = m->peer;
	r->sport = m->sport;
	r->conn_id = conn_id;
	return r;
}

static void hs_start(struct mroce_engine *e, struct mr_conn *c, uint64_t now)
{
	c->state = MR_CONN_REQ_SENT;
	c->nonce = mroce_rng_u64(e);
	c->hs_tries = 0;
	c->want_hs = 1;
	c->hs_deadline = hs_deadline(e, c, 0, now);
	conn_kick(c);
}

static void conn_established(struct mroce_engine *e, struct mr_conn *c,
			     uint64_t now)
{
	struct mroce_list *n;

	c->state = MR_CONN_ESTABLISHED;
	c->est_ms = cookie_clock(now);
	c->last_rx = now;
	c->want_hs = 0;
	c->hs_deadline = 0;
	e->stats.handshakes++;
	mroce_ev_conn_update(e, c->peer, c->local_id, c->remote_id,
			     (uint32_t)c->peer);
	for (n = c->qps.next; n != &c->qps; n = n->next)
		qp_kick(mroce_container_of(n, struct mroce_qp, conn_link));
}

/* Handshake gave up: fail the head WQE of every QP waiting on it. */
static void hs_fail(struct mroce_engine *e, struct mr_conn *c)
{
	struct mroce_list *n, *nx;

	c->state = MR_CONN_IDLE;
	c->want_hs = 0;
	c->hs_deadline = 0;
	for (n = c->qps.next; n != &c->qps; n = nx) {
		struct mroce_qp *qp =
			mroce_container_of(n, struct mroce_qp, conn_link);

		nx = n->next;
		if (mroce_sq_count(qp))
			mroce_sq_fail(e, qp, mroce_sq_at(qp, qp->sq_head),
				      MROCE_WC_RETRY_EXC_ERR);
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
static struct mr_conn *conn_restart(struct mroce_engine *e, struct mr_conn *c,
				    uint64_t now)
{
	struct mr_engine *t = T(e);
	struct mroce_list keep, *n, *nx;
	int peer = c->peer;
	struct mr_conn *nc;

	mroce_list_init(&keep);
	for (n = c->qps.next; n != &c->qps; n = nx) {
		struct mroce_qp *qp =
			mroce_container_of(n, struct mroce_qp, conn_link);
		uint32_t i;

		nx = n->next;
		mroce_list_del(&qp->sched);
		if (qp->state != MROCE_QPS_ERR &&
		    QP(qp)->joined > c->last_rx && !qp_busy(qp)) {
			mroce_list_del(&qp->conn_link);
			mroce_list_add_tail(&keep, &qp->conn_link);
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
		mroce_list_del(&qp->conn_link);
		mroce_list_del(&qp->sched);
		QP(qp)->conn = NULL;
	}
	/* Forget c everywhere before freeing it: heap, dirty set, slot. */
	if (c->hidx)
		heap_remove(t, c);
	for (uint32_t i = 0; i < t->ndirty; i++)
		if (t->dirty[i] == c)
			t->dirty[i--] = t->dirty[--t->ndirty];
	t->by_peer[peer] = NULL;
	e->peers[peer].conn = NULL;
	t->nconns--;
	conn_free(e, c);
	nc = conn_new(e, peer);
	for (n = keep.next; n != &keep; n = nx) {
		struct mroce_qp *qp =
			mroce_container_of(n, struct mroce_qp, conn_link);

		nx = n->next;
		mroce_list_del(&qp->conn_link);
		QP(qp)->conn = nc;
		if (nc) {
			mroce_list_add_tail(&nc->qps, &qp->conn_link);
		} else {
			mroce_qp_to_err(e, qp, now);
			mroce_list_del(&qp->sched);
		}
	}
	return nc;
}

static void hs_fill(const struct mroce_engine *e, const struct mr_conn *c,
		    struct mroce_meta_pkt *pk, uint8_t op)
{
	memset(pk, 0, sizeof(*pk));
	pk->opcode = op;
	pk->conn.src_conn_id = c->local_id;
	pk->conn.isn = c->tx_isn;
	pk->conn.nonce = c->nonce;
	pk->conn.mtu = e->cfg.mtu;
	pk->conn.max_paths = e->cfg.npaths;
}

static int rx_handshake(struct mroce_engine *e, const struct mroce_rx_meta *m,
			const struct mroce_meta_pkt *pk, uint64_t now)
{
	struct mr_engine *t = T(e);
	const struct mroce_peer *peer = mroce_peer_get(e, m->peer);
	struct mr_conn *c;

	if (!peer)
		return -ENOENT;
	switch (pk->opcode) {
	case MROCE_OP_CONNECT_REQ: {
		/* Stateless: answer with a cookie, remember nothing. */
		struct mr_hsreply *r;

		if (pk->conn_id || !pk->conn.src_conn_id)
			return -EINVAL;
		r = hsq_push(t, MROCE_OP_CONNECT_CHALLENGE, m,
			     pk->conn.src_conn_id);
		if (!r)
			return -ENOBUFS;
		r->nonce = pk->conn.nonce;
		r->cookie_time = cookie_clock(now);
		r->cookie = cookie_mac(e, &peer->addr, pk->conn.src_conn_id,
				       pk->conn.nonce, r->cookie_time);
		return 0;
	}
	case MROCE_OP_CONNECT_CHALLENGE:
		c = conn_by_id(e, pk->conn_id);
		if (!c || c->peer != m->peer)
			return -ENOENT;
		if (c->state != MR_CONN_REQ_SENT &&
		    c->state != MR_CONN_CONFIRM_SENT)
			return 0;	/* late duplicate */
		if (pk->conn.nonce != c->nonce)
			return -EINVAL;
		conn_kick(c);
		c->cookie = pk->conn.cookie;
		c->cookie_time = pk->conn.cookie_time;
		if (c->state == MR_CONN_REQ_SENT) {
			/* The first RTT sample of the connection: paths
			 * use it until they have their own (path_pto). */
			uint64_t rtt = now > c->hs_sent ? now - c->hs_sent : 0;

			c->hs_rtt_us = rtt >= 1000 ? now_us(rtt) : 1;
			c->state = MR_CONN_CONFIRM_SENT;
			c->hs_fast = 0;
			c->hs_tries = 0;
			c->want_hs = 1;
			c->hs_deadline = hs_deadline(e, c, 0, now);
		}
		return 0;
	case MROCE_OP_CONNECT_CONFIRM: {
		uint32_t age = cookie_clock(now) - pk->conn.cookie_time;

		if (pk->conn_id || !pk->conn.src_conn_id)
			return -EINVAL;
		if (pk->conn.cookie != cookie_mac(e, &peer->addr,
						  pk->conn.src_conn_id,
						  pk->conn.nonce,
						  pk->conn.cookie_time) ||
		    age > MR_COOKIE_LIFE_MS) {
			e->stats.rx_no_conn++;
			return -EACCES;
		}
		c = t->by_peer[m->peer];
		if (c && c->state == MR_CONN_ESTABLISHED &&
		    c->remote_id == pk->conn.src_conn_id) {
			/* Our ACCEPT was lost (maybe the initiator even
			 * restarted with a new nonce): answer this one. */
			c->nonce = pk->conn.nonce;
			c->want_accept = 1;
			conn_kick(c);
			return 0;
		}
		if (c && c->state == MR_CONN_ESTABLISHED) {
			/* Another incarnation of the peer. A CONFIRM whose
			 * cookie predates our connection is a delayed one
			 * of an older incarnation: ignore it. */
			if ((int32_t)(pk->conn.cookie_time - c->est_ms) < 0) {
				e->stats.rx_no_conn++;
				return -ESTALE;
			}
			c = conn_restart(e, c, now);
		} else if (!c) {
			c = conn_new(e, m->peer);
		}
		if (!c)
			return -ENOMEM;
		/* Adopt (also when we were initiating: simultaneous open
		 * converges because each side keeps its own id and ISN). */
		c->remote_id = pk->conn.src_conn_id;
		c->rx_isn = pk->conn.isn;
		c->nonce = pk->conn.nonce;
		if (pk->conn.mtu < c->mtu)
			c->mtu = pk->conn.mtu < 256 ? 256 : pk->conn.mtu;
		if (pk->conn.max_paths < c->npaths)
			c->npaths = pk->conn.max_paths;
		c->want_accept = 1;
		conn_kick(c);
		conn_established(e, c, now);
		/* A peer that just connected is about to send: count it in
		 * the fair share from now, not from its first data packet,
		 * so that the hints of a growing incast shrink before the
		 * newcomers' data arrives. */
		mr_cc_fair_share(e, c, now);
		return 0;
	}
	case MROCE_OP_CONNECT_ACCEPT:
		c = conn_by_id(e, pk->conn_id);
		if (!c || c->peer != m->peer)
			return -ENOENT;
		if (c->state == MR_CONN_ESTABLISHED)
			return 0;
		if (c->state != MR_CONN_CONFIRM_SENT ||
		    pk->conn.nonce != c->nonce || !pk->conn.src_conn_id)
			return -EINVAL;
		c->remote_id = pk->conn.src_conn_id;
		c->rx_isn = pk->conn.isn;
		if (pk->conn.mtu < c->mtu)
			c->mtu = pk->conn.mtu < 256 ? 256 : pk->conn.mtu;
		if (pk->conn.max_paths < c->npaths)
			c->npaths = pk->conn.max_paths;
		conn_established(e, c, now);
		return 0;
	default:
		return 0;	/* CLOSE / CLOSE_ACK: not used in v0 */
	}
}

/* ------------------------------------------------------------------ */
/* Receive side: path state                                             */
/* ------------------------------------------------------------------ */
static void rx_path_reset(struct mr_conn *c, struct mr_path *p, int slot,
			  uint8_t gen)
{
	p->rx_gen = gen;
	p->rx_valid = 1;
	p->rx_cum = mroce_path_isn(c->rx_isn, (uint8_t)slot, gen);
	memset(p->sack, 0, sizeof(p->sack));
}

/* Resolve the path generation of an arriving packet. false = stale. */
static bool rx_path_gen(struct mroce_engine *e, struct mr_conn *c,
			struct mr_path *p, int slot, uint8_t gen)
{
	if (!p->rx_valid || gen_newer(gen, p->rx_gen))
		rx_path_reset(c, p, slot, gen);
	else if (gen != p->rx_gen) {
		e->stats.rx_stale_path++;
		return false;
	}
	return true;
}

static bool sack_test(const struct mr_path *p, uint32_t i)
{
	return p->sack[i / 64] & (1ull << (i % 64));
}

static void sack_shr(struct mr_path *p, uint32_t k)
{
	const int n = MROCE_SACK_BITS / 64;

	while (k >= 64) {
		for (int i = 0; i < n - 1; i++)
			p->sack[i] = p->sack[i + 1];
		p->sack[n - 1] = 0;
		k -= 64;
	}
	if (!k)
		return;
	for (int i = 0; i < n - 1; i++)
		p->sack[i] = (p->sack[i] >> k) | (p->sack[i + 1] << (64 - k));
	p->sack[n - 1] >>= k;
}

/* Record PSN cum + d as received (d in [0, 256]). */
void mr_rx_mark(struct mr_path *p, uint32_t d)
{
	if (d) {
		p->sack[(d - 1) / 64] |= 1ull << ((d - 1) % 64);
		return;
	}
	/* cum arrives: advance over it and every contiguous SACKed PSN
	 * (bit i is cum + 1 + i), possibly across words. */
	uint32_t ones = 0;

	for (int w = 0; w < MROCE_SACK_BITS / 64; w++) {
		if (p->sack[w] != ~0ull) {
			ones += (uint32_t)__builtin_ctzll(~p->sack[w]);
			break;
		}
		ones += 64;
	}
	p->rx_cum += 1 + ones;
	sack_shr(p, 1 + ones);
}

/* How long an ACK of ours may wait for company. A software endpoint
 * (cfg.jitter_us) waits longer: spread over 8 paths, a software sender's
 * packets arrive on each path tens of µs apart, so 8 µs coalesced
 * nothing and every data packet cost an ACK, whose receive is part of
 * the sender's time per packet; its peer's timers allow for
 * milliseconds of scheduling jitter anyway. Whatever needs an answer at
 * once still gets one (the urgent cases of ack_want). */
static uint64_t ack_delay_ns(const struct mroce_engine *e)
{
	return e->cfg.jitter_us ? MR_ACK_DELAY_SW_NS : MR_ACK_DELAY_NS;
}

static void ack_want(const struct mroce_engine *e, struct mr_path *p,
		     bool urgent, uint64_t now)
{
	p->ack_pending++;
	if (!p->ack_due)
		p->ack_due = now + ack_delay_ns(e);
	if (urgent || p->ack_pending >= MR_ACK_EVERY)
		p->ack_urgent = 1;
}

static void nak_queue(struct mr_conn *c, uint8_t code, int slot, uint8_t gen,
		      uint32_t psn, uint32_t stream, uint32_t msn,
		      uint16_t sport)
{
	struct mr_nak *n;

	if (c->nak_count >= MR_NAKQ)
		return;	/* the sender's retransmission asks again */
	n = &c->nakq[(c->nak_head + c->nak_count++) % MR_NAKQ];
	n->code = code;
	n->path = (uint8_t)slot;
	n->gen = gen;
	n->rnr_timer = code == MROCE_NAK_RNR ? MR_RNR_TIMER : 0;
	n->psn = psn;
	n->stream = stream;
	n->msn = msn;
	n->sport = sport;
}

/* ------------------------------------------------------------------ */
/* Receive side: messages                                               */
/* ------------------------------------------------------------------ */
enum place_res {
	PL_OK,		/* accepted: mark the PSN */
	PL_DUP,		/* duplicate of accepted data: mark the PSN */
	PL_REFUSE,	/* not accepted: leave a hole (NAK queued) */
};

static uint8_t mrc_nak(enum mroce_mr_check r)
{
	switch (r) {
	case MROCE_MRC_BAD_KEY:
		return MROCE_NAK_BAD_RKEY;
	case MROCE_MRC_BOUNDS:
		return MROCE_NAK_OUT_OF_BOUNDS;
	default:
		return MROCE_NAK_ACCESS;
	}
}

/* Deliver completed messages of a stream in msn order. */
static void rx_deliver(struct mroce_engine *e, struct mroce_qp *qp)
{
	struct mr_qp *q = QP(qp);

	while (qp->state == MROCE_QPS_RTR || qp->state == MROCE_QPS_RTS) {
		struct mr_rxmsg *rm = &q->rx[q->rx_next_msn % MR_MSG_WIN];
		struct mroce_wc wc = { .status = MROCE_WC_SUCCESS };

		if (rm->state != MR_RX_COMPLETE || rm->msn != q->rx_next_msn)
			return;
		switch (rm->op) {
		case MROCE_OP_SEND:
		case MROCE_OP_SEND_IMM:
		case MROCE_OP_WRITE_IMM:
			/* WRITE_IMM data is placed already; its completion
			 * waits for a receive (no RNR for it, see docs). */
			if (!mroce_rq_head(qp, 0))
				return;
			wc.opcode = rm->op == MROCE_OP_WRITE_IMM ?
					    MROCE_WC_RECV_RDMA_WITH_IMM :
					    MROCE_WC_RECV;
			wc.byte_len = rm->msg_len;
			if (rm->op != MROCE_OP_SEND) {
				wc.imm = rm->imm;
				wc.flags = MROCE_WC_WITH_IMM;
			}
			q->rx_ssn++;
			st_free(&rm->st);
			rm->state = MR_RX_FREE;
			q->rx_next_msn++;
			mroce_rq_complete(e, qp, &wc);
			continue;
		case MROCE_OP_READ_REQ: {
			struct mroce_rdjob *j;

			if (qp->rd_tail - qp->rd_head >= MROCE_MAX_RD_ATOMIC)
				return;
			j = &qp->rd[qp->rd_tail++ % MROCE_MAX_RD_ATOMIC];
			memset(j, 0, sizeof(*j));
			j->used = true;
			j->msn = rm->msn;
			j->va = rm->va;
			j->rkey = rm->key;
			j->len = rm->msg_len;
			j->sink_va = rm->sink_va;
			j->sink_key = rm->sink_key;
			j->nsegs = nsegs_of(rm->msg_len, q->conn->mtu);
			qp_kick(qp);
			break;
		}
		default:
			break;
		}
		st_free(&rm->st);
		rm->state = MR_RX_FREE;
		q->rx_next_msn++;
	}
}

/* A READ response job finished: free its slot; a READ_REQ that found the
 * job ring full is waiting in rx_deliver for exactly this. */
static void rd_retire(struct mroce_engine *e, struct mroce_qp *qp,
		      struct mroce_rdjob *j)
{
	j->used = false;
	while (qp->rd_head != qp->rd_tail &&
	       !qp->rd[qp->rd_head % MROCE_MAX_RD_ATOMIC].used)
		qp->rd_head++;
	if (QP(qp) && QP(qp)->conn)
		rx_deliver(e, qp);
}

/* A responder-side fatal error on a stream: NAK + the QP goes to ERR. */
static enum place_res refuse(struct mroce_engine *e, struct mr_conn *c,
			     struct mroce_qp *qp, uint8_t code, int slot,
			     const struct mroce_meta_pkt *pk, bool qp_err)
{
	nak_queue(c, code, slot, pk->path_gen, pk->psn,
		  qp ? qp->dest_qpn : 0, pk->msn, c->path[slot].rx_sport);
	if (code == MROCE_NAK_BAD_RKEY || code == MROCE_NAK_OUT_OF_BOUNDS ||
	    code == MROCE_NAK_ACCESS)
		e->stats.rx_bad_rkey++;
	if (qp && qp_err)
		mroce_qp_to_err(e, qp, e->now);
	return PL_REFUSE;
}

static enum place_res place_read_resp(struct mroce_engine *e,
				      struct mr_conn *c, int slot,
				      const struct mroce_meta_pkt *pk)
{
	struct mroce_qp *qp = mroce_qp_find(e, pk->stream);
	struct mroce_wqe *w;
	struct mr_rdrx *rd = NULL;
	struct mr_qp *q;
	uint32_t seg;
	uint8_t *dst;

	if (!qp || !QP(qp) || QP(qp)->conn != c)
		return refuse(e, c, NULL, MROCE_NAK_NO_CONN, slot, pk, false);
	q = QP(qp);
	w = mroce_sq_by_msn(qp, pk->msn);
	if (qp->state != MROCE_QPS_RTS || !w ||
	    w->wr.opcode != MROCE_WR_RDMA_READ || w->state == MROCE_WQE_DONE)
		return PL_DUP;	/* late copy of a finished READ */
	if (pk->va != w->wr.sge.addr || pk->rkey != w->wr.sge.lkey ||
	    pk->msg_len != w->wr.sge.length || pk->offset % c->mtu ||
	    pk->payload_len != seg_len(pk->msg_len, pk->offset / c->mtu,
				       c->mtu))
		return refuse(e, c, qp, MROCE_NAK_INVALID_REQ, slot, pk, false);
	for (int i = 0; i < MROCE_MAX_RD_ATOMIC; i++)
		if (q->rdrx[i].used && q->rdrx[i].msn == pk->msn)
			rd = &q->rdrx[i];
	if (!rd)
		return PL_DUP;
	seg = pk->offset / c->mtu;
	if (st_has(&rd->st, seg)) {
		e->stats.rx_dup++;
		return PL_DUP;
	}
	dst = mroce_wqe_local_ptr(e, w, pk->offset, pk->payload_len,
				  MROCE_ACCESS_LOCAL_WRITE);
	if (!dst) {
		/* Our own sink vanished (MR deregistered): local error. */
		mroce_sq_fail(e, qp, w, MROCE_WC_LOC_PROT_ERR);
		return PL_OK;
	}
	if (pk->payload_len)
		memcpy(dst, pk->payload, pk->payload_len);
	st_set(&rd->st, seg);
	rd->deadline = e->now + read_timeout(e);
	if (rd->st.got == rd->st.nsegs) {
		st_free(&rd->st);
		rd->used = false;
		q->reads_out--;
		w->state = MROCE_WQE_DONE;
		w->status = MROCE_WC_SUCCESS;
		mroce_sq_drain(e, qp);
		qp_kick(qp);
	}
	return PL_OK;
}

static enum place_res place(struct mroce_engine *e, struct mr_conn *c,
			    int slot, const struct mroce_meta_pkt *pk)
{
	struct mroce_qp *qp;
	struct mr_rxmsg *rm;
	struct mr_qp *q;
	uint32_t seg, mtu = c->mtu;
	int32_t d;

	if (pk->opcode == MROCE_OP_READ_RESP)
		return place_read_resp(e, c, slot, pk);
	qp = mroce_qp_find(e, pk->stream);
	if (!qp || !QP(qp) || QP(qp)->conn != c)
		return refuse(e, c, NULL, MROCE_NAK_NO_CONN, slot, pk, false);
	q = QP(qp);
	if (qp->state != MROCE_QPS_RTR && qp->state != MROCE_QPS_RTS)
		return refuse(e, c, qp, MROCE_NAK_REMOTE_OP, slot, pk, false);
	d = (int32_t)(pk->msn - q->rx_next_msn);
	if (d < 0) {
		e->stats.rx_dup++;
		return PL_DUP;
	}
	if (d >= MR_MSG_WIN ||
	    (pk->opcode == MROCE_OP_READ_REQ ?
		     pk->offset != 0 || pk->payload_len != 0 :
		     pk->offset % mtu ||
			     pk->payload_len !=
				     seg_len(pk->msg_len, pk->offset / mtu,
					     mtu)))
		return refuse(e, c, qp, MROCE_NAK_INVALID_REQ, slot, pk, true);
	seg = pk->offset / mtu;
	rm = &q->rx[pk->msn % MR_MSG_WIN];

	if (rm->state == MR_RX_FREE) {
		struct mroce_rwqe *r;
		enum mroce_mr_check mc;

		memset(rm, 0, sizeof(*rm));
		switch (pk->opcode) {
		case MROCE_OP_SEND:
		case MROCE_OP_SEND_IMM: {
			int32_t k = (int32_t)(pk->ssn - q->rx_ssn);

			if (k < 0)
				return refuse(e, c, qp, MROCE_NAK_INVALID_REQ,
					      slot, pk, true);
			r = mroce_rq_head(qp, (uint32_t)k);
			if (!r)	/* RNR: hole + NAK, the sender retries */
				return refuse(e, c, qp, MROCE_NAK_RNR, slot,
					      pk, false);
			if (pk->msg_len > r->wr.sge.length)
				return refuse(e, c, qp, MROCE_NAK_INVALID_REQ,
					      slot, pk, true);
			rm->va = r->wr.sge.addr;
			rm->key = r->wr.sge.lkey;
			break;
		}
		case MROCE_OP_WRITE:
		case MROCE_OP_WRITE_IMM:
			mc = mroce_rkey_check(e, qp, pk->rkey, pk->va,
					      pk->msg_len,
					      MROCE_ACCESS_REMOTE_WRITE);
			if (mc != MROCE_MRC_OK)
				return refuse(e, c, qp, mrc_nak(mc), slot, pk,
					      true);
			rm->va = pk->va;
			rm->key = pk->rkey;
			break;
		case MROCE_OP_READ_REQ:
			mc = mroce_rkey_check(e, qp, pk->rkey, pk->va,
					      pk->msg_len,
					      MROCE_ACCESS_REMOTE_READ);
			if (mc != MROCE_MRC_OK)
				return refuse(e, c, qp, mrc_nak(mc), slot, pk,
					      true);
			rm->va = pk->va;
			rm->key = pk->rkey;
			rm->sink_va = pk->sink_va;
			rm->sink_key = pk->sink_key;
			break;
		default:
			return refuse(e, c, qp, MROCE_NAK_INVALID_REQ, slot,
				      pk, true);
		}
		if (st_init(&rm->st, pk->opcode == MROCE_OP_READ_REQ ?
					     1 :
					     nsegs_of(pk->msg_len, mtu)) < 0)
			return refuse(e, c, qp, MROCE_NAK_REMOTE_OP, slot, pk,
				      false);
		rm->op = pk->opcode;
		rm->msn = pk->msn;
		rm->msg_len = pk->msg_len;
		rm->imm = pk->imm;
		rm->solicited = !!(pk->flags & MROCE_F_SOLICITED);
		rm->state = MR_RX_ACTIVE;
	} else if (rm->msn != pk->msn || rm->op != pk->opcode ||
		   rm->msg_len != pk->msg_len ||
		   ((pk->opcode == MROCE_OP_WRITE ||
		     pk->opcode == MROCE_OP_WRITE_IMM) &&
		    (rm->va != pk->va || rm->key != pk->rkey))) {
		return refuse(e, c, qp, MROCE_NAK_INVALID_REQ, slot, pk, true);
	}
	if (rm->state == MR_RX_COMPLETE || st_has(&rm->st, seg)) {
		e->stats.rx_dup++;
		return PL_DUP;
	}
	if (pk->payload_len) {
		uint64_t dst = rm->va + pk->offset;

		/* Re-check per packet: the region may have gone since the
		 * first packet of the message. */
		if (pk->opcode == MROCE_OP_WRITE ||
		    pk->opcode == MROCE_OP_WRITE_IMM) {
			enum mroce_mr_check mc = mroce_rkey_check(
				e, qp, rm->key, dst, pk->payload_len,
				MROCE_ACCESS_REMOTE_WRITE);

			if (mc != MROCE_MRC_OK)
				return refuse(e, c, qp, mrc_nak(mc), slot, pk,
					      true);
		} else if (mroce_lkey_check(e, rm->key, dst, pk->payload_len,
					    MROCE_ACCESS_LOCAL_WRITE,
					    NULL) != MROCE_MRC_OK) {
			return refuse(e, c, qp, MROCE_NAK_REMOTE_OP, slot, pk,
				      true);
		}
		memcpy(mroce_mr_ptr(e, rm->key,
				    pk->opcode == MROCE_OP_WRITE ||
					    pk->opcode == MROCE_OP_WRITE_IMM,
				    dst),
		       pk->payload, pk->payload_len);
	}
	st_set(&rm->st, seg);
	if (rm->st.got == rm->st.nsegs) {
		rm->state = MR_RX_COMPLETE;
		rx_deliver(e, qp);
	}
	return PL_OK;
}

static int rx_data(struct mroce_engine *e, struct mr_conn *c,
		   const struct mroce_rx_meta *m, const struct mroce_meta_pkt *pk,
		   uint64_t now)
{
	int slot = pk->path;
	struct mr_path *p;
	enum place_res r;
	bool filled;
	int32_t d;

	e->stats.rx_data_pkts++;
	if (slot >= c->npaths) {
		e->stats.rx_malformed++;
		return -EINVAL;
	}
	p = &c->path[slot];
	if (!rx_path_gen(e, c, p, slot, pk->path_gen))
		return -ESTALE;
	p->rx_sport = m->sport;
	mr_cc_fair_share(e, c, now);	/* counts us as an active sender */
	if (m->ce) {
		if (p->rx_ce < 0xffff)
			p->rx_ce++;
		p->ack_flags |= MROCE_ACKF_ECE;
		e->stats.ce_marks++;
	}
	/* A pending answer to a PROBE must echo the probe's tsval: that is
	 * how the sender recognises it. */
	if (!(p->ack_flags & MROCE_ACKF_PROBE))
		p->rx_tsecr = pk->tsval;
	d = (int32_t)(pk->psn - p->rx_cum);
	if (d < 0 || (d > 0 && d <= MROCE_SACK_BITS &&
		      sack_test(p, (uint32_t)d - 1))) {
		e->stats.rx_dup++;
		p->ack_flags |= MROCE_ACKF_DUP;
		ack_want(e, p, true, now);
		return 0;
	}
	if (d > MROCE_SACK_BITS) {
		e->stats.rx_out_of_window++;
		ack_want(e, p, true, now);
		return -ERANGE;
	}
	if (d > 0)
		e->stats.rx_ooo++;
	filled = d == 0 && (p->sack[0] | p->sack[1] | p->sack[2] |
			    p->sack[3]);
	r = place(e, c, slot, pk);
	if (r != PL_REFUSE)
		mr_rx_mark(p, (uint32_t)d);
	/* ACK at once on a gap, a refusal, a request (the end of a message
	 * that nothing follows at once), and when a hole is filled (a
	 * retransmission: the sender is waiting for exactly this, and
	 * coalescing would add its delay to every loss recovery). */
	ack_want(e, p, d > 0 || r == PL_REFUSE ||
			     (pk->flags & (MROCE_F_ACK_REQ | MROCE_F_RETX)) ||
			     filled,
		 now);
	if ((pk->flags & (MROCE_F_LAST | MROCE_F_ACK_REQ)) ==
	    (MROCE_F_LAST | MROCE_F_ACK_REQ)) {
		/* The message's other segments went over the other paths
		 * and may sit in their ACK coalescing: the sender completes
		 * it only when all are acknowledged, so flush them now
		 * rather than a coalescing delay later. (A sender with
		 * more messages right behind leaves ACK_REQ off: they keep
		 * the ACKs coming, and flushing every path at every
		 * message end made one ACK per data packet.) */
		for (int i = 0; i < c->npaths; i++)
			if (c->path[i].ack_pending)
				c->path[i].ack_urgent = 1;
	}
	return 0;
}

static int rx_probe(struct mroce_engine *e, struct mr_conn *c,
		    const struct mroce_rx_meta *m,
		    const struct mroce_meta_pkt *pk, uint64_t now)
{
	struct mr_path *p;
	uint64_t late;
	bool lost;

	if (pk->path >= c->npaths)
		return -EINVAL;
	p = &c->path[pk->path];
	if (!rx_path_gen(e, c, p, pk->path, pk->path_gen))
		return -ESTALE;
	p->rx_sport = m->sport;
	p->rx_tsecr = pk->tsval;
	p->ack_flags |= MROCE_ACKF_PROBE;
	/* Did our ACKs go missing? Only if we already sent one that covers
	 * everything the PROBE says was sent, a while ago (a PROBE that
	 * follows its data at once, asking for the ACK we are about to
	 * send, proves nothing; nor does one of a path whose data was
	 * lost, as in an incast's downlink drops, nor a port check: CHECK,
	 * its sender has nothing outstanding there). */
	late = ack_delay_ns(e) + (uint64_t)e->cfg.jitter_us * 1000;
	lost = !(pk->flags & MROCE_F_CHECK) && p->ack_at &&
	       now - p->ack_at >= late &&
	       !mroce_psn_before(p->ack_cum, pk->next_psn);
	/* Then the answer leaves twice, on two ports, and every idle port
	 * of ours that carried ACKs since its last check is probed now
	 * rather than after MR_ACK_PROBE_EVERY (some may have died in our
	 * direction; at most once per MR_ACK_CHECK_NS). */
	p->ack_twice = lost && c->npaths > 1;
	if (lost && now - c->ack_checked >= MR_ACK_CHECK_NS) {
		c->ack_checked = now;
		for (int i = 0; i < c->npaths; i++)
			ack_port_check(e, c, &c->path[i], now, true);
	}
	ack_want(e, p, true, now);
	return 0;
}

static int rx_reroll(struct mroce_engine *e, struct mr_conn *c,
		     const struct mroce_meta_pkt *pk)
{
	struct mr_path *p;

	if (pk->path >= c->npaths)
		return -EINVAL;
	p = &c->path[pk->path];
	if (!p->rx_valid || gen_newer(pk->reroll.new_gen, p->rx_gen))
		rx_path_reset(c, p, pk->path, pk->reroll.new_gen);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Sender side: ACK / NAK processing                                    */
/* ------------------------------------------------------------------ */
static uint64_t path_pto(const struct mroce_engine *e, const struct mr_conn *c,
			 const struct mr_path *p)
{
	uint32_t srtt = p->srtt_us;
	uint64_t pto;

	/* A fresh (rerolled) path has no RTT yet: its siblings cross the
	 * same fabric, so the largest of theirs (queues included) is a
	 * better guess than rto_min (30 base RTTs in a data centre). */
	for (int i = 0; !p->srtt_us && c && i < c->npaths; i++)
		if (c->path[i].srtt_us > srtt)
			srtt = c->path[i].srtt_us;
	/* No path has a sample yet (the first flight): the handshake's
	 * round trip, when we initiated it, is one. */
	if (!srtt && c)
		srtt = c->hs_rtt_us;
	if (!srtt)
		return (uint64_t)e->cfg.rto_min_us * 1000;
	/* A thin path (a packet or two out) whose packets all asked for an
	 * immediate ACK (each fills its window; message ends;
	 * retransmissions): no coalescing delay to wait for, only the RTT
	 * and its variation. Thin paths have no followers whose ACKs would
	 * reveal a loss, so this timer is what recovers their losses. (Not
	 * for fuller paths: their queue varies more, and their PTO also
	 * decides when a path is silent.) */
	if (p->srtt_us && p->inflight + p->nlost <= MR_TLP_MAX &&
	    !mroce_psn_before(p->una, p->coal_psn)) {
		uint32_t var = 4 * p->rttvar_us > 2 ? 4 * p->rttvar_us : 2;

		return (uint64_t)(p->srtt_us + var + e->cfg.jitter_us) *
			       1000 +
		       1000;
	}
	/* Most ACKs are immediate (gap, message end, retransmission,
	 * probe), so only a little slack over 2 srtt: a spurious probe
	 * costs one small packet, a late one stalls the messages. */
	pto = 2ull * srtt * 1000 + MR_PTO_SLACK_NS;
	/* ... but at least the receiver's coalescing delay over the RTT:
	 * packets that did not ask for an immediate ACK may be answered
	 * that late, and a PTO shorter than that made a healthy path with
	 * a few packets out look silent (path_silent) and retired it. */
	if (pto < (uint64_t)srtt * 1000 + MR_ACK_DELAY_NS + MR_PTO_SLACK_NS)
		pto = (uint64_t)srtt * 1000 + MR_ACK_DELAY_NS +
		      MR_PTO_SLACK_NS;
	/* An endpoint that jitters (cfg.jitter_us) may answer that much
	 * later than its srtt says, and its RTT varies a lot more than a
	 * fabric's queues make it: the RTO's variance term too. */
	if (e->cfg.jitter_us) {
		uint64_t v = ((uint64_t)p->srtt_us + 4ull * p->rttvar_us) *
			     1000;

		if (pto < v)
			pto = v;
		pto += (uint64_t)e->cfg.jitter_us * 1000;
	}
	return pto < 10000 ? 10000 : pto;
}

static uint64_t path_rto(const struct mroce_engine *e, const struct mr_conn *c,
			 const struct mr_path *p)
{
	uint64_t rto = (uint64_t)(p->srtt_us + 4 * p->rttvar_us) * 1000;
	uint64_t min = (uint64_t)e->cfg.rto_min_us * 1000;

	if (rto < min)
		rto = min;
	return rto << (c->backoff < 6 ? c->backoff : 6);
}

static void path_arm(const struct mroce_engine *e, const struct mr_conn *c,
		     struct mr_path *p, uint64_t now)
{
	if (p->inflight + p->nlost)
		p->deadline = now + path_pto(e, c, p);
	else
		p->deadline = 0;
}

/* Entry idx of path p was received: account it to its message. */
static void ack_entry(struct mroce_engine *e, struct mr_conn *c,
		      struct mr_path *p, int idx)
{
	struct mr_txe *t = &c->txe[idx];
	uint8_t fl = txe_fl(t);
	struct mroce_qp *qp;

	if (fl & TXE_LOST) {
		p->nlost--;
		/* Spurious loss: this path reorders, wait for more. */
		if (p->dupthresh < 8)
			p->dupthresh++;
	} else if (fl & TXE_HOLD) {
		p->nheld--;
	} else {
		p->inflight--;
	}
	p->ring[t->psn % MR_PATH_WIN] = MR_TXE_NONE;
	qp = mroce_qp_find(e, txe_qpn(t));
	if (qp && QP(qp) && QP(qp)->conn == c &&
	    qp->state != MROCE_QPS_ERR && qp->state != MROCE_QPS_RESET) {
		if (fl & TXE_RD) {
			struct mroce_rdjob *j = rd_find(qp, t->msn);

			if (j && ++j->segs_done == j->nsegs)
				rd_retire(e, qp, j);
		} else {
			struct mroce_wqe *w = mroce_sq_by_msn(qp, t->msn);

			if (w && w->state != MROCE_WQE_DONE &&
			    ++w->segs_done == w->nsegs &&
			    w->wr.opcode != MROCE_WR_RDMA_READ) {
				w->state = MROCE_WQE_DONE;
				w->status = MROCE_WC_SUCCESS;
				if (mroce_sq_drain(e, qp))
					qp_kick(qp);
			}
		}
	}
	txe_release(c, idx);
}

static void lose_entry(struct mroce_engine *e, struct mr_conn *c,
		       struct mr_path *p, int idx, uint64_t now)
{
	struct mr_txe *t = &c->txe[idx];
	uint8_t fl = txe_fl(t);

	if (fl & (TXE_LOST | TXE_HOLD))
		return;
	txe_set(t, TXE_LOST);
	p->inflight--;
	p->nlost++;
	p->cc.losses++;
	mr_cc_on_loss(e, p, now);
	c->explore_lost++;
}

/* Was entry t retransmitted after the path's last PROBE left? Then the
 * answer to that PROBE cannot tell whether the retransmission arrived
 * (retransmissions keep their PSN, which is below the probe's). The
 * newest rtx_total - probe_rtx entries of the retransmission queue are
 * those; when the queue forgot some, any retransmitted entry counts. */
static bool rtx_after_probe(const struct mr_path *p, const struct mr_txe *t)
{
	uint32_t k = p->rtx_total - p->probe_rtx;

	if (!k || txe_tries(t) < 2)
		return false;
	if (k > p->rtx_n)
		return true;
	for (uint32_t i = p->rtx_n - k; i < p->rtx_n; i++)
		if (p->rtxq[(p->rtx_head + i) % MR_RTXQ][0] == (uint16_t)t->psn)
			return true;
	return false;
}

static void path_explore(struct mroce_engine *e, struct mr_conn *c,
			 uint64_t now);
static void path_move(struct mroce_engine *e, struct mr_conn *c, int slot,
		      uint64_t now);
static void explore_hop(struct mroce_engine *e, struct mr_conn *c, int slot,
			uint64_t now);
static uint64_t hop_limit(const struct mroce_engine *e,
			  const struct mr_conn *c);
static void explore_busy(const struct mroce_engine *e, struct mr_conn *c,
			 struct mr_path *p);

/* The last time the peer was heard from: progress of our data, or any
 * packet of it (a receiver of data has no progress of its own). */
static uint64_t conn_heard(const struct mr_conn *c)
{
	return c->last_ack > c->last_rx ? c->last_ack : c->last_rx;
}

/* Progress after a quiet spell: paths whose probe went unanswered during
 * it wait an RTO (the peer seemed gone); now that the connection lives,
 * they are judged again within a PTO (path_silent), or the messages with
 * segments on a dead plane stall for that RTO. */
static void conn_revive(const struct mroce_engine *e, struct mr_conn *c,
			const struct mr_path *from, uint64_t now)
{
	for (int i = 0; i < c->npaths; i++) {
		struct mr_path *q = &c->path[i];
		uint64_t due;

		if (q == from || !q->probed || !q->deadline)
			continue;
		due = now + path_pto(e, c, q);
		if (q->deadline > due)
			q->deadline = due;
	}
}

static void rx_ack(struct mroce_engine *e, struct mr_conn *c,
		   const struct mroce_meta_pkt *pk, uint64_t now)
{
	struct mr_path *p;
	uint32_t cum = pk->ack.cum_psn, newly = 0, high, limit;

	e->stats.rx_acks++;
	if (pk->path >= c->npaths)
		return;
	p = &c->path[pk->path];
	if (pk->path_gen != p->gen)
		return;	/* ACK for a retired generation */
	if (mroce_psn_before(p->next_psn, cum) ||
	    mroce_psn_before(cum, p->una - MR_PATH_WIN))
		return;	/* nonsense cum_psn */
	if (pk->ack.rate_mbps) {
		uint64_t r = (uint64_t)pk->ack.rate_mbps * 1000000ull;

		if (!c->hint_bps) {
			/* First hint: start at a random point within one
			 * packet time at that rate, so that the senders of
			 * an incast, all learning their share at once, do
			 * not all send their first packet at once. */
			uint64_t gap = (uint64_t)(c->mtu + 64u) * 8u *
				       1000000000ull / r;

			c->next_send = now + mroce_rng_below(
				e, (uint32_t)(gap < UINT32_MAX ? gap + 1 :
								 UINT32_MAX));
		}
		c->hint_bps = r;
		c->hint_time = now;
	}
	while (mroce_psn_before(p->una, cum)) {
		uint16_t idx = p->ring[p->una % MR_PATH_WIN];

		if (idx != MR_TXE_NONE && c->txe[idx].psn == p->una) {
			ack_entry(e, c, p, idx);
			newly++;
		}
		p->una++;
	}
	high = cum;
	for (int w = 0; w < MROCE_SACK_BYTES; w++) {
		uint8_t b = pk->ack.sack[w];

		while (b) {
			int bit = __builtin_ctz(b);
			uint32_t psn = cum + 1 + (uint32_t)(w * 8 + bit);
			uint16_t idx;

			b &= b - 1;
			if (!mroce_psn_before(psn, p->next_psn))
				break;
			high = psn + 1;
			idx = p->ring[psn % MR_PATH_WIN];
			if (idx != MR_TXE_NONE && c->txe[idx].psn == psn &&
			    !mroce_psn_before(psn, p->una)) {
				ack_entry(e, c, p, idx);
				newly++;
			}
		}
	}
	if (mroce_psn_before(p->high_acked, high))
		p->high_acked = high;
	while (p->una != p->next_psn &&
	       p->ring[p->una % MR_PATH_WIN] == MR_TXE_NONE)
		p->una++;

	/* A path is FIFO: dupthresh later PSNs received means loss. */
	if (mroce_psn_before(p->loss_scan, p->una))
		p->loss_scan = p->una;
	limit = p->high_acked - p->dupthresh;
	while (mroce_psn_before(p->loss_scan, limit) &&
	       mroce_psn_before(p->loss_scan, p->next_psn)) {
		uint16_t idx = p->ring[p->loss_scan % MR_PATH_WIN];

		if (idx != MR_TXE_NONE)
			lose_entry(e, c, p, idx, now);
		p->loss_scan++;
	}
	/* Retransmissions overtaken by dupthresh later PSNs are lost too. */
	while (p->rtx_n) {
		const uint16_t *q = p->rtxq[p->rtx_head];
		uint16_t off = (uint16_t)(q[0] - (uint16_t)p->una);
		uint32_t psn = p->una + off;
		uint32_t mark = psn + (uint16_t)(q[1] - q[0]);
		uint16_t idx;

		/* off >= MR_PATH_WIN: below una, acknowledged (drop it) */
		if (off < MR_PATH_WIN) {
			if (!mroce_psn_before(mark + p->dupthresh - 1,
					      p->high_acked))
				break;
			idx = p->ring[psn % MR_PATH_WIN];
			if (idx != MR_TXE_NONE && c->txe[idx].psn == psn)
				lose_entry(e, c, p, idx, now);
		}
		p->rtx_head = (p->rtx_head + 1) % MR_RTXQ;
		p->rtx_n--;
	}
	/* The answer to our PROBE: whatever was sent before it and is
	 * still missing is lost. */
	if ((pk->ack.flags & MROCE_ACKF_PROBE) && p->probe_ts &&
	    pk->ack.tsecr == p->probe_ts &&
	    (uint32_t)(p->probe_psn - p->una) <= MR_PATH_WIN) {
		p->probe_ts = 0;	/* one answer per probe */
		for (uint32_t s = p->una; mroce_psn_before(s, p->probe_psn);
		     s++) {
			uint16_t idx = p->ring[s % MR_PATH_WIN];

			if (idx != MR_TXE_NONE &&
			    !rtx_after_probe(p, &c->txe[idx]))
				lose_entry(e, c, p, idx, now);
		}
		uint32_t prtt = now_us(now) - pk->ack.tsecr;
		uint64_t nrtt = now - p->probe_sent;

		/* an idle port's first RTT sample (ack_port_check) */
		if (!p->srtt_us && prtt && prtt < 10000000) {
			p->srtt_us = prtt;
			p->rttvar_us = prtt / 2;
		}
		if (!c->probe_rtt_min || nrtt < c->probe_rtt_min)
			c->probe_rtt_min = nrtt;
		if (p->probation && p->hops && c->probe_rtt_min &&
		    !c->explore_failed && nrtt > hop_limit(e, c)) {
			if (p->hops < MR_EXPLORE_HOPS) {
				explore_hop(e, c, pk->path, now);
				return;
			}
			explore_busy(e, c, p);
		}
		p->hops = 0;
		p->probed = 0;
		p->probation = 0;
		p->ack_tx = 0;
		path_arm(e, c, p, now);
	}

	if (pk->ack.ce_count) {
		p->ce_marks += pk->ack.ce_count;
		p->cc.ce_acks++;
	}
	p->cc.acks++;
	if (newly) {
		uint32_t rtt = 0;

		if (pk->ack.tsecr) {
			rtt = now_us(now) - pk->ack.tsecr;
			if (rtt > 10000000)
				rtt = 0;	/* echo from before a wrap */
		}
		if (rtt) {
			if (!p->srtt_us) {
				p->srtt_us = rtt;
				p->rttvar_us = rtt / 2;
			} else {
				uint32_t dv = rtt > p->srtt_us ?
						      rtt - p->srtt_us :
						      p->srtt_us - rtt;

				p->rttvar_us = (3 * p->rttvar_us + dv) / 4;
				p->srtt_us = (7 * p->srtt_us + rtt) / 8;
			}
			if (!p->min_rtt_us || rtt < p->min_rtt_us)
				p->min_rtt_us = rtt;
			if (!c->explore_rtt_lo || rtt < c->explore_rtt_lo)
				c->explore_rtt_lo = rtt;
		}
		mr_cc_on_ack(e, c, p, newly, pk->ack.ce_count, rtt, now);
		if (now - c->last_ack > path_pto(e, c, p))
			conn_revive(e, c, p, now);
		c->explore_acked += newly;
		p->explore_acked += newly;
		p->last_ack = c->last_ack = now;
		if (pk->ack.tsecr &&
		    (!c->last_tsecr ||
		     (int32_t)(pk->ack.tsecr - c->last_tsecr) > 0))
			c->last_tsecr = pk->ack.tsecr;
		p->probed = 0;
		p->tlp = 0;
		c->backoff = 0;
		path_arm(e, c, p, now);
		path_move(e, c, pk->path, now);
		path_explore(e, c, now);
	}
}

static void rx_nak(struct mroce_engine *e, struct mr_conn *c,
		   const struct mroce_meta_pkt *pk, uint64_t now)
{
	struct mr_txe *t = NULL;
	struct mr_path *p = NULL;
	struct mroce_qp *qp = NULL;
	struct mroce_wqe *w = NULL;
	enum mroce_wc_status st;
	int idx = -1;

	e->stats.rx_naks++;
	if (pk->path < c->npaths && pk->path_gen == c->path[pk->path].gen) {
		p = &c->path[pk->path];
		idx = path_txe(c, p, pk->nak.psn);
		if (idx >= 0)
			t = &c->txe[idx];
	}
	if (t) {
		qp = mroce_qp_find(e, txe_qpn(t));
		if (qp && !(txe_fl(t) & TXE_RD))
			w = mroce_sq_by_msn(qp, t->msn);
	} else if (pk->nak.stream) {
		qp = mroce_qp_find(e, pk->nak.stream);
		if (qp)
			w = mroce_sq_by_msn(qp, pk->nak.msn);
	}
	if (qp && (!QP(qp) || QP(qp)->conn != c))
		qp = NULL, w = NULL;

	switch (pk->nak.code) {
	case MROCE_NAK_RNR: {
		uint64_t hold = (uint64_t)(pk->nak.rnr_timer ?
						   pk->nak.rnr_timer : 1) *
				10000;

		if (!t || !w || w->state == MROCE_WQE_DONE)
			return;
		if (!(txe_fl(t) & TXE_HOLD)) {
			if (txe_fl(t) & TXE_LOST) {
				txe_clr(t, TXE_LOST);
				p->nlost--;
			} else {
				p->inflight--;
			}
			txe_set(t, TXE_HOLD);
			p->nheld++;
		}
		/* RNR retries are counted by rnr_retry, not retry_cnt: the
		 * packet did arrive. */
		t->seg_try = txe_seg(t);
		if (p->hold_until < now + hold)
			p->hold_until = now + hold;
		if (c->hold_until < now + hold)
			c->hold_until = now + hold;
		if (w->hold_until <= now) {
			/* A new RNR episode of this message. */
			if (e->cfg.rnr_retry != 7) {
				if (!w->rnr_left) {
					mroce_sq_fail(e, qp, w,
						      MROCE_WC_RNR_RETRY_EXC_ERR);
					return;
				}
				w->rnr_left--;
			}
			w->hold_until = now + hold;
		}
		return;
	}
	case MROCE_NAK_BAD_RKEY:
	case MROCE_NAK_OUT_OF_BOUNDS:
	case MROCE_NAK_ACCESS:
		st = MROCE_WC_REM_ACCESS_ERR;
		break;
	case MROCE_NAK_INVALID_REQ:
	case MROCE_NAK_NO_CONN:
		st = MROCE_WC_REM_INV_REQ_ERR;
		break;
	case MROCE_NAK_REMOTE_OP:
		st = MROCE_WC_REM_OP_ERR;
		break;
	default:
		return;	/* OUT_OF_WINDOW, STALE_PATH: informational */
	}
	/* The refused PSN is a hole at the receiver: mark it lost; its
	 * retransmission finds the QP in ERR and retires the path. */
	if (t)
		lose_entry(e, c, p, idx, now);
	if (t && (txe_fl(t) & TXE_RD) && qp) {
		struct mroce_rdjob *j = rd_find(qp, t->msn);

		if (j)
			rd_retire(e, qp, j);
		mroce_qp_to_err(e, qp, now);
		return;
	}
	if (qp && w && w->state != MROCE_WQE_DONE)
		mroce_sq_fail(e, qp, w, st);
}

/* ------------------------------------------------------------------ */
/* Path retirement                                                      */
/* ------------------------------------------------------------------ */
static void path_retire(struct mroce_engine *e, struct mr_conn *c, int slot,
			uint8_t reason, bool charge)
{
	struct mr_path *p = &c->path[slot];

	for (uint32_t s = p->una; s != p->next_psn; s++) {
		uint16_t idx = p->ring[s % MR_PATH_WIN];
		struct mr_txe *t;

		if (idx == MR_TXE_NONE)
			continue;
		t = &c->txe[idx];
		if (t->psn != s)
			continue;
		p->ring[s % MR_PATH_WIN] = MR_TXE_NONE;
		txe_clr(t, TXE_LOST | TXE_HOLD);
		txe_set(t, TXE_RESEND);
		/* Only an RTO says these were lost; otherwise the resend is
		 * our decision and costs the message no retry. */
		if (!charge && txe_tries(t))
			t->seg_try -= 1u << 24;
		c->txe_resend[idx / 64] |= 1ull << (idx % 64);
		c->nresend++;
	}
	p->old_gen = p->gen;
	p->gen++;
	path_tx_init(e, c, slot);
	p->want_reroll = reason;
	e->stats.path_rerolls++;
}

/* ------------------------------------------------------------------ */
/* Transmit                                                             */
/* ------------------------------------------------------------------ */
static int emit(struct mroce_engine *e, const struct mr_conn *c,
		const struct mroce_meta_pkt *pk, struct mroce_tx_pkt *out,
		size_t cap, uint16_t sport, bool ect)
{
	int n = mroce_meta_build(pk, out->buf, cap);

	if (n < 0)
		return n;
	out->len = (uint32_t)n;
	out->peer = c->peer;
	out->sport = sport;
	out->dport = MROCE_UDP_PORT;
	out->ect = ect;
	e->stats.tx_pkts++;
	e->stats.tx_bytes += (uint64_t)n;
	return 0;
}

static void ack_fill(struct mroce_engine *e, struct mr_conn *c, int slot,
		     struct mroce_meta_pkt *pk, uint64_t now)
{
	struct mr_path *p = &c->path[slot];
	uint64_t share = mr_cc_fair_share(e, NULL, now) / 1000000ull;

	memset(pk, 0, sizeof(*pk));
	pk->opcode = MROCE_OP_ACK;
	pk->conn_id = c->remote_id;
	pk->path = (uint8_t)slot;
	pk->path_gen = p->rx_gen;
	pk->ack.cum_psn = p->rx_cum;
	pk->ack.tsecr = p->rx_tsecr;
	pk->ack.rate_mbps = share > UINT32_MAX ? UINT32_MAX : (uint32_t)share;
	pk->ack.ce_count = p->rx_ce;
	pk->ack.flags = p->ack_flags;
	for (int i = 0; i < MROCE_SACK_BYTES; i++)
		pk->ack.sack[i] = (uint8_t)(p->sack[i / 8] >> (8 * (i % 8)));
}

/* A port of ours that carries no data of ours has nothing to tell us
 * whether the plane it hashes onto in our direction is alive, yet it
 * carries our ACKs: every MR_ACK_PROBE_EVERY ACKs on it, it is probed.
 * Two unanswered probes retire it (path_timer), and ack_sport skips it
 * while its new port is on probation. */
static void ack_port_check(struct mroce_engine *e, struct mr_conn *c,
			   struct mr_path *p, uint64_t now, bool now_due)
{
	if (!path_empty(p) || p->probed || p->want_probe || p->moving ||
	    p->probation)
		return;
	if (now_due ? !p->ack_tx : ++p->ack_tx < MR_ACK_PROBE_EVERY)
		return;
	p->ack_tx = 0;
	p->probed = 1;
	p->want_probe = 1;
	p->deadline = now + path_pto(e, c, p);
	conn_kick(c);
}

/* The source port of an ACK of path slot: ACKs are sprayed over our own
 * ports in rotation, not sent back on the data's port. The reverse
 * direction has planes of its own, and the reversed 5-tuple of a data port
 * hashes onto any of them: with ACKs pinned to it, a dead reverse plane
 * silenced every forward path whose ACKs crossed it, live forward plane or
 * not, and the sender retired those ports and had to find that plane
 * again. Sprayed, a dead reverse plane costs each path a share of its
 * ACKs, which cumulative ACKs and the SACK make up for; only a dead
 * forward plane silences a path. Our ports are the ones our own data
 * uses in that direction, so those on probation (suspected dead) are
 * skipped while others remain. The ACK that follows an ACCEPT leaves on
 * path 0's port, behind the ACCEPT. */
static uint16_t ack_sport(struct mroce_engine *e, struct mr_conn *c,
			  int slot, uint64_t now)
{
	if (c->ack_accept && slot == 0) {
		c->ack_accept = 0;
		return c->path[0].sport;
	}
	for (int k = 0; k < c->npaths; k++) {
		struct mr_path *p = &c->path[c->ack_rr++ % c->npaths];

		if (p->probation)
			continue;
		ack_port_check(e, c, p, now, false);
		return p->sport;
	}
	return c->path[slot].rx_sport;
}

/* One control packet of connection c, if any is due. 1 = built. */
static int tx_control(struct mroce_engine *e, struct mr_conn *c,
		      struct mroce_tx_pkt *out, size_t cap, uint64_t now)
{
	struct mroce_meta_pkt pk;

	if (c->want_hs && (c->state == MR_CONN_REQ_SENT ||
			   c->state == MR_CONN_CONFIRM_SENT)) {
		hs_fill(e, c, &pk, c->state == MR_CONN_REQ_SENT ?
					   MROCE_OP_CONNECT_REQ :
					   MROCE_OP_CONNECT_CONFIRM);
		if (c->state == MR_CONN_CONFIRM_SENT) {
			pk.conn.cookie = c->cookie;
			pk.conn.cookie_time = c->cookie_time;
		}
		if (emit(e, c, &pk, out, cap, c->path[0].sport, false) < 0)
			return -1;
		c->want_hs = 0;
		c->hs_sent = now;
		return 1;
	}
	if (c->want_accept && c->state == MR_CONN_ESTABLISHED) {
		hs_fill(e, c, &pk, MROCE_OP_CONNECT_ACCEPT);
		pk.conn_id = c->remote_id;
		if (emit(e, c, &pk, out, cap, c->path[0].sport, false) < 0)
			return -1;
		c->want_accept = 0;
		/* Follow it with an ACK of path 0 (same port, so it arrives
		 * after the ACCEPT): it carries our fair-share hint, and the
		 * initiator sends at most MR_FIRST_FLIGHT packets before it
		 * has one. */
		if (!c->path[0].rx_valid)
			rx_path_reset(c, &c->path[0], 0, 0);
		c->path[0].rx_sport = c->path[0].sport;
		c->ack_accept = 1;
		ack_want(e, &c->path[0], true, now);
		return 1;
	}
	if (c->state != MR_CONN_ESTABLISHED)
		return 0;
	if (c->nak_count) {
		struct mr_nak *n = &c->nakq[c->nak_head];

		memset(&pk, 0, sizeof(pk));
		pk.opcode = MROCE_OP_NAK;
		pk.conn_id = c->remote_id;
		pk.path = n->path;
		pk.path_gen = n->gen;
		pk.nak.code = n->code;
		pk.nak.rnr_timer = n->rnr_timer;
		pk.nak.stream = n->stream;
		pk.nak.msn = n->msn;
		pk.nak.psn = n->psn;
		if (emit(e, c, &pk, out, cap, n->sport, false) < 0)
			return -1;
		c->nak_head = (c->nak_head + 1) % MR_NAKQ;
		c->nak_count--;
		e->stats.tx_naks++;
		return 1;
	}
	for (int i = 0; i < c->npaths; i++) {
		struct mr_path *p = &c->path[i];

		if (p->ack_due && (p->ack_urgent || now >= p->ack_due)) {
			ack_fill(e, c, i, &pk, now);
			if (emit(e, c, &pk, out, cap, ack_sport(e, c, i, now),
				 false) < 0)
				return -1;
			e->stats.tx_acks++;
			/* A PROBE says our ACKs of this path went missing:
			 * its answer leaves on two of our ports, in case
			 * the plane of one is dead. */
			if (p->ack_twice) {
				p->ack_twice = 0;
				return 1;
			}
			p->ack_cum = p->rx_cum;
			p->ack_at = now;
			p->ack_due = 0;
			p->ack_pending = 0;
			p->ack_urgent = 0;
			p->ack_flags = 0;
			p->rx_ce = 0;
			return 1;
		}
		if (p->want_reroll) {
			memset(&pk, 0, sizeof(pk));
			pk.opcode = MROCE_OP_PATH_REROLL;
			pk.conn_id = c->remote_id;
			pk.path = (uint8_t)i;
			pk.path_gen = p->gen;
			pk.reroll.old_gen = p->old_gen;
			pk.reroll.new_gen = p->gen;
			pk.reroll.new_sport = p->sport;
			pk.reroll.reason = p->want_reroll;
			if (emit(e, c, &pk, out, cap, p->sport, false) < 0)
				return -1;
			p->want_reroll = 0;
			return 1;
		}
		if (p->want_probe) {
			memset(&pk, 0, sizeof(pk));
			pk.opcode = MROCE_OP_PROBE;
			/* nothing outstanding: a port check, not a
			 * question about missing ACKs (rx_probe) */
			pk.flags = MROCE_F_ACK_REQ |
				   (path_empty(p) ? MROCE_F_CHECK : 0);
			pk.conn_id = c->remote_id;
			pk.path = (uint8_t)i;
			pk.path_gen = p->gen;
			pk.next_psn = p->next_psn;
			pk.tsval = now_us(now);
			if (emit(e, c, &pk, out, cap, p->sport, false) < 0)
				return -1;
			p->want_probe = 0;
			p->probe_rtx = p->rtx_total;
			p->probe_psn = p->next_psn;
			p->probe_ts = pk.tsval;
			p->probe_sent = now;
			e->stats.probes_sent++;
			return 1;
		}
	}
	return 0;
}

/* What a transmit entry refers to. */
struct txref {
	struct mroce_qp *qp;
	struct mroce_wqe *w;	/* SQ message, or */
	struct mroce_rdjob *j;	/* READ response job */
};

/* Resolve an entry; false if its message no longer exists (orphan). */
static bool txe_resolve(struct mroce_engine *e, struct mr_conn *c,
			const struct mr_txe *t, struct txref *r)
{
	memset(r, 0, sizeof(*r));
	r->qp = mroce_qp_find(e, txe_qpn(t));
	if (!r->qp || !QP(r->qp) || QP(r->qp)->conn != c)
		return false;
	if (txe_fl(t) & TXE_RD) {
		r->j = rd_find(r->qp, t->msn);
		return r->j != NULL;
	}
	if (r->qp->state != MROCE_QPS_RTS)
		return false;
	r->w = mroce_sq_by_msn(r->qp, t->msn);
	return r->w && r->w->state != MROCE_WQE_DONE;
}

/* Build the data packet of segment `seg` of r into out. 0, or -ENOSPC
 * (buffer), or -EPERM (local memory vanished: message failed). */
static int build_data(struct mroce_engine *e, struct mr_conn *c,
		      const struct txref *r, uint32_t seg, int slot,
		      uint32_t psn, bool retx, struct mroce_tx_pkt *out,
		      size_t cap, uint64_t now)
{
	struct mr_path *p = &c->path[slot];
	struct mroce_meta_pkt pk;
	uint32_t mtu = c->mtu, len, msg_len, nsegs;

	memset(&pk, 0, sizeof(pk));
	pk.conn_id = c->remote_id;
	pk.path = (uint8_t)slot;
	pk.path_gen = p->gen;
	pk.psn = psn;
	pk.tsval = now_us(now);
	pk.stream = r->qp->dest_qpn;
	if (r->j) {
		msg_len = r->j->len;
		len = seg_len(msg_len, seg, mtu);
		pk.opcode = MROCE_OP_READ_RESP;
		pk.msn = r->j->msn;
		pk.va = r->j->sink_va;
		pk.rkey = r->j->sink_key;
		if (len && mroce_rkey_check(e, r->qp, r->j->rkey,
					    r->j->va + (uint64_t)seg * mtu, len,
					    MROCE_ACCESS_REMOTE_READ) !=
				   MROCE_MRC_OK)
			return -EPERM;
		pk.payload = len ? mroce_mr_ptr(e, r->j->rkey, true,
						r->j->va + (uint64_t)seg * mtu)
				 : (const uint8_t *)"";
		nsegs = r->j->nsegs;
	} else {
		const struct mroce_send_wr *wr = &r->w->wr;

		msg_len = wr->sge.length;
		len = seg_len(msg_len, seg, mtu);
		pk.msn = r->w->msn;
		switch (wr->opcode) {
		case MROCE_WR_SEND:
			pk.opcode = MROCE_OP_SEND;
			break;
		case MROCE_WR_SEND_WITH_IMM:
			pk.opcode = MROCE_OP_SEND_IMM;
			break;
		case MROCE_WR_RDMA_WRITE:
			pk.opcode = MROCE_OP_WRITE;
			break;
		case MROCE_WR_RDMA_WRITE_WITH_IMM:
			pk.opcode = MROCE_OP_WRITE_IMM;
			break;
		default:
			pk.opcode = MROCE_OP_READ_REQ;
			break;
		}
		pk.ssn = r->w->ssn;
		pk.imm = wr->imm;
		pk.va = wr->remote_addr;
		pk.rkey = wr->rkey;
		if (pk.opcode == MROCE_OP_READ_REQ) {
			pk.sink_va = wr->sge.addr;
			pk.sink_key = wr->sge.lkey;
			len = 0;
		} else {
			pk.payload = mroce_wqe_local_ptr(e, r->w, seg * mtu,
							 len, 0);
			if (!pk.payload)
				return -EPERM;
		}
		if (wr->send_flags & MROCE_SEND_SOLICITED)
			pk.flags |= MROCE_F_SOLICITED;
		nsegs = r->w->nsegs;
	}
	pk.offset = seg * mtu;
	pk.msg_len = msg_len;
	pk.payload_len = len;
	if (seg + 1 == nsegs) {
		pk.flags |= MROCE_F_LAST;
		/* The end of a message asks for an ACK of every path at
		 * once (rx_data), so the message completes without a
		 * coalescing delay. A software endpoint skips it when a
		 * later message of the QP is already posted: that one
		 * follows at once, and its completion is what waits. */
		if (!e->cfg.jitter_us || r->j ||
		    r->w->msn + 1 == r->qp->next_msn)
			pk.flags |= MROCE_F_ACK_REQ;
	} else
		pk.flags &= ~MROCE_F_SOLICITED;
	/* A window smaller than the receiver's ACK count cannot trigger an
	 * ACK by count: the packet that fills it asks for an immediate one,
	 * or the window would open only a coalescing delay later and its
	 * RTT sample would hold that delay (and look like queueing). */
	if (mr_cc_cwnd_pkts(p) < MR_ACK_EVERY &&
	    p->inflight + 1 >= mr_cc_cwnd_pkts(p))
		pk.flags |= MROCE_F_ACK_REQ;
	if (retx)
		pk.flags |= MROCE_F_RETX;
	else if (!(pk.flags & MROCE_F_ACK_REQ))
		p->coal_psn = psn + 1;
	if (emit(e, c, &pk, out, cap, p->sport, true) < 0)
		return -ENOSPC;
	e->stats.tx_data_pkts++;
	p->tx_pkts++;
	p->cc.sent++;
	if (retx) {
		e->stats.retransmits++;
		p->retransmits++;
	}
	if (!p->deadline)
		p->deadline = now + path_pto(e, c, p);
	return 0;
}

/* Pacing: the connection sends no faster than mr_cc_rate. A software
 * endpoint (cfg.jitter_us) may send MR_PACE_BURST packets at once after
 * an idle moment: its driver calls tx() with one `now` per round and
 * hands the batch to the kernel in one system call, so a pacer that
 * released one packet per call made every packet a system call (the
 * AF_XDP sender spent 78% of its time in sendto, one per packet, where
 * the raw blast makes one per ten). The average rate is unchanged: the
 * credit only builds up while nothing is sent. */
static void pace(struct mroce_engine *e, struct mr_conn *c, uint32_t bytes,
		 uint64_t now)
{
	uint64_t rate = mr_cc_rate(e, c, now);
	uint64_t ns = rate ? (uint64_t)bytes * 8ull * 1000000000ull / rate : 0;
	uint64_t burst = e->cfg.jitter_us ? (MR_PACE_BURST - 1) * ns : 0;

	if (c->next_send + burst < now)
		c->next_send = now > burst ? now - burst : 0;
	c->next_send += ns;
}

static bool path_usable(const struct mr_path *p)
{
	return !p->probation && !p->moving &&
	       (uint32_t)(p->next_psn - p->una) < MR_PATH_WIN &&
	       mr_cc_room(p) > 0;
}

/* Pick a path for new data: among the paths with window room, the one
 * with the fewest packets in flight (join the shortest queue), ties
 * broken by rotation; paths under suspicion (probe outstanding) only if
 * nothing else has room. Equal in-flight counts keep the planes' queues
 * even: a random or room-weighted choice lets one plane's queue grow
 * (and its RTT with it) while another idles, and since the paths'
 * capacities add up to the NIC's, every idle moment of a plane is lost
 * goodput. A slow or congested path drains later, so it gets less. -1 if
 * none. */
static int pick_path(struct mroce_engine *e, struct mr_conn *c)
{
	int best = -1;
	uint32_t best_q = UINT32_MAX;

	for (int pass = 0; pass < 2 && best < 0; pass++) {
		for (int k = 0; k < c->npaths; k++) {
			int i = (int)((c->rr + (uint32_t)k) % c->npaths);
			const struct mr_path *p = &c->path[i];

			if (!path_usable(p) || (pass == 0 && p->probed))
				continue;
			if (p->inflight < best_q) {
				best_q = p->inflight;
				best = i;
			}
		}
	}
	if (best >= 0)
		c->rr = (uint32_t)best + 1;
	return best;
}

/* Put entry idx on path slot with a new PSN. */
static void txe_place(struct mr_conn *c, int slot, int idx)
{
	struct mr_path *p = &c->path[slot];
	struct mr_txe *t = &c->txe[idx];

	t->psn = p->next_psn++;
	p->ring[t->psn % MR_PATH_WIN] = (uint16_t)idx;
	p->inflight++;
}

/* An entry whose message is gone: if it was received we just forget it;
 * if it is a hole on a live path, the path must be retired. */
static void orphan(struct mroce_engine *e, struct mr_conn *c, int idx,
		   int slot)
{
	struct mr_txe *t = &c->txe[idx];
	struct mroce_qp *qp = mroce_qp_find(e, txe_qpn(t));
	bool done_ok = qp && qp->state == MROCE_QPS_RTS &&
		       !(txe_fl(t) & TXE_RD);

	if (slot < 0) {	/* not on any path */
		txe_release(c, idx);
		return;
	}
	if (done_ok) {
		/* Completed successfully, so the receiver has it: a
		 * spurious loss. Fill our side of the hole by forgetting. */
		struct mr_path *p = &c->path[slot];

		p->nlost--;
		p->ring[t->psn % MR_PATH_WIN] = MR_TXE_NONE;
		txe_release(c, idx);
		return;
	}
	path_retire(e, c, slot, MROCE_REROLL_LOSS, false);
}

/* Fail the message behind an entry that ran out of retries. */
static void txe_exhausted(struct mroce_engine *e, struct txref *r)
{
	if (r->w) {
		mroce_sq_fail(e, r->qp, r->w, MROCE_WC_RETRY_EXC_ERR);
	} else if (r->j) {
		/* Tell the requester (its READ would wait for us); if this
		 * NAK is lost too, its READ watchdog fires. */
		nak_queue(QP(r->qp)->conn, MROCE_NAK_REMOTE_OP,
			  MROCE_MAX_PATHS - 1, 0, 0, r->qp->dest_qpn,
			  r->j->msn, QP(r->qp)->conn->path[0].sport);
		rd_retire(e, r->qp, r->j);
		mroce_qp_to_err(e, r->qp, e->now);
	}
}

/* The data of an entry cannot be read any more (our region was
 * deregistered): a local protection error for our own request; for a
 * READ response the requester is told (NAK) and our QP fails. */
static void txe_unreadable(struct mroce_engine *e, struct mr_conn *c,
			   struct txref *r)
{
	if (r->w) {
		mroce_sq_fail(e, r->qp, r->w, MROCE_WC_LOC_PROT_ERR);
		return;
	}
	/* No PSN to name: a path slot the peer does not use makes it fall
	 * back to (stream, msn). */
	nak_queue(c, MROCE_NAK_ACCESS, MROCE_MAX_PATHS - 1, 0, 0,
		  r->qp->dest_qpn, r->j->msn, c->path[0].sport);
	rd_retire(e, r->qp, r->j);
	mroce_qp_to_err(e, r->qp, e->now);
}

/* Retransmit one lost entry of path slot. 1 sent, 0 nothing, <0 error. */
static int tx_lost(struct mroce_engine *e, struct mr_conn *c, int slot,
		   struct mroce_tx_pkt *out, size_t cap, uint64_t now)
{
	struct mr_path *p = &c->path[slot];

	if (!p->nlost || mr_cc_room(p) == 0)
		return 0;
	for (uint32_t s = p->una; s != p->next_psn; s++) {
		uint16_t idx = p->ring[s % MR_PATH_WIN];
		struct mr_txe *t;
		struct txref r;
		int err;

		if (idx == MR_TXE_NONE)
			continue;
		t = &c->txe[idx];
		if (!(txe_fl(t) & TXE_LOST))
			continue;
		if (!txe_resolve(e, c, t, &r)) {
			orphan(e, c, idx, slot);
			return 0;
		}
		if (r.w && r.w->hold_until > now)
			continue;
		if (txe_tries(t) > e->cfg.retry_cnt) {
			txe_exhausted(e, &r);
			return 0;
		}
		err = build_data(e, c, &r, txe_seg(t), slot, t->psn, true,
				 out, cap, now);
		if (err == -ENOSPC)
			return -1;
		if (err < 0) {
			txe_unreadable(e, c, &r);
			return 0;
		}
		t->seg_try += 1u << 24;
		p->rtx_total++;
		if (p->rtx_n == MR_RTXQ) {	/* forget the oldest */
			p->rtx_head = (p->rtx_head + 1) % MR_RTXQ;
			p->rtx_n--;
		}
		if (p->rtx_n < MR_RTXQ) {
			uint16_t *q = p->rtxq[(p->rtx_head + p->rtx_n) %
					      MR_RTXQ];

			q[0] = (uint16_t)t->psn;
			q[1] = (uint16_t)p->next_psn;
			p->rtx_n++;
		}
		txe_clr(t, TXE_LOST);
		p->nlost--;
		p->inflight++;
		return 1;
	}
	return 0;
}

/* Resend one entry of a retired path on any usable path. */
static int tx_resend(struct mroce_engine *e, struct mr_conn *c,
		     struct mroce_tx_pkt *out, size_t cap, uint64_t now)
{
	for (int w = 0; w < MR_TXE_MAX / 64; w++) {
		uint64_t bits = c->txe_resend[w];

		while (bits) {
			int idx = w * 64 + __builtin_ctzll(bits);
			struct mr_txe *t = &c->txe[idx];
			struct txref r;
			int slot, err;

			bits &= bits - 1;
			if (!txe_resolve(e, c, t, &r)) {
				orphan(e, c, idx, -1);
				continue;
			}
			if (r.w && r.w->hold_until > now)
				continue;
			if (txe_tries(t) > e->cfg.retry_cnt) {
				txe_exhausted(e, &r);
				continue;
			}
			slot = pick_path(e, c);
			if (slot < 0)
				return 0;
			err = build_data(e, c, &r, txe_seg(t), slot,
					 c->path[slot].next_psn, true, out,
					 cap, now);
			if (err == -ENOSPC)
				return -1;
			if (err < 0) {
				txe_unreadable(e, c, &r);
				continue;
			}
			c->txe_resend[w] &= ~(1ull << (idx % 64));
			c->nresend--;
			txe_clr(t, TXE_RESEND);
			t->seg_try += 1u << 24;
			txe_place(c, slot, idx);
			return 1;
		}
	}
	return 0;
}

/* Next new segment of a QP: READ responses first, then the SQ. */
static bool qp_next(struct mroce_engine *e, struct mroce_qp *qp,
		    struct txref *r, uint64_t now)
{
	struct mr_qp *q = QP(qp);
	uint32_t mtu = q->conn->mtu;

	memset(r, 0, sizeof(*r));
	r->qp = qp;
	for (uint32_t i = qp->rd_head; i != qp->rd_tail; i++) {
		struct mroce_rdjob *j = &qp->rd[i % MROCE_MAX_RD_ATOMIC];

		if (j->used && j->next_seg < j->nsegs) {
			r->j = j;
			return true;
		}
	}
	if (qp->state != MROCE_QPS_RTS)
		return false;
	if ((int32_t)(q->sq_next - qp->sq_head) < 0)
		q->sq_next = qp->sq_head;
	while (q->sq_next != qp->sq_tail) {
		struct mroce_wqe *w = mroce_sq_at(qp, q->sq_next);

		if (w->state == MROCE_WQE_QUEUED) {
			w->nsegs = nsegs_of(w->wr.sge.length, mtu);
			w->next_seg = 0;
		}
		if (w->state == MROCE_WQE_DONE || (w->state != MROCE_WQE_QUEUED &&
						   w->next_seg >= w->nsegs)) {
			q->sq_next++;
			continue;
		}
		if (w->msn - mroce_sq_at(qp, qp->sq_head)->msn >= MR_MSG_WIN ||
		    w->hold_until > now)
			return false;
		if (w->wr.opcode == MROCE_WR_RDMA_READ &&
		    w->state == MROCE_WQE_QUEUED) {
			struct mr_rdrx *rd = NULL;

			/* Idempotent: the caller may find no path and ask
			 * again later for the same still-QUEUED READ. */
			for (int i = 0; i < MROCE_MAX_RD_ATOMIC; i++) {
				if (q->rdrx[i].used &&
				    q->rdrx[i].msn == w->msn) {
					w->nsegs = 1;
					r->w = w;
					return true;
				}
			}
			for (int i = 0; i < MROCE_MAX_RD_ATOMIC; i++)
				if (!q->rdrx[i].used)
					rd = &q->rdrx[i];
			if (!rd || q->reads_out >= MROCE_MAX_RD_ATOMIC)
				return false;
			if (st_init(&rd->st, nsegs_of(w->wr.sge.length,
						      mtu)) < 0)
				return false;
			rd->used = true;
			rd->msn = w->msn;
			rd->deadline = now + read_timeout(e);
			q->reads_out++;
			w->nsegs = 1;	/* the request is one packet */
		}
		r->w = w;
		return true;
	}
	return false;
}

/* One new data packet of connection c. 1 sent, 0 nothing, <0 no room. */
static int tx_new(struct mroce_engine *e, struct mr_conn *c,
		  struct mroce_tx_pkt *out, size_t cap, uint64_t now)
{
	while (!mroce_list_empty(&c->sched)) {
		struct mroce_qp *qp = mroce_container_of(
			c->sched.next, struct mroce_qp, sched);
		struct txref r;
		uint32_t seg;
		int slot, idx, err;

		if (!qp_next(e, qp, &r, now)) {
			mroce_list_del(&qp->sched);
			continue;
		}
		slot = pick_path(e, c);
		if (slot < 0 || c->txe_used >= conn_flight_cap(c))
			return 0;
		idx = txe_alloc(c);
		if (idx < 0)
			return 0;
		seg = r.j ? r.j->next_seg : r.w->next_seg;
		err = build_data(e, c, &r, seg, slot, c->path[slot].next_psn,
				 false, out, cap, now);
		if (err < 0) {
			txe_release(c, idx);
			if (err == -ENOSPC)
				return -1;
			txe_unreadable(e, c, &r);
			continue;
		}
		c->txe[idx].qpn_fl = qp->qpn | ((uint32_t)TXE_USED << 24) |
				     (r.j ? (uint32_t)TXE_RD << 24 : 0);
		c->txe[idx].msn = r.j ? r.j->msn : r.w->msn;
		c->txe[idx].seg_try = seg | (1u << 24);
		txe_place(c, slot, idx);
		if (r.j) {
			r.j->next_seg++;
		} else {
			r.w->state = MROCE_WQE_ACTIVE;
			r.w->next_seg++;
		}
		/* Round-robin between the connection's streams. */
		mroce_list_del(&qp->sched);
		mroce_list_add_tail(&c->sched, &qp->sched);
		return 1;
	}
	return 0;
}

/* Nothing new to send: the last packets of each path have no followers
 * to reveal their loss, which would wait for a PTO (2 srtt and more)
 * while the application waits for them. A PROBE behind them (the path
 * is FIFO) gets an immediate ACK that tells, one RTT from now, which are
 * missing. It costs one small packet per path per idle moment and marks
 * no path as suspect. */
static bool idle_probe_due(const struct mr_path *p)
{
	/* not already probed since the last new PSN or retransmission
	 * (a lost retransmission has no followers either) */
	return p->inflight && !p->probation && !p->want_probe &&
	       (p->probe_psn != p->next_psn || p->probe_rtx != p->rtx_total);
}

static void idle_probe(struct mr_conn *c)
{
	for (int i = 0; i < c->npaths; i++)
		if (idle_probe_due(&c->path[i]))
			c->path[i].want_probe = 1;
}

static int tx_data(struct mroce_engine *e, struct mr_conn *c,
		   struct mroce_tx_pkt *out, size_t cap, uint64_t now)
{
	int r;

	if (c->state != MR_CONN_ESTABLISHED || c->next_send > now)
		return 0;
	for (int i = 0; i < c->npaths; i++) {
		r = tx_lost(e, c, i, out, cap, now);
		if (r)
			goto sent;
	}
	if (c->nresend) {
		r = tx_resend(e, c, out, cap, now);
		if (r)
			goto sent;
	}
	r = tx_new(e, c, out, cap, now);
	if (!r && mroce_list_empty(&c->sched))
		idle_probe(c);
sent:
	if (r > 0)
		pace(e, c, out->len, now);
	return r;
}

static void flush_dirty(struct mroce_engine *e, uint64_t now);
static void sweep(struct mroce_engine *e, uint64_t now);
static void heap_remove(struct mr_engine *t, struct mr_conn *c);
static uint32_t pop_due(struct mr_engine *t, uint64_t now);
static void conn_tick(struct mroce_engine *e, struct mr_conn *c, uint64_t now);
static void conn_sched(struct mroce_engine *e, struct mr_conn *c,
		       uint64_t now);

static int mr_tx(struct mroce_engine *e, struct mroce_tx_pkt *pkts, int n,
		 size_t cap, uint64_t now)
{
	struct mr_engine *t = T(e);
	int cnt = 0;
	uint32_t k = 0;

	/* Timers run as their connections come due below (a driver may
	 * call only tx() when next_timer() fires). */
	/* Stateless handshake replies first. */
	while (cnt < n && t->nhs) {
		struct mr_hsreply *r = &t->hsq[t->hs_head];
		struct mroce_meta_pkt pk;
		struct mroce_tx_pkt *out = &pkts[cnt];
		int len;

		memset(&pk, 0, sizeof(pk));
		pk.opcode = r->opcode;
		pk.conn_id = r->conn_id;
		if (r->opcode == MROCE_OP_NAK) {
			pk.path = r->path;
			pk.path_gen = r->gen;
			pk.nak.code = MROCE_NAK_NO_CONN;
			pk.nak.psn = r->psn;
			e->stats.tx_naks++;
		} else {
			pk.conn.nonce = r->nonce;
			pk.conn.cookie = r->cookie;
			pk.conn.cookie_time = r->cookie_time;
			pk.conn.mtu = e->cfg.mtu;
			pk.conn.max_paths = e->cfg.npaths;
		}
		len = mroce_meta_build(&pk, out->buf, cap);
		if (len < 0)
			return cnt;
		out->len = (uint32_t)len;
		out->peer = r->peer;
		out->sport = r->sport;
		out->dport = MROCE_UDP_PORT;
		out->ect = false;
		e->stats.tx_pkts++;
		e->stats.tx_bytes += (uint64_t)len;
		t->hs_head = (t->hs_head + 1) % MR_HSQ;
		t->nhs--;
		cnt++;
	}
	/* Only the connections due by now have anything to do. Take them
	 * from the heap one at a time: run their expired timers, send
	 * control before data, and put a connection that sent back at
	 * once (behind the others due at the same instant: round robin,
	 * also when the driver asks for one packet at a time); those with
	 * nothing to send wait in t->work until the end of the call. */
	flush_dirty(e, now);
	sweep(e, now);
	while (cnt < n && t->nheap && t->heap[0]->due <= now) {
		struct mr_conn *c = t->heap[0];
		int r;

		heap_remove(t, c);
		if (c->tdue <= now)
			conn_tick(e, c, now);
		r = tx_control(e, c, &pkts[cnt], cap, now);
		if (!r)
			r = tx_data(e, c, &pkts[cnt], cap, now);
		if (r <= 0) {
			t->work[k++] = c;
			if (r < 0)
				break;
			continue;
		}
		cnt++;
		/* ACKs/NAKs our data triggered go first. */
		while (cnt < n && tx_control(e, c, &pkts[cnt], cap, now) > 0)
			cnt++;
		conn_sched(e, c, now);
	}
	while (k)
		conn_kick(t->work[--k]);
	flush_dirty(e, now);
	return cnt;
}

/* ------------------------------------------------------------------ */
/* Timers                                                               */
/* ------------------------------------------------------------------ */
/* Path p's PTO fired (nothing acknowledged on it for 2 srtt + slack):
 * is it silent while the connection is alive? Yes when a sibling had a
 * packet acknowledged that we sent after `since` (p's PROBE, or its last
 * progress when it has several packets out): the peer receives what we
 * send now, just not over p (other paths may be dead too: a plane
 * carries several of our ports).
 * Comparing send times, not arrival times, keeps deep queues (an incast)
 * from looking like silence, and random loss cannot silence a path with
 * several packets out (it would take every packet and every ACK). When
 * nothing gets through it is the peer or the whole fabric, and the RTO
 * (liveness, retry counting, backoff) decides. */
static bool path_silent(const struct mroce_engine *e, const struct mr_conn *c,
			const struct mr_path *p, uint64_t now)
{
	uint64_t pto = path_pto(e, c, p);
	uint32_t since;

	if (c->npaths < 2 || now - p->last_ack < pto || !c->last_tsecr)
		return false;
	/* Two probes: one lost probe (or answer) is random loss, which
	 * must not retire a path, let alone stop the exploration
	 * (explore_quiet); two in a row are rare (1 in 400 at 5% loss)
	 * and cost one more PTO on a dead plane. */
	if (p->probed >= MR_PROBES)
		since = p->probe_ts;
	else if (p->inflight + p->nlost >= 4 && p->last_ack)
		/* its packets may wait in the receiver's ACK coalescing:
		 * a sibling's packet that left within that delay after
		 * p's last progress, and asked for an immediate ACK,
		 * proves nothing */
		since = now_us(p->last_ack + MR_ACK_DELAY_NS) + 1;
	else
		return false;
	return (int32_t)(c->last_tsecr - since) > 0;
}

/* A path rerolled away from silence may hash onto a dead plane again:
 * it carries no data until a PROBE on it is answered (pick_path avoids
 * probed paths while others have room). */
static void path_probation(struct mroce_engine *e, struct mr_conn *c,
			   struct mr_path *p, uint64_t now)
{
	uint64_t pto = path_pto(e, c, p);

	mr_cc_on_reroll(e, p);
	p->last_ack = now;
	p->probation = 1;
	p->probed = 1;
	p->want_probe = 1;
	/* Its probe waits behind the siblings' queues: allow one and a
	 * half PTOs, then a second probe gets one more (path_timer). */
	p->deadline = now + (now - conn_heard(c) < pto ? pto + pto / 2 :
						      path_rto(e, c, p));
}

/* REPS-style path exploration. Random source ports may hash several paths
 * onto one plane and none onto another: the connection then queues on the
 * planes it has while one idles, its windows shrink to what those planes
 * carry, and no path choice can fix that (the RTTs look alike: the CC
 * keeps every queue short). What shows it is the rate: the connection has
 * data waiting for a window, may send at the full line rate (alone at the
 * receiver; an incast's bottleneck is the downlink, which no port avoids),
 * and yet delivers well below it. Then, every few round trips, re-roll its
 * worst path (the one that delivered least: the most crowded plane); a
 * port that lands on the idle plane drains fast and the fewest-in-flight
 * choice moves load onto it. Exploration stops as soon as
 * the rate is reached, and backs off when rerolls keep failing (a fabric
 * slower than the NIC, which no port fixes). A rerolled path goes through
 * probation like one that fell silent. */
/* An explored path takes a fresh port (on probation). The PROBE's answer
 * tells where it landed: over a plane our other ports keep busy it waits
 * behind their queues, over an idle one it takes the base RTT. A move is
 * made because a plane idles, so a port that lands on a queue is tried
 * again at once, up to MR_EXPLORE_HOPS ports (a round trip each, where
 * judging it by the rate took a ramp and two intervals). */
static void explore_hop(struct mroce_engine *e, struct mr_conn *c, int slot,
			uint64_t now)
{
	struct mr_path *p = &c->path[slot];

	p->hops++;
	p->sport = new_sport(e, c, slot);
	p->probe_ts = 0;
	p->tlp = 0;
	e->stats.path_rerolls++;
	path_probation(e, c, p, now);
	mr_cc_on_explore(e, c, p);
}

/* The connection's base RTT (us): its paths' smallest sample, 0 = none. */
static uint32_t conn_min_rtt(const struct mr_conn *c)
{
	uint32_t base = 0;

	for (int i = 0; i < c->npaths; i++) {
		uint32_t m = c->path[i].min_rtt_us;

		if (m && (!base || m < base))
			base = m;
	}
	return base;
}

/* A moved port whose PROBE takes longer than this (ns) landed behind a
 * queue: the connection's fastest PROBE round trip + 1/16. A software
 * endpoint's round trips jitter by milliseconds, and a plane that limits
 * it holds a queue near its CC target (base + jitter_us): it allows
 * jitter_us / MR_EXPLORE_SW_QUEUE, between the two, over its base RTT
 * (its first PROBE may already wait behind a queue). */
static uint64_t hop_limit(const struct mroce_engine *e,
			  const struct mr_conn *c)
{
	uint64_t ref = c->probe_rtt_min, slack,
		 sw = (uint64_t)e->cfg.jitter_us * 1000 / MR_EXPLORE_SW_QUEUE,
		 base = (uint64_t)conn_min_rtt(c) * 1000;

	if (sw && base && base < ref)
		ref = base;
	slack = ref / 16;
	return ref + (sw > slack ? sw : slack);
}

/* Every port a software endpoint's move tried (p's) waited behind a
 * queue: likely no plane is idle (a balanced connection that the planes
 * limit; an idle plane escapes MR_EXPLORE_HOPS tries over 4 planes 1 time
 * in 6). The next move waits twice as long, as after MR_EXPLORE_TRIES
 * failures, and p goes back to the port it left (its plane was no worse,
 * and a port dropped at random onto another plane unbalances them). It
 * is empty (moved once drained; only PROBEs went out since), and that
 * port is proven. */
static void explore_busy(const struct mroce_engine *e, struct mr_conn *c,
			 struct mr_path *p)
{
	if (!e->cfg.jitter_us)
		return;
	if (c->explore_fails / MR_EXPLORE_TRIES < MR_EXPLORE_MAX_SHIFT)
		c->explore_fails = (c->explore_fails / MR_EXPLORE_TRIES + 1) *
				   MR_EXPLORE_TRIES;
	for (int i = 0; i < c->npaths; i++)
		if (&c->path[i] != p && c->path[i].sport == p->home_sport)
			return;
	if (p->home_sport)
		p->sport = p->home_sport;
}

/* Software endpoints: did the planes hold a queue through the whole
 * interval? Its smallest RTT sample, over every path, above the
 * connection's base RTT + jitter_us / MR_EXPLORE_SW_QUEUE. Scheduling
 * jitter delays some samples, a standing queue all of them; random loss
 * none (it adds no queue). */
static bool explore_queued(const struct mroce_engine *e,
			   const struct mr_conn *c)
{
	uint32_t base = conn_min_rtt(c);

	return base && c->explore_rtt_lo &&
	       c->explore_rtt_lo > base + e->cfg.jitter_us / MR_EXPLORE_SW_QUEUE;
}

/* Software endpoints' verdict on a judged interval: move a path after
 * MR_EXPLORE_SW_RUN queued intervals in a row; MR_EXPLORE_SW_CLEAR clear
 * ones in a row (the planes no longer limit) end the backoff. */
static bool explore_sw_move(const struct mroce_engine *e, struct mr_conn *c)
{
	if (!explore_queued(e, c)) {
		c->explore_qrun = 0;
		if (c->explore_crun < MR_EXPLORE_SW_CLEAR &&
		    ++c->explore_crun == MR_EXPLORE_SW_CLEAR)
			c->explore_fails = 0;
		return false;
	}
	c->explore_crun = 0;
	if (++c->explore_qrun < MR_EXPLORE_SW_RUN)
		return false;
	c->explore_qrun = 0;
	/* the queue is now: a path failure before it no longer explains it */
	c->explore_failed = 0;
	return true;
}

/* Exploration moves a path without retiring it: the path first drains
 * (`moving`: no new data, its losses are still retransmitted on it), then
 * takes a fresh source port with the same generation and PSN space. A
 * path is FIFO only per port, so nothing of it may be in flight across
 * the switch; once it is empty nothing is, and nothing is resent or
 * dropped as stale (retiring it threw its in-flight packets away and
 * resent them elsewhere: each exploration cost a window of data, and a
 * burst of explorations cost more than the plane they looked for). The
 * new port goes through probation (a PROBE must answer: it may hash onto
 * a dead plane) and then starts with its siblings' mean window. Called
 * whenever the path may have drained. */
static void path_move(struct mroce_engine *e, struct mr_conn *c, int slot,
		      uint64_t now)
{
	struct mr_path *p = &c->path[slot];

	if (!p->moving || !path_empty(p))
		return;
	p->moving = 0;
	p->hops = 0;
	p->home_sport = p->sport;
	explore_hop(e, c, slot, now);
}

static void explore_restart(struct mr_conn *c, uint64_t now, uint8_t fl)
{
	c->explore_start = now;
	c->explore_acked = 0;
	c->explore_lost = 0;
	c->explore_fl = fl;
	c->explore_rtt_lo = 0;
	for (int i = 0; i < c->npaths; i++)
		c->path[i].explore_acked = 0;
}

/* The path to move: the one that delivered least in the interval (its
 * plane is the most crowded), not one moved by the last exploration (its
 * window is still growing), nor one in `skip` or on probation. -1 while
 * a path is draining for a move: one exploration at a time. */
static int explore_victim(const struct mr_conn *c, uint64_t skip)
{
	uint32_t least = 0;
	int worst = -1;

	for (int i = 0; i < c->npaths; i++) {
		const struct mr_path *p = &c->path[i];

		if (p->moving)
			return -1;
		/* a port being proven after a failure is no candidate, but
		 * does not hold up the search (a dead plane may have taken
		 * the only ports of a live one: their ACKs crossed it) */
		if ((i < 64 && (skip >> i & 1)) || p->probation ||
		    p->want_reroll || !p->srtt_us)
			continue;
		if (i < 64 && (c->explore_moved >> i & 1))
			continue;
		if (worst < 0 || p->explore_acked < least) {
			worst = i;
			least = p->explore_acked;
		}
	}
	return worst;
}

/* A path fell silent: maybe a plane died. The interval's rate holds the
 * failure, not the planes: measure afresh. The pace stays (it used to jump
 * to the slowest, x64: the paths of a dead plane, and those whose ACKs
 * crossed it, each fell silent, and the search for the planes still idle
 * after their new ports landed stopped for the rest of the transfer;
 * exploring costs little now, since a path moves only once drained and a
 * port on a dead plane never leaves probation). */
static void explore_quiet(struct mr_conn *c, uint64_t now)
{
	c->explore_failed = 1;
	explore_restart(c, now, c->explore_fl & MR_EXPLORE_WARM);
}

static void path_explore(struct mroce_engine *e, struct mr_conn *c,
			 uint64_t now)
{
	uint64_t ival, rate, link = e->cfg.link_bps, moved;
	uint32_t srtt_max = 0;
	uint8_t fl = c->explore_fl;
	int worst;

	/* An ACK that finds the pacer ready and data waiting: the windows,
	 * not the rate, held the data back. */
	if (mroce_list_empty(&c->sched))
		c->explore_fl |= MR_EXPLORE_IDLE;
	else if (c->next_send <= now)
		c->explore_fl |= MR_EXPLORE_BLOCKED;
	for (int i = 0; i < c->npaths; i++)
		if (c->path[i].srtt_us > srtt_max)
			srtt_max = c->path[i].srtt_us;
	/* A software endpoint's interval spans at least MR_EXPLORE_RTTS
	 * jitter_us: its smallest RTT sample must not be one stall long. */
	if (srtt_max < e->cfg.jitter_us)
		srtt_max = e->cfg.jitter_us;
	ival = (uint64_t)MR_EXPLORE_RTTS * srtt_max * 1000
	       << (c->explore_fails / MR_EXPLORE_TRIES < MR_EXPLORE_MAX_SHIFT ?
		   c->explore_fails / MR_EXPLORE_TRIES : MR_EXPLORE_MAX_SHIFT);
	if (!c->explore_start || now - c->explore_start > 4 * ival) {
		/* First ACK, or the connection slept: start afresh. */
		explore_restart(c, now, 0);
		return;
	}
	/* An interval that holds a move (a path draining, or a new port
	 * on probation) measures the move, not the planes: the interval
	 * starts when the new port carries data. */
	for (int i = 0; i < c->npaths; i++) {
		if (c->path[i].moving ||
		    (c->path[i].probation && i < 64 &&
		     (c->explore_moved >> i & 1))) {
			explore_restart(c, now, fl & MR_EXPLORE_WARM);
			return;
		}
	}
	if (now - c->explore_start < ival)
		return;
	/* The rate the planes took from us: packets acknowledged plus
	 * packets declared lost (their retransmissions are sent, and
	 * counted, again). Random loss then does not look like a crowded
	 * plane: with it the acknowledged rate alone falls by the loss
	 * rate and its recovery, on every plane alike, and judging by it
	 * either rerolled for nothing or (as before) had to give up on
	 * every interval with a little loss - which left a connection of
	 * 8 ports on 3 of 4 planes there for good under 1% loss. */
	rate = (uint64_t)(c->explore_acked + c->explore_lost) * c->mtu * 8 *
	       1000000000ull / (now - c->explore_start);
	/* The first interval holds the rate's ramp: not a measurement.
	 * Nor is one where a fifth of the packets was lost: that is a
	 * failure (a dead plane), which the path timers handle. */
	if (!(fl & MR_EXPLORE_WARM) || c->npaths < 2 ||
	    c->explore_lost * 4 > c->explore_acked ||
	    mr_cc_rate(e, c, now) < link || (fl & MR_EXPLORE_IDLE) ||
	    !(fl & MR_EXPLORE_BLOCKED)) {
		explore_restart(c, now, MR_EXPLORE_WARM);
		return;
	}
	/* Software endpoints: the host, not the planes, usually limits the
	 * rate (link_bps is nominal), so a rate below it says nothing about
	 * the planes; a queue that stays on every path does. */
	if (e->cfg.jitter_us) {
		if (!explore_sw_move(e, c)) {
			explore_restart(c, now, MR_EXPLORE_WARM);
			return;
		}
	} else if (rate >= link / 100 * MR_EXPLORE_PCT) {
		/* Payload rate; a balanced connection reaches ~93% of the
		 * line. */
		c->explore_failed = 0;
		c->explore_good = 1;
		c->explore_fails = 0;
		explore_restart(c, now, MR_EXPLORE_WARM);
		return;
	} else if (c->explore_good) {
		/* A connection that had the rate needs two short intervals
		 * below it in a row: one is noise (a loss recovery, a burst
		 * of completions), and a move off a plane it needs costs a
		 * search. */
		c->explore_good = 0;
		explore_restart(c, now, MR_EXPLORE_WARM);
		return;
	}
	worst = explore_victim(c, 0);
	explore_restart(c, now, MR_EXPLORE_WARM);
	if (worst < 0)
		return;
	if (c->explore_fails < UINT8_MAX)
		c->explore_fails++;
	/* MR_EXPLORE_PATHS per round, never more than a quarter of the
	 * paths. Each new port finds a given idle plane with probability
	 * 1/planes, so two per round would halve the search; measured, one
	 * did better (the two least delivering paths were at times the
	 * only two ports of a plane, which then emptied). */
	moved = 0;
	for (int k = 0; k < MR_EXPLORE_PATHS && worst >= 0 &&
			(k == 0 || 4 * (k + 1) <= c->npaths);
	     k++) {
		moved |= worst < 64 ? 1ull << worst : 0;
		c->path[worst].moving = 1;
		path_move(e, c, worst, now);
		worst = explore_victim(c, moved);
	}
	c->explore_moved = moved;
}

static void path_timer(struct mroce_engine *e, struct mr_conn *c, int slot,
		       uint64_t now)
{
	struct mr_path *p = &c->path[slot];
	uint8_t reason;

	path_move(e, c, slot, now);
	if (p->hold_until && now >= p->hold_until) {
		/* RNR wait over: held PSNs are retransmitted as they are. */
		for (uint32_t s = p->una; s != p->next_psn; s++) {
			uint16_t idx = p->ring[s % MR_PATH_WIN];
			struct mr_txe *t;

			if (idx == MR_TXE_NONE)
				continue;
			t = &c->txe[idx];
			if (txe_fl(t) & TXE_HOLD) {
				txe_clr(t, TXE_HOLD);
				txe_set(t, TXE_LOST);
				p->nheld--;
				p->nlost++;
			}
		}
		p->hold_until = 0;
		if (!p->deadline)
			path_arm(e, c, p, now);
	}
	if (p->deadline && now >= p->deadline) {
		if (!(p->inflight + p->nlost)) {
			/* Idle, unless a probation probe went unanswered:
			 * probe once more (it may have been lost), then try
			 * another port. */
			if (p->probed && p->probed < MR_PROBES) {
				uint64_t pto = path_pto(e, c, p);

				p->probed++;
				p->want_probe = 1;
				p->deadline = now + (now - conn_heard(c) < pto ?
							     pto :
							     path_rto(e, c, p));
				return;
			}
			if (p->probed) {
				explore_quiet(c, now);
				path_retire(e, c, slot, MROCE_REROLL_TIMEOUT,
					    false);
				path_probation(e, c, p, now);
				return;
			}
			p->deadline = 0;
		} else if (path_silent(e, c, p, now)) {
			/* Silent while its siblings deliver: a dead plane
			 * (or a port hashed into one). Waiting for RTOs
			 * would stall every message with a segment on it
			 * for rto_min; move its data to the live paths now
			 * and try a fresh source port, which gets a minimal
			 * window until it proves itself. With a handful in
			 * flight a tail loss is likelier than a dead plane:
			 * then one probe goes first. */
			explore_quiet(c, now);
			path_retire(e, c, slot, MROCE_REROLL_TIMEOUT, false);
			path_probation(e, c, p, now);
			return;
		} else if (!p->probed && !p->tlp && p->inflight &&
			   p->inflight + p->nlost <= MR_TLP_MAX &&
			   c->last_ack && now - c->last_ack < path_pto(e, c, p)) {
			/* A thin path (a window of a packet or two, on a
			 * crowded plane) with the connection alive: its
			 * oldest packet is the likely loss, and there are no
			 * followers to show it. Resend that packet instead
			 * of a PROBE (whose answer would take a round trip
			 * before the resend could even start): it asks for
			 * an immediate ACK, which tells as much as a probe's
			 * answer. Once per progress; then probes. */
			for (uint32_t s = p->una; s != p->next_psn; s++) {
				uint16_t idx = p->ring[s % MR_PATH_WIN];

				if (idx == MR_TXE_NONE ||
				    (txe_fl(&c->txe[idx]) &
				     (TXE_LOST | TXE_HOLD)))
					continue;
				lose_entry(e, c, p, idx, now);
				break;
			}
			p->tlp = 1;
			p->deadline = now + path_pto(e, c, p);
		} else if (p->probed < MR_PROBES) {
			/* Tail-loss probe: ask the receiver what it has. The
			 * first comes after a PTO; the next after another
			 * PTO while the connection is otherwise alive (a
			 * lost probe or answer must not cost rto_min), after
			 * an RTO when nothing at all comes back. */
			if (p->probed)
				e->stats.rto_fires++;
			p->probed++;
			p->want_probe = 1;
			p->deadline = now + (conn_heard(c) &&
						     now - conn_heard(c) <
							     path_pto(e, c, p) ?
					     path_pto(e, c, p) :
					     path_rto(e, c, p));
		} else {
			/* Nothing came back after MR_PROBES probes and RTOs:
			 * the path is a blackhole. Move everything elsewhere
			 * (a lossy path would have answered one of them). */
			e->stats.rto_fires++;
			c->backoff++;
			explore_quiet(c, now);
			path_retire(e, c, slot, MROCE_REROLL_TIMEOUT, true);
			return;
		}
	}
	if (p->cc.sent >= 64) {
		if (mr_cc_path_bad(c, p, &reason))
			path_retire(e, c, slot, reason, false);
		else
			mr_cc_path_reset_stats(p);
	}
}

static void read_watchdog(struct mroce_engine *e, struct mr_conn *c,
			  uint64_t now)
{
	struct mroce_list *n, *nx;

	for (n = c->qps.next; n != &c->qps; n = nx) {
		struct mroce_qp *qp =
			mroce_container_of(n, struct mroce_qp, conn_link);
		struct mr_qp *q = QP(qp);

		nx = n->next;
		if (!q->reads_out || qp->state != MROCE_QPS_RTS)
			continue;
		for (int i = 0; i < MROCE_MAX_RD_ATOMIC; i++) {
			struct mroce_wqe *w;

			if (!q->rdrx[i].used || now < q->rdrx[i].deadline)
				continue;
			w = mroce_sq_by_msn(qp, q->rdrx[i].msn);
			if (w && w->state != MROCE_WQE_DONE) {
				mroce_sq_fail(e, qp, w,
					      MROCE_WC_RETRY_EXC_ERR);
				break;
			}
		}
	}
}

static void conn_tick(struct mroce_engine *e, struct mr_conn *c, uint64_t now)
{
	if ((c->state == MR_CONN_REQ_SENT ||
	     c->state == MR_CONN_CONFIRM_SENT) &&
	    now >= c->hs_deadline) {
		if (++c->hs_tries > e->cfg.retry_cnt) {
			hs_fail(e, c);
			return;
		}
		c->want_hs = 1;
		c->hs_fast = 0;
		c->hs_deadline = hs_deadline(e, c, c->hs_tries, now);
	}
	if (c->hold_until && now >= c->hold_until) {
		/* Streams parked on an RNR hold resume (their held
		 * PSNs are retransmitted by the path timers). */
		c->hold_until = 0;
		for (struct mroce_list *n = c->qps.next; n != &c->qps;
		     n = n->next)
			qp_kick(mroce_container_of(n, struct mroce_qp,
						   conn_link));
	}
	if (c->state == MR_CONN_ESTABLISHED) {
		for (int i = 0; i < c->npaths; i++)
			path_timer(e, c, i, now);
		read_watchdog(e, c, now);
	}
}

/* Safety net: recompute every active connection once in a while, so
 * that a change no call marked can delay a timer by at most
 * MR_SWEEP_NS. Idle connections leave the active list here. */
static void sweep(struct mroce_engine *e, uint64_t now)
{
	struct mr_engine *t = T(e);
	struct mroce_list *l, *nx;

	if (now - t->last_sweep < MR_SWEEP_NS)
		return;
	t->last_sweep = now;
	for (l = t->active.next; l != &t->active; l = nx) {
		struct mr_conn *c =
			mroce_container_of(l, struct mr_conn, alink);

		nx = l->next;
		if (!c->dirty) {
			c->dirty = 1;
			t->dirty[t->ndirty++] = c;
		}
		if (conn_idle(c))
			mroce_list_del(&c->alink);
	}
	flush_dirty(e, now);
}

static void mr_tick(struct mroce_engine *e, uint64_t now)
{
	struct mr_engine *t = T(e);
	uint32_t n;

	flush_dirty(e, now);
	sweep(e, now);
	n = pop_due(t, now);
	for (uint32_t i = 0; i < n; i++) {
		struct mr_conn *c = t->work[i];

		if (c->tdue <= now)
			conn_tick(e, c, now);
		conn_kick(c);
	}
	flush_dirty(e, now);
}

static uint64_t umin(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* The earliest timer of connection c (what conn_tick() acts on). */
static uint64_t conn_tdue(const struct mr_conn *c)
{
	uint64_t next = UINT64_MAX;

	if (c->state == MR_CONN_REQ_SENT || c->state == MR_CONN_CONFIRM_SENT)
		next = umin(next, c->hs_deadline);
	if (c->state != MR_CONN_ESTABLISHED)
		return next;
	if (c->hold_until)
		next = umin(next, c->hold_until);
	for (const struct mroce_list *n = c->qps.next; n != &c->qps;
	     n = n->next) {
		const struct mroce_qp *qp =
			mroce_container_of(n, struct mroce_qp, conn_link);
		const struct mr_qp *q = qp->tp;

		for (int i = 0; q->reads_out && i < MROCE_MAX_RD_ATOMIC; i++)
			if (q->rdrx[i].used)
				next = umin(next, q->rdrx[i].deadline);
	}
	for (int i = 0; i < c->npaths; i++) {
		const struct mr_path *p = &c->path[i];

		if (p->deadline)
			next = umin(next, p->deadline);
		if (p->hold_until)
			next = umin(next, p->hold_until);
		/* the lossy-path check (path_timer) is due at once */
		if (p->cc.sent >= 64)
			next = 0;
	}
	return next;
}

/* The earliest instant connection c has something to do: a timer, a
 * pending ACK, a control packet, or data it may send (`now` for "at
 * once"); UINT64_MAX for nothing. *tdue: its earliest timer. */
static uint64_t conn_due(const struct mroce_engine *e, const struct mr_conn *c,
			 uint64_t now, uint64_t *tdue)
{
	uint64_t next = conn_tdue(c);
	bool ready = false, usable = false;
	bool idle = mroce_list_empty(&c->sched);

	*tdue = next;
	if (c->want_hs || c->want_accept)
		return now;
	if (c->state != MR_CONN_ESTABLISHED)
		return next;
	if (c->nak_count)
		return now;
	for (int i = 0; i < c->npaths; i++) {
		const struct mr_path *p = &c->path[i];

		if (p->want_probe || p->want_reroll)
			return now;
		if (idle && idle_probe_due(p) && c->next_send <= now)
			return now;
		if (p->ack_due)
			next = umin(next, p->ack_urgent ? now : p->ack_due);
		if (p->nlost && mr_cc_room(p))
			ready = true;
		if (path_usable(p))
			usable = true;
	}
	/* Entries may belong to a message on RNR hold: then the end of the
	 * hold is the time to look again, not now (no spin). */
	if (c->hold_until > now)
		ready = false;
	if (usable && ((c->nresend && c->hold_until <= now) ||
		       (!mroce_list_empty(&c->sched) &&
			c->txe_used < conn_flight_cap(c))))
		ready = true;
	if (ready)
		next = umin(next, c->next_send > now ? c->next_send : now);
	return next;
}

static bool heap_less(const struct mr_conn *a, const struct mr_conn *b)
{
	return a->due < b->due || (a->due == b->due && a->dseq < b->dseq);
}

static void heap_put(struct mr_engine *t, uint32_t i, struct mr_conn *c)
{
	t->heap[i] = c;
	c->hidx = i + 1;
}

static void heap_up(struct mr_engine *t, uint32_t i)
{
	struct mr_conn *c = t->heap[i];

	while (i && heap_less(c, t->heap[(i - 1) / 2])) {
		heap_put(t, i, t->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_put(t, i, c);
}

static void heap_down(struct mr_engine *t, uint32_t i)
{
	struct mr_conn *c = t->heap[i];

	for (;;) {
		uint32_t l = 2 * i + 1, m = i;
		const struct mr_conn *best = c;

		if (l < t->nheap && heap_less(t->heap[l], best))
			m = l, best = t->heap[l];
		if (l + 1 < t->nheap && heap_less(t->heap[l + 1], best))
			m = l + 1;
		if (m == i)
			break;
		heap_put(t, i, t->heap[m]);
		i = m;
	}
	heap_put(t, i, c);
}

static void heap_remove(struct mr_engine *t, struct mr_conn *c)
{
	uint32_t i = c->hidx - 1;
	struct mr_conn *last = t->heap[--t->nheap];

	c->hidx = 0;
	if (last == c)
		return;
	heap_put(t, i, last);
	heap_up(t, i);
	heap_down(t, last->hidx - 1);
}

/* Recompute c's due instant and its place in the heap. */
static void conn_sched(struct mroce_engine *e, struct mr_conn *c, uint64_t now)
{
	struct mr_engine *t = T(e);

	c->due = conn_due(e, c, now, &c->tdue);
	c->dseq = t->hseq++;
	if (c->due == UINT64_MAX) {
		if (c->hidx)
			heap_remove(t, c);
		return;
	}
	if (!c->hidx) {
		heap_put(t, t->nheap++, c);
		heap_up(t, c->hidx - 1);
	} else {
		heap_up(t, c->hidx - 1);
		heap_down(t, c->hidx - 1);
	}
}

/* Bring every connection touched by this call up to date. */
static void flush_dirty(struct mroce_engine *e, uint64_t now)
{
	struct mr_engine *t = T(e);

	while (t->ndirty) {
		struct mr_conn *c = t->dirty[--t->ndirty];

		c->dirty = 0;
		conn_sched(e, c, now);
	}
}

/* Take every connection due by `now` out of the heap into t->work (the
 * caller puts them back with conn_kick + flush_dirty). */
static uint32_t pop_due(struct mr_engine *t, uint64_t now)
{
	uint32_t n = 0;

	while (t->nheap && t->heap[0]->due <= now) {
		struct mr_conn *c = t->heap[0];

		heap_remove(t, c);
		t->work[n++] = c;
	}
	return n;
}

static uint64_t mr_next_timer(const struct mroce_engine *e, uint64_t now)
{
	struct mr_engine *t = T(e);
	uint64_t next;

	/* Logically const: bring the heap up to date with the calls since
	 * the last flush (rx() and the verbs only mark connections dirty,
	 * so a burst of them costs one recompute per connection). The
	 * engine is never a const object, only passed as one. */
	flush_dirty((struct mroce_engine *)(uintptr_t)e, now);
	if (t->nhs)
		return now;
	if (!t->nheap)
		return UINT64_MAX;
	next = t->heap[0]->due;
	return next < now ? now : next;
}

/* ------------------------------------------------------------------ */
/* Dispatch                                                             */
/* ------------------------------------------------------------------ */
/* A data packet or PROBE for a connection id we do not know: its sender
 * holds a connection we lost (we restarted). Tell it, statelessly and at
 * most once per MR_NO_CONN_GAP_NS: NAK NO_CONN carrying the unknown id and
 * the packet's path, generation and PSN (a PROBE's last PSN sent), which
 * the sender checks against what it has outstanding (spec 9.5). Without
 * it the survivor learnt of the restart only from the restarted side's
 * next handshake, and until then its messages waited out the retries. */
static void no_conn_reply(struct mroce_engine *e,
			  const struct mroce_rx_meta *m,
			  const struct mroce_meta_pkt *pk, uint64_t now)
{
	struct mr_engine *t = T(e);
	struct mr_hsreply *r;

	if (pk->opcode == MROCE_OP_ACK || pk->opcode == MROCE_OP_NAK ||
	    pk->opcode == MROCE_OP_PATH_REROLL || !pk->conn_id ||
	    !mroce_peer_get(e, m->peer))
		return;
	if (t->no_conn_at && now - t->no_conn_at < MR_NO_CONN_GAP_NS)
		return;
	r = hsq_push(t, MROCE_OP_NAK, m, pk->conn_id);
	if (!r)
		return;
	t->no_conn_at = now;
	r->path = pk->path;
	r->gen = pk->path_gen;
	r->psn = pk->opcode == MROCE_OP_PROBE ? pk->next_psn - 1 : pk->psn;
}

/* NAK NO_CONN: the peer has no connection of the id we address it by (it
 * restarted). Believed only from that peer's address, for our established
 * connection to it with that remote id, and when the PSN it names is
 * outstanding on that path generation (a blind attacker cannot tear the
 * connection down). Then the connection is over: its QPs go to ERR as
 * after a peer restart (conn_restart: the oldest unfinished send with
 * RETRY_EXC_ERR, the rest flushed) and a fresh connection, idle until
 * a QP needs it, takes the peer's slot. */
static int rx_no_conn(struct mroce_engine *e, const struct mroce_rx_meta *m,
		      const struct mroce_meta_pkt *pk, uint64_t now)
{
	struct mr_engine *t = T(e);
	struct mr_conn *c;
	struct mr_path *p;

	e->stats.rx_naks++;
	if (m->peer < 0 || (uint32_t)m->peer >= e->cfg.max_conns)
		return -ENOENT;
	c = t->by_peer[m->peer];
	if (!c || c->state != MR_CONN_ESTABLISHED ||
	    c->remote_id != pk->conn_id || pk->path >= c->npaths ||
	    c->path[pk->path].gen != pk->path_gen) {
		e->stats.rx_no_conn++;
		return -ENOENT;
	}
	p = &c->path[pk->path];
	if (mroce_psn_before(pk->nak.psn, p->una) ||
	    !mroce_psn_before(pk->nak.psn, p->next_psn) ||
	    path_txe(c, p, pk->nak.psn) < 0) {
		e->stats.rx_no_conn++;
		return -ESTALE;
	}
	conn_restart(e, c, now);
	return 0;
}

static int mr_rx_one(struct mroce_engine *e, const struct mroce_rx_meta *m,
		     const void *buf, size_t len, uint64_t now)
{
	struct mroce_meta_pkt pk;
	struct mr_conn *c;
	int err;

	err = mroce_meta_parse(buf, len, &pk);
	if (err < 0) {
		e->stats.rx_malformed++;
		return err;
	}
	e->stats.rx_pkts++;
	e->stats.rx_bytes += len;
	if (pk.opcode >= MROCE_OP_CONNECT_REQ)
		return rx_handshake(e, m, &pk, now);
	if (pk.opcode == MROCE_OP_NAK && pk.nak.code == MROCE_NAK_NO_CONN)
		return rx_no_conn(e, m, &pk, now);
	c = conn_by_id(e, pk.conn_id);
	if (c && c->peer == m->peer && c->state == MR_CONN_CONFIRM_SENT &&
	    !c->hs_fast) {
		/* The peer sends on the connection, so it adopted our
		 * CONFIRM (only that told it our id and ISN) and its ACCEPT
		 * was lost. A duplicate CONFIRM makes it resend the ACCEPT:
		 * ask now, once per attempt, instead of a handshake timeout
		 * (1 ms) later, during which everything it sends is lost. */
		c->hs_fast = 1;
		c->want_hs = 1;
		conn_kick(c);
	}
	if (!c || c->peer != m->peer || c->state != MR_CONN_ESTABLISHED) {
		e->stats.rx_no_conn++;
		if (!c)
			no_conn_reply(e, m, &pk, now);
		return -ENOENT;
	}
	conn_kick(c);
	c->last_rx = now;
	switch (pk.opcode) {
	case MROCE_OP_ACK:
		rx_ack(e, c, &pk, now);
		return 0;
	case MROCE_OP_NAK:
		rx_nak(e, c, &pk, now);
		return 0;
	case MROCE_OP_PROBE:
		return rx_probe(e, c, m, &pk, now);
	case MROCE_OP_PATH_REROLL:
		return rx_reroll(e, c, &pk);
	default:
		return rx_data(e, c, m, &pk, now);
	}
}

static int mr_rx(struct mroce_engine *e, const struct mroce_rx_meta *m,
		 const void *buf, size_t len, uint64_t now)
{
	struct mr_engine *t = T(e);
	int r = mr_rx_one(e, m, buf, len, now);

	/* The handshake may have changed the peer's connection too. */
	if (m->peer >= 0 && (uint32_t)m->peer < e->cfg.max_conns &&
	    t->by_peer[m->peer])
		conn_kick(t->by_peer[m->peer]);
	return r;
}

/* ------------------------------------------------------------------ */
/* Engine / QP hooks                                                    */
/* ------------------------------------------------------------------ */
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
	qp->tp = calloc(1, sizeof(struct mr_qp));
	return qp->tp ? 0 : -ENOMEM;
}

static void qp_rx_clear(struct mroce_qp *qp)
{
	struct mr_qp *q = QP(qp);

	for (int i = 0; i < MR_MSG_WIN; i++) {
		st_free(&q->rx[i].st);
		q->rx[i].state = MR_RX_FREE;
	}
	for (int i = 0; i < MROCE_MAX_RD_ATOMIC; i++) {
		st_free(&q->rdrx[i].st);
		q->rdrx[i].used = false;
	}
	q->reads_out = 0;
}

static void mr_qp_destroy(struct mroce_engine *e, struct mroce_qp *qp)
{
	if (!qp->tp)
		return;
	qp_rx_clear(qp);
	mroce_list_del(&qp->conn_link);
	mroce_list_del(&qp->sched);
	if (QP(qp)->conn)
		conn_kick(QP(qp)->conn);
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
			c = conn_new(e, qp->peer);
		if (!c)
			return -ENOMEM;
		q->conn = c;
		q->joined = now;
		mroce_list_add_tail(&c->qps, &qp->conn_link);
		if (c->state == MR_CONN_IDLE)
			hs_start(e, c, now);
		return 0;
	case MROCE_QPS_RTS:
		qp_kick(qp);
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
		mroce_list_del(&qp->conn_link);
		mroce_list_del(&qp->sched);
		memset(q, 0, sizeof(*q));
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
		conn_kick(QP(qp)->conn);
	return r;
}

static int mr_post_send(struct mroce_engine *e, struct mroce_qp *qp,
			struct mroce_wqe *w, uint64_t now)
{
	struct mr_conn *c = QP(qp)->conn;

	if (c && c->state == MR_CONN_IDLE)
		hs_start(e, c, now);
	qp_kick(qp);
	if (c)
		conn_kick(c);
	return 0;
}

static void mr_post_recv(struct mroce_engine *e, struct mroce_qp *qp)
{
	if (QP(qp)->conn) {
		rx_deliver(e, qp);	/* a WRITE_IMM may wait for it */
		conn_kick(QP(qp)->conn);
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
	out->srtt_us = p->srtt_us;
	out->cwnd_pkts = mr_cc_cwnd_pkts(p);
	out->inflight = p->inflight;
	out->tx_pkts = p->tx_pkts;
	out->retransmits = p->retransmits;
	out->ce_marks = p->ce_marks;
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
