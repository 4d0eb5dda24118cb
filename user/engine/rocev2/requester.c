// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * RoCEv2 requester (like rxe_req.c): the send cursor walks the SQ, assigns
 * PSNs to a WQE when it first goes out, builds SEND/WRITE/READ request
 * packets, and goes back N when the completer or a timer rewinds it.
 */
#include "rocev2_int.h"

uint32_t rv2_cursor_psn(const struct mroce_qp *qp, const struct rv2_qp *q)
{
	const struct mroce_wqe *w;

	if (q->cur == qp->sq_tail)
		return q->snd_nxt;
	w = mroce_sq_at(qp, q->cur);
	if (w->state == MROCE_WQE_QUEUED)
		return q->snd_nxt;
	return padd(rv2w(qp, w)->psn_first, q->cur_seg);
}

bool rv2_req_has_tx(const struct mroce_qp *qp, const struct rv2_qp *q,
		    uint64_t now)
{
	const struct mroce_wqe *w;

	if (qp->state != MROCE_QPS_RTS || q->cur == qp->sq_tail)
		return false;
	if (q->hold_until && now < q->hold_until)
		return false;
	if (pdiff(rv2_cursor_psn(qp, q), q->una) >= RV2_WINDOW)
		return false;
	w = mroce_sq_at(qp, q->cur);
	if (is_read(w) && w->state == MROCE_WQE_QUEUED &&
	    q->rd_out >= MROCE_MAX_RD_ATOMIC)
		return false;
	return true;
}

/* The WQE (started, unfinished) whose PSN range holds psn, as an SQ
 * counter in *c; NULL if none. */
struct mroce_wqe *rv2_wqe_of_psn(struct mroce_qp *qp, uint32_t psn, uint32_t *c)
{
	for (uint32_t i = qp->sq_head; i != qp->sq_tail; i++) {
		struct mroce_wqe *w = mroce_sq_at(qp, i);

		if (w->state == MROCE_WQE_QUEUED)
			break;
		if (w->state == MROCE_WQE_DONE)
			continue;
		if (pdiff(psn, rv2w(qp, w)->psn_first) >= 0 &&
		    pdiff(psn, rv2w(qp, w)->psn_last) <= 0) {
			*c = i;
			return w;
		}
	}
	return NULL;
}

/* Go back N: next transmission is psn again (if it is not already). */
void rv2_rewind_to(struct mroce_qp *qp, struct rv2_qp *q, uint32_t psn,
		   bool force)
{
	struct mroce_wqe *w;
	uint32_t c;

	if (!force && pdiff(rv2_cursor_psn(qp, q), psn) <= 0)
		return;
	w = rv2_wqe_of_psn(qp, psn, &c);
	if (!w)
		return;
	q->cur = c;
	q->cur_seg = (uint32_t)pdiff(psn, rv2w(qp, w)->psn_first);
	q->since_ackreq = 0;
}

/* Request opcodes by [with immediate][position in the message]. */
static const uint8_t send_ops[2][4] = {
	{ [MROCE_POS_FIRST] = ROCEV2_OP_SEND_FIRST,
	  [MROCE_POS_MIDDLE] = ROCEV2_OP_SEND_MIDDLE,
	  [MROCE_POS_LAST] = ROCEV2_OP_SEND_LAST,
	  [MROCE_POS_ONLY] = ROCEV2_OP_SEND_ONLY },
	{ [MROCE_POS_FIRST] = ROCEV2_OP_SEND_FIRST,
	  [MROCE_POS_MIDDLE] = ROCEV2_OP_SEND_MIDDLE,
	  [MROCE_POS_LAST] = ROCEV2_OP_SEND_LAST_IMM,
	  [MROCE_POS_ONLY] = ROCEV2_OP_SEND_ONLY_IMM },
};

static const uint8_t write_ops[2][4] = {
	{ [MROCE_POS_FIRST] = ROCEV2_OP_WRITE_FIRST,
	  [MROCE_POS_MIDDLE] = ROCEV2_OP_WRITE_MIDDLE,
	  [MROCE_POS_LAST] = ROCEV2_OP_WRITE_LAST,
	  [MROCE_POS_ONLY] = ROCEV2_OP_WRITE_ONLY },
	{ [MROCE_POS_FIRST] = ROCEV2_OP_WRITE_FIRST,
	  [MROCE_POS_MIDDLE] = ROCEV2_OP_WRITE_MIDDLE,
	  [MROCE_POS_LAST] = ROCEV2_OP_WRITE_LAST_IMM,
	  [MROCE_POS_ONLY] = ROCEV2_OP_WRITE_ONLY_IMM },
};

/* The WQE's first transmission: it takes its PSNs now. */
static void wqe_start(struct mroce_qp *qp, struct rv2_qp *q,
		      struct mroce_wqe *w)
{
	w->state = MROCE_WQE_ACTIVE;
	rv2w(qp, w)->psn_first = q->snd_nxt;
	rv2w(qp, w)->psn_last = padd(q->snd_nxt, w->nsegs - 1);
	w->segs_done = 0;
	q->snd_nxt = padd(q->snd_nxt, w->nsegs);
	q->cur_seg = 0;
	if (is_read(w))
		q->rd_out++;
	qp->sq_psn = q->snd_nxt;
}

/* READ request for the READ from response segment seg on (a rewind asks
 * again from inside the READ). */
static void build_read(const struct mroce_wqe *w, uint32_t seg, uint32_t mtu,
		       struct mroce_rv2_pkt *p)
{
	const struct mroce_send_wr *wr = &w->wr;
	uint64_t off = (uint64_t)seg * mtu;

	p->opcode = ROCEV2_OP_READ_REQ;
	p->va = wr->remote_addr + off;
	p->rkey = wr->rkey;
	p->dma_len = off < wr->sge.length ?
			     (uint32_t)(wr->sge.length - off) : 0;
}

/* SEND or WRITE packet seg of w; false (and w failed) when its source
 * region was deregistered after posting. */
static bool build_data(struct mroce_engine *e, struct mroce_qp *qp,
		       struct mroce_wqe *w, uint32_t seg,
		       struct mroce_rv2_pkt *p)
{
	const struct mroce_send_wr *wr = &w->wr;
	uint32_t mtu = e->cfg.mtu;
	uint32_t len = mroce_seg_len(wr->sge.length, seg, mtu);
	enum mroce_pkt_pos pos = rv2_seg_pos(seg, w->nsegs);
	bool imm = wr->opcode == MROCE_WR_SEND_WITH_IMM ||
		   wr->opcode == MROCE_WR_RDMA_WRITE_WITH_IMM;

	if (wr->opcode == MROCE_WR_SEND ||
	    wr->opcode == MROCE_WR_SEND_WITH_IMM) {
		p->opcode = send_ops[imm][pos];
	} else {
		p->opcode = write_ops[imm][pos];
		p->va = wr->remote_addr;
		p->rkey = wr->rkey;
		p->dma_len = wr->sge.length;
	}
	p->imm = wr->imm;
	if (pos & MROCE_POS_LAST) {
		/* SE means something only where the responder completes a
		 * receive: SEND and WRITE_WITH_IMM. */
		p->se = (wr->send_flags & MROCE_SEND_SOLICITED) &&
			(imm || wr->opcode == MROCE_WR_SEND);
		p->ackreq = true;
	}
	p->payload = mroce_wqe_local_ptr(e, w, seg * mtu, len, 0);
	if (!p->payload) {
		mroce_sq_fail(e, qp, w, MROCE_WC_LOC_PROT_ERR);
		return false;
	}
	p->payload_len = len;
	return true;
}

/* One requester packet at the cursor. */
int rv2_tx_req(struct mroce_engine *e, struct mroce_qp *qp, struct rv2_qp *q,
	       struct mroce_tx_pkt *pkt, size_t cap, uint64_t now)
{
	struct mroce_wqe *w = mroce_sq_at(qp, q->cur);
	struct mroce_rv2_pkt p = { .dqpn = qp->dest_qpn };
	uint32_t seg, end;
	int err;

	if (w->state == MROCE_WQE_QUEUED)
		wqe_start(qp, q, w);
	seg = q->cur_seg;
	p.psn = padd(rv2w(qp, w)->psn_first, seg);
	if (is_read(w)) {
		build_read(w, seg, e->cfg.mtu, &p);
		/* The request takes PSNs up to psn_last. */
		end = padd(rv2w(qp, w)->psn_last, 1);
	} else {
		if (!build_data(e, qp, w, seg, &p))
			return 0;
		end = padd(p.psn, 1);
	}
	/* Periodic AckReq keeps ACKs flowing inside long messages. A READ
	 * request needs none: its responses are the acknowledgement. */
	if (!is_read(w) && ++q->since_ackreq >= RV2_ACKREQ_EVERY)
		p.ackreq = true;
	if (p.ackreq)
		q->since_ackreq = 0;

	err = rv2_emit(e, pkt, cap, &p, qp->peer, q->sport);
	if (err)
		return err;
	MROCE_STAT_INC(e, tx_data_pkts);
	q->tx_pkts++;
	if (pdiff(p.psn, q->sent_hw) < 0) {
		MROCE_STAT_INC(e, retransmits);
		q->retransmits++;
	}
	if (pdiff(end, q->sent_hw) > 0)
		q->sent_hw = end;
	if (is_read(w) || ++q->cur_seg == w->nsegs) {
		q->cur++;
		q->cur_seg = 0;
	}
	if (!q->rto_at) {
		q->rto_at = now + rv2_rto_ns(e, q);
		rv2_timer_update(e, q);
	}
	return 1;
}

int rv2_post_send(struct mroce_engine *e, struct mroce_qp *qp,
		  struct mroce_wqe *wqe, uint64_t now)
{
	uint32_t nsegs = mroce_msg_nsegs(wqe->wr.sge.length, e->cfg.mtu);

	if (nsegs > RV2_MAX_SEGS)
		return -EINVAL;
	wqe->nsegs = nsegs;
	rv2_kick(e, qp, now);
	return 0;
}
