// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Placement: a received data packet's checks (stream, message window, keys,
 * bounds) and the copy of its payload into memory; per-message segment tracking
 * (duplicate suppression), in-order delivery of completed messages, and READ
 * response placement at the requester.
 */
#include <stdlib.h>

#include "metaroce_int.h"

int mr_st_init(struct mr_segtrack *st, uint32_t nsegs)
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

void mr_st_free(struct mr_segtrack *st)
{
	free(st->ext);
	st->ext = NULL;
}

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
void mr_rx_deliver(struct mroce_engine *e, struct mroce_qp *qp)
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
			mr_st_free(&rm->st);
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
			*mr_sink(qp, j) = (struct mr_rdsink){
				.va = rm->sink_va,
				.key = rm->sink_key,
			};
			j->nsegs = mroce_msg_nsegs(rm->msg_len, q->conn->mtu);
			mr_qp_kick(qp);
			break;
		}
		default:
			break;
		}
		mr_st_free(&rm->st);
		rm->state = MR_RX_FREE;
		q->rx_next_msn++;
	}
}

/* A READ response job finished: free its slot; a READ_REQ that found the
 * job ring full is waiting in mr_rx_deliver for exactly this. */
void mr_rd_retire(struct mroce_engine *e, struct mroce_qp *qp,
		  struct mroce_rdjob *j)
{
	j->used = false;
	while (qp->rd_head != qp->rd_tail &&
	       !qp->rd[qp->rd_head % MROCE_MAX_RD_ATOMIC].used)
		qp->rd_head++;
	if (QP(qp) && QP(qp)->conn)
		mr_rx_deliver(e, qp);
}

/* A responder-side fatal error on a stream: NAK + the QP goes to ERR. */
static enum place_res refuse(struct mroce_engine *e, struct mr_conn *c,
			     struct mroce_qp *qp, uint8_t code, int slot,
			     const struct mroce_meta_pkt *pk, bool qp_err)
{
	mr_nak_queue(c, code, slot, pk->path_gen, pk->psn,
		     qp ? qp->dest_qpn : 0, pk->msn, c->path[slot].rx_sport);
	if (code == MROCE_NAK_BAD_RKEY || code == MROCE_NAK_OUT_OF_BOUNDS ||
	    code == MROCE_NAK_ACCESS)
		MROCE_STAT_INC(e, rx_bad_rkey);
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
	w = mr_sq_by_msn(qp, pk->msn);
	if (qp->state != MROCE_QPS_RTS || !w ||
	    w->wr.opcode != MROCE_WR_RDMA_READ || w->state == MROCE_WQE_DONE)
		return PL_DUP;	/* late copy of a finished READ */
	if (pk->va != w->wr.sge.addr || pk->rkey != w->wr.sge.lkey ||
	    pk->msg_len != w->wr.sge.length || pk->offset % c->mtu ||
	    pk->payload_len != mroce_seg_len(pk->msg_len, pk->offset / c->mtu,
				       c->mtu))
		return refuse(e, c, qp, MROCE_NAK_INVALID_REQ, slot, pk, false);
	for (int i = 0; i < MROCE_MAX_RD_ATOMIC; i++)
		if (q->rdrx[i].used && q->rdrx[i].msn == pk->msn)
			rd = &q->rdrx[i];
	if (!rd)
		return PL_DUP;
	seg = pk->offset / c->mtu;
	if (st_has(&rd->st, seg)) {
		MROCE_STAT_INC(e, rx_dup);
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
	rd->deadline = e->now + mr_read_timeout(e);
	if (rd->st.got == rd->st.nsegs) {
		mr_st_free(&rd->st);
		rd->used = false;
		q->reads_out--;
		w->state = MROCE_WQE_DONE;
		w->status = MROCE_WC_SUCCESS;
		mroce_sq_drain(e, qp);
		mr_qp_kick(qp);
	}
	return PL_OK;
}

/* The target of a new message (rm is free): the receive a SEND consumes,
 * or the region a WRITE or READ_REQ names, checked over the whole
 * message; and its segment tracker. false: refused (NAK queued). */
static bool rxmsg_open(struct mroce_engine *e, struct mr_conn *c,
		       struct mroce_qp *qp, struct mr_rxmsg *rm, int slot,
		       const struct mroce_meta_pkt *pk)
{
	struct mr_qp *q = QP(qp);
	enum mroce_mr_check mc;
	struct mroce_rwqe *r;
	int32_t k;

	memset(rm, 0, sizeof(*rm));
	switch (pk->opcode) {
	case MROCE_OP_SEND:
	case MROCE_OP_SEND_IMM:
		k = (int32_t)(pk->ssn - q->rx_ssn);
		if (k < 0) {
			refuse(e, c, qp, MROCE_NAK_INVALID_REQ, slot, pk, true);
			return false;
		}
		r = mroce_rq_head(qp, (uint32_t)k);
		if (!r) {	/* RNR: hole + NAK, the sender retries */
			refuse(e, c, qp, MROCE_NAK_RNR, slot, pk, false);
			return false;
		}
		if (pk->msg_len > r->wr.sge.length) {
			refuse(e, c, qp, MROCE_NAK_INVALID_REQ, slot, pk, true);
			return false;
		}
		rm->va = r->wr.sge.addr;
		rm->key = r->wr.sge.lkey;
		break;
	case MROCE_OP_WRITE:
	case MROCE_OP_WRITE_IMM:
	case MROCE_OP_READ_REQ:
		mc = mroce_rkey_check(e, qp, pk->rkey, pk->va, pk->msg_len,
				      pk->opcode == MROCE_OP_READ_REQ ?
					      MROCE_ACCESS_REMOTE_READ :
					      MROCE_ACCESS_REMOTE_WRITE);
		if (mc != MROCE_MRC_OK) {
			refuse(e, c, qp, mrc_nak(mc), slot, pk, true);
			return false;
		}
		rm->va = pk->va;
		rm->key = pk->rkey;
		if (pk->opcode == MROCE_OP_READ_REQ) {
			rm->sink_va = pk->sink_va;
			rm->sink_key = pk->sink_key;
		}
		break;
	default:
		refuse(e, c, qp, MROCE_NAK_INVALID_REQ, slot, pk, true);
		return false;
	}
	if (mr_st_init(&rm->st, pk->opcode == MROCE_OP_READ_REQ ?
					1 :
					mroce_msg_nsegs(pk->msg_len, c->mtu)) < 0) {
		refuse(e, c, qp, MROCE_NAK_REMOTE_OP, slot, pk, false);
		return false;
	}
	rm->op = pk->opcode;
	rm->msn = pk->msn;
	rm->msg_len = pk->msg_len;
	rm->imm = pk->imm;
	rm->solicited = !!(pk->flags & MROCE_F_SOLICITED);
	rm->state = MR_RX_ACTIVE;
	return true;
}

/* Copy a packet's payload into its message's target. The region is
 * checked again per packet: it may have gone since the first packet of
 * the message. false: refused (NAK queued, the QP in ERR). */
static bool place_payload(struct mroce_engine *e, struct mr_conn *c,
			  struct mroce_qp *qp, const struct mr_rxmsg *rm,
			  int slot, const struct mroce_meta_pkt *pk)
{
	bool write = pk->opcode == MROCE_OP_WRITE ||
		     pk->opcode == MROCE_OP_WRITE_IMM;
	uint64_t dst = rm->va + pk->offset;

	if (write) {
		enum mroce_mr_check mc = mroce_rkey_check(
			e, qp, rm->key, dst, pk->payload_len,
			MROCE_ACCESS_REMOTE_WRITE);

		if (mc != MROCE_MRC_OK) {
			refuse(e, c, qp, mrc_nak(mc), slot, pk, true);
			return false;
		}
	} else if (mroce_lkey_check(e, rm->key, dst, pk->payload_len,
				    MROCE_ACCESS_LOCAL_WRITE,
				    NULL) != MROCE_MRC_OK) {
		refuse(e, c, qp, MROCE_NAK_REMOTE_OP, slot, pk, true);
		return false;
	}
	memcpy(mroce_mr_ptr(e, rm->key, write, dst), pk->payload,
	       pk->payload_len);
	return true;
}

/* Place one data packet (not a READ response: place_read_resp) of
 * stream pk->stream: check it, open its message on the first packet,
 * copy the payload, and deliver the messages it completes. */
enum place_res mr_place(struct mroce_engine *e, struct mr_conn *c, int slot,
			const struct mroce_meta_pkt *pk)
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
		MROCE_STAT_INC(e, rx_dup);
		return PL_DUP;
	}
	if (d >= MR_MSG_WIN ||
	    (pk->opcode == MROCE_OP_READ_REQ ?
		     pk->offset != 0 || pk->payload_len != 0 :
		     pk->offset % mtu ||
			     pk->payload_len !=
				     mroce_seg_len(pk->msg_len, pk->offset / mtu,
					     mtu)))
		return refuse(e, c, qp, MROCE_NAK_INVALID_REQ, slot, pk, true);
	seg = pk->offset / mtu;
	rm = &q->rx[pk->msn % MR_MSG_WIN];
	if (rm->state == MR_RX_FREE) {
		if (!rxmsg_open(e, c, qp, rm, slot, pk))
			return PL_REFUSE;
	} else if (rm->msn != pk->msn || rm->op != pk->opcode ||
		   rm->msg_len != pk->msg_len ||
		   ((pk->opcode == MROCE_OP_WRITE ||
		     pk->opcode == MROCE_OP_WRITE_IMM) &&
		    (rm->va != pk->va || rm->key != pk->rkey))) {
		return refuse(e, c, qp, MROCE_NAK_INVALID_REQ, slot, pk, true);
	}
	if (rm->state == MR_RX_COMPLETE || st_has(&rm->st, seg)) {
		MROCE_STAT_INC(e, rx_dup);
		return PL_DUP;
	}
	if (pk->payload_len && !place_payload(e, c, qp, rm, slot, pk))
		return PL_REFUSE;
	st_set(&rm->st, seg);
	if (rm->st.got == rm->st.nsegs) {
		rm->state = MR_RX_COMPLETE;
		mr_rx_deliver(e, qp);
	}
	return PL_OK;
}
