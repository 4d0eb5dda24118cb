// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce engine core: configuration, RNG, verbs objects (MR, CQ, QP), the
 * ibverbs QP state machine, send/receive queues and completions. Everything
 * that touches the wire is delegated to the transport (engine_int.h).
 */
#include <stdlib.h>
#include <sys/socket.h>

#include "engine_int.h"
#include "../common/rng.h"

/* ------------------------------------------------------------------ */
/* Configuration                                                        */
/* ------------------------------------------------------------------ */
void mroce_engine_cfg_default(struct mroce_engine_cfg *cfg)
{
	if (!cfg->transport)
		cfg->transport = MROCE_TRANSPORT_METAROCE;
	if (!cfg->npaths)
		cfg->npaths = 8;
	if (!cfg->mtu)
		cfg->mtu = 4096;
	if (!cfg->max_conns)
		cfg->max_conns = 4096;
	if (!cfg->max_qps)
		cfg->max_qps = 4096;
	if (!cfg->max_mrs)
		cfg->max_mrs = 1024;
	if (!cfg->link_bps)
		cfg->link_bps = 100000000000ull;
	if (!cfg->rto_min_us)
		cfg->rto_min_us = 200;
	if (!cfg->retry_cnt)
		cfg->retry_cnt = 7;
	if (!cfg->rnr_retry)
		cfg->rnr_retry = 7;
}

/* ------------------------------------------------------------------ */
/* RNG: splitmix64 expands the seed, xoshiro256** generates.            */
/* ------------------------------------------------------------------ */
uint64_t mroce_rng_u64(struct mroce_engine *e)
{
	return mroce_xoshiro_next(e->rng);
}

uint32_t mroce_rng_u32(struct mroce_engine *e)
{
	return (uint32_t)(mroce_rng_u64(e) >> 32);
}

uint32_t mroce_rng_below(struct mroce_engine *e, uint32_t n)
{
	/* Multiply-shift: bias < n / 2^32, irrelevant for our uses. */
	return (uint32_t)(((uint64_t)mroce_rng_u32(e) * n) >> 32);
}

static void ev_qp_up(struct mroce_engine *e, struct mroce_qp *qp);
static void ev_qp_down(struct mroce_engine *e, struct mroce_qp *qp, int peer);

/* ------------------------------------------------------------------ */
/* Create / destroy                                                     */
/* ------------------------------------------------------------------ */
static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

int mroce_engine_create(const struct mroce_engine_cfg *cfg_in,
			struct mroce_engine **out)
{
	struct mroce_engine_cfg cfg;
	struct mroce_engine *e;
	int err;

	if (!cfg_in || !out)
		return -EINVAL;
	cfg = *cfg_in;
	mroce_engine_cfg_default(&cfg);
	if (cfg.transport != MROCE_TRANSPORT_METAROCE &&
	    cfg.transport != MROCE_TRANSPORT_ROCEV2)
		return -EINVAL;
	if (cfg.npaths > MROCE_MAX_PATHS || cfg.mtu < 256 ||
	    cfg.mtu > MROCE_MAX_PAYLOAD || cfg.max_qps > (1u << 22) ||
	    cfg.max_mrs > (1u << 20) || cfg.max_conns > (1u << 22))
		return -EINVAL;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->cfg = cfg;
	e->ops = cfg.transport == MROCE_TRANSPORT_METAROCE ?
			 &mroce_metaroce_ops :
			 &mroce_rocev2_ops;
	mroce_xoshiro_seed(e->rng, cfg.seed);
	mroce_list_init(&e->sched);

	e->mr_bits = 1;
	while ((1u << e->mr_bits) < cfg.max_mrs)
		e->mr_bits++;
	e->mrs = calloc(cfg.max_mrs, sizeof(*e->mrs));
	e->qp_tab_size = pow2_at_least(cfg.max_qps * 2 < 16 ? 16 :
						       cfg.max_qps * 2);
	e->qp_tab = calloc(e->qp_tab_size, sizeof(*e->qp_tab));
	if (!e->mrs || !e->qp_tab) {
		err = -ENOMEM;
		goto fail;
	}
	if (e->ops->init) {
		err = e->ops->init(e);
		if (err < 0)
			goto fail;
	}
	*out = e;
	return 0;
fail:
	free(e->mrs);
	free(e->qp_tab);
	free(e);
	return err;
}

static void qp_free(struct mroce_engine *e, struct mroce_qp *qp)
{
	if (e->ops->qp_destroy)
		e->ops->qp_destroy(e, qp);
	free(qp->sq);
	free(qp->rq);
	free(qp);
}

void mroce_engine_destroy(struct mroce_engine *e)
{
	if (!e)
		return;
	for (uint32_t i = 0; i < e->qp_tab_size; i++)
		if (e->qp_tab[i])
			qp_free(e, e->qp_tab[i]);
	if (e->ops->fini)
		e->ops->fini(e);
	for (uint32_t i = 0; i < e->ncqs; i++)
		free(e->cqs[i].ring);
	free(e->cqs);
	free(e->peers);
	free(e->mrs);
	free(e->qp_tab);
	free(e->ev);
	free(e);
}

/* ------------------------------------------------------------------ */
/* Peers                                                                */
/* ------------------------------------------------------------------ */
int mroce_peer_add(struct mroce_engine *e, const struct mroce_peer_addr *a)
{
	struct mroce_peer *np;

	if (!e || !a || (a->family != AF_INET && a->family != AF_INET6))
		return -EINVAL;
	for (uint32_t i = 0; i < e->npeers; i++) {
		const struct mroce_peer_addr *b = &e->peers[i].addr;

		if (b->family == a->family &&
		    !memcmp(b->addr, a->addr, sizeof(a->addr)) &&
		    !memcmp(b->local, a->local, sizeof(a->local)))
			return (int)i;
	}
	if (e->npeers >= e->cfg.max_conns)
		return -ENOMEM;
	if (e->npeers == e->peers_cap) {
		uint32_t cap = e->peers_cap ? e->peers_cap * 2 : 16;

		np = realloc(e->peers, cap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		e->peers = np;
		e->peers_cap = cap;
	}
	memset(&e->peers[e->npeers], 0, sizeof(e->peers[0]));
	e->peers[e->npeers].addr = *a;
	return (int)e->npeers++;
}

/* ------------------------------------------------------------------ */
/* Memory regions                                                       */
/* ------------------------------------------------------------------ */
#define ACCESS_ALL                                                             \
	(MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |                \
	 MROCE_ACCESS_REMOTE_READ)

static uint32_t mr_new_key(struct mroce_engine *e, uint32_t idx)
{
	uint32_t k;

	do
		k = (mroce_rng_u32(e) << e->mr_bits) | idx;
	while (k == 0);
	return k;
}

int mroce_reg_mr(struct mroce_engine *e, void *addr, size_t len,
		 uint32_t access, struct mroce_mr *out)
{
	return mroce_reg_mr_iova(e, addr, len, (uint64_t)(uintptr_t)addr,
				 access, out);
}

int mroce_reg_mr_iova(struct mroce_engine *e, void *addr, size_t len,
		      uint64_t iova, uint32_t access, struct mroce_mr *out)
{
	struct mroce_mr_ent *m = NULL;
	uint32_t idx;

	if (!e || !out || (access & ~ACCESS_ALL) || (!addr && len))
		return -EINVAL;
	/* ibverbs: remote write needs local write. */
	if ((access & MROCE_ACCESS_REMOTE_WRITE) &&
	    !(access & MROCE_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if ((uint64_t)(uintptr_t)addr + len < (uint64_t)(uintptr_t)addr ||
	    iova + len < iova)
		return -EINVAL;
	for (idx = 0; idx < e->cfg.max_mrs; idx++) {
		if (!e->mrs[idx].used) {
			m = &e->mrs[idx];
			break;
		}
	}
	if (!m)
		return -ENOMEM;
	m->used = true;
	m->mr.addr = iova;
	m->base = addr;
	m->mr.length = len;
	m->mr.access = access;
	m->mr.lkey = mr_new_key(e, idx);
	m->mr.rkey = mr_new_key(e, idx);
	*out = m->mr;
	return 0;
}

static struct mroce_mr_ent *mr_by_key(const struct mroce_engine *e,
				      uint32_t key, bool remote)
{
	uint32_t idx = key & ((1u << e->mr_bits) - 1);
	struct mroce_mr_ent *m;

	if (key == 0 || idx >= e->cfg.max_mrs)
		return NULL;
	m = &e->mrs[idx];
	if (!m->used || (remote ? m->mr.rkey : m->mr.lkey) != key)
		return NULL;
	return m;
}

int mroce_dereg_mr(struct mroce_engine *e, uint32_t lkey)
{
	struct mroce_mr_ent *m;

	if (!e)
		return -EINVAL;
	m = mr_by_key(e, lkey, false);
	if (!m)
		return -ENOENT;
	memset(m, 0, sizeof(*m));
	return 0;
}

static bool range_in(const struct mroce_mr *mr, uint64_t va, uint64_t len)
{
	return va >= mr->addr && len <= mr->length &&
	       va - mr->addr <= mr->length - len;
}

enum mroce_mr_check mroce_lkey_check(const struct mroce_engine *e,
				     uint32_t lkey, uint64_t addr,
				     uint64_t len, uint32_t need,
				     const struct mroce_mr **mrp)
{
	const struct mroce_mr_ent *m = mr_by_key(e, lkey, false);

	if (!m)
		return MROCE_MRC_BAD_KEY;
	if (!range_in(&m->mr, addr, len))
		return MROCE_MRC_BOUNDS;
	if ((m->mr.access & need) != need)
		return MROCE_MRC_ACCESS;
	if (mrp)
		*mrp = &m->mr;
	return MROCE_MRC_OK;
}

enum mroce_mr_check mroce_rkey_check(const struct mroce_engine *e,
				     const struct mroce_qp *qp, uint32_t rkey,
				     uint64_t va, uint64_t len, uint32_t need)
{
	const struct mroce_mr_ent *m;

	if (len == 0)
		return MROCE_MRC_OK;
	m = mr_by_key(e, rkey, true);
	if (!m)
		return MROCE_MRC_BAD_KEY;
	if (!range_in(&m->mr, va, len))
		return MROCE_MRC_BOUNDS;
	if ((m->mr.access & need) != need || (qp->access & need) != need)
		return MROCE_MRC_ACCESS;
	return MROCE_MRC_OK;
}

uint8_t *mroce_mr_ptr(const struct mroce_engine *e, uint32_t key, bool remote,
		      uint64_t va)
{
	const struct mroce_mr_ent *m = mr_by_key(e, key, remote);

	return m ? m->base + (va - m->mr.addr) : NULL;
}

uint8_t *mroce_wqe_local_ptr(const struct mroce_engine *e,
			     const struct mroce_wqe *w, uint32_t off,
			     uint32_t len, uint32_t need)
{
	const struct mroce_sge *s = &w->wr.sge;

	uint8_t *p;

	if ((uint64_t)off + len > s->length)
		return NULL;
	if (len == 0) {
		/* Nothing is read or written: any non-NULL pointer will do,
		 * and a zero-length SGE need not name a valid region. */
		p = mroce_mr_ptr(e, s->lkey, false, s->addr + off);
		return p ? p : (uint8_t *)(uintptr_t)(s->addr + off);
	}
	if (mroce_lkey_check(e, s->lkey, s->addr + off, len, need, NULL) !=
	    MROCE_MRC_OK)
		return NULL;
	return mroce_mr_ptr(e, s->lkey, false, s->addr + off);
}

/* ------------------------------------------------------------------ */
/* Completion queues                                                    */
/* ------------------------------------------------------------------ */
static struct mroce_cq *cq_get(const struct mroce_engine *e, int cq)
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
	c = cq_get(e, cq);
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
	struct mroce_cq *c = cq_get(e, cq);

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
	c = cq_get(e, cq);
	if (!c)
		return -ENOENT;
	for (i = 0; i < n && c->count; i++) {
		wc[i] = c->ring[c->head];
		c->head = (c->head + 1) % c->depth;
		c->count--;
	}
	return i;
}

/* ------------------------------------------------------------------ */
/* QP table (open addressing, linear probing, backward-shift delete)    */
/* ------------------------------------------------------------------ */
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

/* ------------------------------------------------------------------ */
/* QPs                                                                  */
/* ------------------------------------------------------------------ */
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
	if (!cq_get(e, attr->send_cq) || !cq_get(e, attr->recv_cq))
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
	ev_qp_down(e, qp, qp->peer);
	qp_free(e, qp);
	return 0;
}

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

struct mroce_wqe *mroce_sq_by_msn(const struct mroce_qp *qp, uint32_t msn)
{
	uint32_t n = mroce_sq_count(qp);
	struct mroce_wqe *head;
	uint32_t d;

	if (!n)
		return NULL;
	head = mroce_sq_at(qp, qp->sq_head);
	d = msn - head->msn;
	if (d >= n)
		return NULL;
	return mroce_sq_at(qp, qp->sq_head + d);
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
			e->stats.msgs_completed++;
			e->stats.bytes_completed += w->wr.sge.length;
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
		e->stats.msgs_completed++;
		e->stats.bytes_completed += wc->byte_len;
	}
	return mroce_cq_push(e, qp->recv_cq, wc);
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
	if (e->ops->qp_modify)
		e->ops->qp_modify(e, qp, old, &a, MROCE_QP_STATE, now);
}

static void qp_reset(struct mroce_qp *qp)
{
	qp->sq_head = qp->sq_tail = 0;
	qp->rq_head = qp->rq_tail = 0;
	qp->next_msn = qp->next_ssn = 0;
	qp->rd_head = qp->rd_tail = 0;
	memset(qp->rd, 0, sizeof(qp->rd));
	qp->peer = -1;
	qp->dest_qpn = 0;
	qp->access = 0;
	qp->rq_psn = qp->sq_psn = 0;
	mroce_qp_unsched(qp);
}

/* Allowed transitions (ibverbs RC, without SQD/SQE). */
static bool transition_ok(enum mroce_qp_state cur, enum mroce_qp_state nxt)
{
	if (nxt == MROCE_QPS_RESET || nxt == MROCE_QPS_ERR)
		return true;
	switch (cur) {
	case MROCE_QPS_RESET:
		return nxt == MROCE_QPS_INIT;
	case MROCE_QPS_INIT:
		return nxt == MROCE_QPS_INIT || nxt == MROCE_QPS_RTR;
	case MROCE_QPS_RTR:
		return nxt == MROCE_QPS_RTS;
	case MROCE_QPS_RTS:
		return nxt == MROCE_QPS_RTS;
	default:
		return false;
	}
}

/* Attributes each transition accepts (others: -EINVAL, as ibverbs). */
static uint32_t transition_mask(enum mroce_qp_state cur,
				enum mroce_qp_state nxt)
{
	uint32_t m = MROCE_QP_STATE;

	if (nxt == MROCE_QPS_INIT || nxt == MROCE_QPS_RTS ||
	    (cur == MROCE_QPS_INIT && nxt == MROCE_QPS_RTR))
		m |= MROCE_QP_ACCESS_FLAGS;
	if (cur == MROCE_QPS_INIT && nxt == MROCE_QPS_RTR)
		m |= MROCE_QP_DEST | MROCE_QP_RQ_PSN;
	if (cur == MROCE_QPS_RTR && nxt == MROCE_QPS_RTS)
		m |= MROCE_QP_SQ_PSN;
	return m;
}

int mroce_modify_qp(struct mroce_engine *e, uint32_t qpn,
		    const struct mroce_qp_attr *attr, uint32_t mask,
		    uint64_t now)
{
	struct mroce_qp *qp, saved;
	enum mroce_qp_state cur, nxt;
	int err;

	if (!e || !attr)
		return -EINVAL;
	e->now = now;
	qp = mroce_qp_find(e, qpn);
	if (!qp)
		return -ENOENT;
	cur = qp->state;
	nxt = (mask & MROCE_QP_STATE) ? attr->state : cur;
	if ((unsigned)nxt > MROCE_QPS_ERR)
		return -EINVAL;
	if (!transition_ok(cur, nxt))
		return -EPERM;
	if (mask & ~transition_mask(cur, nxt))
		return -EINVAL;
	if ((mask & MROCE_QP_ACCESS_FLAGS) && (attr->access & ~ACCESS_ALL))
		return -EINVAL;
	if (cur == MROCE_QPS_INIT && nxt == MROCE_QPS_RTR) {
		if (!(mask & MROCE_QP_DEST))
			return -EINVAL;
		if (!mroce_peer_get(e, attr->peer) || attr->dest_qpn == 0 ||
		    attr->dest_qpn > 0xffffff)
			return -EINVAL;
	}

	if (nxt == MROCE_QPS_ERR) {
		mroce_qp_to_err(e, qp, now);
		return 0;
	}
	/* RoCEv2: room for QP_UP and its later QP_DOWN, before changing
	 * anything (an event is never dropped). */
	if (cur == MROCE_QPS_INIT && nxt == MROCE_QPS_RTR && !qp->ev_up &&
	    e->cfg.transport == MROCE_TRANSPORT_ROCEV2 &&
	    mroce_ev_reserve(e, 2) < 0)
		return -ENOMEM;
	saved = *qp;
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
	if (e->ops->qp_modify) {
		err = e->ops->qp_modify(e, qp, cur, attr, mask, now);
		if (err < 0) {
			*qp = saved;
			return err;
		}
	}
	if (nxt == MROCE_QPS_RESET)
		ev_qp_down(e, qp, saved.peer);
	else if (cur == MROCE_QPS_INIT && nxt == MROCE_QPS_RTR &&
		 e->cfg.transport == MROCE_TRANSPORT_ROCEV2)
		ev_qp_up(e, qp);
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

/* ------------------------------------------------------------------ */
/* Work requests                                                        */
/* ------------------------------------------------------------------ */
/* Messages that consume a receive at the responder (ssn counts them). */
static bool wr_consumes_recv(enum mroce_wr_opcode op)
{
	return op == MROCE_WR_SEND || op == MROCE_WR_SEND_WITH_IMM ||
	       op == MROCE_WR_RDMA_WRITE_WITH_IMM;
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
	w->msn = qp->next_msn;
	w->ssn = qp->next_ssn;
	qp->sq_tail++;
	if (e->ops->post_send) {
		err = e->ops->post_send(e, qp, w, now);
		if (err < 0) {
			qp->sq_tail--;
			return err;
		}
	}
	qp->next_msn++;
	if (wr_consumes_recv(wr->opcode))
		qp->next_ssn++;
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

/* ------------------------------------------------------------------ */
/* Packet I/O and timers: the transport's business                       */
/* ------------------------------------------------------------------ */
int mroce_engine_rx(struct mroce_engine *e, const struct mroce_rx_meta *m,
		    const void *buf, size_t len, uint64_t now)
{
	if (!e || !m || (!buf && len))
		return -EINVAL;
	e->now = now;
	return e->ops->rx(e, m, buf, len, now);
}

int mroce_engine_tx(struct mroce_engine *e, struct mroce_tx_pkt *pkts,
		    int n, size_t buf_cap, uint64_t now)
{
	if (!e || n < 0 || (n && !pkts))
		return -EINVAL;
	e->now = now;
	return e->ops->tx(e, pkts, n, buf_cap, now);
}

void mroce_engine_tick(struct mroce_engine *e, uint64_t now)
{
	if (!e)
		return;
	e->now = now;
	e->ops->tick(e, now);
}

uint64_t mroce_engine_next_timer(const struct mroce_engine *e, uint64_t now)
{
	if (!e)
		return UINT64_MAX;
	return e->ops->next_timer(e, now);
}

void mroce_engine_get_stats(const struct mroce_engine *e,
			    struct mroce_engine_stats *st)
{
	if (e && st)
		*st = e->stats;
}

int mroce_engine_path_info(const struct mroce_engine *e, int peer, int idx,
			   struct mroce_path_info *out)
{
	if (!e || !out)
		return -EINVAL;
	if (!e->ops->path_info)
		return -ENOENT;
	return e->ops->path_info(e, peer, idx, out);
}

size_t mroce_engine_conn_mem(const struct mroce_engine *e)
{
	if (!e || !e->ops->conn_mem)
		return 0;
	return e->ops->conn_mem(e);
}

/* ------------------------------------------------------------------ */
/* Events for the I/O layer                                             */
/* ------------------------------------------------------------------ */
/* Ring capacity at least `need` (a power of two); -ENOMEM otherwise. */
static int ev_grow(struct mroce_engine *e, uint64_t need)
{
	struct mroce_engine_event *n;
	uint64_t cap = e->ev_cap ? e->ev_cap : 16;

	if (need <= e->ev_cap)
		return 0;
	while (cap < need)
		cap *= 2;
	if (cap > UINT32_MAX / 2 || cap > SIZE_MAX / sizeof(*n))
		return -ENOMEM;
	n = malloc((size_t)cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (uint32_t i = 0; i < e->ev_n; i++)
		n[i] = e->ev[(e->ev_head + i) % e->ev_cap];
	free(e->ev);
	e->ev = n;
	e->ev_cap = (uint32_t)cap;
	e->ev_head = 0;
	return 0;
}

int mroce_ev_reserve(struct mroce_engine *e, uint32_t k)
{
	return ev_grow(e, (uint64_t)e->ev_n + e->ev_owed + k);
}

static void ev_push(struct mroce_engine *e, uint8_t type, int peer,
		    uint32_t id, uint32_t peer_id, uint32_t slot)
{
	/* Room was reserved; growing here is only a second chance. */
	if (e->ev_n == e->ev_cap && ev_grow(e, (uint64_t)e->ev_n + 1) < 0)
		return;
	e->ev[(e->ev_head + e->ev_n) % e->ev_cap] =
		(struct mroce_engine_event){
			.type = type,
			.peer = peer,
			.id = id,
			.peer_id = peer_id,
			.slot = slot,
		};
	e->ev_n++;
}

void mroce_ev_conn_up(struct mroce_engine *e, int peer, uint32_t id,
		      uint32_t slot)
{
	ev_push(e, MROCE_EV_CONN_UP, peer, id, 0, slot);
	e->ev_owed += 2; /* its peer_id update and its CONN_DOWN */
}

void mroce_ev_conn_update(struct mroce_engine *e, int peer, uint32_t id,
			  uint32_t peer_id, uint32_t slot)
{
	ev_push(e, MROCE_EV_CONN_UP, peer, id, peer_id, slot);
	/* Keep room for a later update of this connection (after a new
	 * handshake); this path cannot fail, so only try. */
	(void)mroce_ev_reserve(e, 0);
}

void mroce_ev_conn_down(struct mroce_engine *e, int peer, uint32_t id,
			uint32_t slot)
{
	ev_push(e, MROCE_EV_CONN_DOWN, peer, id, 0, slot);
	e->ev_owed = e->ev_owed >= 2 ? e->ev_owed - 2 : 0;
}

static void ev_qp_up(struct mroce_engine *e, struct mroce_qp *qp)
{
	if (qp->ev_up)
		return;
	ev_push(e, MROCE_EV_QP_UP, qp->peer, qp->qpn, 0, 0);
	qp->ev_up = true;
	e->ev_owed++;
}

static void ev_qp_down(struct mroce_engine *e, struct mroce_qp *qp, int peer)
{
	if (!qp->ev_up)
		return;
	ev_push(e, MROCE_EV_QP_DOWN, peer, qp->qpn, 0, 0);
	qp->ev_up = false;
	if (e->ev_owed)
		e->ev_owed--;
}

int mroce_engine_poll_event(struct mroce_engine *e,
			    struct mroce_engine_event *ev)
{
	if (!e || !ev)
		return -EINVAL;
	if (!e->ev_n)
		return 0;
	*ev = e->ev[e->ev_head];
	e->ev_head = (e->ev_head + 1) % e->ev_cap;
	e->ev_n--;
	return 1;
}
