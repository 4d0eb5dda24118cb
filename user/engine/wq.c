// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Work queues: posting sends and receives (with the checks the transport
 * relies on, engine_int.h), and completing them in order: drains, fatal
 * errors with flushes, receives.
 */
#include "engine_int.h"

static enum mroce_wc_opcode wc_opcode(enum mroce_wr_opcode op)
{
	switch (op) {
	case MROCE_WR_RDMA_WRITE:
	case MROCE_WR_RDMA_WRITE_WITH_IMM:
		return MROCE_WC_RDMA_WRITE;
	case MROCE_WR_RDMA_READ:
		return MROCE_WC_RDMA_READ;
	default:
		return MROCE_WC_SEND;
	}
}

static void wqe_wc(const struct mroce_qp *qp, const struct mroce_wqe *w,
		   enum mroce_wc_status st, struct mroce_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = w->wr.wr_id;
	wc->status = st;
	wc->opcode = wc_opcode(w->wr.opcode);
	wc->byte_len = w->wr.sge.length;
	wc->qpn = qp->qpn;
}

int mroce_sq_drain(struct mroce_engine *e, struct mroce_qp *qp)
{
	int popped = 0;

	while (qp->sq_head != qp->sq_tail) {
		struct mroce_wqe *w = mroce_sq_at(qp, qp->sq_head);
		struct mroce_wc wc;
		bool report;

		if (w->state != MROCE_WQE_DONE)
			break;
		report = w->status != MROCE_WC_SUCCESS ||
			 (w->wr.send_flags & MROCE_SEND_SIGNALED);
		wqe_wc(qp, w, w->status, &wc);
		if (w->status == MROCE_WC_SUCCESS) {
			MROCE_STAT_INC(e, msgs_completed);
			MROCE_STAT_ADD(e, bytes_completed, w->wr.sge.length);
		}
		/* Pop before pushing: a CQ overrun re-enters via to_err. */
		qp->sq_head++;
		popped++;
		if (report)
			mroce_cq_push(e, qp->send_cq, &wc);
	}
	return popped;
}

void mroce_sq_fail(struct mroce_engine *e, struct mroce_qp *qp,
		   struct mroce_wqe *wqe, enum mroce_wc_status status)
{
	uint32_t c;

	if (wqe->state != MROCE_WQE_DONE) {
		wqe->state = MROCE_WQE_DONE;
		wqe->status = status;
	}
	/* ibverbs: everything after the first error completes flushed,
	 * even work the transport had finished. */
	for (c = qp->sq_head; c != qp->sq_tail; c++)
		if (mroce_sq_at(qp, c) == wqe)
			break;
	for (c++; (int32_t)(qp->sq_tail - c) > 0; c++) {
		struct mroce_wqe *w = mroce_sq_at(qp, c);

		w->state = MROCE_WQE_DONE;
		w->status = MROCE_WC_WR_FLUSH_ERR;
	}
	mroce_sq_drain(e, qp);
	mroce_qp_to_err(e, qp, e->now);
}

void mroce_qp_flush(struct mroce_engine *e, struct mroce_qp *qp)
{
	/* Flushed WQEs always complete (ibverbs), in order. */
	while (qp->sq_head != qp->sq_tail) {
		struct mroce_wqe *w = mroce_sq_at(qp, qp->sq_head);
		enum mroce_wc_status st = w->state == MROCE_WQE_DONE ?
						  w->status :
						  MROCE_WC_WR_FLUSH_ERR;
		struct mroce_wc wc;

		qp->sq_head++;
		if (st == MROCE_WC_SUCCESS &&
		    !(w->wr.send_flags & MROCE_SEND_SIGNALED))
			continue;
		wqe_wc(qp, w, st, &wc);
		mroce_cq_push(e, qp->send_cq, &wc);
	}
	while (qp->rq_head != qp->rq_tail) {
		struct mroce_rwqe *r = &qp->rq[qp->rq_head % qp->rq_cap];
		struct mroce_wc wc = {
			.wr_id = r->wr.wr_id,
			.status = MROCE_WC_WR_FLUSH_ERR,
			.opcode = MROCE_WC_RECV,
			.qpn = qp->qpn,
		};

		qp->rq_head++;
		mroce_cq_push(e, qp->recv_cq, &wc);
	}
}

int mroce_rq_complete(struct mroce_engine *e, struct mroce_qp *qp,
		      struct mroce_wc *wc)
{
	struct mroce_rwqe *r = mroce_rq_head(qp, 0);

	if (!r)
		return -ENOENT;
	wc->wr_id = r->wr.wr_id;
	wc->qpn = qp->qpn;
	qp->rq_head++;
	if (wc->status == MROCE_WC_SUCCESS) {
		MROCE_STAT_INC(e, msgs_completed);
		MROCE_STAT_ADD(e, bytes_completed, wc->byte_len);
	}
	return mroce_cq_push(e, qp->recv_cq, wc);
}

int mroce_post_send(struct mroce_engine *e, uint32_t qpn,
		    const struct mroce_send_wr *wr, uint64_t now)
{
	struct mroce_qp *qp;
	struct mroce_wqe *w;
	uint32_t need = 0;
	int err;

	if (!e || !wr)
		return -EINVAL;
	e->now = now;
	qp = mroce_qp_find(e, qpn);
	if (!qp)
		return -ENOENT;
	if (qp->state != MROCE_QPS_RTS)
		return -EPERM;
	if ((unsigned)wr->opcode > MROCE_WR_RDMA_READ ||
	    (wr->send_flags & ~(MROCE_SEND_SIGNALED | MROCE_SEND_SOLICITED)) ||
	    wr->sge.length > MROCE_MAX_MSG)
		return -EINVAL;
	if (wr->opcode == MROCE_WR_RDMA_READ)
		need = MROCE_ACCESS_LOCAL_WRITE;
	if (wr->sge.length &&
	    mroce_lkey_check(e, wr->sge.lkey, wr->sge.addr, wr->sge.length,
			     need, NULL) != MROCE_MRC_OK)
		return -EINVAL;
	if (mroce_sq_count(qp) >= qp->sq_cap)
		return -EAGAIN;

	w = mroce_sq_at(qp, qp->sq_tail);
	memset(w, 0, sizeof(*w));
	w->wr = *wr;
	w->state = MROCE_WQE_QUEUED;
	w->rnr_left = e->cfg.rnr_retry;
	w->retry_left = e->cfg.retry_cnt;
	qp->sq_tail++;
	if (e->ops->post_send) {
		err = e->ops->post_send(e, qp, w, now);
		if (err < 0) {
			qp->sq_tail--;
			return err;
		}
	}
	return 0;
}

int mroce_post_recv(struct mroce_engine *e, uint32_t qpn,
		    const struct mroce_recv_wr *wr)
{
	struct mroce_qp *qp;

	if (!e || !wr)
		return -EINVAL;
	qp = mroce_qp_find(e, qpn);
	if (!qp)
		return -ENOENT;
	if (qp->state == MROCE_QPS_RESET || qp->state == MROCE_QPS_ERR)
		return -EPERM;
	if (wr->sge.length > MROCE_MAX_MSG)
		return -EINVAL;
	if (wr->sge.length &&
	    mroce_lkey_check(e, wr->sge.lkey, wr->sge.addr, wr->sge.length,
			     MROCE_ACCESS_LOCAL_WRITE, NULL) != MROCE_MRC_OK)
		return -EINVAL;
	if (qp->rq_tail - qp->rq_head >= qp->rq_cap)
		return -EAGAIN;
	qp->rq[qp->rq_tail % qp->rq_cap].wr = *wr;
	qp->rq_tail++;
	if (e->ops->post_recv)
		e->ops->post_recv(e, qp);
	return 0;
}
