// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce engine core: configuration, the seeded RNG, create/destroy, peers,
 * and the entry points the I/O layer drives (packets in and out, timers,
 * stats), each handed to the transport (engine_int.h has the contract).
 * The verbs objects live beside it: mr.c, cq.c, qp.c, wq.c; events.c
 * holds the event ring for the I/O layer.
 */
#include <stdlib.h>
#include <sys/socket.h>

#include "engine_int.h"
#include "../common/rng.h"

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
		cfg->link_bps = MROCE_DEFAULT_LINK_BPS;
	if (!cfg->rto_min_us)
		cfg->rto_min_us = 200;
	if (!cfg->retry_cnt)
		cfg->retry_cnt = 7;
	if (!cfg->rnr_retry)
		cfg->rnr_retry = 7;
}

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

void mroce_engine_destroy(struct mroce_engine *e)
{
	if (!e)
		return;
	for (uint32_t i = 0; i < e->qp_tab_size; i++)
		if (e->qp_tab[i])
			mroce_qp_free(e, e->qp_tab[i]);
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
