// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Transmit of data: retransmission of lost entries, resend of a retired path's
 * entries, new segments (READ responses first, then the SQ), the choice of a
 * path (join the shortest queue), pacing, and mr_tx, which runs the connections
 * that are due.
 */
#include "metaroce_int.h"

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
		r->j = mr_rd_find(r->qp, t->msn);
		return r->j != NULL;
	}
	if (r->qp->state != MROCE_QPS_RTS)
		return false;
	r->w = mr_sq_by_msn(r->qp, t->msn);
	return r->w && r->w->state != MROCE_WQE_DONE;
}

/* The fields of segment seg of READ response job r->j: *nsegs its
 * segment count. -EPERM: our source region is gone. */
static int fill_read_resp(struct mroce_engine *e, const struct mr_conn *c,
			  const struct txref *r, uint32_t seg,
			  struct mroce_meta_pkt *pk, uint32_t *nsegs)
{
	const struct mroce_rdjob *j = r->j;
	uint32_t mtu = c->mtu, len = mroce_seg_len(j->len, seg, mtu);

	pk->opcode = MROCE_OP_READ_RESP;
	pk->msn = j->msn;
	pk->va = mr_sink(r->qp, j)->va;
	pk->rkey = mr_sink(r->qp, j)->key;
	if (len && mroce_rkey_check(e, r->qp, j->rkey,
				    j->va + (uint64_t)seg * mtu, len,
				    MROCE_ACCESS_REMOTE_READ) != MROCE_MRC_OK)
		return -EPERM;
	pk->payload = len ? mroce_mr_ptr(e, j->rkey, true,
					 j->va + (uint64_t)seg * mtu) :
			    (const uint8_t *)"";
	pk->msg_len = j->len;
	pk->payload_len = len;
	*nsegs = j->nsegs;
	return 0;
}

static uint8_t wr_op(enum mroce_wr_opcode op)
{
	switch (op) {
	case MROCE_WR_SEND:
		return MROCE_OP_SEND;
	case MROCE_WR_SEND_WITH_IMM:
		return MROCE_OP_SEND_IMM;
	case MROCE_WR_RDMA_WRITE:
		return MROCE_OP_WRITE;
	case MROCE_WR_RDMA_WRITE_WITH_IMM:
		return MROCE_OP_WRITE_IMM;
	default:
		return MROCE_OP_READ_REQ;
	}
}

/* The fields of segment seg of SQ message r->w: *nsegs its segment
 * count. -EPERM: our source region is gone. */
static int fill_sq(struct mroce_engine *e, const struct mr_conn *c,
		   const struct txref *r, uint32_t seg,
		   struct mroce_meta_pkt *pk, uint32_t *nsegs)
{
	const struct mroce_send_wr *wr = &r->w->wr;
	uint32_t mtu = c->mtu, len = mroce_seg_len(wr->sge.length, seg, mtu);

	pk->msn = mrw(r->qp, r->w)->msn;
	pk->opcode = wr_op(wr->opcode);
	pk->ssn = mrw(r->qp, r->w)->ssn;
	pk->imm = wr->imm;
	pk->va = wr->remote_addr;
	pk->rkey = wr->rkey;
	if (pk->opcode == MROCE_OP_READ_REQ) {
		pk->sink_va = wr->sge.addr;
		pk->sink_key = wr->sge.lkey;
		len = 0;
	} else {
		pk->payload = mroce_wqe_local_ptr(e, r->w, seg * mtu, len, 0);
		if (!pk->payload)
			return -EPERM;
	}
	if (wr->send_flags & MROCE_SEND_SOLICITED)
		pk->flags |= MROCE_F_SOLICITED;
	pk->msg_len = wr->sge.length;
	pk->payload_len = len;
	*nsegs = r->w->nsegs;
	return 0;
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
	uint32_t nsegs;

	memset(&pk, 0, sizeof(pk));
	pk.conn_id = c->remote_id;
	pk.path = (uint8_t)slot;
	pk.path_gen = p->gen;
	pk.psn = psn;
	pk.tsval = now_us(now);
	pk.stream = r->qp->dest_qpn;
	if ((r->j ? fill_read_resp(e, c, r, seg, &pk, &nsegs) :
		    fill_sq(e, c, r, seg, &pk, &nsegs)) < 0)
		return -EPERM;
	pk.offset = seg * c->mtu;
	if (seg + 1 == nsegs) {
		pk.flags |= MROCE_F_LAST;
		/* The end of a message asks for an ACK of every path at
		 * once (rx_data), so the message completes without a
		 * coalescing delay. A software endpoint skips it when a
		 * later message of the QP is already posted: that one
		 * follows at once, and its completion is what waits. */
		if (!e->cfg.jitter_us || r->j ||
		    mrw(r->qp, r->w)->msn + 1 == QP(r->qp)->next_msn)
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
	if (mr_emit(e, c, &pk, out, cap, p->sport, true) < 0)
		return -ENOSPC;
	MROCE_STAT_INC(e, tx_data_pkts);
	p->sent_at = now;
	p->tx_pkts++;
	p->cc.sent++;
	if (retx) {
		MROCE_STAT_INC(e, retransmits);
		p->retransmits++;
	}
	if (!p->deadline)
		p->deadline = now + mr_path_pto(e, c, p);
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

	if (c->pace.next_send + burst < now)
		c->pace.next_send = now > burst ? now - burst : 0;
	c->pace.next_send += ns;
}

bool mr_path_usable(const struct mr_path *p)
{
	return p->life == MR_PATH_ACTIVE &&
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

			if (!mr_path_usable(p) || (pass == 0 && p->probed))
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
	mr_cc_on_send(p);
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
		mr_txe_release(c, idx);
		return;
	}
	if (done_ok) {
		/* Completed successfully, so the receiver has it: a
		 * spurious loss. Fill our side of the hole by forgetting. */
		struct mr_path *p = &c->path[slot];

		p->nlost--;
		p->ring[t->psn % MR_PATH_WIN] = MR_TXE_NONE;
		mr_txe_release(c, idx);
		return;
	}
	mr_path_retire(e, c, slot, MROCE_REROLL_LOSS, false);
}

/* Fail the message behind an entry that ran out of retries. */
static void txe_exhausted(struct mroce_engine *e, struct txref *r)
{
	if (r->w) {
		mroce_sq_fail(e, r->qp, r->w, MROCE_WC_RETRY_EXC_ERR);
	} else if (r->j) {
		/* Tell the requester (its READ would wait for us); if this
		 * NAK is lost too, its READ watchdog fires. */
		mr_nak_queue(QP(r->qp)->conn, MROCE_NAK_REMOTE_OP,
			     MROCE_MAX_PATHS - 1, 0, 0, r->qp->dest_qpn,
			     r->j->msn, QP(r->qp)->conn->path[0].sport);
		mr_rd_retire(e, r->qp, r->j);
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
	mr_nak_queue(c, MROCE_NAK_ACCESS, MROCE_MAX_PATHS - 1, 0, 0,
		     r->qp->dest_qpn, r->j->msn, c->path[0].sport);
	mr_rd_retire(e, r->qp, r->j);
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
		if (r.w && mrw(r.qp, r.w)->hold_until > now)
			continue;
		if (txe_tries(t) > e->cfg.retry_cnt) {
			txe_exhausted(e, &r);
			return 0;
		}
		/* Lost again on this path with only MR_RTX_ESCAPE tries
		 * left: rather than spend them here before the path's
		 * loss count is judged (mr_cc_path_bad), the path is
		 * retired and the segment escapes to another one (spec
		 * 8.3). The tries stay counted: a segment that every path
		 * loses still runs out of them. */
		if (txe_tries(t) + MR_RTX_ESCAPE > e->cfg.retry_cnt &&
		    c->npaths > 1) {
			mr_path_retire(e, c, slot, MROCE_REROLL_LOSS, true);
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
		p->rtx.total++;
		if (p->rtx.n == MR_RTXQ) {	/* forget the oldest */
			p->rtx.head = (p->rtx.head + 1) % MR_RTXQ;
			p->rtx.n--;
		}
		if (p->rtx.n < MR_RTXQ) {
			uint16_t *q = p->rtx.q[(p->rtx.head + p->rtx.n) %
					      MR_RTXQ];

			q[0] = (uint16_t)t->psn;
			q[1] = (uint16_t)p->next_psn;
			p->rtx.n++;
		}
		txe_clr(t, TXE_LOST);
		p->nlost--;
		p->inflight++;
		mr_cc_on_send(p);
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
			if (r.w && mrw(r.qp, r.w)->hold_until > now)
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
		struct mr_wqe *mw = mrw(qp, w);
		/* messages posted before it and still on the SQ */
		uint32_t ahead = mw->msn -
				 mrw(qp, mroce_sq_at(qp, qp->sq_head))->msn;

		if (w->state == MROCE_WQE_QUEUED) {
			w->nsegs = mroce_msg_nsegs(w->wr.sge.length, mtu);
			mw->next_seg = 0;
		}
		if (w->state == MROCE_WQE_DONE ||
		    (w->state != MROCE_WQE_QUEUED &&
		     mw->next_seg >= w->nsegs)) {
			q->sq_next++;
			continue;
		}
		if (ahead >= MR_MSG_WIN || mw->hold_until > now)
			return false;
		if (w->wr.opcode == MROCE_WR_RDMA_READ &&
		    w->state == MROCE_WQE_QUEUED) {
			struct mr_rdrx *rd = NULL;

			/* Idempotent: the caller may find no path and ask
			 * again later for the same still-QUEUED READ. */
			for (int i = 0; i < MROCE_MAX_RD_ATOMIC; i++) {
				if (q->rdrx[i].used &&
				    q->rdrx[i].msn == mw->msn) {
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
			if (mr_st_init(&rd->st, mroce_msg_nsegs(w->wr.sge.length,
						      mtu)) < 0)
				return false;
			rd->used = true;
			rd->msn = mw->msn;
			rd->deadline = now + mr_read_timeout(e);
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
		if (slot < 0 || c->txe_used >= mr_conn_flight_cap(c))
			return 0;
		idx = mr_txe_alloc(c);
		if (idx < 0)
			return 0;
		seg = r.j ? r.j->next_seg : mrw(qp, r.w)->next_seg;
		err = build_data(e, c, &r, seg, slot, c->path[slot].next_psn,
				 false, out, cap, now);
		if (err < 0) {
			mr_txe_release(c, idx);
			if (err == -ENOSPC)
				return -1;
			txe_unreadable(e, c, &r);
			continue;
		}
		c->txe[idx].qpn_fl = qp->qpn | ((uint32_t)TXE_USED << 24) |
				     (r.j ? (uint32_t)TXE_RD << 24 : 0);
		c->txe[idx].msn = r.j ? r.j->msn : mrw(qp, r.w)->msn;
		c->txe[idx].seg_try = seg | (1u << 24);
		txe_place(c, slot, idx);
		if (r.j) {
			r.j->next_seg++;
		} else {
			r.w->state = MROCE_WQE_ACTIVE;
			mrw(qp, r.w)->next_seg++;
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
bool mr_idle_probe_due(const struct mr_path *p)
{
	/* not already probed since the last new PSN or retransmission
	 * (a lost retransmission has no followers either) */
	return p->inflight && p->life != MR_PATH_PROBATION && !p->want_probe &&
	       (p->probe_psn != p->next_psn || p->probe_rtx != p->rtx.total);
}

/* When the PROBE of an idle path is due (mr_idle_probe_due). At once on
 * an endpoint whose ACKs come within an srtt: its PTO follows at about 2
 * srtt, so a probe sent any later would not find a loss sooner. An
 * endpoint that jitters (cfg.jitter_us, a software endpoint) has a PTO
 * of at least jitter_us (milliseconds): its probe waits until the ACK is
 * late, srtt + max(4 rttvar, MR_PROBE_SLACK_SW_US) after the path's last
 * packet (QUIC's PTO has the same form, with its timer granularity as
 * the floor). That still finds a tail loss within a few round trips, and
 * costs nothing where the ACK comes in time (a ping-pong's message is
 * then its data and its ACK, not also a PROBE and the PROBE's answer).
 * The floor is the software peer's: its ACK may wait for its
 * application's next call (libmroce sends a reply before the ACK of the
 * request) and for the scheduler, which 4 rttvar of samples taken while
 * both sides spin does not cover. */
uint64_t mr_idle_probe_at(const struct mroce_engine *e,
			  const struct mr_conn *c, const struct mr_path *p)
{
	uint32_t srtt = mr_path_srtt(c, p),
		 var = 4 * p->rtt.var_us > MR_PROBE_SLACK_SW_US
			       ? 4 * p->rtt.var_us
			       : MR_PROBE_SLACK_SW_US;

	if (!e->cfg.jitter_us || !srtt)
		return 0;
	return p->sent_at + (uint64_t)(srtt + var) * 1000;
}

static void idle_probe(struct mroce_engine *e, struct mr_conn *c,
		       uint64_t now)
{
	for (int i = 0; i < c->npaths; i++)
		if (mr_idle_probe_due(&c->path[i]) &&
		    mr_idle_probe_at(e, c, &c->path[i]) <= now)
			c->path[i].want_probe = 1;
}

static int tx_data(struct mroce_engine *e, struct mr_conn *c,
		   struct mroce_tx_pkt *out, size_t cap, uint64_t now)
{
	int r;

	if (c->state != MR_CONN_ESTABLISHED || c->pace.next_send > now)
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
		idle_probe(e, c, now);
sent:
	if (r > 0)
		pace(e, c, out->len, now);
	return r;
}

int mr_tx(struct mroce_engine *e, struct mroce_tx_pkt *pkts, int n,
	  size_t cap, uint64_t now)
{
	struct mr_engine *t = T(e);
	int cnt = 0;
	uint32_t k = 0;

	/* Timers run as their connections come due below (a driver may
	 * call only tx() when next_timer() fires). */
	/* Stateless handshake replies first. */
	if (mr_tx_hsq(e, pkts, n, cap, &cnt) < 0)
		return cnt;
	/* Only the connections due by now have anything to do. Take them
	 * from the heap one at a time: run their expired timers, send one
	 * data packet and the control packets behind it, and put a
	 * connection that sent back at once (behind the others due at the
	 * same instant: round robin, also when the driver asks for one
	 * packet at a time); those with nothing to send wait in t->work
	 * until the end of the call. Data goes before control when both fit:
	 * in a request-reply the reply then does not wait behind the ACK of
	 * the request (a software sender's send() carries each packet
	 * through the kernel before the next), and control waits at most
	 * one packet. With room for one packet only, control goes first, so
	 * that a driver asking one at a time cannot starve it. */
	mr_flush_dirty(e, now);
	mr_sweep(e, now);
	while (cnt < n && t->nheap && t->heap[0]->heap.due <= now) {
		struct mr_conn *c = t->heap[0];
		int r = 0;

		mr_heap_remove(t, c);
		if (c->heap.tdue <= now)
			mr_conn_tick(e, c, now);
		if (n - cnt > 1)
			r = tx_data(e, c, &pkts[cnt], cap, now);
		if (!r)
			r = mr_tx_control(e, c, &pkts[cnt], cap, now);
		if (!r && n - cnt == 1)
			r = tx_data(e, c, &pkts[cnt], cap, now);
		if (r <= 0) {
			t->work[k++] = c;
			if (r < 0)
				break;
			continue;
		}
		cnt++;
		/* Its control packets right behind. */
		while (cnt < n && mr_tx_control(e, c, &pkts[cnt], cap, now) > 0)
			cnt++;
		mr_conn_sched(e, c, now);
	}
	while (k)
		mr_conn_kick(t->work[--k]);
	mr_flush_dirty(e, now);
	return cnt;
}
