// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * ACK and NAK processing on the sender: the SACK walk that acknowledges
 * entries, loss detection (FIFO dupthresh, overtaken retransmissions), the
 * answer to a PROBE, the RTT estimator, and the NAK codes.
 */
#include "metaroce_int.h"

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
			struct mroce_rdjob *j = mr_rd_find(qp, t->msn);

			if (j && ++j->segs_done == j->nsegs)
				mr_rd_retire(e, qp, j);
		} else {
			struct mroce_wqe *w = mr_sq_by_msn(qp, t->msn);

			if (w && w->state != MROCE_WQE_DONE &&
			    ++w->segs_done == w->nsegs &&
			    w->wr.opcode != MROCE_WR_RDMA_READ) {
				w->state = MROCE_WQE_DONE;
				w->status = MROCE_WC_SUCCESS;
				if (mroce_sq_drain(e, qp))
					mr_qp_kick(qp);
			}
		}
	}
	mr_txe_release(c, idx);
}

void mr_lose_entry(struct mroce_engine *e, struct mr_conn *c,
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
	c->explore.lost++;
}

/* Was entry t retransmitted after the path's last PROBE left? Then the
 * answer to that PROBE cannot tell whether the retransmission arrived
 * (retransmissions keep their PSN, which is below the probe's). The
 * newest rtx.total - probe_rtx entries of the retransmission queue are
 * those; when the queue forgot some, any retransmitted entry counts. */
static bool rtx_after_probe(const struct mr_path *p, const struct mr_txe *t)
{
	uint32_t k = p->rtx.total - p->probe_rtx;

	if (!k || txe_tries(t) < 2)
		return false;
	if (k > p->rtx.n)
		return true;
	for (uint32_t i = p->rtx.n - k; i < p->rtx.n; i++)
		if (p->rtx.q[(p->rtx.head + i) % MR_RTXQ][0] ==
		    (uint16_t)t->psn)
			return true;
	return false;
}

/* Progress after a quiet spell: paths whose probe went unanswered during
 * it wait an RTO (the peer seemed gone); now that the connection lives,
 * they are judged again within a PTO (mr_path_silent), or the messages with
 * segments on a dead plane stall for that RTO. */
static void conn_revive(const struct mroce_engine *e, struct mr_conn *c,
			const struct mr_path *from, uint64_t now)
{
	for (int i = 0; i < c->npaths; i++) {
		struct mr_path *q = &c->path[i];
		uint64_t due;

		if (q == from || !q->probed || !q->deadline)
			continue;
		due = now + mr_path_pto(e, c, q);
		if (q->deadline > due)
			q->deadline = due;
	}
}

/* The receiver's fair-share hint: the connection's pacing rate. */
static void ack_hint(struct mroce_engine *e, struct mr_conn *c,
		     const struct mroce_meta_pkt *pk, uint64_t now)
{
	uint64_t r = (uint64_t)pk->ack.rate_mbps * 1000000ull;

	if (!c->pace.hint_bps) {
		/* First hint: start at a random point within one packet
		 * time at that rate, so that the senders of an incast, all
		 * learning their share at once, do not all send their
		 * first packet at once. */
		uint64_t gap = (uint64_t)(c->mtu + 64u) * 8u * 1000000000ull /
			       r;

		c->pace.next_send = now + mroce_rng_below(
			e, (uint32_t)(gap < UINT32_MAX ? gap + 1 : UINT32_MAX));
	}
	c->pace.hint_bps = r;
	c->pace.hint_time = now;
}

/* SACK walk: acknowledge every entry below cum_psn and every one the
 * SACK names, raise high_acked, and move una past what is settled.
 * Returns the number of entries newly acknowledged. */
static uint32_t ack_sack_walk(struct mroce_engine *e, struct mr_conn *c,
			      struct mr_path *p,
			      const struct mroce_meta_pkt *pk)
{
	uint32_t cum = pk->ack.cum_psn, newly = 0, high;

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
	return newly;
}

/* Loss detection. A path is FIFO: dupthresh later PSNs received means
 * loss; retransmissions overtaken by dupthresh later PSNs are lost too. */
static void ack_detect_loss(struct mroce_engine *e, struct mr_conn *c,
			    struct mr_path *p, uint64_t now)
{
	uint32_t limit;

	if (mroce_psn_before(p->loss_scan, p->una))
		p->loss_scan = p->una;
	limit = p->high_acked - p->dupthresh;
	while (mroce_psn_before(p->loss_scan, limit) &&
	       mroce_psn_before(p->loss_scan, p->next_psn)) {
		uint16_t idx = p->ring[p->loss_scan % MR_PATH_WIN];

		if (idx != MR_TXE_NONE)
			mr_lose_entry(e, c, p, idx, now);
		p->loss_scan++;
	}
	while (p->rtx.n) {
		const uint16_t *q = p->rtx.q[p->rtx.head];
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
				mr_lose_entry(e, c, p, idx, now);
		}
		p->rtx.head = (p->rtx.head + 1) % MR_RTXQ;
		p->rtx.n--;
	}
}

/* The RTT sample (us) an ACK's echo gives, 0 = none (no echo, or one
 * from before a wrap of the microsecond clock). */
static uint32_t ack_rtt(uint32_t tsecr, uint64_t now)
{
	uint32_t rtt;

	if (!tsecr)
		return 0;
	rtt = now_us(now) - tsecr;
	return rtt > 10000000 ? 0 : rtt;
}

/* The RTT estimator (the gains of RFC 6298): the first sample sets srtt
 * and rttvar, later ones move them by 1/8 and 1/4. */
static void rtt_update(struct mr_path *p, uint32_t rtt)
{
	uint32_t dv;

	if (!p->rtt.srtt_us) {
		p->rtt.srtt_us = rtt;
		p->rtt.var_us = rtt / 2;
		return;
	}
	dv = rtt > p->rtt.srtt_us ? rtt - p->rtt.srtt_us : p->rtt.srtt_us - rtt;
	p->rtt.var_us = (3 * p->rtt.var_us + dv) / 4;
	p->rtt.srtt_us = (7 * p->rtt.srtt_us + rtt) / 8;
}

/* The answer to our PROBE: whatever was sent before it and is still
 * missing is lost. For a port an exploration moved, the PROBE's round
 * trip also tells whether it landed behind a queue: then the next port
 * is tried at once (true: the path moved, the ACK is done with). */
static bool ack_probe_answer(struct mroce_engine *e, struct mr_conn *c,
			     int slot, const struct mroce_meta_pkt *pk,
			     uint64_t now)
{
	struct mr_path *p = &c->path[slot];
	uint32_t prtt;
	uint64_t nrtt;

	p->probe_ts = 0;	/* one answer per probe */
	for (uint32_t s = p->una; mroce_psn_before(s, p->probe_psn); s++) {
		uint16_t idx = p->ring[s % MR_PATH_WIN];

		if (idx != MR_TXE_NONE && !rtx_after_probe(p, &c->txe[idx]))
			mr_lose_entry(e, c, p, idx, now);
	}
	prtt = ack_rtt(pk->ack.tsecr, now);
	nrtt = now - p->probe_sent;
	/* an idle port's first RTT sample (mr_ack_port_check) */
	if (!p->rtt.srtt_us && prtt && prtt < 10000000)
		rtt_update(p, prtt);
	if (!c->explore.probe_rtt_min || nrtt < c->explore.probe_rtt_min)
		c->explore.probe_rtt_min = nrtt;
	if (p->life == MR_PATH_PROBATION && p->hops &&
	    c->explore.probe_rtt_min && !c->explore.failed &&
	    nrtt > mr_hop_limit(e, c)) {
		if (p->hops < MR_EXPLORE_HOPS) {
			mr_explore_hop(e, c, slot, now);
			return true;
		}
		mr_explore_busy(e, c, p);
	}
	p->hops = 0;
	p->probed = 0;
	if (p->life == MR_PATH_PROBATION)
		mr_path_set_life(e, p, MR_PATH_ACTIVE);
	p->ack_tx = 0;
	mr_path_arm(e, c, p, now);
	return false;
}

/* Progress: newly entries acknowledged on path slot. Feeds the RTT
 * estimator and the CC, revives the connection's other paths after a
 * quiet spell, clears the path's suspicion, and gives exploration its
 * measurements. */
static void ack_progress(struct mroce_engine *e, struct mr_conn *c, int slot,
			 const struct mroce_meta_pkt *pk, uint32_t newly,
			 uint64_t now)
{
	struct mr_path *p = &c->path[slot];
	uint32_t rtt = ack_rtt(pk->ack.tsecr, now);

	if (rtt) {
		rtt_update(p, rtt);
		if (!p->rtt.min_us || rtt < p->rtt.min_us)
			p->rtt.min_us = rtt;
		if (!c->explore.rtt_lo || rtt < c->explore.rtt_lo)
			c->explore.rtt_lo = rtt;
	}
	mr_cc_on_ack(e, c, p, newly, pk->ack.ce_count, rtt, now);
	if (now - c->last_ack > mr_path_pto(e, c, p))
		conn_revive(e, c, p, now);
	c->explore.acked += newly;
	p->explore_acked += newly;
	p->last_ack = c->last_ack = now;
	if (pk->ack.tsecr &&
	    (!c->last_tsecr || (int32_t)(pk->ack.tsecr - c->last_tsecr) > 0))
		c->last_tsecr = pk->ack.tsecr;
	p->probed = 0;
	p->tlp = 0;
	/* Our data on this port got through: the plane it hashes onto in
	 * our direction, which our ACKs from it take too, is alive; the
	 * port's ACK count towards a check starts again
	 * (mr_ack_port_check). */
	p->ack_tx = 0;
	c->backoff = 0;
	mr_path_arm(e, c, p, now);
	mr_path_move(e, c, slot, now);
	mr_path_explore(e, c, now);
}

void mr_rx_ack(struct mroce_engine *e, struct mr_conn *c,
	       const struct mroce_meta_pkt *pk, uint64_t now)
{
	uint32_t cum = pk->ack.cum_psn, newly;
	struct mr_path *p;

	MROCE_STAT_INC(e, rx_acks);
	if (pk->ack.flags & MROCE_ACKF_XDP)
		MROCE_STAT_INC(e, rx_acks_xdp); /* the peer's kernel sent it */
	if (pk->path >= c->npaths)
		return;
	p = &c->path[pk->path];
	if (pk->path_gen != p->gen)
		return;	/* ACK for a retired generation */
	if (mroce_psn_before(p->next_psn, cum) ||
	    mroce_psn_before(cum, p->una - MR_PATH_WIN))
		return;	/* nonsense cum_psn */
	if (pk->ack.rate_mbps)
		ack_hint(e, c, pk, now);
	newly = ack_sack_walk(e, c, p, pk);
	ack_detect_loss(e, c, p, now);
	if ((pk->ack.flags & MROCE_ACKF_PROBE) && p->probe_ts &&
	    pk->ack.tsecr == p->probe_ts &&
	    (uint32_t)(p->probe_psn - p->una) <= MR_PATH_WIN &&
	    ack_probe_answer(e, c, pk->path, pk, now))
		return;
	if (pk->ack.ce_count) {
		p->ce_marks += pk->ack.ce_count;
		p->cc.ce_acks++;
	}
	p->cc.acks++;
	if (newly)
		ack_progress(e, c, pk->path, pk, newly, now);
}

/* NAK RNR: the receiver had no receive for entry t's message. The entry
 * is held (no retransmission until the hold is over) and the message
 * waits; a new RNR episode of it costs one of its rnr_retry. */
static void nak_rnr(struct mroce_engine *e, struct mr_conn *c,
		    struct mr_path *p, struct mr_txe *t, struct mroce_qp *qp,
		    struct mroce_wqe *w, const struct mroce_meta_pkt *pk,
		    uint64_t now)
{
	uint64_t hold = (uint64_t)(pk->nak.rnr_timer ? pk->nak.rnr_timer : 1) *
			10000;

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
	/* RNR retries are counted by rnr_retry, not retry_cnt: the packet
	 * did arrive. */
	t->seg_try = txe_seg(t);
	if (p->hold_until < now + hold)
		p->hold_until = now + hold;
	if (c->hold_until < now + hold)
		c->hold_until = now + hold;
	if (mrw(qp, w)->hold_until <= now) {
		/* A new RNR episode of this message. */
		if (e->cfg.rnr_retry != 7) {
			if (!w->rnr_left) {
				mroce_sq_fail(e, qp, w,
					      MROCE_WC_RNR_RETRY_EXC_ERR);
				return;
			}
			w->rnr_left--;
		}
		mrw(qp, w)->hold_until = now + hold;
	}
}

/* The completion status a fatal NAK code gives the request; SUCCESS for
 * the informational ones (OUT_OF_WINDOW, STALE_PATH). */
static enum mroce_wc_status nak_status(uint8_t code)
{
	switch (code) {
	case MROCE_NAK_BAD_RKEY:
	case MROCE_NAK_OUT_OF_BOUNDS:
	case MROCE_NAK_ACCESS:
		return MROCE_WC_REM_ACCESS_ERR;
	case MROCE_NAK_INVALID_REQ:
	case MROCE_NAK_NO_CONN:
		return MROCE_WC_REM_INV_REQ_ERR;
	case MROCE_NAK_REMOTE_OP:
		return MROCE_WC_REM_OP_ERR;
	default:
		return MROCE_WC_SUCCESS;
	}
}

void mr_rx_nak(struct mroce_engine *e, struct mr_conn *c,
	       const struct mroce_meta_pkt *pk, uint64_t now)
{
	struct mr_txe *t = NULL;
	struct mr_path *p = NULL;
	struct mroce_qp *qp = NULL;
	struct mroce_wqe *w = NULL;
	enum mroce_wc_status st;
	int idx = -1;

	MROCE_STAT_INC(e, rx_naks);
	if (pk->path < c->npaths && pk->path_gen == c->path[pk->path].gen) {
		p = &c->path[pk->path];
		idx = path_txe(c, p, pk->nak.psn);
		if (idx >= 0)
			t = &c->txe[idx];
	}
	if (t) {
		qp = mroce_qp_find(e, txe_qpn(t));
		if (qp && !(txe_fl(t) & TXE_RD))
			w = mr_sq_by_msn(qp, t->msn);
	} else if (pk->nak.stream) {
		qp = mroce_qp_find(e, pk->nak.stream);
		if (qp)
			w = mr_sq_by_msn(qp, pk->nak.msn);
	}
	if (qp && (!QP(qp) || QP(qp)->conn != c))
		qp = NULL, w = NULL;
	if (pk->nak.code == MROCE_NAK_RNR) {
		if (t && w && w->state != MROCE_WQE_DONE)
			nak_rnr(e, c, p, t, qp, w, pk, now);
		return;
	}
	st = nak_status(pk->nak.code);
	if (st == MROCE_WC_SUCCESS)
		return;
	/* The refused PSN is a hole at the receiver: mark it lost; its
	 * retransmission finds the QP in ERR and retires the path. */
	if (t)
		mr_lose_entry(e, c, p, idx, now);
	if (t && (txe_fl(t) & TXE_RD) && qp) {
		struct mroce_rdjob *j = mr_rd_find(qp, t->msn);

		if (j)
			mr_rd_retire(e, qp, j);
		mroce_qp_to_err(e, qp, now);
		return;
	}
	if (qp && w && w->state != MROCE_WQE_DONE)
		mroce_sq_fail(e, qp, w, st);
}
