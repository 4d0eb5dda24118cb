/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * INTERNAL: MetaRoCE transport state shared by the files of
 * user/engine/metaroce/ and their unit tests. See docs/engine.md. Who does
 * what: conn.c (connections, QP binding, the transport hooks), handshake.c,
 * path.c (path lifecycle), explore.c (path exploration), rx.c (receive
 * side, dispatch), place.c (placement, delivery), ack.c (ACK/NAK
 * processing), txctl.c (control packets), tx.c (data, pacing), timer.c
 * (timers, the connection heap), cc.c (congestion control).
 *
 * Per connection (one per peer): npaths path slots, each with a transmit
 * side (our PSNs, window, RTT, cwnd) and a receive side (the peer's PSNs,
 * cum_psn + 256-bit SACK, pending ACK). Transmit tracking is a pool of
 * 16-byte entries shared by the connection's paths; each path has a ring
 * of 256 entry indices addressed by PSN (the SACK range), so everything a
 * packet or an ACK touches is found in O(1).
 */
#ifndef MROCE_METAROCE_INT_H
#define MROCE_METAROCE_INT_H

#include "../engine_int.h"

#define MR_PATH_WIN	256	/* outstanding PSNs per path (= SACK bits) */
#define MR_TXE_MAX	512	/* outstanding packets per connection */
#define MR_TXE_NONE	0xffff
#define MR_MSG_WIN	64	/* messages in flight per stream (rx slots) */
#define MR_NAKQ		8	/* queued NAKs per connection */
#define MR_PROBES	2	/* unanswered probes before a path is dead */
#define MR_RTX_ESCAPE	3	/* a lost segment with this few tries left
				 * retires its path and goes on another */
#define MR_ACK_EVERY	8	/* coalesce: ACK at least every N packets */
#define MR_PACE_BURST	32	/* software endpoints: packets per burst */
#define MR_ACK_DELAY_NS	2000	/* ... or this long after the first
				 * (below a short fabric's RTT: a longer
				 * one was in every RTT sample of a path
				 * whose 8 packets took longer, docs/engine.md
				 * "ACK delay") */
#define MR_ACK_WAIT_NS	8000	/* how late a peer's coalesced ACK may
				 * come: the PTO and the silent-path test
				 * allow it (8 us: the delay of peers
				 * before 0.9.1, and slack over ours) */
#define MR_ACK_DELAY_SW_NS 250000 /* ... on a software endpoint (jitter_us) */
#define MR_PROBE_SLACK_SW_US 50	/* a software endpoint's idle PROBE waits
				 * srtt + max(4 rttvar, this) for the ACK */
#define MR_ACK_PROBE_EVERY 8	/* our ACKs on an idle port between probes */
#define MR_ACK_CHECK_NS	50000	/* a PROBE probes our idle ports this often */
#define MR_RNR_TIMER	5	/* our RNR NAK timer, units of 10 us */
#define MR_HS_RTO_MIN_NS 50000ull /* first handshake retransmit, at least */
#define MR_COOKIE_LIFE_MS 2000	/* CHALLENGE cookies expire after 2 s */
#define MR_FAIR_EPOCH_NS 100000ull /* fair-share sender counting epoch */
#define MR_SWEEP_NS	1000000ull /* recompute every due time this often */
#define MR_FIRST_FLIGHT	2	/* packets in flight before the first hint */
#define MR_PTO_SLACK_NS	2000	/* PTO = 2 srtt + this */
#define MR_RTXQ		16	/* retransmissions tracked per path */
#define MR_TLP_MAX	2	/* a PTO resends the tail of paths this thin */
#define MR_EXPLORE_RTTS	2	/* round trips per exploration interval */
#define MR_EXPLORE_PATHS 1	/* paths rerolled per exploration */
#define MR_EXPLORE_PCT	80	/* explore below this % of link_bps */
#define MR_EXPLORE_TRIES 8	/* failed explorations per interval doubling */
#define MR_EXPLORE_HOPS	6	/* ports a move tries for an uncrowded plane */
#define MR_EXPLORE_MAX_SHIFT 6	/* interval backs off to x64 at most */
#define MR_EXPLORE_BLOCKED 0x01	/* data waited for a window */
#define MR_EXPLORE_IDLE	0x02	/* nothing to send (application-limited) */
#define MR_EXPLORE_WARM	0x04	/* past the first interval */
#define MR_EXPLORE_SW_QUEUE 2	/* software: queued above jitter_us / this */
#define MR_EXPLORE_SW_RUN 2	/* ... for this many intervals in a row */
#define MR_EXPLORE_SW_CLEAR 4	/* clear intervals in a row end the backoff */

/* Transmit entry flags (top byte of qpn_fl). */
#define TXE_USED	0x80
#define TXE_RD		0x01	/* READ response (job), not an SQ WQE */
#define TXE_LOST	0x02	/* declared lost: retransmit same PSN */
#define TXE_HOLD	0x04	/* RNR: hole at the receiver, wait */
#define TXE_RESEND	0x08	/* path retired: resend on any path */

struct mr_txe {
	uint32_t qpn_fl;	/* QPN (24 bits) | TXE_* flags << 24 */
	uint32_t msn;		/* message (WQE msn, or the READ's msn) */
	uint32_t seg_try;	/* segment index (24) | transmissions (8) */
	uint32_t psn;		/* PSN on its path (meaningless if RESEND) */
};
_Static_assert(sizeof(struct mr_txe) == 16, "compact tx entry");

static inline uint32_t txe_qpn(const struct mr_txe *t)
{
	return t->qpn_fl & 0xffffff;
}

static inline uint8_t txe_fl(const struct mr_txe *t)
{
	return t->qpn_fl >> 24;
}

static inline void txe_set(struct mr_txe *t, uint8_t f)
{
	t->qpn_fl |= (uint32_t)f << 24;
}

static inline void txe_clr(struct mr_txe *t, uint8_t f)
{
	t->qpn_fl &= ~((uint32_t)f << 24);
}

static inline uint32_t txe_seg(const struct mr_txe *t)
{
	return t->seg_try & 0xffffff;
}

static inline uint32_t txe_tries(const struct mr_txe *t)
{
	return t->seg_try >> 24;
}

/* Congestion control state of one path (cc.c). */
struct mr_cc {
	uint32_t cwnd;		/* packets << 8 */
	uint32_t ssthresh;	/* packets << 8 */
	uint64_t last_cut;	/* ns of the last multiplicative decrease */
	uint64_t period_end;	/* ns: end of the current delay period */
	uint32_t rtt_lo;	/* smallest RTT sample (us) of the period */
	uint32_t ce_acks;	/* ACKs with CE since last path check */
	uint32_t acks;		/* ACKs since last path check */
	uint32_t losses;	/* losses since last path check */
	uint32_t sent;		/* packets since last path check */
	/* the current delay period's (one RTT): packets newly
	 * acknowledged, and how many of them the ACKs said were CE */
	uint32_t per_newly, per_ce;
	/* at least half the window was in flight at some point since the
	 * period began. The window grows only then, or while the
	 * connection has data waiting (RFC 7661's rule: a window the
	 * sender does not use measures nothing, and one grown while the
	 * connection was near idle lets the next burst out at once) */
	bool limited;
	/* the last round trip's smallest RTT sample was above base +
	 * cfg.queue_us (software endpoints): no growth this one */
	bool queued;
};

/* A path's lifecycle on the sender (struct mr_path.life), one list for
 * the enum and the name table. Every change goes through
 * mr_path_set_life() (path.c), which knows the legal transitions:
 *   ACTIVE -> MOVING		exploration picked it (explore.c): no new
 *				data; once drained it moves (mr_path_move)
 *   MOVING -> ACTIVE		drained: it takes a new port, and then
 *   ACTIVE -> PROBATION	a fresh port (a move, or a retirement away
 *				from silence) carries no data until a PROBE
 *				on it is answered (mr_path_probation)
 *   PROBATION -> PROBATION	a moved port landed behind a queue: the
 *				next port is tried (mr_explore_hop)
 *   PROBATION -> ACTIVE	its PROBE answered (ack.c)
 *   any -> ACTIVE		retired: new generation (mr_path_tx_init)
 * What is not a lifecycle state stays a field of its own: `probed`
 * (unanswered PROBEs, in any state), `tlp` (tail resent, until
 * progress), `hops` (ports a move tried, during its PROBATION), and the
 * requests to send want_probe / want_reroll. */
#define MR_PATH_LIVES(X)                                                       \
	X(ACTIVE, "active")                                                    \
	X(MOVING, "moving")                                                    \
	X(PROBATION, "probation")

enum mr_path_life {
#define MR_X(name, str) MR_PATH_##name,
	MR_PATH_LIVES(MR_X)
#undef MR_X
	MR_PATH_NLIVES
};

extern const char *const mr_path_life_names[MR_PATH_NLIVES];

struct mr_path {
	/* transmit side (our packets on this slot) */
	uint16_t sport;
	uint8_t gen;
	uint8_t life;		/* enum mr_path_life */
	uint8_t probed;		/* PROBEs unanswered, no progress since */
	uint8_t tlp;		/* tail resent at a PTO, no progress since */
	uint32_t next_psn;	/* next new PSN */
	uint32_t una;		/* oldest PSN that may be unacknowledged */
	uint32_t loss_scan;	/* PSNs below were checked for loss */
	uint32_t high_acked;	/* highest PSN known received + 1 */
	uint32_t inflight;	/* sent, not acked, not lost, not held */
	uint32_t dupthresh;	/* loss evidence needed (grows on reorder) */
	uint32_t nlost, nheld;	/* entries awaiting retransmit / RNR */
	struct {		/* the RTT estimator (ack.c, rtt_update) */
		uint32_t srtt_us;	/* smoothed RTT, 0 = no sample yet */
		uint32_t var_us;	/* its mean deviation */
		uint32_t min_us;	/* smallest sample */
	} rtt;
	uint32_t coal_psn;	/* PSN after the last packet the receiver
				 * may hold for ACK coalescing (no ACK_REQ) */
	uint32_t probe_psn;	/* next_psn when the PROBE left */
	uint32_t probe_ts;	/* its tsval */
	uint64_t probe_sent;	/* ns when it left (exploration's RTT) */
	uint64_t sent_at;	/* ns: when its last data packet left */
	uint64_t deadline;	/* PTO/RTO, 0 = idle */
	uint64_t hold_until;	/* RNR hold expiry of held entries */
	uint64_t last_ack;	/* ns of the last newly acknowledged PSN */
	/* Retransmissions in flight, oldest first: low 16 bits of {psn,
	 * next_psn when it was resent} (both lie within MR_PATH_WIN of
	 * una). The path is FIFO, so once dupthresh PSNs sent after it are
	 * acknowledged a missing retransmission is lost as well (without
	 * this only a timeout would find it, and PTO is re-armed by every
	 * ACK of a busy path). A full queue forgets its oldest: the PTO
	 * remains for it. */
	struct {
		uint16_t q[MR_RTXQ][2];
		uint8_t head, n;
		uint32_t total;	/* retransmissions ever queued */
	} rtx;
	uint32_t probe_rtx;	/* rtx.total when the PROBE left */
	uint64_t tx_pkts, retransmits, ce_marks;
	uint32_t explore_acked;	/* packets acked in the exploration interval */
	uint8_t want_probe;	/* send a PROBE */
	uint8_t want_reroll;	/* send PATH_REROLL (reason) */
	uint8_t old_gen;
	uint8_t ack_tx;		/* our ACKs on this idle port since its probe */
	uint8_t hops;		/* ports tried by the current exploration move */
	uint16_t home_sport;	/* sport before that move (path_move) */
	struct mr_cc cc;
	uint16_t *ring;		/* MR_PATH_WIN entry indices by PSN */

	/* receive side (peer's packets on this slot) */
	uint8_t rx_gen;
	uint8_t rx_valid;	/* rx_gen / rx_cum are initialised */
	uint8_t ack_flags;	/* MROCE_ACKF_* for the next ACK */
	uint8_t ack_urgent;
	uint8_t ack_twice;	/* the next ACK answers a PROBE that showed our
				 * ACKs missing: send it from two ports */
	uint16_t rx_sport;	/* sport of the last packet: NAKs go back on it */
	uint16_t ack_pending;	/* packets since the last ACK */
	uint16_t rx_ce;		/* CE marks since the last ACK */
	uint32_t rx_cum;
	uint32_t rx_high;	/* PSN after the newest data packet taken in */
	uint32_t rx_tsecr;
	uint32_t ack_cum;	/* rx_cum of the last ACK sent */
	uint64_t ack_at;	/* ns: when it left */
	uint64_t sack[MROCE_SACK_BITS / 64]; /* bit i: rx_cum + 1 + i */
	uint64_t ack_due;	/* ns; 0 = no ACK pending */

	/* what the fast path was last told of the transmit side (pub.c) */
	uint16_t pub_sport;
	uint8_t pub_gen;
	uint8_t pub_active;
};

/* Connection states, in one list for the enum and the name table. Every
 * change goes through mr_conn_set_state() (conn.c), which knows the legal
 * transitions:
 *   IDLE -> REQ_SENT		a QP needs the connection (mr_hs_start)
 *   REQ_SENT -> CONFIRM_SENT	CHALLENGE received
 *   IDLE, REQ_SENT, CONFIRM_SENT -> ESTABLISHED
 *				the peer's CONFIRM adopted (also during a
 *				simultaneous open), or our CONFIRM's ACCEPT
 *   REQ_SENT, CONFIRM_SENT -> IDLE
 *				the handshake ran out of retries (mr_hs_fail)
 * REQ_SENT and CONFIRM_SENT are the initiator's, waiting for the
 * CHALLENGE and the ACCEPT. ESTABLISHED is final: a restarted peer gets a
 * fresh connection (mr_conn_restart). */
#define MR_CONN_STATES(X)                                                      \
	X(IDLE, "idle")                                                        \
	X(REQ_SENT, "req-sent")                                                \
	X(CONFIRM_SENT, "confirm-sent")                                        \
	X(ESTABLISHED, "established")

enum mr_conn_state {
#define MR_X(name, str) MR_CONN_##name,
	MR_CONN_STATES(MR_X)
#undef MR_X
	MR_CONN_NSTATES
};

extern const char *const mr_conn_state_names[MR_CONN_NSTATES];

struct mr_nak {
	uint8_t code, path, gen, rnr_timer;
	uint32_t stream, msn, psn;
	uint16_t sport;
};

struct mr_conn {
	int peer;
	uint8_t state;		/* enum mr_conn_state */
	uint8_t npaths;		/* paths in use (min of both sides) */
	uint16_t mtu;		/* segment size (min of both sides) */
	uint16_t ser_floor_us;	/* npaths segments at link_bps, rounded up:
				 * the CC's smallest delay target (cc.c) */
	uint32_t local_id, remote_id;
	uint32_t tx_isn, rx_isn;
	struct {		/* the handshake (handshake.c) */
		uint64_t nonce, cookie;
		uint32_t cookie_time;
		uint8_t tries;
		uint8_t want;		/* send the current REQ/CONFIRM */
		uint8_t want_accept;	/* responder: (re)send ACCEPT */
		uint8_t fast;		/* CONFIRM resent early, this try */
		uint32_t rtt_us;	/* REQ -> CHALLENGE RTT, 0: none */
		uint64_t sent;		/* ns: last REQ/CONFIRM left */
		uint64_t deadline;	/* ns: resend (or give up) then */
	} hs;
	uint32_t est_ms;	/* cookie clock when it was established */
	uint64_t last_rx;	/* ns: last packet of the peer on it */
	uint32_t backoff;	/* consecutive RTOs without progress */
	uint64_t last_ack;	/* ns of the last progress on any path */
	uint32_t last_tsecr;	/* newest send time (us) acknowledged */
	uint64_t hold_until;	/* latest RNR hold of any message */
	struct {		/* path exploration (explore.c) */
		uint64_t start;	/* ns: start of the measuring interval */
		uint32_t acked;	/* packets newly acknowledged in it */
		uint32_t lost;	/* packets declared lost in it */
		uint8_t fails;	/* explorations without a better rate */
		uint8_t fl;	/* MR_EXPLORE_* seen in the interval */
		uint8_t good;	/* the last judged interval had the rate */
		uint8_t failed;	/* a path failed since rate was met */
		uint8_t qrun;	/* software: queued intervals in a row */
		uint8_t crun;	/* software: clear intervals in a row */
		uint32_t rtt_lo; /* us: smallest RTT sample in the interval */
		uint64_t probe_rtt_min; /* ns: fastest PROBE round trip */
		uint64_t moved;	/* slots (bit i: path i; i < 64) moved by
				 * the last exploration: still ramping */
	} explore;

	struct {		/* pacing (tx.c) at the receiver's hint */
		uint64_t next_send;	/* ns: the next packet may leave */
		uint64_t hint_bps;	/* fair-share hint, 0 = none yet */
		uint64_t hint_time;	/* ns: when it came */
		/* The connection's ECN limit (bit/s, 0 = none): where
		 * the paths' windows are at one packet and CE still comes,
		 * the rate takes the decrease (cc.c) */
		uint64_t ecn_bps;
		uint64_t ecn_at;	/* ns: its last change */
	} pace;
	uint64_t active_epoch;	/* receiver: fair-share epoch we last saw
				 * data in (cc.c) */

	uint32_t rr;		/* path rotation for spraying */
	uint32_t ack_rr;	/* rotation of our ports for ACKs (ack_sport) */
	uint8_t ack_accept;	/* next ACK of path 0 follows the ACCEPT */
	uint64_t ack_checked;	/* ns: our ports last probed on a PROBE */
	uint32_t txe_used;
	uint32_t nresend;	/* entries with TXE_RESEND */
	struct mr_txe *txe;	/* MR_TXE_MAX */
	uint64_t txe_free[MR_TXE_MAX / 64];	/* bit set = free */
	uint64_t txe_resend[MR_TXE_MAX / 64];	/* bit set = RESEND */

	struct {		/* NAKs to send, oldest first (rx.c) */
		struct mr_nak q[MR_NAKQ];
		uint8_t head, count;
	} naks;

	struct mroce_list qps;		/* QPs (streams) of this conn */
	struct mroce_list sched;	/* QPs with new data to send */
	struct {		/* the timer heap (timer.c, struct mr_engine) */
		uint64_t due;	/* ns: first instant of work; MAX: none */
		uint64_t tdue;	/* ns: earliest timer (conn_tick) */
		uint64_t dseq;	/* tie-break: order of the last update */
		uint32_t hidx;	/* index in t->heap + 1; 0: not in it */
		uint8_t dirty;	/* on t->dirty: recompute `due` */
	} heap;
	struct mroce_list link;		/* on t->conns (all conns) */
	struct mroce_list alink;	/* on t->active while not idle */
	struct mr_engine *eng;
	uint32_t pub_epoch;	/* e->pub_epoch when last published in full */
	uint32_t pub_rate_mbps;	/* fair-share hint of our last ACK */
	uint8_t pub_npaths;	/* npaths then */
	struct mr_path path[];
};

/* Per-QP (stream) state, qp->tp. */
struct mr_segtrack {
	uint32_t nsegs, got;
	uint64_t inl;		/* bitmap when nsegs <= 64 */
	uint64_t *ext;		/* else allocated per message */
};

enum mr_rxmsg_state {
	MR_RX_FREE = 0,
	MR_RX_ACTIVE,
	MR_RX_COMPLETE,
};

struct mr_rxmsg {
	uint8_t state, op;
	uint8_t solicited;
	uint32_t msn, msg_len, imm;
	uint64_t va;		/* WRITE target / READ source / SEND buffer */
	uint32_t key;		/* rkey, or the receive's lkey */
	uint64_t sink_va;	/* READ_REQ */
	uint32_t sink_key;
	struct mr_segtrack st;
};

struct mr_rdrx {		/* requester: READ response tracking */
	bool used;
	uint32_t msn;
	uint64_t deadline;	/* no response progress by then: fail */
	struct mr_segtrack st;
};

/* MetaRoCE state of an SQ WQE, parallel to the engine's SQ ring (same
 * index: the WQE's SQ counter modulo sq_cap). Set when it is posted
 * (mr_post_send). */
struct mr_wqe {
	uint32_t msn;		/* message sequence number in the stream */
	uint32_t ssn;		/* SEND*, WRITE_IMM: index among the stream's
				 * receive-consuming messages */
	uint32_t next_seg;	/* next segment to transmit the first time */
	uint64_t hold_until;	/* don't transmit before (RNR back-off) */
};

/* Where a READ response lands at the requester: the READ_REQ's sink, for
 * the responder job in the same slot of qp->rd. */
struct mr_rdsink {
	uint64_t va;
	uint32_t key;
};

struct mr_qp {
	struct mroce_qp *qp;	/* the QP this state belongs to */
	struct mr_conn *conn;
	struct mroce_list link;	/* on conn->qps */
	struct mr_wqe *wqe;	/* sq_cap entries, parallel to qp->sq */
	uint32_t next_msn;	/* msn of the next posted WQE */
	uint32_t next_ssn;	/* ssn of the next receive-consuming WQE */
	uint32_t sq_next;	/* SQ counter of the next WQE with unsent segs */
	uint32_t rx_next_msn;	/* next message to deliver */
	uint32_t rx_ssn;	/* receive-consuming messages delivered */
	uint32_t reads_out;	/* READs posted and not completed */
	uint64_t joined;	/* ns: bound to conn (RTR) */
	struct mr_rxmsg rx[MR_MSG_WIN];
	struct mr_rdrx rdrx[MROCE_MAX_RD_ATOMIC];
	struct mr_rdsink rd_sink[MROCE_MAX_RD_ATOMIC];	/* parallel to qp->rd */
};

#define MR_HSQ	16	/* stateless replies (CHALLENGE, NO_CONN) awaiting tx */
#define MR_NO_CONN_GAP_NS 100000ull /* NAK NO_CONN: one per 100 us at most */

/* A stateless reply: a CONNECT_CHALLENGE, or a NAK NO_CONN to a packet
 * for a connection id we do not know (spec 9.5). */
struct mr_hsreply {
	int peer;
	uint16_t sport;
	uint8_t opcode;		/* MROCE_OP_CONNECT_CHALLENGE or _NAK */
	uint8_t path, gen;	/* NO_CONN: copied from the packet */
	uint32_t conn_id;	/* the initiator's src_conn_id / unknown id */
	uint32_t psn;		/* NO_CONN: copied from the packet */
	uint64_t nonce, cookie;
	uint32_t cookie_time;
};

/* Transport-global state, e->tp. */
struct mr_engine {
	struct mr_conn **by_peer;	/* max_conns slots, index = peer */
	uint32_t peer_bits;		/* local_id = random << bits | peer */
	struct mroce_list conns;
	struct mroce_list active;	/* conns with work or timers */
	uint32_t nconns;
	uint64_t fair_epoch;		/* receiver fair-share epoch number */
	uint64_t fair_epoch_start;
	uint64_t fair_epoch_len;	/* ns; adapts to the sender count */
	uint32_t active_now, active_prev;
	/* Timers in O(log n): each connection's earliest due instant
	 * (timer, pending ACK, data ready to send) in a min-heap keyed by
	 * (due, dseq). Every call that may change a connection marks it
	 * dirty (mr_conn_kick) and recomputes its `due` before returning, so
	 * next_timer() is the heap top and tick()/tx() visit only the
	 * connections that are due. `work` holds those during a call. */
	struct mr_conn **heap, **dirty, **work;
	uint32_t nheap, ndirty;
	uint64_t hseq;
	uint64_t last_sweep;		/* last full recompute (safety net) */
	struct mr_hsreply hsq[MR_HSQ];
	uint32_t hs_head, nhs;
	uint64_t no_conn_at;		/* ns: last NAK NO_CONN queued */
};

/* Small helpers every file uses. */
static inline struct mr_engine *T(const struct mroce_engine *e)
{
	return e->tp;
}

static inline uint32_t now_us(uint64_t now)
{
	return (uint32_t)(now / 1000);
}

static inline bool gen_newer(uint8_t a, uint8_t b)
{
	return (int8_t)(a - b) > 0;
}

static inline struct mr_qp *QP(const struct mroce_qp *qp)
{
	return qp->tp;
}

/* MetaRoCE state of SQ WQE w of qp. */
static inline struct mr_wqe *mrw(const struct mroce_qp *qp,
				 const struct mroce_wqe *w)
{
	return &QP(qp)->wqe[w - qp->sq];
}

/* The sink of READ responder job j of qp. */
static inline struct mr_rdsink *mr_sink(const struct mroce_qp *qp,
					const struct mroce_rdjob *j)
{
	return &QP(qp)->rd_sink[j - qp->rd];
}

/* The QP of node n of a connection's qps list. */
static inline struct mroce_qp *mr_qp_of(const struct mroce_list *n)
{
	return mroce_container_of(n, struct mr_qp, link)->qp;
}

/* Nothing of the path is in flight, waiting for a resend or held. */
static inline bool path_empty(const struct mr_path *p)
{
	return !(p->inflight + p->nlost + p->nheld);
}

/* The transmit entry PSN psn of path p occupies, or -1 (none, or the ring
 * slot holds another PSN). */
static inline int path_txe(const struct mr_conn *c, const struct mr_path *p,
			   uint32_t psn)
{
	uint16_t idx = p->ring[psn % MR_PATH_WIN];

	return idx != MR_TXE_NONE && c->txe[idx].psn == psn ? idx : -1;
}

enum place_res {
	PL_OK,		/* accepted: mark the PSN */
	PL_DUP,		/* duplicate of accepted data: mark the PSN */
	PL_REFUSE,	/* not accepted: leave a hole (NAK queued) */
};

/*
 * Calls between the files, by file; each is documented at its
 * definition.
 */

/* conn.c */
int mr_conn_set_state(struct mroce_engine *e, struct mr_conn *c,
		      enum mr_conn_state s);
/* The handshake is under way (a REQ or CONFIRM of ours awaits its answer). */
static inline bool mr_conn_handshaking(const struct mr_conn *c)
{
	return c->state == MR_CONN_REQ_SENT ||
	       c->state == MR_CONN_CONFIRM_SENT;
}

struct mr_conn *mr_conn_new(struct mroce_engine *e, int peer);
struct mr_conn *mr_conn_by_id(const struct mroce_engine *e, uint32_t id);
int mr_txe_alloc(struct mr_conn *c);
void mr_txe_release(struct mr_conn *c, int idx);
struct mroce_rdjob *mr_rd_find(struct mroce_qp *qp, uint32_t msn);
struct mroce_wqe *mr_sq_by_msn(const struct mroce_qp *qp, uint32_t msn);
uint32_t mr_conn_flight_cap(const struct mr_conn *c);
void mr_conn_kick(struct mr_conn *c);
bool mr_conn_idle(const struct mr_conn *c);
uint64_t mr_read_timeout(const struct mroce_engine *e);
void mr_qp_kick(struct mroce_qp *qp);
struct mr_conn *mr_conn_restart(struct mroce_engine *e, struct mr_conn *c,
				uint64_t now);
uint64_t mr_conn_heard(const struct mr_conn *c);

/* handshake.c */
uint64_t mr_hs_deadline(struct mroce_engine *e, const struct mr_conn *c,
			uint8_t tries, uint64_t now);
void mr_hs_start(struct mroce_engine *e, struct mr_conn *c, uint64_t now);
void mr_hs_fail(struct mroce_engine *e, struct mr_conn *c);
int mr_tx_handshake(struct mroce_engine *e, struct mr_conn *c,
		    struct mroce_tx_pkt *out, size_t cap, uint64_t now);
int mr_tx_hsq(struct mroce_engine *e, struct mroce_tx_pkt *pkts, int n,
	      size_t cap, int *cnt);
int mr_rx_handshake(struct mroce_engine *e, const struct mroce_rx_meta *m,
		    const struct mroce_meta_pkt *pk, uint64_t now);
void mr_no_conn_reply(struct mroce_engine *e,
		      const struct mroce_rx_meta *m,
		      const struct mroce_meta_pkt *pk, uint64_t now);
int mr_rx_no_conn(struct mroce_engine *e, const struct mroce_rx_meta *m,
		  const struct mroce_meta_pkt *pk, uint64_t now);

/* path.c */
int mr_path_set_life(struct mroce_engine *e, struct mr_path *p,
		     enum mr_path_life l);
void mr_path_tx_init(struct mroce_engine *e, struct mr_conn *c, int slot);
uint32_t mr_path_srtt(const struct mr_conn *c, const struct mr_path *p);
uint64_t mr_path_pto(const struct mroce_engine *e, const struct mr_conn *c,
		     const struct mr_path *p);
uint64_t mr_path_rto(const struct mroce_engine *e, const struct mr_conn *c,
		     const struct mr_path *p);
void mr_path_arm(const struct mroce_engine *e, const struct mr_conn *c,
		 struct mr_path *p, uint64_t now);
void mr_path_retire(struct mroce_engine *e, struct mr_conn *c, int slot,
		    uint8_t reason, bool charge);
bool mr_path_silent(const struct mroce_engine *e, const struct mr_conn *c,
		    const struct mr_path *p, uint64_t now);
void mr_path_probation(struct mroce_engine *e, struct mr_conn *c,
		       struct mr_path *p, uint64_t now);
void mr_explore_hop(struct mroce_engine *e, struct mr_conn *c, int slot,
		    uint64_t now);
void mr_path_move(struct mroce_engine *e, struct mr_conn *c, int slot,
		  uint64_t now);

/* explore.c */
uint64_t mr_hop_limit(const struct mroce_engine *e,
		      const struct mr_conn *c);
void mr_explore_busy(const struct mroce_engine *e, struct mr_conn *c,
		     struct mr_path *p);
void mr_explore_quiet(struct mr_conn *c, uint64_t now);
void mr_path_explore(struct mroce_engine *e, struct mr_conn *c,
		     uint64_t now);

/* rx.c */
/* Receive-side SACK bookkeeping (exposed for unit tests): records PSN
 * rx_cum + d (d in [0, MROCE_SACK_BITS]) as received. */
void mr_rx_mark(struct mr_path *p, uint32_t d);
/* The receive SACK bitmap as the wire carries it (struct mroce_ackh). */
void mr_sack_bytes(const struct mr_path *p, uint8_t out[MROCE_SACK_BYTES]);
void mr_rx_path_reset(struct mr_conn *c, struct mr_path *p, int slot,
		      uint8_t gen);
void mr_ack_want(const struct mroce_engine *e, struct mr_path *p,
		 bool urgent, uint64_t now);
/* How long after our ACK that covers a PROBE's next_psn the PROBE shows
 * that ACK lost (rx_probe). */
uint64_t mr_ack_late_ns(const struct mroce_engine *e);
void mr_nak_queue(struct mr_conn *c, uint8_t code, int slot, uint8_t gen,
		  uint32_t psn, uint32_t stream, uint32_t msn,
		  uint16_t sport);
int mr_rx(struct mroce_engine *e, const struct mroce_rx_meta *m,
	  const void *buf, size_t len, uint64_t now);

/* place.c */
int mr_st_init(struct mr_segtrack *st, uint32_t nsegs);
void mr_st_free(struct mr_segtrack *st);
void mr_rx_deliver(struct mroce_engine *e, struct mroce_qp *qp);
void mr_rd_retire(struct mroce_engine *e, struct mroce_qp *qp,
		  struct mroce_rdjob *j);
enum place_res mr_place(struct mroce_engine *e, struct mr_conn *c,
			int slot, const struct mroce_meta_pkt *pk);

/* ack.c */
void mr_lose_entry(struct mroce_engine *e, struct mr_conn *c,
		   struct mr_path *p, int idx, uint64_t now);
void mr_rx_ack(struct mroce_engine *e, struct mr_conn *c,
	       const struct mroce_meta_pkt *pk, uint64_t now);
void mr_rx_nak(struct mroce_engine *e, struct mr_conn *c,
	       const struct mroce_meta_pkt *pk, uint64_t now);

/* txctl.c */
int mr_emit(struct mroce_engine *e, const struct mr_conn *c,
	    const struct mroce_meta_pkt *pk, struct mroce_tx_pkt *out,
	    size_t cap, uint16_t sport, bool ect);
void mr_ack_port_check(struct mroce_engine *e, struct mr_conn *c,
		       struct mr_path *p, uint64_t now, bool now_due);
int mr_tx_control(struct mroce_engine *e, struct mr_conn *c,
		  struct mroce_tx_pkt *out, size_t cap, uint64_t now);

/* tx.c */
bool mr_path_usable(const struct mr_path *p);
bool mr_idle_probe_due(const struct mr_path *p);
uint64_t mr_idle_probe_at(const struct mroce_engine *e,
			  const struct mr_conn *c, const struct mr_path *p);
int mr_tx(struct mroce_engine *e, struct mroce_tx_pkt *pkts, int n,
	  size_t cap, uint64_t now);

/* pub.c: the fast path's copy (mroce_engine_set_pub) */
void mr_pub_reset(struct mroce_engine *e, uint32_t slot);
/* Path slot's receive state, as it is now (all of it placed). */
void mr_pub_rx(struct mroce_engine *e, const struct mr_conn *c, int slot);
/* The ACK of path slot just sent (ack_cum, ack_at). */
void mr_pub_ack(struct mroce_engine *e, const struct mr_conn *c, int slot);
/* Our ports and generations, where they changed. */
void mr_pub_tx(struct mroce_engine *e, struct mr_conn *c);

/* timer.c */
void mr_conn_tick(struct mroce_engine *e, struct mr_conn *c, uint64_t now);
void mr_sweep(struct mroce_engine *e, uint64_t now);
void mr_tick(struct mroce_engine *e, uint64_t now);
void mr_heap_remove(struct mr_engine *t, struct mr_conn *c);
void mr_conn_sched(struct mroce_engine *e, struct mr_conn *c, uint64_t now);
void mr_flush_dirty(struct mroce_engine *e, uint64_t now);
uint64_t mr_next_timer(const struct mroce_engine *e, uint64_t now);

/* cc.c */
void mr_cc_conn_mtu(const struct mroce_engine *e, struct mr_conn *c);
void mr_cc_init(struct mroce_engine *e, struct mr_path *p);
void mr_cc_on_ack(struct mroce_engine *e, struct mr_conn *c,
		  struct mr_path *p, uint32_t newly_acked, uint32_t ce,
		  uint32_t rtt_us, uint64_t now);
void mr_cc_on_loss(struct mroce_engine *e, struct mr_path *p, uint64_t now);
void mr_cc_on_timeout(struct mroce_engine *e, struct mr_path *p);
/* Path rerolled after it fell silent: probe it with a minimal window. */
void mr_cc_on_reroll(struct mroce_engine *e, struct mr_path *p);
/* Path rerolled to explore for a less loaded plane (mr_path_explore). */
void mr_cc_on_explore(struct mroce_engine *e, const struct mr_conn *c,
		      struct mr_path *p);
/* Packets the path may still put in flight (0 = none). */
uint32_t mr_cc_room(const struct mr_path *p);
uint32_t mr_cc_cwnd_pkts(const struct mr_path *p);
void mr_cc_on_send(struct mr_path *p);
/* Connection pacing rate in bit/s. */
uint64_t mr_cc_rate(const struct mroce_engine *e, const struct mr_conn *c,
		    uint64_t now);
/* Receiver: fair-share hint (bit/s) to put in our ACKs. */
uint64_t mr_cc_fair_share(struct mroce_engine *e, struct mr_conn *c,
			  uint64_t now);
/* Bad-path detection: true when path p should be retired (reason out). */
bool mr_cc_path_bad(const struct mr_conn *c, const struct mr_path *p,
		    uint8_t *reason);
void mr_cc_path_reset_stats(struct mr_path *p);

#endif /* MROCE_METAROCE_INT_H */
