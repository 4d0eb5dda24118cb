/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * INTERNAL header of the mroce engine (user/engine/ only; never installed).
 *
 * The engine core owns the verbs objects and everything generic about
 * them: engine.c (configuration, RNG, peers, stats, the entry points),
 * mr.c (memory regions and key checks), cq.c (completion queues), qp.c
 * (the QP table and the state machine's transition table), wq.c (send and
 * receive queues, completions in order), events.c (events for the I/O
 * layer). A transport (metaroce, rocev2/) owns everything that touches the
 * wire and plugs in through struct mroce_transport_ops; exactly one
 * transport is active per engine (cfg.transport). Its private state lives
 * behind qp->tp and e->tp, declared in its own header.
 *
 * ---------------------------------------------------------------------
 * Contract for a transport (read this before writing one)
 * ---------------------------------------------------------------------
 * Threading/time: everything is single-threaded; `now` is in ns. Never keep
 * a pointer to an rx buffer. Never print, never exit, never malloc per
 * packet (allocate per QP in qp_create, per connection, ...).
 *
 * What the engine already did before calling you:
 *  - post_send: QP is in RTS, the WR is valid (opcode known, local SGE
 *    inside an MR of the lkey with the needed local access, length <=
 *    2^31), and it has been appended to the send queue as a struct
 *    mroce_wqe at qp->sq[qp->sq_tail - 1 (mod)] with state MROCE_WQE_QUEUED.
 *    You decide when it goes on the wire; advance wqe->state as you like.
 *  - post_recv: the RWQE is appended to qp->rq (needs INIT or later).
 *  - qp_modify: the transition is legal (ibverbs table) and the generic
 *    fields (state, access, peer, dest_qpn, rq_psn, sq_psn) are already
 *    updated in *qp; old_state is the state before. Return <0 to refuse:
 *    the engine then restores the old fields. For ->ERR the engine has
 *    already flushed both queues (mroce_qp_to_err) before calling you;
 *    for ->RESET it has emptied them without completions.
 *  - qp_destroy: called once before the QP is freed (free qp->tp).
 *
 * What a transport must do:
 *  - tx(): fill up to n packets (each into pkts[i].buf, buf_cap bytes),
 *    set len/peer/sport/dport/ect, count stats (tx_pkts, tx_bytes, ...).
 *  - rx(): parse with the codec, validate, place data, count stats; return
 *    0 when consumed or a negative codec error / -errno when dropped.
 *  - Remote memory access: ALWAYS go through mroce_rkey_check() (bounds +
 *    access flags + the QP's remote access flags); never write outside a
 *    region. Local SGEs were checked at post time, but the MR may have been
 *    deregistered since: re-check with mroce_lkey_check() before touching
 *    memory (mroce_wqe_local_ptr() does it).
 *  - Requester completions: set wqe->state = MROCE_WQE_DONE and
 *    wqe->status, then call mroce_sq_drain(e, qp): it pops finished WQEs
 *    from the head IN ORDER and writes completions (signaled ones, and all
 *    errors). For a fatal error use mroce_sq_fail(e, qp, wqe, status),
 *    which completes that WQE with the error and moves the QP to ERR
 *    (everything else is flushed with WR_FLUSH_ERR).
 *  - Responder receives: mroce_rq_head(qp, k) is the k-th posted receive
 *    not yet consumed; complete with mroce_rq_complete(e, qp, wc) which
 *    pops the head and pushes the WC to the recv CQ.
 *  - CQ overflow: mroce_cq_push() returns -ENOSPC and moves every QP of
 *    that CQ to ERR; the helpers above already handle it.
 *  - Randomness only from mroce_rng_*(e) (seeded from cfg.seed), never
 *    rand()/time(): runs must be reproducible.
 *  - Timers: next_timer() returns the earliest ns at which tick() or tx()
 *    has work (<= now if tx() would send something right now).
 *  - Keep per-QP transport state behind qp->tp (allocated in qp_create),
 *    per-WQE state in an array of sq_cap entries there, indexed like the
 *    SQ ring, and per-peer state in e->tp: the generic structs hold only
 *    what every transport or the verbs layer uses.
 *  - QPs with pending transmit work can be put on the engine's round-robin
 *    list with mroce_qp_sched(e, qp); tx() walks e->sched (see helpers).
 * ---------------------------------------------------------------------
 */
#ifndef MROCE_ENGINE_INT_H
#define MROCE_ENGINE_INT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mroce/codec.h"
#include "mroce/engine.h"
#include "mroce/wire.h"

#ifndef EOPNOTSUPP
#define EOPNOTSUPP 95
#endif

#define MROCE_MAX_RD_ATOMIC	16	/* READs in flight per QP, each way */
#define MROCE_MAX_WR		32768	/* cap of max_send_wr/max_recv_wr */
#define MROCE_MAX_MSG		(1u << 31) /* largest message in bytes */

/* Every access flag a region or a QP may hold. */
#define MROCE_ACCESS_ALL                                                       \
	(MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |                \
	 MROCE_ACCESS_REMOTE_READ)

/* ------------------------------------------------------------------ */
/* Small intrusive doubly linked list                                  */
/* ------------------------------------------------------------------ */
struct mroce_list {
	struct mroce_list *next, *prev;
};

static inline void mroce_list_init(struct mroce_list *l)
{
	l->next = l;
	l->prev = l;
}

static inline bool mroce_list_empty(const struct mroce_list *l)
{
	return l->next == l;
}

/* A node is "linked" iff next != NULL (nodes start zeroed). */
static inline bool mroce_list_linked(const struct mroce_list *n)
{
	return n->next != NULL;
}

static inline void mroce_list_add_tail(struct mroce_list *head,
				       struct mroce_list *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline void mroce_list_del(struct mroce_list *n)
{
	if (!n->next)
		return;
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = NULL;
	n->prev = NULL;
}

#define mroce_container_of(ptr, type, member)                                  \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* ------------------------------------------------------------------ */
/* Memory regions                                                       */
/* ------------------------------------------------------------------ */
struct mroce_mr_ent {
	struct mroce_mr mr;	/* mr.addr is the iova peers and SGEs use */
	uint8_t *base;		/* where byte mr.addr lives in this process */
	bool used;
};

/* Named result of a key check (maps 1:1 to NAK codes / WC statuses). */
enum mroce_mr_check {
	MROCE_MRC_OK = 0,
	MROCE_MRC_BAD_KEY,	/* no region with this key */
	MROCE_MRC_BOUNDS,	/* [va, va+len) not inside the region */
	MROCE_MRC_ACCESS,	/* region or QP lacks the access right */
};

/* ------------------------------------------------------------------ */
/* Completion queues                                                    */
/* ------------------------------------------------------------------ */
struct mroce_cq {
	bool used;
	bool overflowed;	/* sticky: a completion was lost */
	uint32_t depth;
	uint32_t head, count;	/* ring of depth entries */
	uint32_t nqps;		/* QPs using it (destroy -> -EBUSY) */
	struct mroce_wc *ring;
};

/* ------------------------------------------------------------------ */
/* Segmentation (both transports)                                       */
/* ------------------------------------------------------------------ */
/* Packets of a len-byte message at this MTU; a 0-byte message is one
 * packet. 64-bit arithmetic: len may come from the wire (any uint32_t). */
static inline uint32_t mroce_msg_nsegs(uint32_t len, uint32_t mtu)
{
	return len ? (uint32_t)(((uint64_t)len + mtu - 1) / mtu) : 1;
}

/* Payload bytes of segment seg of a len-byte message (0 past its end). */
static inline uint32_t mroce_seg_len(uint32_t len, uint32_t seg, uint32_t mtu)
{
	uint64_t off = (uint64_t)seg * mtu;

	if (off >= len)
		return 0;
	return len - off < mtu ? (uint32_t)(len - off) : mtu;
}

/* ------------------------------------------------------------------ */
/* Queue pairs                                                          */
/* ------------------------------------------------------------------ */
enum mroce_wqe_state {
	MROCE_WQE_QUEUED = 0,	/* posted, nothing on the wire yet */
	MROCE_WQE_ACTIVE,	/* (partly) transmitted, not finished */
	MROCE_WQE_DONE,		/* finished; status valid; awaits drain */
};

/* One send work request plus the per-WQE progress both transports keep.
 * What only one transport needs per WQE lives in its per-QP state, in an
 * array parallel to the SQ ring (same index: w - qp->sq). */
struct mroce_wqe {
	struct mroce_send_wr wr;
	uint8_t state;		/* enum mroce_wqe_state */
	uint8_t status;		/* enum mroce_wc_status once DONE */
	uint8_t rnr_left;	/* RNR retries left (cfg.rnr_retry at post) */
	uint8_t retry_left;	/* transport retries left (cfg.retry_cnt) */
	uint32_t nsegs;		/* packets of the message (>= 1) */
	uint32_t segs_done;	/* segments acknowledged / received (READ) */
};

/* One posted receive. */
struct mroce_rwqe {
	struct mroce_recv_wr wr;
};

/* READ responder job (one per READ_REQ being answered). */
struct mroce_rdjob {
	bool used;
	uint32_t msn;		/* requester's message / RoCEv2 first PSN */
	uint64_t va;		/* source at the responder */
	uint32_t rkey;
	uint32_t len;
	uint32_t nsegs, next_seg, segs_done;
};

struct mroce_qp {
	uint32_t qpn;
	uint8_t state;		/* enum mroce_qp_state */
	uint32_t access;	/* remote access allowed (MROCE_ACCESS_*) */
	int peer;		/* -1 until RTR */
	uint32_t dest_qpn;
	uint32_t rq_psn, sq_psn;
	int send_cq, recv_cq;

	/* Send queue: ring of sq_cap; counters run free (index = c % cap).
	 * [sq_head, sq_tail) are posted and not yet completed. */
	struct mroce_wqe *sq;
	uint32_t sq_cap, sq_head, sq_tail;

	/* Receive queue: [rq_head, rq_tail) posted, not consumed. */
	struct mroce_rwqe *rq;
	uint32_t rq_cap, rq_head, rq_tail;

	/* READ responder jobs, transport-managed ring. */
	struct mroce_rdjob rd[MROCE_MAX_RD_ATOMIC];
	uint32_t rd_head, rd_tail;

	struct mroce_list sched;	/* on e->sched when it has tx work */
	void *tp;			/* transport-private per-QP state */
	bool ev_up;			/* QP_UP announced, no DOWN yet (only
					 * with ops->qp_events) */
};

/* ------------------------------------------------------------------ */
/* Peers                                                                */
/* ------------------------------------------------------------------ */
struct mroce_peer {
	struct mroce_peer_addr addr;
};

/* ------------------------------------------------------------------ */
/* Transport plug-in                                                    */
/* ------------------------------------------------------------------ */
struct mroce_engine;

struct mroce_transport_ops {
	const char *name;
	/* QPs are what the I/O layer sees (RoCEv2: one QP, one flow): the
	 * engine announces MROCE_EV_QP_UP at INIT->RTR and QP_DOWN when the
	 * QP is reset or destroyed. */
	bool qp_events;
	/* Engine created / destroyed (allocate global transport state in
	 * e->tp). Optional. */
	int (*init)(struct mroce_engine *e);
	void (*fini)(struct mroce_engine *e);
	/* QP created (allocate qp->tp) / about to be freed. Optional. */
	int (*qp_create)(struct mroce_engine *e, struct mroce_qp *qp);
	void (*qp_destroy)(struct mroce_engine *e, struct mroce_qp *qp);
	/* After a legal transition (fields already applied). Optional. */
	int (*qp_modify)(struct mroce_engine *e, struct mroce_qp *qp,
			 enum mroce_qp_state old_state,
			 const struct mroce_qp_attr *attr, uint32_t mask,
			 uint64_t now);
	/* A WQE was appended to the SQ. Optional. */
	int (*post_send)(struct mroce_engine *e, struct mroce_qp *qp,
			 struct mroce_wqe *wqe, uint64_t now);
	/* A receive was posted (RNR waiters may proceed). Optional. */
	void (*post_recv)(struct mroce_engine *e, struct mroce_qp *qp);
	int (*rx)(struct mroce_engine *e, const struct mroce_rx_meta *m,
		  const void *buf, size_t len, uint64_t now);
	int (*tx)(struct mroce_engine *e, struct mroce_tx_pkt *pkts, int n,
		  size_t buf_cap, uint64_t now);
	void (*tick)(struct mroce_engine *e, uint64_t now);
	uint64_t (*next_timer)(const struct mroce_engine *e, uint64_t now);
	int (*path_info)(const struct mroce_engine *e, int peer, int idx,
			 struct mroce_path_info *out);
	size_t (*conn_mem)(const struct mroce_engine *e);
};

extern const struct mroce_transport_ops mroce_metaroce_ops;
extern const struct mroce_transport_ops mroce_rocev2_ops;

/* ------------------------------------------------------------------ */
/* The engine                                                           */
/* ------------------------------------------------------------------ */
struct mroce_engine {
	struct mroce_engine_cfg cfg;
	const struct mroce_transport_ops *ops;
	uint64_t rng[4];		/* xoshiro256** state */
	struct mroce_engine_stats stats;

	struct mroce_mr_ent *mrs;	/* cfg.max_mrs slots */
	uint32_t mr_bits;		/* key = random << mr_bits | index */

	struct mroce_cq *cqs;		/* ncqs slots (grows) */
	uint32_t ncqs;

	struct mroce_qp **qp_tab;	/* open addressing by qpn */
	uint32_t qp_tab_size;		/* power of two >= 2 * max_qps */
	uint32_t nqps;

	struct mroce_peer *peers;
	uint32_t npeers, peers_cap;

	struct mroce_list sched;	/* QPs with transmit work */
	uint64_t now;			/* latest `now` seen by any call */
	void *tp;			/* transport-global state */

	/* Events for the I/O layer (mroce_engine_poll_event): a ring of
	 * ev_cap entries, [ev_head, ev_head + ev_n) queued. ev_owed slots
	 * are kept free for events that must not fail later (see
	 * mroce_ev_reserve). */
	struct mroce_engine_event *ev;
	uint32_t ev_cap, ev_head, ev_n, ev_owed;

	/* Path state for a kernel fast path (mroce_engine_set_pub); the
	 * epoch changes with the hooks, so every connection publishes in
	 * full once more. */
	struct mroce_engine_pub pub;
	uint32_t pub_epoch;
};

/* ------------------------------------------------------------------ */
/* Helpers (engine.c, mr.c, cq.c, qp.c, wq.c)                         */
/* ------------------------------------------------------------------ */
uint64_t mroce_rng_u64(struct mroce_engine *e);
uint32_t mroce_rng_u32(struct mroce_engine *e);
/* Uniform in [0, n) for n > 0. */
uint32_t mroce_rng_below(struct mroce_engine *e, uint32_t n);

struct mroce_qp *mroce_qp_find(const struct mroce_engine *e, uint32_t qpn);

/* Local key check: region of lkey covers [addr, addr+len) and has `need`
 * (MROCE_ACCESS_LOCAL_WRITE or 0). len 0 checks only the key. */
enum mroce_mr_check mroce_lkey_check(const struct mroce_engine *e,
				     uint32_t lkey, uint64_t addr,
				     uint64_t len, uint32_t need,
				     const struct mroce_mr **mr);
/* Remote key check on behalf of `qp`: region of rkey covers [va, va+len),
 * the region AND the QP allow `need` (MROCE_ACCESS_REMOTE_WRITE/READ).
 * len 0 always passes (IB: zero-length RDMA checks no key). */
enum mroce_mr_check mroce_rkey_check(const struct mroce_engine *e,
				     const struct mroce_qp *qp, uint32_t rkey,
				     uint64_t va, uint64_t len, uint32_t need);

/* Pointer to byte `off` of a WQE's local buffer, re-checking its lkey (the
 * MR may have been deregistered); NULL when no longer valid. */
/* Where byte `va` of the region of `key` (an rkey when remote, else an
 * lkey) lives in this process. Only after a successful key check. */
uint8_t *mroce_mr_ptr(const struct mroce_engine *e, uint32_t key, bool remote,
		      uint64_t va);
uint8_t *mroce_wqe_local_ptr(const struct mroce_engine *e,
			     const struct mroce_wqe *w, uint32_t off,
			     uint32_t len, uint32_t need);

/* CQ by handle, NULL if none. */
struct mroce_cq *mroce_cq_get(const struct mroce_engine *e, int cq);

/* Push a completion; -ENOSPC on overflow (and the CQ's QPs go to ERR). */
int mroce_cq_push(struct mroce_engine *e, int cq, const struct mroce_wc *wc);

/* SQ helpers. */
static inline struct mroce_wqe *mroce_sq_at(const struct mroce_qp *qp,
					    uint32_t c)
{
	return &qp->sq[c % qp->sq_cap];
}

static inline uint32_t mroce_sq_count(const struct mroce_qp *qp)
{
	return qp->sq_tail - qp->sq_head;
}

/* Pop DONE WQEs from the head in order, writing completions for signaled
 * successes and for every error. Returns the number popped. */
int mroce_sq_drain(struct mroce_engine *e, struct mroce_qp *qp);

/* Fatal error on `wqe`: completes it with `status` (after the WQEs before
 * it), every later WQE with WR_FLUSH_ERR even if the transport had
 * finished it (ibverbs: nothing succeeds after an error), then moves the
 * QP to ERR. */
void mroce_sq_fail(struct mroce_engine *e, struct mroce_qp *qp,
		   struct mroce_wqe *wqe, enum mroce_wc_status status);

/* RQ helpers. k-th unconsumed receive, or NULL. */
static inline struct mroce_rwqe *mroce_rq_head(const struct mroce_qp *qp,
					       uint32_t k)
{
	if (k >= qp->rq_tail - qp->rq_head)
		return NULL;
	return &qp->rq[(qp->rq_head + k) % qp->rq_cap];
}

/* Pop the head receive and push wc (wr_id and qpn filled in here). */
int mroce_rq_complete(struct mroce_engine *e, struct mroce_qp *qp,
		      struct mroce_wc *wc);

/* Move a QP to ERR: every outstanding send WQE completes (DONE ones with
 * their status, the rest WR_FLUSH_ERR), every receive WR_FLUSH_ERR; then
 * the transport's qp_modify hook runs. Idempotent. */
void mroce_qp_to_err(struct mroce_engine *e, struct mroce_qp *qp,
		     uint64_t now);

/* Complete everything on both queues of qp (the ERR flush): finished send
 * WQEs with their status (successes only if signaled), the rest and every
 * receive with WR_FLUSH_ERR. */
void mroce_qp_flush(struct mroce_engine *e, struct mroce_qp *qp);

/* Run the transport's qp_destroy hook and free the QP (qp.c). */
void mroce_qp_free(struct mroce_engine *e, struct mroce_qp *qp);

/* Put a QP on (or keep it on) the engine's transmit round-robin list. */
static inline void mroce_qp_sched(struct mroce_engine *e, struct mroce_qp *qp)
{
	if (!mroce_list_linked(&qp->sched))
		mroce_list_add_tail(&e->sched, &qp->sched);
}

static inline void mroce_qp_unsched(struct mroce_qp *qp)
{
	mroce_list_del(&qp->sched);
}

static inline const struct mroce_peer *
mroce_peer_get(const struct mroce_engine *e, int peer)
{
	if (peer < 0 || (uint32_t)peer >= e->npeers)
		return NULL;
	return &e->peers[peer];
}

/* Map a transport-level failure to a requester completion status. */
static inline enum mroce_wc_status mroce_mrc_wc(enum mroce_mr_check r)
{
	return r == MROCE_MRC_OK ? MROCE_WC_SUCCESS : MROCE_WC_REM_ACCESS_ERR;
}

/* ------------------------------------------------------------------ */
/* Events for the I/O layer (events.c)                                */
/* ------------------------------------------------------------------ */
/*
 * Never dropped: room for an event is reserved at a point that may still
 * fail (creating the connection, the RTR transition), and every event that
 * cannot fail later (the DOWN of something announced UP, a connection's
 * peer_id update) has room kept for it from then on (ev_owed).
 *
 * mroce_ev_reserve(e, k): make room for k more events on top of what is
 * owed; -ENOMEM (the caller fails its operation, nothing changed).
 * A MetaRoCE connection: reserve 3 before creating it, then
 * mroce_ev_conn_up() (uses 1, keeps 2 owed: one update and the DOWN),
 * mroce_ev_conn_update() when the peer's id becomes known,
 * mroce_ev_conn_down() when it is freed. slot = the connection's dense
 * index (< cfg.max_conns).
 */
int mroce_ev_reserve(struct mroce_engine *e, uint32_t k);
void mroce_ev_conn_up(struct mroce_engine *e, int peer, uint32_t id,
		      uint32_t slot);
void mroce_ev_conn_update(struct mroce_engine *e, int peer, uint32_t id,
			  uint32_t peer_id, uint32_t slot);
void mroce_ev_conn_down(struct mroce_engine *e, int peer, uint32_t id,
			uint32_t slot);
/* QP events (ops->qp_events): reserve 2 before the RTR transition, then
 * mroce_ev_qp_up() (keeps 1 owed); mroce_ev_qp_down() only if it was up,
 * with the peer the QP had. */
void mroce_ev_qp_up(struct mroce_engine *e, struct mroce_qp *qp);
void mroce_ev_qp_down(struct mroce_engine *e, struct mroce_qp *qp, int peer);

#define MROCE_STAT_INC(e, f) ((e)->stats.f++)
#define MROCE_STAT_ADD(e, f, n) ((e)->stats.f += (n))

#endif /* MROCE_ENGINE_INT_H */
