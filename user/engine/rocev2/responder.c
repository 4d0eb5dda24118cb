// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * RoCEv2 responder (like rxe_resp.c): requests arriving at the target.
 * Strictly in order: the expected PSN is placed (SEND into the head
 * receive, WRITE through its RETH, READ queued as a response job), a PSN
 * ahead of it earns one sequence NAK per gap, one behind it is a duplicate
 * (re-ACKed; a duplicate READ runs again). ACKs are coalesced into one
 * slot; fatal errors send their NAK from an engine-wide queue and move the
 * QP to ERR. Also here: transmitting that slot and READ responses.
 */
#include "rocev2_int.h"

static const struct mroce_rdjob *rd_head_job(const struct mroce_qp *qp)
{
	if (qp->rd_head == qp->rd_tail)
		return NULL;
	return &qp->rd[qp->rd_head % MROCE_MAX_RD_ATOMIC];
}

/* The ACK/NAK slot may go out unless it would overtake READ responses for
 * earlier PSNs (a requester reads an ACK beyond an unanswered READ as
 * lost responses). */
static bool ack_ready(const struct mroce_qp *qp, const struct rv2_qp *q)
{
	const struct mroce_rdjob *j = rd_head_job(qp);

	return q->ack_pending && (!j || pdiff(q->ack_psn, j->msn) < 0);
}

bool rv2_resp_has_tx(const struct mroce_qp *qp, const struct rv2_qp *q)
{
	if (qp->state != MROCE_QPS_RTR && qp->state != MROCE_QPS_RTS)
		return false;
	return ack_ready(qp, q) || rd_head_job(qp);
}

bool rv2_resp_ack_only(const struct mroce_qp *qp, const struct rv2_qp *q)
{
	return rv2_resp_has_tx(qp, q) && !rd_head_job(qp);
}

static void sched_ack(struct rv2_qp *q, uint8_t syn, uint32_t psn)
{
	q->ack_pending = true;
	q->ack_syn = syn;
	q->ack_psn = psn;
	q->ack_msn = q->msn & ROCEV2_PSN_MASK;
}

static bool slot_is_nak(const struct rv2_qp *q)
{
	return q->ack_pending && q->ack_syn != RV2_SYN_ACK;
}

/* Fatal responder error: the NAK goes out from the engine-wide queue (the
 * QP stops transmitting in ERR), then the QP enters ERR like an IB
 * responder does on a class C/D error. */
static void resp_fatal(struct mroce_engine *e, struct mroce_qp *qp,
		       struct rv2_qp *q, uint8_t nak_code, uint32_t psn,
		       uint64_t now)
{
	struct rv2_eng *g = rv2e(e);

	if (g->gnak_tail - g->gnak_head < RV2_GNAK_SLOTS) {
		struct rv2_gnak *n = &g->gnak[g->gnak_tail++ % RV2_GNAK_SLOTS];

		n->peer = qp->peer;
		n->sport = q->sport;
		n->syn = ROCEV2_AETH_NAK | nak_code;
		n->dqpn = qp->dest_qpn;
		n->psn = psn;
		n->msn = q->msn & ROCEV2_PSN_MASK;
	}
	/* else: the requester times out and retries into a dead QP, ending
	 * in RETRY_EXC_ERR, as with a lost NAK on real hardware. */
	mroce_qp_to_err(e, qp, now);
}

/* Remote key check r for the request at psn: a failure is counted and
 * answered with the fatal remote-access NAK. true if it failed. */
static bool rkey_failed(struct mroce_engine *e, struct mroce_qp *qp,
			struct rv2_qp *q, enum mroce_mr_check r, uint32_t psn,
			uint64_t now)
{
	if (r == MROCE_MRC_OK)
		return false;
	MROCE_STAT_INC(e, rx_bad_rkey);
	resp_fatal(e, qp, q, ROCEV2_NAK_REMOTE_ACCESS, psn, now);
	return true;
}

/* Receive failing locally on the responder: complete the receive with
 * st, then the fatal NAK. */
static void resp_fail_recv(struct mroce_engine *e, struct mroce_qp *qp,
			   struct rv2_qp *q, enum mroce_wc_status st,
			   uint8_t nak_code, uint32_t psn, uint64_t now)
{
	struct mroce_wc wc = {
		.status = st,
		.opcode = MROCE_WC_RECV,
		.byte_len = q->msg_off,
	};

	mroce_rq_complete(e, qp, &wc);
	if (qp->state != MROCE_QPS_ERR)
		resp_fatal(e, qp, q, nak_code, psn, now);
}

static int enqueue_read(struct mroce_qp *qp, struct rv2_qp *q,
			const struct mroce_rv2_pkt *p, uint32_t nsegs)
{
	struct mroce_rdjob *j;

	if (qp->rd_tail - qp->rd_head >= MROCE_MAX_RD_ATOMIC)
		return -EBUSY;
	j = &qp->rd[qp->rd_tail++ % MROCE_MAX_RD_ATOMIC];
	memset(j, 0, sizeof(*j));
	j->used = true;
	j->msn = p->psn;		/* first response PSN */
	j->va = p->va;
	j->rkey = p->rkey;
	j->len = p->dma_len;
	j->nsegs = nsegs;
	j->segs_done = nsegs;	/* here: segments to send before done */
	q->rd_msn[j - qp->rd] = q->msn & ROCEV2_PSN_MASK; /* for the AETH */
	return 0;
}

/* Duplicate READ request: run it again (the responses were lost). Any
 * queued response at or after its PSN is superseded, because the
 * requester goes back N and will ask for those again too. */
static int rx_dup_read(struct mroce_engine *e, struct mroce_qp *qp,
		       struct rv2_qp *q, const struct mroce_rv2_pkt *p,
		       uint64_t now)
{
	uint32_t nsegs = mroce_msg_nsegs(p->dma_len, e->cfg.mtu);
	enum mroce_mr_check mc;

	if (nsegs > RV2_MAX_SEGS ||
	    pdiff(padd(p->psn, nsegs), q->epsn) > 0) {
		/* Claims responses beyond what was ever executed. */
		resp_fatal(e, qp, q, ROCEV2_NAK_INVALID_REQ, p->psn, now);
		return -EPROTO;
	}
	mc = mroce_rkey_check(e, qp, p->rkey, p->va, p->dma_len,
			      MROCE_ACCESS_REMOTE_READ);
	if (rkey_failed(e, qp, q, mc, p->psn, now))
		return -EACCES;
	while (qp->rd_tail != qp->rd_head &&
	       pdiff(qp->rd[(qp->rd_tail - 1) % MROCE_MAX_RD_ATOMIC].msn,
		     p->psn) >= 0)
		qp->rd_tail--;
	/* A job that covers the PSN (the requester asks again from inside
	 * a READ) stops short of it instead of sending responses the
	 * requester would discard as out of sequence. */
	if (qp->rd_tail != qp->rd_head) {
		struct mroce_rdjob *j =
			&qp->rd[(qp->rd_tail - 1) % MROCE_MAX_RD_ATOMIC];
		int32_t cut = pdiff(p->psn, j->msn);

		if (cut > 0 && (uint32_t)cut < j->segs_done) {
			j->segs_done = (uint32_t)cut;
			if (j->next_seg >= j->segs_done)
				qp->rd_tail--;
		}
	}
	if (enqueue_read(qp, q, p, nsegs))
		return -EBUSY;
	rv2_kick(e, qp, now);
	return 0;
}

/* Outcome of processing the expected packet. */
enum rv2_verdict {
	RV_OK = 0,
	RV_RNR,			/* no receive posted: RNR NAK, PSN not taken */
	RV_BUSY,		/* no READ slot: drop silently, PSN not taken */
	RV_FATAL,		/* already handled: QP in ERR */
};

static enum rv2_verdict resp_send(struct mroce_engine *e, struct mroce_qp *qp,
				  struct rv2_qp *q,
				  const struct mroce_rv2_pkt *p,
				  enum mroce_pkt_pos pos, uint64_t now)
{
	const struct mroce_rwqe *r;
	uint32_t len = p->payload_len;

	if (pos & MROCE_POS_FIRST) {
		if (!mroce_rq_head(qp, 0))
			return RV_RNR;
		q->msg = RV2_MSG_SEND;
		q->msg_off = 0;
	}
	r = mroce_rq_head(qp, 0);
	if (!r) {	/* cannot happen: the head is held until LAST */
		resp_fatal(e, qp, q, ROCEV2_NAK_REMOTE_OP, p->psn, now);
		return RV_FATAL;
	}
	if ((uint64_t)q->msg_off + len > r->wr.sge.length) {
		resp_fail_recv(e, qp, q, MROCE_WC_LOC_LEN_ERR,
			       ROCEV2_NAK_INVALID_REQ, p->psn, now);
		return RV_FATAL;
	}
	if (len) {
		uint64_t dst = r->wr.sge.addr + q->msg_off;

		if (mroce_lkey_check(e, r->wr.sge.lkey, dst, len,
				     MROCE_ACCESS_LOCAL_WRITE, NULL) !=
		    MROCE_MRC_OK) {
			resp_fail_recv(e, qp, q, MROCE_WC_LOC_PROT_ERR,
				       ROCEV2_NAK_REMOTE_OP, p->psn, now);
			return RV_FATAL;
		}
		memcpy(mroce_mr_ptr(e, r->wr.sge.lkey, false, dst), p->payload,
		       len);
	}
	q->msg_off += len;
	if (pos & MROCE_POS_LAST) {
		struct mroce_wc wc = {
			.status = MROCE_WC_SUCCESS,
			.opcode = MROCE_WC_RECV,
			.byte_len = q->msg_off,
		};

		if (p->desc->ext & ROCEV2_EXT_IMM) {
			wc.imm = p->imm;
			wc.flags = MROCE_WC_WITH_IMM;
		}
		q->msg = RV2_MSG_NONE;
		q->msn++;
		mroce_rq_complete(e, qp, &wc);
		if (qp->state == MROCE_QPS_ERR)
			return RV_FATAL;	/* CQ overrun */
	}
	return RV_OK;
}

static enum rv2_verdict resp_write(struct mroce_engine *e,
				   struct mroce_qp *qp, struct rv2_qp *q,
				   const struct mroce_rv2_pkt *p,
				   enum mroce_pkt_pos pos, uint64_t now)
{
	bool imm = p->desc->ext & ROCEV2_EXT_IMM;
	uint32_t len = p->payload_len;
	enum mroce_mr_check mc;

	if (pos & MROCE_POS_FIRST) {
		/* IB checks the whole range once, at the RETH. */
		mc = mroce_rkey_check(e, qp, p->rkey, p->va, p->dma_len,
				      MROCE_ACCESS_REMOTE_WRITE);
		if (rkey_failed(e, qp, q, mc, p->psn, now))
			return RV_FATAL;
		if ((pos == MROCE_POS_ONLY && p->dma_len != len) ||
		    (pos == MROCE_POS_FIRST && p->dma_len <= len)) {
			resp_fatal(e, qp, q, ROCEV2_NAK_INVALID_REQ, p->psn,
				   now);
			return RV_FATAL;
		}
	}
	if (imm && !mroce_rq_head(qp, 0))
		return RV_RNR;	/* nothing placed yet for this packet */
	if (pos & MROCE_POS_FIRST) {
		q->msg = RV2_MSG_WRITE;
		q->msg_off = 0;
		q->wr_va = p->va;
		q->wr_rkey = p->rkey;
		q->wr_len = p->dma_len;
	}
	if ((uint64_t)q->msg_off + len > q->wr_len ||
	    ((pos & MROCE_POS_LAST) &&
	     q->msg_off + len != q->wr_len)) {
		resp_fatal(e, qp, q, ROCEV2_NAK_INVALID_REQ, p->psn, now);
		return RV_FATAL;
	}
	if (len) {
		uint64_t dst = q->wr_va + q->msg_off;

		/* Re-check per packet: the region may have been
		 * deregistered since the RETH. */
		mc = mroce_rkey_check(e, qp, q->wr_rkey, dst, len,
				      MROCE_ACCESS_REMOTE_WRITE);
		if (rkey_failed(e, qp, q, mc, p->psn, now))
			return RV_FATAL;
		memcpy(mroce_mr_ptr(e, q->wr_rkey, true, dst), p->payload, len);
	}
	q->msg_off += len;
	if (pos & MROCE_POS_LAST) {
		q->msg = RV2_MSG_NONE;
		q->msn++;
		if (imm) {
			/* byte_len of a WRITE_WITH_IMM receive is the length
			 * of the WRITE (as rxe and mlx5 report it). */
			struct mroce_wc wc = {
				.status = MROCE_WC_SUCCESS,
				.opcode = MROCE_WC_RECV_RDMA_WITH_IMM,
				.byte_len = q->wr_len,
				.imm = p->imm,
				.flags = MROCE_WC_WITH_IMM,
			};

			mroce_rq_complete(e, qp, &wc);
			if (qp->state == MROCE_QPS_ERR)
				return RV_FATAL;
		}
	}
	return RV_OK;
}

static enum rv2_verdict resp_read(struct mroce_engine *e, struct mroce_qp *qp,
				  struct rv2_qp *q,
				  const struct mroce_rv2_pkt *p, uint64_t now)
{
	uint32_t nsegs = mroce_msg_nsegs(p->dma_len, e->cfg.mtu);
	enum mroce_mr_check mc;

	if (nsegs > RV2_MAX_SEGS) {
		resp_fatal(e, qp, q, ROCEV2_NAK_INVALID_REQ, p->psn, now);
		return RV_FATAL;
	}
	mc = mroce_rkey_check(e, qp, p->rkey, p->va, p->dma_len,
			      MROCE_ACCESS_REMOTE_READ);
	if (rkey_failed(e, qp, q, mc, p->psn, now))
		return RV_FATAL;
	q->msn++;
	if (enqueue_read(qp, q, p, nsegs)) {
		q->msn--;
		return RV_BUSY;
	}
	/* The request takes one PSN per response packet. */
	q->epsn = padd(q->epsn, nsegs - 1);
	return RV_OK;
}

static bool is_send(const struct mroce_rv2_pkt *p)
{
	return p->opcode <= ROCEV2_OP_SEND_ONLY_IMM;
}

static bool is_write(const struct mroce_rv2_pkt *p)
{
	return p->opcode >= ROCEV2_OP_WRITE_FIRST &&
	       p->opcode <= ROCEV2_OP_WRITE_ONLY_IMM;
}

/* Opcode sequence (C9-28): a message starts only between messages;
 * MIDDLE/LAST continue the same kind of message. Sizes: FIRST/MIDDLE carry
 * exactly one MTU, LAST 1..MTU, ONLY 0..MTU. */
static bool seq_ok(const struct rv2_qp *q, const struct mroce_rv2_pkt *p,
		   uint32_t mtu)
{
	enum mroce_pkt_pos pos = p->desc->pos;
	bool start = pos & MROCE_POS_FIRST;	/* READ_REQ is ONLY */

	return !((start && q->msg != RV2_MSG_NONE) ||
		 (!start &&
		  q->msg != (is_send(p) ? RV2_MSG_SEND : RV2_MSG_WRITE)) ||
		 p->payload_len > mtu ||
		 (!(pos & MROCE_POS_LAST) && p->payload_len != mtu) ||
		 (pos == MROCE_POS_LAST && p->payload_len == 0));
}

int rv2_rx_request(struct mroce_engine *e, struct mroce_qp *qp,
		   struct rv2_qp *q, const struct mroce_rv2_pkt *p,
		   uint64_t now)
{
	int32_t d = pdiff(p->psn, q->epsn);
	enum rv2_verdict v;
	enum mroce_pkt_pos pos;

	if (qp->state != MROCE_QPS_RTR && qp->state != MROCE_QPS_RTS) {
		MROCE_STAT_INC(e, rx_no_conn);
		return -EPERM;
	}
	if (d > 0) {
		/* Ahead: a packet was lost (or reordered). One NAK per gap. */
		MROCE_STAT_INC(e, rx_ooo);
		if (!q->nak_sent) {
			sched_ack(q, ROCEV2_AETH_NAK | ROCEV2_NAK_PSN_SEQ,
				  q->epsn);
			q->nak_sent = true;
			rv2_kick(e, qp, now);
		}
		return -ERANGE;
	}
	if (d < 0) {
		MROCE_STAT_INC(e, rx_dup);
		if (p->opcode == ROCEV2_OP_READ_REQ)
			return rx_dup_read(e, qp, q, p, now);
		/* Re-ACK what we have, unless a NAK for a gap is queued
		 * (it says more). */
		if (!slot_is_nak(q))
			sched_ack(q, RV2_SYN_ACK,
				  padd(q->epsn, ROCEV2_PSN_MASK));
		rv2_kick(e, qp, now);
		return 0;
	}

	/* The expected PSN. A pending sequence NAK for it is now moot:
	 * replace it by the ACK it implies. */
	if (slot_is_nak(q))
		sched_ack(q, RV2_SYN_ACK, padd(q->epsn, ROCEV2_PSN_MASK));

	pos = p->desc->pos;
	if (!seq_ok(q, p, e->cfg.mtu)) {
		resp_fatal(e, qp, q, ROCEV2_NAK_INVALID_REQ, p->psn, now);
		return -EPROTO;
	}
	if (is_send(p))
		v = resp_send(e, qp, q, p, pos, now);
	else if (is_write(p))
		v = resp_write(e, qp, q, p, pos, now);
	else
		v = resp_read(e, qp, q, p, now);

	switch (v) {
	case RV_FATAL:
		return -EPROTO;
	case RV_BUSY:
		return -EBUSY;
	case RV_RNR:
		/* Later packets of the flight are ahead now: stay quiet
		 * about them (nak_sent) until this PSN comes back. */
		sched_ack(q, ROCEV2_AETH_RNR_NAK | RV2_RNR_CODE, p->psn);
		q->nak_sent = true;
		rv2_kick(e, qp, now);
		return -ENOBUFS;
	case RV_OK:
		break;
	}
	MROCE_STAT_INC(e, rx_data_pkts);
	q->epsn = padd(q->epsn, 1);
	qp->rq_psn = q->epsn;
	q->nak_sent = false;
	if (p->opcode != ROCEV2_OP_READ_REQ &&
	    (p->ackreq || ++q->unacked >= RV2_ACK_EVERY))
		sched_ack(q, RV2_SYN_ACK, padd(q->epsn, ROCEV2_PSN_MASK));
	rv2_kick(e, qp, now);
	return 0;
}

static void count_ack(struct mroce_engine *e, uint8_t syn)
{
	if ((syn & ROCEV2_AETH_TYPE_MASK) == ROCEV2_AETH_ACK)
		MROCE_STAT_INC(e, tx_acks);
	else
		MROCE_STAT_INC(e, tx_naks);
}

int rv2_tx_gnak(struct mroce_engine *e, struct mroce_tx_pkt *pkt, size_t cap)
{
	struct rv2_eng *g = rv2e(e);
	struct rv2_gnak *n = &g->gnak[g->gnak_head % RV2_GNAK_SLOTS];
	struct mroce_rv2_pkt p = {
		.opcode = ROCEV2_OP_ACK,
		.dqpn = n->dqpn,
		.psn = n->psn,
		.syndrome = n->syn,
		.msn = n->msn,
	};
	int err = rv2_emit(e, pkt, cap, &p, n->peer, n->sport);

	g->gnak_head++;
	if (!err)
		count_ack(e, p.syndrome);
	return err;
}

static const uint8_t read_resp_ops[4] = {
	[MROCE_POS_FIRST] = ROCEV2_OP_READ_RESP_FIRST,
	[MROCE_POS_MIDDLE] = ROCEV2_OP_READ_RESP_MIDDLE,
	[MROCE_POS_LAST] = ROCEV2_OP_READ_RESP_LAST,
	[MROCE_POS_ONLY] = ROCEV2_OP_READ_RESP_ONLY,
};

/* One responder packet: the ACK/NAK slot when it may go, else the next
 * READ response. */
int rv2_tx_resp(struct mroce_engine *e, struct mroce_qp *qp, struct rv2_qp *q,
		struct mroce_tx_pkt *pkt, size_t cap, uint64_t now)
{
	struct mroce_rv2_pkt p = { .dqpn = qp->dest_qpn };
	uint32_t mtu = e->cfg.mtu, len, seg;
	enum mroce_mr_check mc;
	struct mroce_rdjob *j;
	uint64_t va;
	int err;

	if (ack_ready(qp, q)) {
		p.opcode = ROCEV2_OP_ACK;
		p.psn = q->ack_psn;
		p.syndrome = q->ack_syn;
		p.msn = q->ack_msn;
		err = rv2_emit(e, pkt, cap, &p, qp->peer, q->sport);
		if (err)
			return err;
		q->ack_pending = false;
		q->unacked = 0;
		q->tx_pkts++;
		count_ack(e, p.syndrome);
		return 1;
	}
	j = &qp->rd[qp->rd_head % MROCE_MAX_RD_ATOMIC];
	seg = j->next_seg;
	len = mroce_seg_len(j->len, seg, mtu);
	va = j->va + (uint64_t)seg * mtu;
	if (len) {
		/* The region may have been deregistered since the request. */
		mc = mroce_rkey_check(e, qp, j->rkey, va, len,
				      MROCE_ACCESS_REMOTE_READ);
		if (rkey_failed(e, qp, q, mc, padd(j->msn, seg), now))
			return 0;
	}
	p.opcode = read_resp_ops[rv2_seg_pos(seg, j->nsegs)];
	p.psn = padd(j->msn, seg);
	p.syndrome = RV2_SYN_ACK;
	p.msn = q->rd_msn[j - qp->rd];
	p.payload = len ? mroce_mr_ptr(e, j->rkey, true, va) :
			  (const uint8_t *)"";
	p.payload_len = len;
	err = rv2_emit(e, pkt, cap, &p, qp->peer, q->sport);
	if (err)
		return err;
	MROCE_STAT_INC(e, tx_data_pkts);
	q->tx_pkts++;
	if (pdiff(p.psn, q->resp_hw) < 0) {
		MROCE_STAT_INC(e, retransmits);
		q->retransmits++;
	} else {
		q->resp_hw = padd(p.psn, 1);
	}
	if (++j->next_seg >= j->segs_done) {
		j->used = false;
		qp->rd_head++;
	}
	return 1;
}
