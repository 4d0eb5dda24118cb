/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A tiny in-test network for engine tests: N engines, fully meshed, every
 * packet delivered after a fixed one-way delay unless a filter drops,
 * duplicates or delays it. Virtual time; deterministic.
 *
 * Header-only (static functions) so each engine test file can use it
 * without a shared object in the test build.
 */
#ifndef MROCE_TESTS_ENGINE_PUMP_H
#define MROCE_TESTS_ENGINE_PUMP_H

#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "mroce/codec.h"
#include "mroce/engine.h"

#define PUMP_MAX	10
#define PUMP_CAP	(MROCE_MAX_PAYLOAD + 256)

enum pump_verdict {
	PUMP_PASS = 0,
	PUMP_DROP,
	PUMP_DUP,	/* deliver twice */
	PUMP_LATE,	/* deliver after 10 extra delays */
	PUMP_CE_LATE,	/* like LATE, and marked CE (a congested path) */
};

struct pump;
/* Called for every packet sent; pk is the parsed MetaRoCE packet (or
 * NULL if it does not parse as one). */
typedef enum pump_verdict (*pump_filter_fn)(struct pump *p, int src,
					    int dst,
					    const struct mroce_tx_pkt *tx,
					    const struct mroce_meta_pkt *pk);

struct pump_pkt {
	struct pump_pkt *next;
	uint64_t at;
	bool ce;
	int src, dst;
	uint16_t sport;
	uint32_t len;
	uint8_t buf[];
};

struct pump {
	int n;
	struct mroce_engine *e[PUMP_MAX];
	int peer[PUMP_MAX][PUMP_MAX];	/* id of engine j inside engine i */
	uint64_t now;
	uint64_t delay;			/* one-way, ns */
	struct pump_pkt *q;		/* sorted by at */
	struct pump_pkt *tail;		/* last of q (O(1) FIFO append) */
	pump_filter_fn filter;
	void *ctx;
	uint64_t sent, dropped, delivered;
	uint64_t spins;		/* next_timer said "now" but nothing moved */
	bool ce_all;			/* mark every packet CE */
	/* Optional bottleneck: each engine's downlink serialises at
	 * link_bps with a FIFO queue; queueing delay above ecn_ns marks CE,
	 * above limit_ns drops (0 = no bottleneck). */
	uint64_t link_bps, ecn_ns, limit_ns;
	uint64_t link_free[PUMP_MAX];
	uint64_t qdrops, qmarks, max_qdelay;
};

static inline void pump_enqueue(struct pump *p, int src, int dst,
				const struct mroce_tx_pkt *t, uint64_t at,
				bool ce)
{
	struct pump_pkt *k, **pp;

	if (p->link_bps) {
		uint64_t start = at > p->link_free[dst] ? at : p->link_free[dst];
		uint64_t q = start - at;

		if (q > p->max_qdelay)
			p->max_qdelay = q;
		if (p->limit_ns && q > p->limit_ns) {
			p->qdrops++;
			return;
		}
		if (p->ecn_ns && q > p->ecn_ns && t->ect) {
			ce = true;
			p->qmarks++;
		}
		at = start + (uint64_t)(t->len + 64) * 8000000000ull /
				     p->link_bps;
		p->link_free[dst] = at;
	}
	k = malloc(sizeof(*k) + t->len);
	k->ce = ce;
	k->at = at;
	k->src = src;
	k->dst = dst;
	k->sport = t->sport;
	k->len = t->len;
	memcpy(k->buf, t->buf, t->len);
	k->next = NULL;
	if (!p->q || p->tail->at <= at) {	/* the common case */
		if (p->q)
			p->tail->next = k;
		else
			p->q = k;
		p->tail = k;
		return;
	}
	for (pp = &p->q; *pp && (*pp)->at <= at; pp = &(*pp)->next)
		;
	k->next = *pp;
	*pp = k;
}

static inline int pump_init(struct pump *p, int n,
			    const struct mroce_engine_cfg *base)
{
	memset(p, 0, sizeof(*p));
	p->n = n;
	p->delay = 2000;
	p->now = 1000000000ull;
	for (int i = 0; i < n; i++) {
		struct mroce_engine_cfg cfg = *base;
		int err;

		cfg.seed = base->seed * 1000 + (uint64_t)i + 1;
		memset(cfg.secret, 0x40 + i, sizeof(cfg.secret));
		err = mroce_engine_create(&cfg, &p->e[i]);
		if (err)
			return err;
	}
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < n; j++) {
			struct mroce_peer_addr a = { .family = AF_INET };

			if (i == j) {
				p->peer[i][j] = -1;
				continue;
			}
			a.addr[0] = 10;
			a.addr[3] = (uint8_t)(j + 1);
			a.local[0] = 10;
			a.local[3] = (uint8_t)(i + 1);
			p->peer[i][j] = mroce_peer_add(p->e[i], &a);
			if (p->peer[i][j] < 0)
				return p->peer[i][j];
		}
	}
	return 0;
}

static inline void pump_fini(struct pump *p)
{
	while (p->q) {
		struct pump_pkt *k = p->q;

		p->q = k->next;
		free(k);
	}
	p->tail = NULL;
	for (int i = 0; i < p->n; i++) {
		struct mroce_engine_stats st;

		/* Every state change was legal: an illegal one is refused
		 * and counted, so it would otherwise go unnoticed. */
		if (p->e[i]) {
			mroce_engine_get_stats(p->e[i], &st);
			ck_assert_uint_eq(st.state_errors, 0);
		}
		mroce_engine_destroy(p->e[i]);
	}
}

/* Transmit from every engine, deliver everything due. true if anything
 * moved. */
static inline bool pump_step(struct pump *p)
{
	static uint8_t bufs[64][PUMP_CAP];
	struct mroce_tx_pkt tx[64];
	bool moved = false;

	for (int i = 0; i < p->n; i++) {
		int cnt;

		mroce_engine_tick(p->e[i], p->now);
		for (int k = 0; k < 64; k++)
			tx[k].buf = bufs[k];
		cnt = mroce_engine_tx(p->e[i], tx, 64, PUMP_CAP, p->now);
		for (int k = 0; k < cnt; k++) {
			struct mroce_meta_pkt pk;
			enum pump_verdict v = PUMP_PASS;
			int dst = -1;

			for (int j = 0; j < p->n; j++)
				if (p->peer[i][j] == tx[k].peer)
					dst = j;
			if (dst < 0)
				continue;
			p->sent++;
			moved = true;
			if (p->filter)
				v = p->filter(p, i, dst, &tx[k],
					      mroce_meta_parse(tx[k].buf,
							     tx[k].len,
							     &pk) == 0 ?
						      &pk :
						      NULL);
			if (v == PUMP_DROP) {
				p->dropped++;
				continue;
			}
			pump_enqueue(p, i, dst, &tx[k],
				     p->now + p->delay *
						      (v >= PUMP_LATE ? 11 : 1),
				     v == PUMP_CE_LATE && tx[k].ect);
			if (v == PUMP_DUP)
				pump_enqueue(p, i, dst, &tx[k],
					     p->now + p->delay + 100, false);
		}
	}
	while (p->q && p->q->at <= p->now) {
		struct pump_pkt *k = p->q;
		struct mroce_rx_meta m = {
			.peer = p->peer[k->dst][k->src],
			.sport = k->sport,
			.ce = p->ce_all || k->ce,
		};

		p->q = k->next;
		if (!p->q)
			p->tail = NULL;
		mroce_engine_rx(p->e[k->dst], &m, k->buf, k->len, p->now);
		p->delivered++;
		free(k);
		moved = true;
	}
	return moved;
}

typedef bool (*pump_cond_fn)(struct pump *p, void *arg);

/* Run until cond() holds or `limit_ns` of virtual time passed. */
static inline bool pump_run(struct pump *p, pump_cond_fn cond, void *arg,
			    uint64_t limit_ns)
{
	uint64_t end = p->now + limit_ns;
	int idle = 0;

	while (p->now <= end) {
		uint64_t next = UINT64_MAX;
		bool moved = pump_step(p);

		if (cond && cond(p, arg))
			return true;
		for (int i = 0; i < p->n; i++) {
			uint64_t t = mroce_engine_next_timer(p->e[i], p->now);

			if (t < next)
				next = t;
		}
		if (p->q && p->q->at < next)
			next = p->q->at;
		if (next == UINT64_MAX)
			return cond ? cond(p, arg) : true;
		if (next <= p->now) {
			if (!moved && ++idle > 2) {
				p->now += 100;	/* nothing sendable yet */
				p->spins++;
				idle = 0;
			}
			continue;
		}
		idle = 0;
		p->now = next;
	}
	return cond ? cond(p, arg) : false;
}

#endif
