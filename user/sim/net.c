// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The simulated fabric: a random number generator, an event heap and a
 * model of links as FIFO queues in front of a wire.
 *
 * A link never holds a list of queued packets. Because service is FIFO at
 * a fixed rate, everything about a packet's fate is known when it joins
 * the queue: it leaves at max(now, free_at) + serialisation time, and the
 * backlog it sees is (free_at - now) worth of bytes at the link rate. So
 * one event per packet per hop is enough, and the model is exact for a
 * drop-tail FIFO. Packets come from a pool that only grows (in chunks)
 * while the number in flight reaches a new maximum: no malloc per packet
 * in steady state.
 */
#include "mroce/sim.h"
#include "../common/rng.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* RNG                                                                  */
/* ------------------------------------------------------------------ */
void mroce_sim_rng_seed(struct mroce_sim_rng *r, uint64_t seed)
{
	mroce_xoshiro_seed(r->s, seed);
}

uint64_t mroce_sim_rng_next(struct mroce_sim_rng *r)
{
	return mroce_xoshiro_next(r->s);
}

double mroce_sim_rng_double(struct mroce_sim_rng *r)
{
	return (double)(mroce_sim_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t mroce_sim_rng_below(struct mroce_sim_rng *r, uint64_t n)
{
	/* multiply-shift: the bias is < n / 2^64, far below anything a
	 * simulation run can observe */
	return (uint64_t)(((unsigned __int128)mroce_sim_rng_next(r) * n) >> 64);
}

static inline uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

uint32_t mroce_sim_ecmp_hash(uint32_t src, uint32_t dst, uint16_t sport,
			     uint16_t dport)
{
	/* A fixed function (no per-run seed): the port -> plane map is the
	 * same in every run, like a switch with a configured hash seed. */
	uint64_t k = ((uint64_t)src << 32 | dst) ^
		     fmix64(((uint64_t)sport << 16 | dport) + 17);

	return (uint32_t)(fmix64(k) >> 32);
}

/* ------------------------------------------------------------------ */
/* Net state                                                            */
/* ------------------------------------------------------------------ */
#define EV_PKT		0xffffffffu	/* internal: a packet reaches a node */
#define POOL_CHUNK	256

enum hop {
	HOP_SRC_LEAF = 0,	/* arrives at the source leaf: pick a plane */
	HOP_DST_LEAF = 1,	/* arrives at the destination leaf */
	HOP_HOST = 2,		/* arrives at the destination host */
};

struct ev {
	uint64_t t;
	uint64_t seq;		/* FIFO among equal times: determinism */
	uint32_t kind;
	uint64_t arg;
};

struct link {
	uint64_t free_at;	/* the wire is busy until then */
	struct mroce_sim_link_stats st;
};

struct pair {
	uint64_t key;		/* (a << 32 | b) + 1; 0 = empty slot */
	struct link *planes;	/* npaths */
};

struct chunk {
	struct chunk *next;
	struct mroce_sim_pkt pkts[POOL_CHUNK];
};

struct mroce_sim_net {
	struct mroce_sim_net_cfg cfg;
	struct mroce_sim_link_cfg up_cfg;	/* host uplinks */
	uint32_t *leaf;				/* per host */
	struct link *up, *down;			/* per host */
	struct pair *pairs;			/* open addressing */
	uint32_t pair_cap, npairs;

	struct ev *heap;
	uint32_t heap_len, heap_cap;
	uint64_t seq, now, digest, next_id;

	struct mroce_sim_pkt *free;
	struct chunk *chunks;
	uint64_t allocated, in_flight;

	struct mroce_sim_rng rng;
	mroce_sim_deliver_fn deliver;
	mroce_sim_event_fn event;
	void *ctx;
};

/* ------------------------------------------------------------------ */
/* Event heap (binary, min on (t, seq))                                 */
/* ------------------------------------------------------------------ */
static inline bool ev_less(const struct ev *a, const struct ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int heap_push(struct mroce_sim_net *n, uint64_t t, uint32_t kind,
		     uint64_t arg)
{
	uint32_t i;

	if (n->heap_len == n->heap_cap) {
		uint32_t cap = n->heap_cap ? n->heap_cap * 2 : 1024;
		struct ev *h = realloc(n->heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		n->heap = h;
		n->heap_cap = cap;
	}
	struct ev e = { .t = t, .seq = n->seq++, .kind = kind, .arg = arg };

	i = n->heap_len++;
	while (i > 0) {
		uint32_t p = (i - 1) / 2;

		if (!ev_less(&e, &n->heap[p]))
			break;
		n->heap[i] = n->heap[p];
		i = p;
	}
	n->heap[i] = e;
	return 0;
}

static struct ev heap_pop(struct mroce_sim_net *n)
{
	struct ev top = n->heap[0];
	struct ev last = n->heap[--n->heap_len];
	uint32_t i = 0, len = n->heap_len;

	while (len) {
		uint32_t c = 2 * i + 1;

		if (c >= len)
			break;
		if (c + 1 < len && ev_less(&n->heap[c + 1], &n->heap[c]))
			c++;
		if (!ev_less(&n->heap[c], &last))
			break;
		n->heap[i] = n->heap[c];
		i = c;
	}
	if (len)
		n->heap[i] = last;
	return top;
}

/* ------------------------------------------------------------------ */
/* Pool                                                                 */
/* ------------------------------------------------------------------ */
struct mroce_sim_pkt *mroce_sim_net_alloc(struct mroce_sim_net *n)
{
	struct mroce_sim_pkt *p;

	if (!n->free) {
		struct chunk *c = calloc(1, sizeof(*c));
		uint8_t *bufs;

		if (!c)
			return NULL;
		bufs = malloc((size_t)POOL_CHUNK * n->cfg.max_frame);
		if (!bufs) {
			free(c);
			return NULL;
		}
		/* the first packet of a chunk owns the chunk's buffers */
		for (int i = POOL_CHUNK - 1; i >= 0; i--) {
			c->pkts[i].data = bufs + (size_t)i * n->cfg.max_frame;
			c->pkts[i].next = n->free;
			n->free = &c->pkts[i];
		}
		c->next = n->chunks;
		n->chunks = c;
		n->allocated += POOL_CHUNK;
	}
	p = n->free;
	n->free = p->next;
	uint8_t *data = p->data;

	memset(p, 0, sizeof(*p));
	p->data = data;
	p->path = 0xffff;
	n->in_flight++;
	return p;
}

void mroce_sim_net_free(struct mroce_sim_net *n, struct mroce_sim_pkt *p)
{
	p->next = n->free;
	n->free = p;
	n->in_flight--;
}

void mroce_sim_net_pool(const struct mroce_sim_net *n, uint64_t *allocated,
			uint64_t *in_flight)
{
	*allocated = n->allocated;
	*in_flight = n->in_flight;
}

/* ------------------------------------------------------------------ */
/* Create / destroy                                                     */
/* ------------------------------------------------------------------ */
static bool link_cfg_ok(const struct mroce_sim_link_cfg *l)
{
	return l->rate_bps > 0 && l->loss >= 0 && l->loss <= 1 &&
	       l->dup >= 0 && l->dup <= 1 && l->corrupt >= 0 &&
	       l->corrupt <= 1;
}

int mroce_sim_net_create(const struct mroce_sim_net_cfg *cfg,
			 mroce_sim_deliver_fn deliver,
			 mroce_sim_event_fn event, void *ctx,
			 struct mroce_sim_net **out)
{
	struct mroce_sim_net *n;

	if (!cfg || !out || !deliver || cfg->nhosts == 0 ||
	    cfg->nleaves == 0 || cfg->npaths == 0 ||
	    cfg->npaths > MROCE_SIM_MAX_PATHS || cfg->max_frame == 0 ||
	    !link_cfg_ok(&cfg->host))
		return -EINVAL;
	for (uint32_t i = 0; i < cfg->npaths; i++)
		if (!link_cfg_ok(&cfg->path[i]))
			return -EINVAL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->cfg = *cfg;
	n->cfg.host_leaf = NULL;
	n->deliver = deliver;
	n->event = event;
	n->ctx = ctx;
	n->leaf = calloc(cfg->nhosts, sizeof(*n->leaf));
	n->up = calloc(cfg->nhosts, sizeof(*n->up));
	n->down = calloc(cfg->nhosts, sizeof(*n->down));
	n->pair_cap = 64;
	n->pairs = calloc(n->pair_cap, sizeof(*n->pairs));
	if (!n->leaf || !n->up || !n->down || !n->pairs) {
		mroce_sim_net_destroy(n);
		return -ENOMEM;
	}
	for (uint32_t h = 0; h < cfg->nhosts; h++) {
		uint32_t l = cfg->host_leaf ? cfg->host_leaf[h]
					    : h % cfg->nleaves;

		if (l >= cfg->nleaves) {
			mroce_sim_net_destroy(n);
			return -EINVAL;
		}
		n->leaf[h] = l;
	}
	/* The uplink is the sending NIC itself: the host never offers more
	 * than it can serialise, so it needs no limit and sees no loss. */
	n->up_cfg = cfg->host;
	n->up_cfg.queue_bytes = 0;
	n->up_cfg.ecn_bytes = 0;
	n->up_cfg.loss = n->up_cfg.dup = n->up_cfg.corrupt = 0;
	n->up_cfg.blackhole_at = MROCE_SIM_NEVER;
	mroce_sim_rng_seed(&n->rng, cfg->seed);
	n->digest = 0xcbf29ce484222325ull ^ cfg->seed;
	*out = n;
	return 0;
}

void mroce_sim_net_destroy(struct mroce_sim_net *n)
{
	if (!n)
		return;
	while (n->chunks) {
		struct chunk *c = n->chunks;

		n->chunks = c->next;
		free(c->pkts[0].data);
		free(c);
	}
	for (uint32_t i = 0; n->pairs && i < n->pair_cap; i++)
		free(n->pairs[i].planes);
	free(n->pairs);
	free(n->heap);
	free(n->leaf);
	free(n->up);
	free(n->down);
	free(n);
}

/* ------------------------------------------------------------------ */
/* Leaf pairs: created on first use, so a star of 4,000 hosts costs     */
/* 2 x 4,000 pairs, not 4,000^2.                                        */
/* ------------------------------------------------------------------ */
static struct pair *pair_find(const struct mroce_sim_net *n, uint64_t key)
{
	uint32_t mask = n->pair_cap - 1;
	uint32_t i = (uint32_t)fmix64(key) & mask;

	while (n->pairs[i].key && n->pairs[i].key != key)
		i = (i + 1) & mask;
	return &n->pairs[i];
}

static int pair_grow(struct mroce_sim_net *n)
{
	struct pair *old = n->pairs;
	uint32_t old_cap = n->pair_cap;

	n->pairs = calloc(old_cap * 2, sizeof(*n->pairs));
	if (!n->pairs) {
		n->pairs = old;
		return -ENOMEM;
	}
	n->pair_cap = old_cap * 2;
	for (uint32_t i = 0; i < old_cap; i++)
		if (old[i].key)
			*pair_find(n, old[i].key) = old[i];
	free(old);
	return 0;
}

static struct link *pair_planes(struct mroce_sim_net *n, uint32_t a,
				uint32_t b)
{
	uint64_t key = ((uint64_t)a << 32 | b) + 1;
	struct pair *p = pair_find(n, key);

	if (p->key)
		return p->planes;
	if ((n->npairs + 1) * 2 > n->pair_cap) {
		if (pair_grow(n))
			return NULL;
		p = pair_find(n, key);
	}
	p->planes = calloc(n->cfg.npaths, sizeof(*p->planes));
	if (!p->planes)
		return NULL;
	p->key = key;
	n->npairs++;
	return p->planes;
}

/* ------------------------------------------------------------------ */
/* Links                                                                */
/* ------------------------------------------------------------------ */
static inline uint64_t ser_ns(uint64_t bytes, uint64_t rate_bps)
{
	/* rounded up, so a busy link is never shorter than its bits */
	return (uint64_t)(((unsigned __int128)bytes * 8000000000ull +
			   rate_bps - 1) / rate_bps);
}

static inline uint64_t backlog_bytes(const struct link *l, uint64_t now,
				     uint64_t rate_bps)
{
	if (l->free_at <= now)
		return 0;
	return (uint64_t)(((unsigned __int128)(l->free_at - now) * rate_bps) /
			  8000000000ull);
}

static void drop(struct mroce_sim_net *n, struct mroce_sim_pkt *p)
{
	mroce_sim_net_mix(n, 0xd4 ^ p->id);
	mroce_sim_net_free(n, p);
}

static inline bool chance(struct mroce_sim_net *n, double prob)
{
	return prob > 0 && mroce_sim_rng_double(&n->rng) < prob;
}

/* p joins the queue of link l (configured by c) at `now`; on success an
 * event brings it to the next node. Impairments are applied at the queue
 * entrance, in a fixed order so that random draws are reproducible. */
static void link_enqueue(struct mroce_sim_net *n, struct link *l,
			 const struct mroce_sim_link_cfg *c,
			 struct mroce_sim_pkt *p, uint64_t now, bool may_dup)
{
	uint64_t wire = (uint64_t)p->len + MROCE_SIM_WIRE_OVERHEAD;
	uint64_t backlog, dep;

	if (mroce_sim_link_down(c, now)) {
		l->st.drop_blackhole++;
		drop(n, p);
		return;
	}
	if (chance(n, c->loss)) {
		l->st.drop_loss++;
		drop(n, p);
		return;
	}
	backlog = backlog_bytes(l, now, c->rate_bps);
	if (c->queue_bytes && backlog + wire > c->queue_bytes) {
		l->st.drop_tail++;
		drop(n, p);
		return;
	}
	if (p->ect && !p->ce &&
	    ((c->ecn_bytes && backlog > c->ecn_bytes) ||
	     (c->ce_mark > 0 && chance(n, c->ce_mark)))) {
		p->ce = true;
		l->st.ce_marks++;
	}
	if (p->len && chance(n, c->corrupt)) {
		uint32_t at = (uint32_t)mroce_sim_rng_below(&n->rng, p->len);

		p->data[at] ^= (uint8_t)(1 + mroce_sim_rng_below(&n->rng, 255));
		p->corrupted = true;
		l->st.corrupts++;
	}
	dep = (l->free_at > now ? l->free_at : now) + ser_ns(wire, c->rate_bps);
	l->free_at = dep;
	l->st.tx_pkts++;
	l->st.tx_bytes += p->len;
	if (backlog + wire > l->st.max_backlog)
		l->st.max_backlog = backlog + wire;
	p->hop++;
	if (heap_push(n, dep + c->delay_ns, EV_PKT, (uint64_t)(uintptr_t)p)) {
		drop(n, p);	/* out of memory: the fabric loses it */
		return;
	}
	if (may_dup && chance(n, c->dup)) {
		struct mroce_sim_pkt *d = mroce_sim_net_alloc(n);

		if (!d)
			return;
		uint8_t *data = d->data;

		*d = *p;
		d->data = data;
		memcpy(d->data, p->data, p->len);
		d->duplicate = true;
		d->hop--;
		l->st.dups++;
		link_enqueue(n, l, c, d, now, false);
	}
}

uint64_t mroce_sim_net_send(struct mroce_sim_net *n, struct mroce_sim_pkt *p,
			    uint64_t now)
{
	struct link *up = &n->up[p->src];

	if (now < n->now)
		now = n->now;
	p->sent_at = now;
	p->id = n->next_id++;
	p->ce = p->corrupted = p->duplicate = false;
	p->path = 0xffff;
	mroce_sim_net_mix(n, p->id ^ (uint64_t)p->len << 40);
	/* the hop counter moves from HOP_SRC_LEAF - 1; start below it */
	p->hop = (uint8_t)(HOP_SRC_LEAF - 1);
	link_enqueue(n, up, &n->up_cfg, p, now, false);
	return up->free_at;
}

static void pkt_event(struct mroce_sim_net *n, struct mroce_sim_pkt *p)
{
	uint32_t sl = n->leaf[p->src], dl = n->leaf[p->dst];

	switch (p->hop) {
	case HOP_SRC_LEAF:
		if (sl != dl) {
			struct link *planes = pair_planes(n, sl, dl);
			uint32_t i;

			if (!planes) {
				drop(n, p);
				return;
			}
			i = mroce_sim_ecmp_hash(p->src, p->dst, p->sport,
						p->dport) % n->cfg.npaths;
			p->path = (uint16_t)i;
			link_enqueue(n, &planes[i], &n->cfg.path[i], p, n->now,
				     true);
			return;
		}
		/* same leaf: straight to the downlink */
		p->hop = HOP_DST_LEAF;
		__attribute__((fallthrough));
	case HOP_DST_LEAF:
		link_enqueue(n, &n->down[p->dst], &n->cfg.host, p, n->now,
			     true);
		return;
	default:
		n->deliver(n->ctx, p, n->now);
		mroce_sim_net_free(n, p);
		return;
	}
}

/* ------------------------------------------------------------------ */
/* Running                                                              */
/* ------------------------------------------------------------------ */
void mroce_sim_net_mix(struct mroce_sim_net *n, uint64_t v)
{
	n->digest = fmix64(n->digest ^ v) + 0x9e3779b97f4a7c15ull;
}

int mroce_sim_net_at(struct mroce_sim_net *n, uint64_t at, uint32_t kind,
		     uint64_t arg)
{
	if (kind == EV_PKT)
		return -EINVAL;
	return heap_push(n, at < n->now ? n->now : at, kind, arg);
}

int mroce_sim_net_step(struct mroce_sim_net *n)
{
	struct ev e;

	if (!n->heap_len)
		return 0;
	e = heap_pop(n);
	n->now = e.t;
	if (e.kind == EV_PKT) {
		struct mroce_sim_pkt *p = (void *)(uintptr_t)e.arg;

		mroce_sim_net_mix(n, e.t ^ p->id << 3 ^ p->hop);
		pkt_event(n, p);
	} else {
		mroce_sim_net_mix(n, e.t ^ (uint64_t)e.kind << 48 ^ e.arg);
		if (n->event)
			n->event(n->ctx, e.kind, e.arg, e.t);
	}
	return 1;
}

uint64_t mroce_sim_net_run(struct mroce_sim_net *n, uint64_t until)
{
	uint64_t cnt = 0;

	while (n->heap_len && n->heap[0].t <= until) {
		mroce_sim_net_step(n);
		cnt++;
	}
	if (until != MROCE_SIM_NEVER && until > n->now)
		n->now = until;
	return cnt;
}

uint64_t mroce_sim_net_now(const struct mroce_sim_net *n)
{
	return n->now;
}

uint64_t mroce_sim_net_next(const struct mroce_sim_net *n)
{
	return n->heap_len ? n->heap[0].t : MROCE_SIM_NEVER;
}

uint64_t mroce_sim_net_digest(const struct mroce_sim_net *n)
{
	return n->digest;
}

uint32_t mroce_sim_net_leaf(const struct mroce_sim_net *n, uint32_t host)
{
	return host < n->cfg.nhosts ? n->leaf[host] : UINT32_MAX;
}

static void stats_add(struct mroce_sim_link_stats *d,
		      const struct mroce_sim_link_stats *s)
{
	d->tx_pkts += s->tx_pkts;
	d->tx_bytes += s->tx_bytes;
	d->drop_tail += s->drop_tail;
	d->drop_loss += s->drop_loss;
	d->drop_blackhole += s->drop_blackhole;
	d->dups += s->dups;
	d->corrupts += s->corrupts;
	d->ce_marks += s->ce_marks;
	if (s->max_backlog > d->max_backlog)
		d->max_backlog = s->max_backlog;
}

int mroce_sim_net_path_stats(const struct mroce_sim_net *n, uint32_t a,
			     uint32_t b, uint32_t path,
			     struct mroce_sim_link_stats *st)
{
	if (path >= n->cfg.npaths)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	for (uint32_t i = 0; i < n->pair_cap; i++) {
		const struct pair *p = &n->pairs[i];
		uint32_t pa, pb;

		if (!p->key)
			continue;
		pa = (uint32_t)((p->key - 1) >> 32);
		pb = (uint32_t)(p->key - 1);
		if ((a == UINT32_MAX || a == pa) &&
		    (b == UINT32_MAX || b == pb))
			stats_add(st, &p->planes[path].st);
	}
	return 0;
}

int mroce_sim_net_host_stats(const struct mroce_sim_net *n, uint32_t host,
			     struct mroce_sim_link_stats *st)
{
	if (host >= n->cfg.nhosts)
		return -EINVAL;
	*st = n->down[host].st;
	return 0;
}
