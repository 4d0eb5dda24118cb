// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The connection handshake (REQ -> stateless CHALLENGE with a cookie -> CONFIRM
 * -> ACCEPT), its retransmission timing, and the stateless replies to packets
 * for connections we do not know (NAK NO_CONN, spec 9.5).
 */
#include "metaroce_int.h"

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

	if (c->hs.rtt_us && rto < 2ull * c->hs.rtt_us * 1000)
		rto = 2ull * c->hs.rtt_us * 1000;
	if (rto < MR_HS_RTO_MIN_NS)
		rto = MR_HS_RTO_MIN_NS;
	return rto << (tries < 6 ? tries : 6);
}

/* The next handshake deadline: hs_rto plus up to as much again at
 * random, so that the connections of an incast, which all lost their
 * handshake packets in the same burst, do not all resend in the next. */
uint64_t mr_hs_deadline(struct mroce_engine *e, const struct mr_conn *c,
			uint8_t tries, uint64_t now)
{
	uint64_t rto = hs_rto(e, c, tries);

	return now + rto + mroce_rng_below(e, rto < UINT32_MAX ? (uint32_t)rto :
							       UINT32_MAX);
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

void mr_hs_start(struct mroce_engine *e, struct mr_conn *c, uint64_t now)
{
	mr_conn_set_state(e, c, MR_CONN_REQ_SENT);
	c->hs.nonce = mroce_rng_u64(e);
	c->hs.tries = 0;
	c->hs.want = 1;
	c->hs.deadline = mr_hs_deadline(e, c, 0, now);
	mr_conn_kick(c);
}

static void conn_established(struct mroce_engine *e, struct mr_conn *c,
			     uint64_t now)
{
	struct mroce_list *n;

	mr_conn_set_state(e, c, MR_CONN_ESTABLISHED);
	c->est_ms = cookie_clock(now);
	c->last_rx = now;
	c->hs.want = 0;
	c->hs.deadline = 0;
	MROCE_STAT_INC(e, handshakes);
	mroce_ev_conn_update(e, c->peer, c->local_id, c->remote_id,
			     (uint32_t)c->peer);
	for (n = c->qps.next; n != &c->qps; n = n->next)
		mr_qp_kick(mr_qp_of(n));
}

/* Handshake gave up: fail the head WQE of every QP waiting on it. */
void mr_hs_fail(struct mroce_engine *e, struct mr_conn *c)
{
	struct mroce_list *n, *nx;

	mr_conn_set_state(e, c, MR_CONN_IDLE);
	c->hs.want = 0;
	c->hs.deadline = 0;
	for (n = c->qps.next; n != &c->qps; n = nx) {
		struct mroce_qp *qp = mr_qp_of(n);

		nx = n->next;
		if (mroce_sq_count(qp))
			mroce_sq_fail(e, qp, mroce_sq_at(qp, qp->sq_head),
				      MROCE_WC_RETRY_EXC_ERR);
	}
}

static void hs_fill(const struct mroce_engine *e, const struct mr_conn *c,
		    struct mroce_meta_pkt *pk, uint8_t op)
{
	memset(pk, 0, sizeof(*pk));
	pk->opcode = op;
	pk->conn.src_conn_id = c->local_id;
	pk->conn.isn = c->tx_isn;
	pk->conn.nonce = c->hs.nonce;
	pk->conn.mtu = e->cfg.mtu;
	pk->conn.max_paths = e->cfg.npaths;
}

/* The handshake packet connection c owes: its REQ or CONFIRM, or (as
 * the responder) an ACCEPT. 1 = built, 0 = none due, -1 = no room. */
int mr_tx_handshake(struct mroce_engine *e, struct mr_conn *c,
		    struct mroce_tx_pkt *out, size_t cap, uint64_t now)
{
	struct mroce_meta_pkt pk;

	if (c->hs.want && mr_conn_handshaking(c)) {
		hs_fill(e, c, &pk, c->state == MR_CONN_REQ_SENT ?
					   MROCE_OP_CONNECT_REQ :
					   MROCE_OP_CONNECT_CONFIRM);
		if (c->state == MR_CONN_CONFIRM_SENT) {
			pk.conn.cookie = c->hs.cookie;
			pk.conn.cookie_time = c->hs.cookie_time;
		}
		if (mr_emit(e, c, &pk, out, cap, c->path[0].sport, false) < 0)
			return -1;
		c->hs.want = 0;
		c->hs.sent = now;
		return 1;
	}
	if (c->hs.want_accept && c->state == MR_CONN_ESTABLISHED) {
		hs_fill(e, c, &pk, MROCE_OP_CONNECT_ACCEPT);
		pk.conn_id = c->remote_id;
		if (mr_emit(e, c, &pk, out, cap, c->path[0].sport, false) < 0)
			return -1;
		c->hs.want_accept = 0;
		/* Follow it with an ACK of path 0 (same port, so it arrives
		 * after the ACCEPT): it carries our fair-share hint, and the
		 * initiator sends at most MR_FIRST_FLIGHT packets before it
		 * has one. */
		if (!c->path[0].rx_valid)
			mr_rx_path_reset(c, &c->path[0], 0,
					 e->cfg.first_gen);
		c->path[0].rx_sport = c->path[0].sport;
		c->ack_accept = 1;
		mr_ack_want(e, &c->path[0], true, now);
		return 1;
	}
	return 0;
}

/* Build the queued stateless replies (CHALLENGE, NAK NO_CONN) into
 * pkts[*cnt..n-1], counting them in *cnt. -1 when one did not fit in
 * cap (the caller sends what it has and stops), else 0. */
int mr_tx_hsq(struct mroce_engine *e, struct mroce_tx_pkt *pkts, int n,
	      size_t cap, int *cnt)
{
	struct mr_engine *t = T(e);

	while (*cnt < n && t->nhs) {
		struct mr_hsreply *r = &t->hsq[t->hs_head];
		struct mroce_meta_pkt pk;
		struct mroce_tx_pkt *out = &pkts[*cnt];
		int len;

		memset(&pk, 0, sizeof(pk));
		pk.opcode = r->opcode;
		pk.conn_id = r->conn_id;
		if (r->opcode == MROCE_OP_NAK) {
			pk.path = r->path;
			pk.path_gen = r->gen;
			pk.nak.code = MROCE_NAK_NO_CONN;
			pk.nak.psn = r->psn;
			MROCE_STAT_INC(e, tx_naks);
		} else {
			pk.conn.nonce = r->nonce;
			pk.conn.cookie = r->cookie;
			pk.conn.cookie_time = r->cookie_time;
			pk.conn.mtu = e->cfg.mtu;
			pk.conn.max_paths = e->cfg.npaths;
		}
		len = mroce_meta_build(&pk, out->buf, cap);
		if (len < 0)
			return -1;
		out->len = (uint32_t)len;
		out->peer = r->peer;
		out->sport = r->sport;
		out->dport = MROCE_UDP_PORT;
		out->ect = false;
		MROCE_STAT_INC(e, tx_pkts);
		MROCE_STAT_ADD(e, tx_bytes, (uint64_t)len);
		t->hs_head = (t->hs_head + 1) % MR_HSQ;
		t->nhs--;
		(*cnt)++;
	}
	return 0;
}

/* CONNECT_REQ. Stateless: answer with a cookie, remember nothing. */
static int rx_req(struct mroce_engine *e, const struct mroce_rx_meta *m,
		  const struct mroce_peer *peer,
		  const struct mroce_meta_pkt *pk, uint64_t now)
{
	struct mr_hsreply *r;

	if (pk->conn_id || !pk->conn.src_conn_id)
		return -EINVAL;
	r = hsq_push(T(e), MROCE_OP_CONNECT_CHALLENGE, m, pk->conn.src_conn_id);
	if (!r)
		return -ENOBUFS;
	r->nonce = pk->conn.nonce;
	r->cookie_time = cookie_clock(now);
	r->cookie = cookie_mac(e, &peer->addr, pk->conn.src_conn_id,
			       pk->conn.nonce, r->cookie_time);
	return 0;
}

static int rx_challenge(struct mroce_engine *e, const struct mroce_rx_meta *m,
			const struct mroce_meta_pkt *pk, uint64_t now)
{
	struct mr_conn *c = mr_conn_by_id(e, pk->conn_id);

	if (!c || c->peer != m->peer)
		return -ENOENT;
	if (!mr_conn_handshaking(c))
		return 0;	/* late duplicate */
	if (pk->conn.nonce != c->hs.nonce)
		return -EINVAL;
	mr_conn_kick(c);
	c->hs.cookie = pk->conn.cookie;
	c->hs.cookie_time = pk->conn.cookie_time;
	if (c->state == MR_CONN_REQ_SENT) {
		/* The first RTT sample of the connection: paths use it
		 * until they have their own (mr_path_pto). */
		uint64_t rtt = now > c->hs.sent ? now - c->hs.sent : 0;

		c->hs.rtt_us = rtt >= 1000 ? now_us(rtt) : 1;
		mr_conn_set_state(e, c, MR_CONN_CONFIRM_SENT);
		c->hs.fast = 0;
		c->hs.tries = 0;
		c->hs.want = 1;
		c->hs.deadline = mr_hs_deadline(e, c, 0, now);
	}
	return 0;
}

/* Take the peer's id, ISN and limits from its CONFIRM or ACCEPT. */
static void hs_adopt(const struct mroce_engine *e, struct mr_conn *c,
		     const struct mroce_meta_pkt *pk)
{
	c->remote_id = pk->conn.src_conn_id;
	c->rx_isn = pk->conn.isn;
	if (pk->conn.mtu < c->mtu)
		c->mtu = pk->conn.mtu < 256 ? 256 : pk->conn.mtu;
	if (pk->conn.max_paths < c->npaths)
		c->npaths = pk->conn.max_paths;
	mr_cc_conn_mtu(e, c);
}

/* CONNECT_CONFIRM: a valid cookie makes the connection (or answers a
 * CONFIRM whose ACCEPT was lost, or replaces an older incarnation of the
 * peer). */
static int rx_confirm(struct mroce_engine *e, const struct mroce_rx_meta *m,
		      const struct mroce_peer *peer,
		      const struct mroce_meta_pkt *pk, uint64_t now)
{
	uint32_t age = cookie_clock(now) - pk->conn.cookie_time;
	struct mr_conn *c;

	if (pk->conn_id || !pk->conn.src_conn_id)
		return -EINVAL;
	if (pk->conn.cookie != cookie_mac(e, &peer->addr, pk->conn.src_conn_id,
					  pk->conn.nonce,
					  pk->conn.cookie_time) ||
	    age > MR_COOKIE_LIFE_MS) {
		MROCE_STAT_INC(e, rx_no_conn);
		return -EACCES;
	}
	c = T(e)->by_peer[m->peer];
	if (c && c->state == MR_CONN_ESTABLISHED &&
	    c->remote_id == pk->conn.src_conn_id) {
		/* Our ACCEPT was lost (maybe the initiator even restarted
		 * with a new nonce): answer this one. */
		c->hs.nonce = pk->conn.nonce;
		c->hs.want_accept = 1;
		mr_conn_kick(c);
		return 0;
	}
	if (c && c->state == MR_CONN_ESTABLISHED) {
		/* Another incarnation of the peer. A CONFIRM whose cookie
		 * predates our connection is a delayed one of an older
		 * incarnation: ignore it. */
		if ((int32_t)(pk->conn.cookie_time - c->est_ms) < 0) {
			MROCE_STAT_INC(e, rx_no_conn);
			return -ESTALE;
		}
		c = mr_conn_restart(e, c, now);
	} else if (!c) {
		c = mr_conn_new(e, m->peer);
	}
	if (!c)
		return -ENOMEM;
	/* Adopt (also when we were initiating: simultaneous open converges
	 * because each side keeps its own id and ISN). */
	c->hs.nonce = pk->conn.nonce;
	hs_adopt(e, c, pk);
	c->hs.want_accept = 1;
	mr_conn_kick(c);
	conn_established(e, c, now);
	/* A peer that just connected is about to send: count it in the fair
	 * share from now, not from its first data packet, so that the hints
	 * of a growing incast shrink before the newcomers' data arrives. */
	mr_cc_fair_share(e, c, now);
	return 0;
}

static int rx_accept(struct mroce_engine *e, const struct mroce_rx_meta *m,
		     const struct mroce_meta_pkt *pk, uint64_t now)
{
	struct mr_conn *c = mr_conn_by_id(e, pk->conn_id);

	if (!c || c->peer != m->peer)
		return -ENOENT;
	if (c->state == MR_CONN_ESTABLISHED)
		return 0;
	if (c->state != MR_CONN_CONFIRM_SENT || pk->conn.nonce != c->hs.nonce ||
	    !pk->conn.src_conn_id)
		return -EINVAL;
	hs_adopt(e, c, pk);
	conn_established(e, c, now);
	return 0;
}

int mr_rx_handshake(struct mroce_engine *e, const struct mroce_rx_meta *m,
		    const struct mroce_meta_pkt *pk, uint64_t now)
{
	const struct mroce_peer *peer = mroce_peer_get(e, m->peer);

	if (!peer)
		return -ENOENT;
	switch (pk->opcode) {
	case MROCE_OP_CONNECT_REQ:
		return rx_req(e, m, peer, pk, now);
	case MROCE_OP_CONNECT_CHALLENGE:
		return rx_challenge(e, m, pk, now);
	case MROCE_OP_CONNECT_CONFIRM:
		return rx_confirm(e, m, peer, pk, now);
	case MROCE_OP_CONNECT_ACCEPT:
		return rx_accept(e, m, pk, now);
	default:
		return 0;	/* CLOSE / CLOSE_ACK: not used in v0 */
	}
}

/* A data packet or PROBE for a connection id we do not know: its sender
 * holds a connection we lost (we restarted). Tell it, statelessly and at
 * most once per MR_NO_CONN_GAP_NS: NAK NO_CONN carrying the unknown id and
 * the packet's path, generation and PSN (a PROBE's last PSN sent), which
 * the sender checks against what it has outstanding (spec 9.5). Without
 * it the survivor learnt of the restart only from the restarted side's
 * next handshake, and until then its messages waited out the retries. */
void mr_no_conn_reply(struct mroce_engine *e,
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
 * after a peer restart (mr_conn_restart: the oldest unfinished send with
 * RETRY_EXC_ERR, the rest flushed) and a fresh connection, idle until
 * a QP needs it, takes the peer's slot. */
int mr_rx_no_conn(struct mroce_engine *e, const struct mroce_rx_meta *m,
		  const struct mroce_meta_pkt *pk, uint64_t now)
{
	struct mr_engine *t = T(e);
	struct mr_conn *c;
	struct mr_path *p;

	MROCE_STAT_INC(e, rx_naks);
	if (m->peer < 0 || (uint32_t)m->peer >= e->cfg.max_conns)
		return -ENOENT;
	c = t->by_peer[m->peer];
	if (!c || c->state != MR_CONN_ESTABLISHED ||
	    c->remote_id != pk->conn_id || pk->path >= c->npaths ||
	    c->path[pk->path].gen != pk->path_gen) {
		MROCE_STAT_INC(e, rx_no_conn);
		return -ENOENT;
	}
	p = &c->path[pk->path];
	if (mroce_psn_before(pk->nak.psn, p->una) ||
	    !mroce_psn_before(pk->nak.psn, p->next_psn) ||
	    path_txe(c, p, pk->nak.psn) < 0) {
		MROCE_STAT_INC(e, rx_no_conn);
		return -ESTALE;
	}
	mr_conn_restart(e, c, now);
	return 0;
}
