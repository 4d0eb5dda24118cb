// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Completion queues: fixed-depth rings; an overrun moves every QP of the
 * CQ to ERR, as ibverbs does.
 */
#include <stdlib.h>

#include "engine_int.h"

struct mroce_cq *mroce_cq_get(const struct mroce_engine *e, int cq)
{
	if (cq < 0 || (uint32_t)cq >= e->ncqs || !e->cqs[cq].used)
		return NULL;
	return &e->cqs[cq];
}

int mroce_create_cq(struct mroce_engine *e, uint32_t depth)
{
	struct mroce_cq *c = NULL;
	uint32_t i;

	if (!e || depth == 0 || depth > (1u << 20))
		return -EINVAL;
	for (i = 0; i < e->ncqs; i++) {
		if (!e->cqs[i].used) {
			c = &e->cqs[i];
			break;
		}
	}
	if (!c) {
		struct mroce_cq *n = realloc(e->cqs, (e->ncqs + 1) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		e->cqs = n;
		i = e->ncqs++;
		c = &e->cqs[i];
		memset(c, 0, sizeof(*c));
	}
	c->ring = calloc(depth, sizeof(*c->ring));
	if (!c->ring)
		return -ENOMEM;
	c->used = true;
	c->depth = depth;
	c->head = c->count = c->nqps = 0;
	c->overflowed = false;
	return (int)i;
}

int mroce_destroy_cq(struct mroce_engine *e, int cq)
{
	struct mroce_cq *c;

	if (!e)
		return -EINVAL;
	c = mroce_cq_get(e, cq);
	if (!c)
		return -ENOENT;
	if (c->nqps)
		return -EBUSY;
	free(c->ring);
	memset(c, 0, sizeof(*c));
	return 0;
}

int mroce_cq_push(struct mroce_engine *e, int cq, const struct mroce_wc *wc)
{
	struct mroce_cq *c = mroce_cq_get(e, cq);

	if (!c)
		return -ENOENT;
	if (c->count == c->depth) {
		/* CQ overrun: ibverbs moves the CQ's QPs to error. The
		 * flushes below find the CQ full as well and are lost,
		 * which is what a real overrun does too. */
		c->overflowed = true;
		for (uint32_t i = 0; i < e->qp_tab_size; i++) {
			struct mroce_qp *qp = e->qp_tab[i];

			if (qp && (qp->send_cq == cq || qp->recv_cq == cq))
				mroce_qp_to_err(e, qp, e->now);
		}
		return -ENOSPC;
	}
	c->ring[(c->head + c->count) % c->depth] = *wc;
	c->count++;
	return 0;
}

int mroce_poll_cq(struct mroce_engine *e, int cq, struct mroce_wc *wc, int n)
{
	struct mroce_cq *c;
	int i;

	if (!e || n < 0 || (n && !wc))
		return -EINVAL;
	c = mroce_cq_get(e, cq);
	if (!c)
		return -ENOENT;
	for (i = 0; i < n && c->count; i++) {
		wc[i] = c->ring[c->head];
		c->head = (c->head + 1) % c->depth;
		c->count--;
	}
	return i;
}

const char *mroce_wc_status_str(enum mroce_wc_status s)
{
	static const char *const names[] = {
		[MROCE_WC_SUCCESS] = "success",
		[MROCE_WC_LOC_LEN_ERR] = "local length error",
		[MROCE_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[MROCE_WC_LOC_PROT_ERR] = "local protection error",
		[MROCE_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[MROCE_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[MROCE_WC_REM_ACCESS_ERR] = "remote access error",
		[MROCE_WC_REM_OP_ERR] = "remote operation error",
		[MROCE_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[MROCE_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[MROCE_WC_GENERAL_ERR] = "general error",
	};

	if ((unsigned)s >= sizeof(names) / sizeof(names[0]) || !names[s])
		return "unknown";
	return names[s];
}
