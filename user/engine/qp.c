// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Queue pairs: the QP table (open addressing by QPN), create/destroy, and
 * the ibverbs RC state machine: one transition table says which
 * transitions are legal and which attributes each one takes, checked in
 * one place (qp_check_modify) before anything changes.
 */
#include <stdlib.h>

#include "engine_int.h"

static uint32_t qp_hash(const struct mroce_engine *e, uint32_t qpn)
{
	return (qpn * 0x9E3779B1u) & (e->qp_tab_size - 1);
}

struct mroce_qp *mroce_qp_find(const struct mroce_engine *e, uint32_t qpn)
{
	uint32_t i = qp_hash(e, qpn);

	for (;;) {
		struct mroce_qp *qp = e->qp_tab[i];

		if (!qp)
			return NULL;
		if (qp->qpn == qpn)
			return qp;
		i = (i + 1) & (e->qp_tab_size - 1);
	}
}

static void qp_tab_insert(struct mroce_engine *e, struct mroce_qp *qp)
{
	uint32_t i = qp_hash(e, qp->qpn);

	while (e->qp_tab[i])
		i = (i + 1) & (e->qp_tab_size - 1);
	e->qp_tab[i] = qp;
	e->nqps++;
}

static void qp_tab_remove(struct mroce_engine *e, struct mroce_qp *qp)
{
	uint32_t mask = e->qp_tab_size - 1;
	uint32_t i = qp_hash(e, qp->qpn), j;

	while (e->qp_tab[i] != qp)
		i = (i + 1) & mask;
	e->qp_tab[i] = NULL;
	/* Shift later members of the probe run back into the hole. */
	for (j = (i + 1) & mask; e->qp_tab[j]; j = (j + 1) & mask) {
		uint32_t h = qp_hash(e, e->qp_tab[j]->qpn);

		/* Move j to i if h is not cyclically in (i, j]. */
		if (((j - h) & mask) >= ((j - i) & mask)) {
			e->qp_tab[i] = e->qp_tab[j];
			e->qp_tab[j] = NULL;
			i = j;
		}
	}
	e->nqps--;
}

const char *mroce_qp_state_name(enum mroce_qp_state s)
{
	switch (s) {
	case MROCE_QPS_RESET:
		return "RESET";
	case MROCE_QPS_INIT:
		return "INIT";
	case MROCE_QPS_RTR:
		return "RTR";
	case MROCE_QPS_RTS:
		return "RTS";
	case MROCE_QPS_ERR:
		return "ERR";
	}
	return "UNKNOWN";
}

int mroce_create_qp(struct mroce_engine *e,
		    const struct mroce_qp_init_attr *attr)
{
	struct mroce_qp *qp;
	uint32_t qpn;
	int err;

	if (!e || !attr)
		return -EINVAL;
	if (!mroce_cq_get(e, attr->send_cq) || !mroce_cq_get(e, attr->recv_cq))
		return -ENOENT;
	if (attr->max_send_wr == 0 || attr->max_send_wr > MROCE_MAX_WR ||
	    attr->max_recv_wr > MROCE_MAX_WR)
		return -EINVAL;
	if (e->nqps >= e->cfg.max_qps)
		return -ENOMEM;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->sq_cap = attr->max_send_wr;
	qp->rq_cap = attr->max_recv_wr ? attr->max_recv_wr : 1;
	qp->sq = calloc(qp->sq_cap, sizeof(*qp->sq));
	qp->rq = calloc(qp->rq_cap, sizeof(*qp->rq));
	if (!qp->sq || !qp->rq) {
		free(qp->sq);
		free(qp->rq);
		free(qp);
		return -ENOMEM;
	}
	if (!attr->max_recv_wr)
		qp->rq_cap = 0;
	do
		qpn = mroce_rng_u32(e) & 0xffffff;
	while (qpn == 0 || mroce_qp_find(e, qpn));
	qp->qpn = qpn;
	qp->state = MROCE_QPS_RESET;
	qp->peer = -1;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	if (e->ops->qp_create) {
		err = e->ops->qp_create(e, qp);
		if (err < 0) {
			free(qp->sq);
			free(qp->rq);
			free(qp);
			return err;
		}
	}
	e->cqs[qp->send_cq].nqps++;
	e->cqs[qp->recv_cq].nqps++;
	qp_tab_insert(e, qp);
	return (int)qpn;
}

void mroce_qp_free(struct mroce_engine *e, struct mroce_qp *qp)
{
	if (e->ops->qp_destroy)
		e->ops->qp_destroy(e, qp);
	free(qp->sq);
	free(qp->rq);
	free(qp);
}

int mroce_destroy_qp(struct mroce_engine *e, uint32_t qpn)
{
	struct mroce_qp *qp;

	if (!e)
		return -EINVAL;
	qp = mroce_qp_find(e, qpn);
	if (!qp)
		return -ENOENT;
	mroce_qp_unsched(qp);
	qp_tab_remove(e, qp);
	e->cqs[qp->send_cq].nqps--;
	e->cqs[qp->recv_cq].nqps--;
	mroce_ev_qp_down(e, qp, qp->peer);
	mroce_qp_free(e, qp);
	return 0;
}

void mroce_qp_to_err(struct mroce_engine *e, struct mroce_qp *qp,
		     uint64_t now)
{
	struct mroce_qp_attr a = { .state = MROCE_QPS_ERR };
	enum mroce_qp_state old = qp->state;

	if (old == MROCE_QPS_ERR)
		return;
	qp->state = MROCE_QPS_ERR;
	mroce_qp_unsched(qp);
	mroce_qp_flush(e, qp);
	if (e->ops->qp_modify)
		e->ops->qp_modify(e, qp, old, &a, MROCE_QP_STATE, now);
}

static void qp_reset(struct mroce_qp *qp)
{
	qp->sq_head = qp->sq_tail = 0;
	qp->rq_head = qp->rq_tail = 0;
	qp->rd_head = qp->rd_tail = 0;
	memset(qp->rd, 0, sizeof(qp->rd));
	qp->peer = -1;
	qp->dest_qpn = 0;
	qp->access = 0;
	qp->rq_psn = qp->sq_psn = 0;
	mroce_qp_unsched(qp);
}

/* One legal transition: the attributes it accepts (any other bit in the
 * mask is -EINVAL, as in ibverbs) and those it requires. */
struct qp_transition {
	bool valid;
	uint32_t opt;		/* accepted attribute mask */
	uint32_t req;		/* required attribute mask */
};

#define QPT(mask) { .valid = true, .opt = MROCE_QP_STATE | (mask) }

/* The ibverbs RC state table without SQD/SQE: [current][next]. Any state
 * may go to RESET or ERR; a missing entry is -EPERM. */
static const struct qp_transition
	qp_table[MROCE_QPS_ERR + 1][MROCE_QPS_ERR + 1] = {
	[MROCE_QPS_RESET] = {
		[MROCE_QPS_RESET] = QPT(0),
		[MROCE_QPS_INIT] = QPT(MROCE_QP_ACCESS_FLAGS),
		[MROCE_QPS_ERR] = QPT(0),
	},
	[MROCE_QPS_INIT] = {
		[MROCE_QPS_RESET] = QPT(0),
		[MROCE_QPS_INIT] = QPT(MROCE_QP_ACCESS_FLAGS),
		[MROCE_QPS_RTR] = {
			.valid = true,
			.opt = MROCE_QP_STATE | MROCE_QP_ACCESS_FLAGS |
			       MROCE_QP_DEST | MROCE_QP_RQ_PSN,
			.req = MROCE_QP_DEST,
		},
		[MROCE_QPS_ERR] = QPT(0),
	},
	[MROCE_QPS_RTR] = {
		[MROCE_QPS_RESET] = QPT(0),
		[MROCE_QPS_RTS] = QPT(MROCE_QP_ACCESS_FLAGS | MROCE_QP_SQ_PSN),
		[MROCE_QPS_ERR] = QPT(0),
	},
	[MROCE_QPS_RTS] = {
		[MROCE_QPS_RESET] = QPT(0),
		[MROCE_QPS_RTS] = QPT(MROCE_QP_ACCESS_FLAGS),
		[MROCE_QPS_ERR] = QPT(0),
	},
	[MROCE_QPS_ERR] = {
		[MROCE_QPS_RESET] = QPT(0),
		[MROCE_QPS_ERR] = QPT(0),
	},
};

/* Every check of a modify, before anything changes: -EINVAL for a bad
 * state, attribute or value, -EPERM for an illegal transition. */
static int qp_check_modify(const struct mroce_engine *e,
			   enum mroce_qp_state cur, enum mroce_qp_state nxt,
			   const struct mroce_qp_attr *attr, uint32_t mask)
{
	const struct qp_transition *t;

	if ((unsigned)nxt > MROCE_QPS_ERR)
		return -EINVAL;
	t = &qp_table[cur][nxt];
	if (!t->valid)
		return -EPERM;
	if (mask & ~t->opt)
		return -EINVAL;
	if ((mask & MROCE_QP_ACCESS_FLAGS) &&
	    (attr->access & ~MROCE_ACCESS_ALL))
		return -EINVAL;
	if ((mask & t->req) != t->req)
		return -EINVAL;
	if ((mask & MROCE_QP_DEST) &&
	    (!mroce_peer_get(e, attr->peer) || attr->dest_qpn == 0 ||
	     attr->dest_qpn > 0xffffff))
		return -EINVAL;
	return 0;
}

static void qp_apply(struct mroce_qp *qp, enum mroce_qp_state nxt,
		     const struct mroce_qp_attr *attr, uint32_t mask)
{
	if (nxt == MROCE_QPS_RESET)
		qp_reset(qp);
	if (mask & MROCE_QP_ACCESS_FLAGS)
		qp->access = attr->access;
	if (mask & MROCE_QP_DEST) {
		qp->peer = attr->peer;
		qp->dest_qpn = attr->dest_qpn;
	}
	if (mask & MROCE_QP_RQ_PSN)
		qp->rq_psn = attr->rq_psn;
	if (mask & MROCE_QP_SQ_PSN)
		qp->sq_psn = attr->sq_psn;
	qp->state = nxt;
}

int mroce_modify_qp(struct mroce_engine *e, uint32_t qpn,
		    const struct mroce_qp_attr *attr, uint32_t mask,
		    uint64_t now)
{
	struct mroce_qp *qp, saved;
	enum mroce_qp_state cur, nxt;
	bool up;
	int err;

	if (!e || !attr)
		return -EINVAL;
	e->now = now;
	qp = mroce_qp_find(e, qpn);
	if (!qp)
		return -ENOENT;
	cur = qp->state;
	nxt = (mask & MROCE_QP_STATE) ? attr->state : cur;
	err = qp_check_modify(e, cur, nxt, attr, mask);
	if (err)
		return err;
	if (nxt == MROCE_QPS_ERR) {
		mroce_qp_to_err(e, qp, now);
		return 0;
	}
	/* Transports whose QPs are the I/O layer's unit announce QP_UP at
	 * RTR: room for it and its later QP_DOWN first, before changing
	 * anything (an event is never dropped). */
	up = cur == MROCE_QPS_INIT && nxt == MROCE_QPS_RTR &&
	     e->ops->qp_events;
	if (up && !qp->ev_up && mroce_ev_reserve(e, 2) < 0)
		return -ENOMEM;
	saved = *qp;
	qp_apply(qp, nxt, attr, mask);
	if (e->ops->qp_modify) {
		err = e->ops->qp_modify(e, qp, cur, attr, mask, now);
		if (err < 0) {
			*qp = saved;
			return err;
		}
	}
	if (nxt == MROCE_QPS_RESET)
		mroce_ev_qp_down(e, qp, saved.peer);
	else if (up)
		mroce_ev_qp_up(e, qp);
	return 0;
}

int mroce_query_qp(struct mroce_engine *e, uint32_t qpn,
		   struct mroce_qp_attr *attr)
{
	struct mroce_qp *qp;

	if (!e || !attr)
		return -EINVAL;
	qp = mroce_qp_find(e, qpn);
	if (!qp)
		return -ENOENT;
	memset(attr, 0, sizeof(*attr));
	attr->state = qp->state;
	attr->access = qp->access;
	attr->peer = qp->peer;
	attr->dest_qpn = qp->dest_qpn;
	attr->rq_psn = qp->rq_psn;
	attr->sq_psn = qp->sq_psn;
	return 0;
}
