// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * RoCEv2 completer (like rxe_comp.c): what comes back to the requester.
 * ACKs complete SEND/WRITE WQEs in order, READ responses are placed and
 * finish READs, NAKs rewind the cursor (sequence error, RNR) or fail the
 * QP (remote access, invalid request, remote operational error), and a
 * response that skips a PSN is an implied NAK.
 */
#include "rocev2_int.h"

/* IBTA RNR timer encoding (C9-130 table), in microseconds. */
static const uint32_t rnr_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

/* Oldest PSN still owed to us: the first unacknowledged segment of the
 * oldest unfinished WQE (for a READ, its first missing response). */
static void update_una(struct mroce_qp *qp, struct rv2_qp *q)
{
	for (uint32_t c = qp->sq_head; c != qp->sq_tail; c++) {
		const struct mroce_wqe *w = mroce_sq_at(qp, c);

		if (w->state == MROCE_WQE_DONE)
			continue;
		if (w->state == MROCE_WQE_QUEUED)
			break;
		q->una = padd(rv2w(qp, w)->psn_first, w->segs_done);
		return;
	}
	q->una = q->snd_nxt;
}

/* ACKs from the flight before a rewind may acknowledge PSNs the cursor
 * is about to resend: never resend what is already acknowledged. */
static void cursor_catch_up(struct mroce_qp *qp, struct rv2_qp *q)
{
	struct mroce_wqe *w;
	uint32_t c;

	if ((int32_t)(q->cur - qp->sq_head) < 0) {
		q->cur = qp->sq_head;
		q->cur_seg = 0;
	}
	if (pdiff(rv2_cursor_psn(qp, q), q->una) >= 0)
		return;
	w = rv2_wqe_of_psn(qp, q->una, &c);
	if (w) {
		q->cur = c;
		q->cur_seg = (uint32_t)pdiff(q->una, rv2w(qp, w)->psn_first);
	} else {
		q->cur = qp->sq_head;
		q->cur_seg = 0;
	}
}

static void rearm_rto(struct mroce_engine *e, struct rv2_qp *q, uint64_t now)
{
	if (q->hold_until)
		q->rto_at = 0;
	else if (pdiff(q->sent_hw, q->una) > 0)
		q->rto_at = now + rv2_rto_ns(e, q);
	else
		q->rto_at = 0;
	rv2_timer_update(e, q);
}

/* Count a retry against wqe; false (and the QP in ERR) when exhausted. */
bool rv2_spend_retry(struct mroce_engine *e, struct mroce_qp *qp,
		     struct mroce_wqe *w)
{
	if (w->retry_left == 0) {
		mroce_sq_fail(e, qp, w, MROCE_WC_RETRY_EXC_ERR);
		return false;
	}
	w->retry_left--;
	return true;
}

/* Responses for READ w (first missing: exp) are missing although later
 * PSNs were answered: ask again from exp, once per gap. */
static bool implied_nak(struct mroce_engine *e, struct mroce_qp *qp,
			struct rv2_qp *q, struct mroce_wqe *w, uint32_t exp)
{
	if (q->implied && q->implied_psn == exp)
		return true;
	if (!rv2_spend_retry(e, qp, w))
		return false;
	q->implied = true;
	q->implied_psn = exp;
	rv2_rewind_to(qp, q, exp, false);
	return true;
}

/* Everything up to and including PSN x is acknowledged. Completes SEND and
 * WRITE WQEs in order; a READ is finished only by its responses. Returns
 * false if the QP went to ERR. */
static bool ack_through(struct mroce_engine *e, struct mroce_qp *qp,
			struct rv2_qp *q, uint32_t x, uint64_t now)
{
	bool progress = false;

	for (uint32_t c = qp->sq_head; c != qp->sq_tail; c++) {
		struct mroce_wqe *w = mroce_sq_at(qp, c);
		uint32_t segs;

		if (w->state == MROCE_WQE_QUEUED)
			break;
		if (w->state == MROCE_WQE_DONE)
			continue;
		if (pdiff(x, rv2w(qp, w)->psn_first) < 0)
			break;
		if (is_read(w)) {
			uint32_t exp =
				padd(rv2w(qp, w)->psn_first, w->segs_done);

			if (pdiff(x, exp) >= 0 &&
			    !implied_nak(e, qp, q, w, exp))
				return false;
			break;
		}
		if (pdiff(x, rv2w(qp, w)->psn_last) >= 0) {
			w->state = MROCE_WQE_DONE;
			w->status = MROCE_WC_SUCCESS;
			progress = true;
			continue;
		}
		segs = (uint32_t)pdiff(x, rv2w(qp, w)->psn_first) + 1;
		if (segs > w->segs_done) {
			w->segs_done = segs;
			w->retry_left = e->cfg.retry_cnt;
			progress = true;
		}
		break;
	}
	if (!progress)
		return true;
	mroce_sq_drain(e, qp);
	if (qp->state == MROCE_QPS_ERR)
		return false;
	if (qp->sq_head != qp->sq_tail) {
		struct mroce_wqe *h = mroce_sq_at(qp, qp->sq_head);

		if (h->state != MROCE_WQE_QUEUED)
			h->retry_left = e->cfg.retry_cnt;
	}
	update_una(qp, q);
	cursor_catch_up(qp, q);
	q->backoff = 0;
	rearm_rto(e, q, now);
	return true;
}

static void fail_at(struct mroce_engine *e, struct mroce_qp *qp,
		    uint32_t psn, enum mroce_wc_status st)
{
	struct mroce_wqe *w;
	uint32_t c;

	w = rv2_wqe_of_psn(qp, psn, &c);
	if (!w && qp->sq_head != qp->sq_tail)
		w = mroce_sq_at(qp, qp->sq_head);
	if (w)
		mroce_sq_fail(e, qp, w, st);
	else
		mroce_qp_to_err(e, qp, e->now);
}

int rv2_rx_ack(struct mroce_engine *e, struct mroce_qp *qp, struct rv2_qp *q,
	       const struct mroce_rv2_pkt *p, uint64_t now)
{
	uint8_t type = p->syndrome & ROCEV2_AETH_TYPE_MASK;
	uint8_t code = p->syndrome & ~ROCEV2_AETH_TYPE_MASK;
	uint32_t psn = p->psn;
	struct mroce_wqe *w;
	uint32_t c;

	if (type == ROCEV2_AETH_ACK)
		MROCE_STAT_INC(e, rx_acks);
	else
		MROCE_STAT_INC(e, rx_naks);
	/* Only PSNs we sent can be acknowledged: [una - 1, sent_hw - 1]. */
	if (pdiff(psn, q->una) < -1 || pdiff(psn, q->sent_hw) >= 0) {
		MROCE_STAT_INC(e, rx_dup);
		return 0;
	}
	switch (type) {
	case ROCEV2_AETH_ACK:
		ack_through(e, qp, q, psn, now);
		break;
	case ROCEV2_AETH_RNR_NAK:
		if (!ack_through(e, qp, q, padd(psn, ROCEV2_PSN_MASK), now))
			return 0;
		w = rv2_wqe_of_psn(qp, psn, &c);
		if (!w)
			break;
		if (w->rnr_left == 0) {
			mroce_sq_fail(e, qp, w, MROCE_WC_RNR_RETRY_EXC_ERR);
			return 0;
		}
		if (w->rnr_left != 7)	/* 7 means retry forever */
			w->rnr_left--;
		q->hold_until = now + (uint64_t)rnr_us[code] * 1000;
		q->rto_at = 0;
		rv2_timer_update(e, q);
		rv2_rewind_to(qp, q, psn, false);
		break;
	case ROCEV2_AETH_NAK:
		if (!ack_through(e, qp, q, padd(psn, ROCEV2_PSN_MASK), now))
			return 0;
		if (code == ROCEV2_NAK_PSN_SEQ) {
			w = rv2_wqe_of_psn(qp, psn, &c);
			if (!w)
				break;
			if (!rv2_spend_retry(e, qp, w))
				return 0;
			rv2_rewind_to(qp, q, psn, false);
			break;
		}
		fail_at(e, qp, psn,
			code == ROCEV2_NAK_REMOTE_ACCESS
				? MROCE_WC_REM_ACCESS_ERR
			: code == ROCEV2_NAK_REMOTE_OP
				? MROCE_WC_REM_OP_ERR
				: MROCE_WC_REM_INV_REQ_ERR);
		return 0;
	default:
		/* Reserved syndrome type: not something we can act on. */
		MROCE_STAT_INC(e, rx_malformed);
		return -EPROTO;
	}
	if (qp->state == MROCE_QPS_RTS)
		rv2_kick(e, qp, now);
	return 0;
}

int rv2_rx_read_resp(struct mroce_engine *e, struct mroce_qp *qp,
		     struct rv2_qp *q, const struct mroce_rv2_pkt *p,
		     uint64_t now)
{
	uint32_t mtu = e->cfg.mtu, psn = p->psn, exp, len, seg;
	struct mroce_wqe *w = NULL;
	bool last;

	if (pdiff(psn, q->una) < 0 || pdiff(psn, q->sent_hw) >= 0) {
		MROCE_STAT_INC(e, rx_dup);
		return 0;
	}
	/* A response answers every earlier request: ACK up to psn - 1. */
	if (!ack_through(e, qp, q, padd(psn, ROCEV2_PSN_MASK), now))
		return 0;
	for (uint32_t c = qp->sq_head; c != qp->sq_tail; c++) {
		w = mroce_sq_at(qp, c);
		if (w->state != MROCE_WQE_DONE)
			break;
		w = NULL;
	}
	if (!w || w->state != MROCE_WQE_ACTIVE || !is_read(w) ||
	    pdiff(psn, rv2w(qp, w)->psn_first) < 0 ||
	    pdiff(psn, rv2w(qp, w)->psn_last) > 0) {
		/* Not the oldest READ: stale or already handled above. */
		MROCE_STAT_INC(e, rx_dup);
		goto out;
	}
	exp = padd(rv2w(qp, w)->psn_first, w->segs_done);
	if (psn != exp) {
		if (pdiff(psn, exp) < 0) {
			MROCE_STAT_INC(e, rx_dup);
			goto out;
		}
		MROCE_STAT_INC(e, rx_ooo);
		if (!implied_nak(e, qp, q, w, exp))
			return 0;
		goto out;
	}
	seg = w->segs_done;
	len = mroce_seg_len(w->wr.sge.length, seg, mtu);
	last = p->opcode == ROCEV2_OP_READ_RESP_LAST ||
	       p->opcode == ROCEV2_OP_READ_RESP_ONLY;
	if (p->payload_len != len || last != (seg + 1 == w->nsegs)) {
		MROCE_STAT_INC(e, rx_malformed);
		return -EPROTO;
	}
	if (len) {
		uint8_t *dst = mroce_wqe_local_ptr(e, w, seg * mtu, len,
						   MROCE_ACCESS_LOCAL_WRITE);

		if (!dst) {
			mroce_sq_fail(e, qp, w, MROCE_WC_LOC_PROT_ERR);
			return 0;
		}
		memcpy(dst, p->payload, len);
	}
	w->segs_done++;
	w->retry_left = e->cfg.retry_cnt;
	q->implied = false;
	q->backoff = 0;
	if (w->segs_done == w->nsegs) {
		w->state = MROCE_WQE_DONE;
		w->status = MROCE_WC_SUCCESS;
		q->rd_out--;
		mroce_sq_drain(e, qp);
		if (qp->state != MROCE_QPS_RTS)
			return 0;
	}
	update_una(qp, q);
	cursor_catch_up(qp, q);
	rearm_rto(e, q, now);
out:
	if (qp->state == MROCE_QPS_RTS)
		rv2_kick(e, qp, now);
	return 0;
}
