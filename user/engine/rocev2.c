// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * RoCEv2 RC transport: the baseline every MetaRoCE measurement is compared
 * against, so it behaves like a standard NIC and nothing more.
 *
 *  - One UDP source port per QP, a hash of the QP pair in 0xC000-0xFFFF
 *    (symmetric, as Linux derives it from the flow label), so a QP is one
 *    ECMP path for its whole life.
 *  - Strict in-order 24-bit PSNs. The responder accepts exactly the next
 *    PSN: a packet ahead of it is dropped and answered by ONE NAK
 *    (PSN sequence error) per gap; a packet behind it is a duplicate and is
 *    re-ACKed (a duplicate READ request is executed again).
 *  - The requester goes back N: on a sequence NAK, an RNR NAK (after the
 *    RNR timer), a retransmission timeout, or a READ response that skips a
 *    PSN (implied NAK), it resends everything from the first missing PSN.
 *  - RETH only in WRITE_FIRST/ONLY and READ_REQ: the responder keeps the
 *    current WRITE's (va, rkey, length) between packets, which is why the
 *    protocol cannot tolerate reordering.
 *  - AckReq on the last packet of every message and every RV2_ACKREQ_EVERY
 *    packets; the responder coalesces: one ACK per transmit opportunity
 *    covering every PSN processed so far.
 *  - Fatal NAKs (remote access, invalid request, remote operational) move
 *    both QPs to ERR; the requester's WQE completes with REM_ACCESS_ERR /
 *    REM_INV_REQ_ERR / REM_OP_ERR and the rest is flushed.
 *
 * Window: at most RV2_WINDOW PSNs between the oldest unacknowledged PSN
 * and the next one sent (a READ counts all of its response PSNs, and one
 * READ may overshoot the window when it starts inside it), and at most
 * MROCE_MAX_RD_ATOMIC READs outstanding, like max_rd_atomic on a NIC.
 * No congestion control (no DCQCN): the fabric has no PFC, so loss is
 * what limits this mode, which is exactly the comparison we want.
 *
 * The ICRC covers the IP header, which the engine never sees: the codec
 * leaves 4 zero bytes that the framing layer fills and verifies.
 *
 * Memory: all state lives in struct rv2_qp (allocated at QP creation), the
 * engine's SQ/RQ rings and qp->rd; nothing is allocated per packet.
 */
#include <stdlib.h>

#include "engine_int.h"

#define RV2_WINDOW		1024	/* PSNs in flight per QP */
#define RV2_ACKREQ_EVERY	32	/* requester: AckReq at least this often */
#define RV2_ACK_EVERY		64	/* responder: ACK unasked after this many */
#define RV2_RNR_CODE		12	/* RNR timer we advertise: 0.64 ms */
/* Largest message in packets: keeps every PSN comparison inside half of
 * the 24-bit space even with a READ overshooting the window. */
#define RV2_MAX_SEGS		(1u << 22)
#define RV2_MAX_BACKOFF		7	/* RTO grows to at most 128 x base */
#define RV2_GNAK_SLOTS		64	/* NAKs of QPs that already went to ERR */
/* Largest header of any packet we send: BTH + RETH + ImmDt. */
#define RV2_MAX_HDR							\
	(sizeof(struct rocev2_bth) + sizeof(struct rocev2_reth) +	\
	 sizeof(struct rocev2_immdt))

#define RV2_SYN_ACK	(ROCEV2_AETH_ACK | ROCEV2_AETH_CREDIT_INVALID)

/* Message the responder is in the middle of (between FIRST and LAST). */
enum rv2_msg {
	RV2_MSG_NONE = 0,
	RV2_MSG_SEND,
	RV2_MSG_WRITE,
};

struct rv2_qp {
	struct mroce_qp *qp;
	uint16_t sport;		/* fixed for the QP's life (after RTR) */

	/* Requester. Invariant: una <= cursor PSN <= snd_nxt and
	 * una <= sent_hw <= snd_nxt (24-bit circular order). */
	uint32_t snd_nxt;	/* next never-assigned PSN */
	uint32_t sent_hw;	/* one past the highest PSN ever sent */
	uint32_t una;		/* oldest PSN not acknowledged / answered */
	uint32_t cur;		/* SQ counter of the WQE at the tx cursor */
	uint32_t cur_seg;	/* its next segment (READ: restart offset) */
	uint32_t rd_out;	/* READs started and not complete */
	uint32_t since_ackreq;	/* packets sent since the last AckReq */
	uint64_t rto_at;	/* retransmission deadline, 0 = disarmed */
	uint8_t backoff;	/* RTO doublings since the last progress */
	uint64_t hold_until;	/* RNR back-off, 0 = none */
	bool implied;		/* implied NAK sent for implied_psn */
	uint32_t implied_psn;

	/* Responder. */
	uint32_t epsn;		/* next PSN expected */
	uint32_t msn;		/* messages completed (24 bits on the wire) */
	uint8_t msg;		/* enum rv2_msg in progress */
	uint32_t msg_off;	/* bytes of that message placed so far */
	uint64_t wr_va;		/* current WRITE (from its RETH) */
	uint32_t wr_rkey, wr_len;
	uint32_t resp_hw;	/* one past the highest response PSN sent */
	bool nak_sent;		/* NAK/RNR for the current gap is out */
	uint32_t unacked;	/* in-order packets since the last ACK */
	bool ack_pending;	/* the ACK/NAK slot below is to be sent */
	uint8_t ack_syn;	/* AETH syndrome */
	uint32_t ack_psn, ack_msn;

	/* Per-QP counters for mroce_engine_path_info(). */
	uint64_t tx_pkts, retransmits, ce_marks;

	struct mroce_list timer_link;	/* on rv2_eng.timers while armed */
};

/* A NAK that must still go out for a QP that is already in ERR (and so no
 * longer transmits): the last word of a responder that hit a fatal error. */
struct rv2_gnak {
	int peer;
	uint16_t sport;
	uint8_t syn;
	uint32_t dqpn, psn, msn;
};

struct rv2_eng {
	struct mroce_list timers;	/* QPs with rto_at or hold_until */
	struct rv2_gnak gnak[RV2_GNAK_SLOTS];
	uint32_t gnak_head, gnak_tail;
};

static inline struct rv2_qp *rv2(const struct mroce_qp *qp)
{
	return qp->tp;
}

static inline struct rv2_eng *rv2e(const struct mroce_engine *e)
{
	return e->tp;
}

static inline int32_t pdiff(uint32_t a, uint32_t b)
{
	return rocev2_psn_diff(a, b);
}

static inline uint32_t padd(uint32_t a, uint32_t n)
{
	return rocev2_psn_add(a, n);
}

/* IBTA RNR timer encoding (C9-130 table), in microseconds. */
static const uint32_t rnr_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

/* Symmetric in the two QPNs (both directions of a QP pair use the same
 * port, as Linux's flow-label-derived port does), well mixed so that
 * neighbouring QPNs land on unrelated ECMP paths. */
static uint16_t rv2_sport(uint32_t a, uint32_t b)
{
	uint64_t v = (uint64_t)a * b + a + b;

	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdull;
	v ^= v >> 33;
	v *= 0xc4ceb9fe1a85ec53ull;
	v ^= v >> 33;
	return (uint16_t)(MROCE_SPORT_MIN |
			  (v & (MROCE_SPORT_MAX - MROCE_SPORT_MIN)));
}

/* Timeout doubles with every expiry that brings no progress: with a
 * short base timeout and deep queues, a fixed timeout would resend into a
 * queue still full of the previous copies, forever (congestion collapse).
 * Current NICs adapt their retransmission timeout the same way. */
static uint64_t rv2_rto_ns(const struct mroce_engine *e,
			   const struct rv2_qp *q)
{
	return ((uint64_t)e->cfg.rto_min_us * 1000) << q->backoff;
}

static uint32_t msg_nsegs(uint32_t len, uint32_t mtu)
{
	return len ? (uint32_t)(((uint64_t)len + mtu - 1) / mtu) : 1;
}

/* Payload bytes of segment seg of a len-byte message. */
static uint32_t seg_len(uint32_t len, uint32_t seg, uint32_t mtu)
{
	uint64_t off = (uint64_t)seg * mtu;

	if (off >= len)
		return 0;
	return len - off < mtu ? (uint32_t)(len - off) : mtu;
}

static bool is_read(const struct mroce_wqe *w)
{
	return w->wr.opcode == MROCE_WR_RDMA_READ;
}

static void timer_update(struct mroce_engine *e, struct rv2_qp *q)
{
	bool armed = q->rto_at || q->hold_until;

	if (armed && !mroce_list_linked(&q->timer_link))
		mroce_list_add_tail(&rv2e(e)->timers, &q->timer_link);
	else if (!armed)
		mroce_list_del(&q->timer_link);
}

/* ------------------------------------------------------------------ */
/* Transmit-side predicates                                             */
/* ------------------------------------------------------------------ */
static uint32_t cursor_psn(const struct mroce_qp *qp, const struct rv2_qp *q)
{
	const struct mroce_wqe *w;

	if (q->cur == qp->sq_tail)
		return q->snd_nxt;
	w = mroce_sq_at(qp, q->cur);
	if (w->state == MROCE_WQE_QUEUED)
		return q->snd_nxt;
	return padd(w->psn_first, q->cur_seg);
}

static const struct mroce_rdjob *rd_head_job(const struct mroce_qp *qp)
{
	if (qp->rd_head == qp->rd_tail)
		return NULL;
	return &qp->rd[qp->rd_head % MROCE_MAX_RD_ATOMIC];
}

/* The ACK/NAK slot may go out unless it would overtake READ responses for
 * earlier PSNs (a requester reads an ACK beyond an unanswered READ as
 * lost responses). */
static bool ack_ready(const struct mroce_qp *qp, const struct rv2_qp *q)
{
	const struct mroce_rdjob *j = rd_head_job(qp);

	return q->ack_pending && (!j || pdiff(q->ack_psn, j->msn) < 0);
}

static bool resp_has_tx(const struct mroce_qp *qp, const struct rv2_qp *q)
{
	if (qp->state != MROCE_QPS_RTR && qp->state != MROCE_QPS_RTS)
		return false;
	return ack_ready(qp, q) || rd_head_job(qp);
}

static bool req_has_tx(const struct mroce_qp *qp, const struct rv2_qp *q,
		       uint64_t now)
{
	const struct mroce_wqe *w;

	if (qp->state != MROCE_QPS_RTS || q->cur == qp->sq_tail)
		return false;
	if (q->hold_until && now < q->hold_until)
		return false;
	if (pdiff(cursor_psn(qp, q), q->una) >= RV2_WINDOW)
		return false;
	w = mroce_sq_at(qp, q->cur);
	if (is_read(w) && w->state == MROCE_WQE_QUEUED &&
	    q->rd_out >= MROCE_MAX_RD_ATOMIC)
		return false;
	return true;
}

static bool qp_has_tx(const struct mroce_qp *qp, uint64_t now)
{
	const struct rv2_qp *q = rv2(qp);

	return q && (resp_has_tx(qp, q) || req_has_tx(qp, q, now));
}

static void kick(struct mroce_engine *e, struct mroce_qp *qp, uint64_t now)
{
	if (qp_has_tx(qp, now))
		mroce_qp_sched(e, qp);
	else
		mroce_qp_unsched(qp);
}

/* ------------------------------------------------------------------ */
/* Requester bookkeeping                                                */
/* ------------------------------------------------------------------ */

/* Oldest PSN still owed to us: the first unacknowledged segment of the
 * oldest unfinished WQE (for a READ, its first missing response). */
static void update_una(struct mroce_qp *qp, struct rv2_qp *q)
{
	for (uint32_t c = qp->sq_head; c != qp->sq_tail; c++) {
		const struct mroce_wqe *w = mroce_sq_at(qp, c);

		if (w->state == MROCE_WQE_DONE)
			continue;
		if (w->state == MROCE_WQE_QUEUED)
			break;
		q->una = padd(w->psn_first, w->segs_done);
		return;
	}
	q->una = q->snd_nxt;
}

/* The WQE (started, unfinished) whose PSN range holds psn, as an SQ
 * counter in *c; NULL if none. */
static struct mroce_wqe *wqe_of_psn(struct mroce_qp *qp, uint32_t psn,
				    uint32_t *c)
{
	for (uint32_t i = qp->sq_head; i != qp->sq_tail; i++) {
		struct mroce_wqe *w = mroce_sq_at(qp, i);

		if (w->state == MROCE_WQE_QUEUED)
			break;
		if (w->state == MROCE_WQE_DONE)
			continue;
		if (pdiff(psn, w->psn_first) >= 0 &&
		    pdiff(psn, w->psn_last) <= 0) {
			*c = i;
			return w;
		}
	}
	return NULL;
}

/* Go back N: next transmission is psn again (if it is not already). */
static void rewind_to(struct mroce_qp *qp, struct rv2_qp *q, uint32_t psn,
		      bool force)
{
	struct mroce_wqe *w;
	uint32_t c;

	if (!force && pdiff(cursor_psn(qp, q), psn) <= 0)
		return;
	w = wqe_of_psn(qp, psn, &c);
	if (!w)
		return;
	q->cur = c;
	q->cur_seg = (uint32_t)pdiff(psn, w->psn_first);
	q->since_ackreq = 0;
}

/* ACKs from the flight before a rewind may acknowledge PSNs the cursor
 * is about to resend: never resend what is already acknowledged. */
static void cursor_catch_up(struct mroce_qp *qp, struct rv2_qp *q)
{
	struct mroce_wqe *w;
	uint32_t c;

	if ((int32_t)(q->cur - qp->sq_head) < 0) {
		q->cur = qp->sq_head;
		q->cur_seg = 0;
	}
	if (pdiff(cursor_psn(qp, q), q->una) >= 0)
		return;
	w = wqe_of_psn(qp, q->una, &c);
	if (w) {
		q->cur = c;
		q->cur_seg = (uint32_t)pdiff(q->una, w->psn_first);
	} else {
		q->cur = qp->sq_head;
		q->cur_seg = 0;
	}
}

static void rearm_rto(struct mroce_engine *e, struct rv2_qp *q, uint64_t now)
{
	if (q->hold_until)
		q->rto_at = 0;
	else if (pdiff(q->sent_hw, q->una) > 0)
		q->rto_at = now + rv2_rto_ns(e, q);
	else
		q->rto_at = 0;
	timer_update(e, q);
}

/* Count a retry against wqe; false (and the QP in ERR) when exhausted. */
static bool spend_retry(struct mroce_engine *e, struct mroce_qp *qp,
			struct mroce_wqe *w)
{
	if (w->retry_left == 0) {
		mroce_sq_fail(e, qp, w, MROCE_WC_RETRY_EXC_ERR);
		return false;
	}
	w->retry_left--;
	return true;
}

/* Responses for READ w (first missing: exp) are missing although later
 * PSNs were answered: ask again from exp, once per gap. */
static bool implied_nak(struct mroce_engine *e, struct mroce_qp *qp,
			struct rv2_qp *q, struct mroce_wqe *w, uint32_t exp)
{
	if (q->implied && q->implied_psn == exp)
		return true;
	if (!spend_retry(e, qp, w))
		return false;
	q->implied = true;
	q->implied_psn = exp;
	rewind_to(qp, q, exp, false);
	return true;
}

/* Everything up to and including PSN x is acknowledged. Completes SEND and
 * WRITE WQEs in order; a READ is finished only by its responses. Returns
 * false if the QP went to ERR. */
static bool ack_through(struct mroce_engine *e, struct mroce_qp *qp,
			struct rv2_qp *q, uint32_t x, uint64_t now)
{
	bool progress = false;

	for (uint32_t c = qp->sq_head; c != qp->sq_tail; c++) {
		struct mroce_wqe *w = mroce_sq_at(qp, c);
		uint32_t segs;

		if (w->state == MROCE_WQE_QUEUED)
			break;
		if (w->state == MROCE_WQE_DONE)
			continue;
		if (pdiff(x, w->psn_first) < 0)
			break;
		if (is_read(w)) {
			uint32_t exp = padd(w->psn_first, w->segs_done);

			if (pdiff(x, exp) >= 0 &&
			    !implied_nak(e, qp, q, w, exp))
				return false;
			break;
		}
		if (pdiff(x, w->psn_last) >= 0) {
			w->state = MROCE_WQE_DONE;
			w->status = MROCE_WC_SUCCESS;
			progress = true;
			continue;
		}
		segs = (uint32_t)pdiff(x, w->psn_first) + 1;
		if (segs > w->segs_done) {
			w->segs_done = segs;
			w->retry_left = e->cfg.retry_cnt;
			progress = true;
		}
		break;
	}
	if (!progress)
		return true;
	mroce_sq_drain(e, qp);
	if (qp->state == MROCE_QPS_ERR)
		return false;
	if (qp->sq_head != qp->sq_tail) {
		struct mroce_wqe *h = mroce_sq_at(qp, qp->sq_head);

		if (h->state != MROCE_WQE_QUEUED)
			h->retry_left = e->cfg.retry_cnt;
	}
	update_una(qp, q);
	cursor_catch_up(qp, q);
	q->backoff = 0;
	rearm_rto(e, q, now);
	return true;
}

static void fail_at(struct mroce_engine *e, struct mroce_qp *qp,
		    uint32_t psn, enum mroce_wc_status st)
{
	struct mroce_wqe *w;
	uint32_t c;

	w = wqe_of_psn(qp, psn, &c);
	if (!w && qp->sq_head != qp->sq_tail)
		w = mroce_sq_at(qp, qp->sq_head);
	if (w)
		mroce_sq_fail(e, qp, w, st);
	else
		mroce_qp_to_err(e, qp, e->now);
}

/* ------------------------------------------------------------------ */
/* Requester receive: ACK / NAK / READ responses                        */
/* ------------------------------------------------------------------ */
static int rx_ack(struct mroce_engine *e, struct mroce_qp *qp,
		  struct rv2_qp *q, const struct mroce_rv2_pkt *p,
		  uint64_t now)
{
	uint8_t type = p->syndrome & ROCEV2_AETH_TYPE_MASK;
	uint8_t code = p->syndrome & ~ROCEV2_AETH_TYPE_MASK;
	uint32_t psn = p->psn;
	struct mroce_wqe *w;
	uint32_t c;

	if (type == ROCEV2_AETH_ACK)
		MROCE_STAT_INC(e, rx_acks);
	else
		MROCE_STAT_INC(e, rx_naks);
	/* Only PSNs we sent can be acknowledged: [una - 1, sent_hw - 1]. */
	if (pdiff(psn, q->una) < -1 || pdiff(psn, q->sent_hw) >= 0) {
		MROCE_STAT_INC(e, rx_dup);
		return 0;
	}
	switch (type) {
	case ROCEV2_AETH_ACK:
		ack_through(e, qp, q, psn, now);
		break;
	case ROCEV2_AETH_RNR_NAK:
		if (!ack_through(e, qp, q, padd(psn, ROCEV2_PSN_MASK), now))
			return 0;
		w = wqe_of_psn(qp, psn, &c);
		if (!w)
			break;
		if (w->rnr_left == 0) {
			mroce_sq_fail(e, qp, w, MROCE_WC_RNR_RETRY_EXC_ERR);
			return 0;
		}
		if (w->rnr_left != 7)	/* 7 means retry forever */
			w->rnr_left--;
		q->hold_until = now + (uint64_t)rnr_us[code] * 1000;
		q->rto_at = 0;
		timer_update(e, q);
		rewind_to(qp, q, psn, false);
		break;
	case ROCEV2_AETH_NAK:
		if (!ack_through(e, qp, q, padd(psn, ROCEV2_PSN_MASK), now))
			return 0;
		if (code == ROCEV2_NAK_PSN_SEQ) {
			w = wqe_of_psn(qp, psn, &c);
			if (!w)
				break;
			if (!spend_retry(e, qp, w))
				return 0;
			rewind_to(qp, q, psn, false);
			break;
		}
		fail_at(e, qp, psn,
			code == ROCEV2_NAK_REMOTE_ACCESS ? MROCE_WC_REM_ACCESS_ERR :
			code == ROCEV2_NAK_REMOTE_OP	 ? MROCE_WC_REM_OP_ERR :
							   MROCE_WC_REM_INV_REQ_ERR);
		return 0;
	default:
		/* Reserved syndrome type: not something we can act on. */
		MROCE_STAT_INC(e, rx_malformed);
		return -EPROTO;
	}
	if (qp->state == MROCE_QPS_RTS)
		kick(e, qp, now);
	return 0;
}

static int rx_read_resp(struct mroce_engine *e, struct mroce_qp *qp,
			struct rv2_qp *q, const struct mroce_rv2_pkt *p,
			uint64_t now)
{
	uint32_t mtu = e->cfg.mtu, psn = p->psn, exp, len, seg;
	struct mroce_wqe *w = NULL;
	bool last;

	if (pdiff(psn, q->una) < 0 || pdiff(psn, q->sent_hw) >= 0) {
		MROCE_STAT_INC(e, rx_dup);
		return 0;
	}
	/* A response answers every earlier request: ACK up to psn - 1. */
	if (!ack_through(e, qp, q, padd(psn, ROCEV2_PSN_MASK), now))
		return 0;
	for (uint32_t c = qp->sq_head; c != qp->sq_tail; c++) {
		w = mroce_sq_at(qp, c);
		if (w->state != MROCE_WQE_DONE)
			break;
		w = NULL;
	}
	if (!w || w->state != MROCE_WQE_ACTIVE || !is_read(w) ||
	    pdiff(psn, w->psn_first) < 0 || pdiff(psn, w->psn_last) > 0) {
		/* Not the oldest READ: stale or already handled above. */
		MROCE_STAT_INC(e, rx_dup);
		goto out;
	}
	exp = padd(w->psn_first, w->segs_done);
	if (psn != exp) {
		if (pdiff(psn, exp) < 0) {
			MROCE_STAT_INC(e, rx_dup);
			goto out;
		}
		MROCE_STAT_INC(e, rx_ooo);
		if (!implied_nak(e, qp, q, w, exp))
			return 0;
		goto out;
	}
	seg = w->segs_done;
	len = seg_len(w->wr.sge.length, seg, mtu);
	last = p->opcode == ROCEV2_OP_READ_RESP_LAST ||
	       p->opcode == ROCEV2_OP_READ_RESP_ONLY;
	if (p->payload_len != len || last != (seg + 1 == w->nsegs)) {
		MROCE_STAT_INC(e, rx_malformed);
		return -EPROTO;
	}
	if (len) {
		uint8_t *dst = mroce_wqe_local_ptr(e, w, seg * mtu, len,
						   MROCE_ACCESS_LOCAL_WRITE);

		if (!dst) {
			mroce_sq_fail(e, qp, w, MROCE_WC_LOC_PROT_ERR);
			return 0;
		}
		memcpy(dst, p->payload, len);
	}
	w->segs_done++;
	w->retry_left = e->cfg.retry_cnt;
	q->implied = false;
	q->backoff = 0;
	if (w->segs_done == w->nsegs) {
		w->state = MROCE_WQE_DONE;
		w->status = MROCE_WC_SUCCESS;
		q->rd_out--;
		mroce_sq_drain(e, qp);
		if (qp->state != MROCE_QPS_RTS)
			return 0;
	}
	update_una(qp, q);
	cursor_catch_up(qp, q);
	rearm_rto(e, q, now);
out:
	if (qp->state == MROCE_QPS_RTS)
		kick(e, qp, now);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Responder receive                                                    */
/* ------------------------------------------------------------------ */
static void sched_ack(struct rv2_qp *q, uint8_t syn, uint32_t psn)
{
	q->ack_pending = true;
	q->ack_syn = syn;
	q->ack_psn = psn;
	q->ack_msn = q->msn & ROCEV2_PSN_MASK;
}

static bool slot_is_nak(const struct rv2_qp *q)
{
	return q->ack_pending && q->ack_syn != RV2_SYN_ACK;
}

/* Fatal responder error: the NAK goes out from the engine-wide queue (the
 * QP stops transmitting in ERR), then the QP enters ERR like an IB
 * responder does on a class C/D error. */
static void resp_fatal(struct mroce_engine *e, struct mroce_qp *qp,
		       struct rv2_qp *q, uint8_t nak_code, uint32_t psn,
		       uint64_t now)
{
	struct rv2_eng *g = rv2e(e);

	if (g->gnak_tail - g->gnak_head < RV2_GNAK_SLOTS) {
		struct rv2_gnak *n = &g->gnak[g->gnak_tail++ % RV2_GNAK_SLOTS];

		n->peer = qp->peer;
		n->sport = q->sport;
		n->syn = ROCEV2_AETH_NAK | nak_code;
		n->dqpn = qp->dest_qpn;
		n->psn = psn;
		n->msn = q->msn & ROCEV2_PSN_MASK;
	}
	/* else: the requester times out and retries into a dead QP, ending
	 * in RETRY_EXC_ERR, as with a lost NAK on real hardware. */
	mroce_qp_to_err(e, qp, now);
}

/* Receive failing locally on the responder: complete the receive with
 * st, then the fatal NAK. */
static void resp_fail_recv(struct mroce_engine *e, struct mroce_qp *qp,
			   struct rv2_qp *q, enum mroce_wc_status st,
			   uint8_t nak_code, uint32_t psn, uint64_t now)
{
	struct mroce_wc wc = {
		.status = st,
		.opcode = MROCE_WC_RECV,
		.byte_len = q->msg_off,
	};

	mroce_rq_complete(e, qp, &wc);
	if (qp->state != MROCE_QPS_ERR)
		resp_fatal(e, qp, q, nak_code, psn, now);
}

static int enqueue_read(struct mroce_qp *qp, struct rv2_qp *q,
			const struct mroce_rv2_pkt *p, uint32_t nsegs)
{
	struct mroce_rdjob *j;

	if (qp->rd_tail - qp->rd_head >= MROCE_MAX_RD_ATOMIC)
		return -EBUSY;
	j = &qp->rd[qp->rd_tail++ % MROCE_MAX_RD_ATOMIC];
	memset(j, 0, sizeof(*j));
	j->used = true;
	j->msn = p->psn;		/* first response PSN */
	j->va = p->va;
	j->rkey = p->rkey;
	j->len = p->dma_len;
	j->nsegs = nsegs;
	j->segs_done = nsegs;	/* here: segments to send before done */
	j->tp[0] = q->msn & ROCEV2_PSN_MASK;	/* MSN for the AETH */
	return 0;
}

/* Duplicate READ request: run it again (the responses were lost). Any
 * queued response at or after its PSN is superseded, because the
 * requester goes back N and will ask for those again too. */
static int rx_dup_read(struct mroce_engine *e, struct mroce_qp *qp,
		       struct rv2_qp *q, const struct mroce_rv2_pkt *p,
		       uint64_t now)
{
	uint32_t nsegs = msg_nsegs(p->dma_len, e->cfg.mtu);

	if (nsegs > RV2_MAX_SEGS ||
	    pdiff(padd(p->psn, nsegs), q->epsn) > 0) {
		/* Claims responses beyond what was ever executed. */
		resp_fatal(e, qp, q, ROCEV2_NAK_INVALID_REQ, p->psn, now);
		return -EPROTO;
	}
	if (mroce_rkey_check(e, qp, p->rkey, p->va, p->dma_len,
			     MROCE_ACCESS_REMOTE_READ) != MROCE_MRC_OK) {
		MROCE_STAT_INC(e, rx_bad_rkey);
		resp_fatal(e, qp, q, ROCEV2_NAK_REMOTE_ACCESS, p->psn, now);
		return -EACCES;
	}
	while (qp->rd_tail != qp->rd_head &&
	       pdiff(qp->rd[(qp->rd_tail - 1) % MROCE_MAX_RD_ATOMIC].msn,
		     p->psn) >= 0)
		qp->rd_tail--;
	/* A job that covers the PSN (the requester asks again from inside
	 * a READ) stops short of it instead of sending responses the
	 * requester would discard as out of sequence. */
	if (qp->rd_tail != qp->rd_head) {
		struct mroce_rdjob *j =
			&qp->rd[(qp->rd_tail - 1) % MROCE_MAX_RD_ATOMIC];
		int32_t cut = pdiff(p->psn, j->msn);

		if (cut > 0 && (uint32_t)cut < j->segs_done) {
			j->segs_done = (uint32_t)cut;
			if (j->next_seg >= j->segs_done)
				qp->rd_tail--;
		}
	}
	if (enqueue_read(qp, q, p, nsegs))
		return -EBUSY;
	kick(e, qp, now);
	return 0;
}

enum rv2_pos { POS_FIRST, POS_MIDDLE, POS_LAST, POS_ONLY };

static enum rv2_pos op_pos(uint8_t op)
{
	switch (op) {
	case ROCEV2_OP_SEND_FIRST:
	case ROCEV2_OP_WRITE_FIRST:
		return POS_FIRST;
	case ROCEV2_OP_SEND_MIDDLE:
	case ROCEV2_OP_WRITE_MIDDLE:
		return POS_MIDDLE;
	case ROCEV2_OP_SEND_LAST:
	case ROCEV2_OP_SEND_LAST_IMM:
	case ROCEV2_OP_WRITE_LAST:
	case ROCEV2_OP_WRITE_LAST_IMM:
		return POS_LAST;
	default:
		return POS_ONLY;
	}
}

/* Outcome of processing the expected packet. */
enum rv2_verdict {
	RV_OK = 0,
	RV_RNR,			/* no receive posted: RNR NAK, PSN not taken */
	RV_BUSY,		/* no READ slot: drop silently, PSN not taken */
	RV_FATAL,		/* already handled: QP in ERR */
};

static enum rv2_verdict resp_send(struct mroce_engine *e, struct mroce_qp *qp,
				  struct rv2_qp *q,
				  const struct mroce_rv2_pkt *p,
				  enum rv2_pos pos, uint64_t now)
{
	const struct mroce_rwqe *r;
	uint32_t len = p->payload_len;

	if (pos == POS_FIRST || pos == POS_ONLY) {
		if (!mroce_rq_head(qp, 0))
			return RV_RNR;
		q->msg = RV2_MSG_SEND;
		q->msg_off = 0;
	}
	r = mroce_rq_head(qp, 0);
	if (!r) {	/* cannot happen: the head is held until LAST */
		resp_fatal(e, qp, q, ROCEV2_NAK_REMOTE_OP, p->psn, now);
		return RV_FATAL;
	}
	if ((uint64_t)q->msg_off + len > r->wr.sge.length) {
		resp_fail_recv(e, qp, q, MROCE_WC_LOC_LEN_ERR,
			       ROCEV2_NAK_INVALID_REQ, p->psn, now);
		return RV_FATAL;
	}
	if (len) {
		uint64_t dst = r->wr.sge.addr + q->msg_off;

		if (mroce_lkey_check(e, r->wr.sge.lkey, dst, len,
				     MROCE_ACCESS_LOCAL_WRITE, NULL) !=
		    MROCE_MRC_OK) {
			resp_fail_recv(e, qp, q, MROCE_WC_LOC_PROT_ERR,
				       ROCEV2_NAK_REMOTE_OP, p->psn, now);
			return RV_FATAL;
		}
		memcpy(mroce_mr_ptr(e, r->wr.sge.lkey, false, dst), p->payload, len);
	}
	q->msg_off += len;
	if (pos == POS_LAST || pos == POS_ONLY) {
		struct mroce_wc wc = {
			.status = MROCE_WC_SUCCESS,
			.opcode = MROCE_WC_RECV,
			.byte_len = q->msg_off,
		};

		if (p->desc->ext & ROCEV2_EXT_IMM) {
			wc.imm = p->imm;
			wc.flags = MROCE_WC_WITH_IMM;
		}
		q->msg = RV2_MSG_NONE;
		q->msn++;
		mroce_rq_complete(e, qp, &wc);
		if (qp->state == MROCE_QPS_ERR)
			return RV_FATAL;	/* CQ overrun */
	}
	return RV_OK;
}

static enum rv2_verdict resp_write(struct mroce_engine *e,
				   struct mroce_qp *qp, struct rv2_qp *q,
				   const struct mroce_rv2_pkt *p,
				   enum rv2_pos pos, uint64_t now)
{
	bool imm = p->desc->ext & ROCEV2_EXT_IMM;
	uint32_t len = p->payload_len;

	if (pos == POS_FIRST || pos == POS_ONLY) {
		/* IB checks the whole range once, at the RETH. */
		if (mroce_rkey_check(e, qp, p->rkey, p->va, p->dma_len,
				     MROCE_ACCESS_REMOTE_WRITE) !=
		    MROCE_MRC_OK) {
			MROCE_STAT_INC(e, rx_bad_rkey);
			resp_fatal(e, qp, q, ROCEV2_NAK_REMOTE_ACCESS, p->psn,
				   now);
			return RV_FATAL;
		}
		if ((pos == POS_ONLY && p->dma_len != len) ||
		    (pos == POS_FIRST && p->dma_len <= len)) {
			resp_fatal(e, qp, q, ROCEV2_NAK_INVALID_REQ, p->psn,
				   now);
			return RV_FATAL;
		}
	}
	if (imm && !mroce_rq_head(qp, 0))
		return RV_RNR;	/* nothing placed yet for this packet */
	if (pos == POS_FIRST || pos == POS_ONLY) {
		q->msg = RV2_MSG_WRITE;
		q->msg_off = 0;
		q->wr_va = p->va;
		q->wr_rkey = p->rkey;
		q->wr_len = p->dma_len;
	}
	if ((uint64_t)q->msg_off + len > q->wr_len ||
	    ((pos == POS_LAST || pos == POS_ONLY) &&
	     q->msg_off + len != q->wr_len)) {
		resp_fatal(e, qp, q, ROCEV2_NAK_INVALID_REQ, p->psn, now);
		return RV_FATAL;
	}
	if (len) {
		uint64_t dst = q->wr_va + q->msg_off;

		/* Re-check per packet: the region may have been
		 * deregistered since the RETH. */
		if (mroce_rkey_check(e, qp, q->wr_rkey, dst, len,
				     MROCE_ACCESS_REMOTE_WRITE) !=
		    MROCE_MRC_OK) {
			MROCE_STAT_INC(e, rx_bad_rkey);
			resp_fatal(e, qp, q, ROCEV2_NAK_REMOTE_ACCESS, p->psn,
				   now);
			return RV_FATAL;
		}
		memcpy(mroce_mr_ptr(e, q->wr_rkey, true, dst), p->payload, len);
	}
	q->msg_off += len;
	if (pos == POS_LAST || pos == POS_ONLY) {
		q->msg = RV2_MSG_NONE;
		q->msn++;
		if (imm) {
			/* byte_len of a WRITE_WITH_IMM receive is the length
			 * of the WRITE (as rxe and mlx5 report it). */
			struct mroce_wc wc = {
				.status = MROCE_WC_SUCCESS,
				.opcode = MROCE_WC_RECV_RDMA_WITH_IMM,
				.byte_len = q->wr_len,
				.imm = p->imm,
				.flags = MROCE_WC_WITH_IMM,
			};

			mroce_rq_complete(e, qp, &wc);
			if (qp->state == MROCE_QPS_ERR)
				return RV_FATAL;
		}
	}
	return RV_OK;
}

static enum rv2_verdict resp_read(struct mroce_engine *e, struct mroce_qp *qp,
				  struct rv2_qp *q,
				  const struct mroce_rv2_pkt *p, uint64_t now)
{
	uint32_t nsegs = msg_nsegs(p->dma_len, e->cfg.mtu);

	if (nsegs > RV2_MAX_SEGS) {
		resp_fatal(e, qp, q, ROCEV2_NAK_INVALID_REQ, p->psn, now);
		return RV_FATAL;
	}
	if (mroce_rkey_check(e, qp, p->rkey, p->va, p->dma_len,
			     MROCE_ACCESS_REMOTE_READ) != MROCE_MRC_OK) {
		MROCE_STAT_INC(e, rx_bad_rkey);
		resp_fatal(e, qp, q, ROCEV2_NAK_REMOTE_ACCESS, p->psn, now);
		return RV_FATAL;
	}
	q->msn++;
	if (enqueue_read(qp, q, p, nsegs)) {
		q->msn--;
		return RV_BUSY;
	}
	/* The request takes one PSN per response packet. */
	q->epsn = padd(q->epsn, nsegs - 1);
	return RV_OK;
}

static int rx_request(struct mroce_engine *e, struct mroce_qp *qp,
		      struct rv2_qp *q, const struct mroce_rv2_pkt *p,
		      uint64_t now)
{
	int32_t d = pdiff(p->psn, q->epsn);
	enum rv2_verdict v;
	enum rv2_pos pos;
	bool is_send, is_write, start;

	if (qp->state != MROCE_QPS_RTR && qp->state != MROCE_QPS_RTS) {
		MROCE_STAT_INC(e, rx_no_conn);
		return -EPERM;
	}
	if (d > 0) {
		/* Ahead: a packet was lost (or reordered). One NAK per gap. */
		MROCE_STAT_INC(e, rx_ooo);
		if (!q->nak_sent) {
			sched_ack(q, ROCEV2_AETH_NAK | ROCEV2_NAK_PSN_SEQ,
				  q->epsn);
			q->nak_sent = true;
			kick(e, qp, now);
		}
		return -ERANGE;
	}
	if (d < 0) {
		MROCE_STAT_INC(e, rx_dup);
		if (p->opcode == ROCEV2_OP_READ_REQ)
			return rx_dup_read(e, qp, q, p, now);
		/* Re-ACK what we have, unless a NAK for a gap is queued
		 * (it says more). */
		if (!slot_is_nak(q))
			sched_ack(q, RV2_SYN_ACK, padd(q->epsn, ROCEV2_PSN_MASK));
		kick(e, qp, now);
		return 0;
	}

	/* The expected PSN. A pending sequence NAK for it is now moot:
	 * replace it by the ACK it implies. */
	if (slot_is_nak(q))
		sched_ack(q, RV2_SYN_ACK, padd(q->epsn, ROCEV2_PSN_MASK));

	pos = op_pos(p->opcode);
	is_send = p->opcode <= ROCEV2_OP_SEND_ONLY_IMM;
	is_write = p->opcode >= ROCEV2_OP_WRITE_FIRST &&
		   p->opcode <= ROCEV2_OP_WRITE_ONLY_IMM;
	start = p->opcode == ROCEV2_OP_READ_REQ || pos == POS_FIRST ||
		pos == POS_ONLY;
	/* Opcode sequence (C9-28): a message starts only between
	 * messages; MIDDLE/LAST continue the same kind of message. Sizes:
	 * FIRST/MIDDLE carry exactly one MTU, LAST 1..MTU, ONLY 0..MTU. */
	if ((start && q->msg != RV2_MSG_NONE) ||
	    (!start && q->msg != (is_send ? RV2_MSG_SEND : RV2_MSG_WRITE)) ||
	    p->payload_len > e->cfg.mtu ||
	    ((pos == POS_FIRST || pos == POS_MIDDLE) &&
	     p->payload_len != e->cfg.mtu) ||
	    (pos == POS_LAST && p->payload_len == 0)) {
		resp_fatal(e, qp, q, ROCEV2_NAK_INVALID_REQ, p->psn, now);
		return -EPROTO;
	}

	if (is_send)
		v = resp_send(e, qp, q, p, pos, now);
	else if (is_write)
		v = resp_write(e, qp, q, p, pos, now);
	else
		v = resp_read(e, qp, q, p, now);

	switch (v) {
	case RV_FATAL:
		return -EPROTO;
	case RV_BUSY:
		return -EBUSY;
	case RV_RNR:
		/* Later packets of the flight are ahead now: stay quiet
		 * about them (nak_sent) until this PSN comes back. */
		sched_ack(q, ROCEV2_AETH_RNR_NAK | RV2_RNR_CODE, p->psn);
		q->nak_sent = true;
		kick(e, qp, now);
		return -ENOBUFS;
	case RV_OK:
		break;
	}
	MROCE_STAT_INC(e, rx_data_pkts);
	q->epsn = padd(q->epsn, 1);
	qp->rq_psn = q->epsn;
	q->nak_sent = false;
	if (p->opcode != ROCEV2_OP_READ_REQ &&
	    (p->ackreq || ++q->unacked >= RV2_ACK_EVERY))
		sched_ack(q, RV2_SYN_ACK, padd(q->epsn, ROCEV2_PSN_MASK));
	kick(e, qp, now);
	return 0;
}

static int rv2_rx(struct mroce_engine *e, const struct mroce_rx_meta *m,
		  const void *buf, size_t len, uint64_t now)
{
	struct mroce_rv2_pkt p;
	struct mroce_qp *qp;
	struct rv2_qp *q;
	int err;

	err = mroce_rv2_parse_l4(buf, len, &p);
	if (err < 0) {
		MROCE_STAT_INC(e, rx_malformed);
		return err;
	}
	MROCE_STAT_INC(e, rx_pkts);
	MROCE_STAT_ADD(e, rx_bytes, len);
	if (m->ce)
		MROCE_STAT_INC(e, ce_marks);
	if (p.opcode == ROCEV2_OP_CNP)
		return 0;	/* no DCQCN in the baseline: noted, ignored */
	if ((p.pkey & 0x7fff) != (ROCEV2_DEFAULT_PKEY & 0x7fff)) {
		MROCE_STAT_INC(e, rx_malformed);
		return -EPROTO;
	}
	qp = mroce_qp_find(e, p.dqpn);
	/* A QP talks to one peer (the address vector of an RC QP): any
	 * other source is not this connection. */
	if (!qp || !qp->tp || qp->peer < 0 || qp->peer != m->peer) {
		MROCE_STAT_INC(e, rx_no_conn);
		return -ENOENT;
	}
	q = rv2(qp);
	if (m->ce)
		q->ce_marks++;
	if (p.opcode <= ROCEV2_OP_READ_REQ)
		return rx_request(e, qp, q, &p, now);
	if (qp->state != MROCE_QPS_RTS) {
		MROCE_STAT_INC(e, rx_no_conn);
		return -EPERM;
	}
	if (p.opcode == ROCEV2_OP_ACK)
		return rx_ack(e, qp, q, &p, now);
	if (p.opcode >= ROCEV2_OP_READ_RESP_FIRST &&
	    p.opcode <= ROCEV2_OP_READ_RESP_ONLY) {
		MROCE_STAT_INC(e, rx_data_pkts);
		return rx_read_resp(e, qp, q, &p, now);
	}
	MROCE_STAT_INC(e, rx_malformed);
	return -EPROTO;
}

/* ------------------------------------------------------------------ */
/* Transmit                                                             */
/* ------------------------------------------------------------------ */
static int emit(struct mroce_engine *e, struct mroce_tx_pkt *pkt,
		size_t cap, struct mroce_rv2_pkt *p, int peer, uint16_t sport)
{
	int len;

	p->pkey = ROCEV2_DEFAULT_PKEY;
	len = mroce_rv2_build(p, pkt->buf, cap);
	if (len < 0)
		return len;
	pkt->len = (uint32_t)len;
	pkt->peer = peer;
	pkt->sport = sport;
	pkt->dport = ROCEV2_UDP_PORT;
	pkt->ect = false;	/* no DCQCN: not ECN-capable */
	MROCE_STAT_INC(e, tx_pkts);
	MROCE_STAT_ADD(e, tx_bytes, len);
	return 0;
}

static void count_ack(struct mroce_engine *e, uint8_t syn)
{
	if ((syn & ROCEV2_AETH_TYPE_MASK) == ROCEV2_AETH_ACK)
		MROCE_STAT_INC(e, tx_acks);
	else
		MROCE_STAT_INC(e, tx_naks);
}

static int tx_gnak(struct mroce_engine *e, struct mroce_tx_pkt *pkt,
		   size_t cap)
{
	struct rv2_eng *g = rv2e(e);
	struct rv2_gnak *n = &g->gnak[g->gnak_head % RV2_GNAK_SLOTS];
	struct mroce_rv2_pkt p = {
		.opcode = ROCEV2_OP_ACK,
		.dqpn = n->dqpn,
		.psn = n->psn,
		.syndrome = n->syn,
		.msn = n->msn,
	};
	int err = emit(e, pkt, cap, &p, n->peer, n->sport);

	g->gnak_head++;
	if (!err)
		count_ack(e, p.syndrome);
	return err;
}

/* One responder packet: the ACK/NAK slot when it may go, else the next
 * READ response. */
static int tx_resp(struct mroce_engine *e, struct mroce_qp *qp,
		   struct rv2_qp *q, struct mroce_tx_pkt *pkt, size_t cap,
		   uint64_t now)
{
	struct mroce_rv2_pkt p = { .dqpn = qp->dest_qpn };
	uint32_t mtu = e->cfg.mtu, len, seg;
	struct mroce_rdjob *j;
	int err;

	if (ack_ready(qp, q)) {
		p.opcode = ROCEV2_OP_ACK;
		p.psn = q->ack_psn;
		p.syndrome = q->ack_syn;
		p.msn = q->ack_msn;
		err = emit(e, pkt, cap, &p, qp->peer, q->sport);
		if (err)
			return err;
		q->ack_pending = false;
		q->unacked = 0;
		q->tx_pkts++;
		count_ack(e, p.syndrome);
		return 1;
	}
	j = &qp->rd[qp->rd_head % MROCE_MAX_RD_ATOMIC];
	seg = j->next_seg;
	len = seg_len(j->len, seg, mtu);
	if (len && mroce_rkey_check(e, qp, j->rkey, j->va + (uint64_t)seg * mtu,
				    len, MROCE_ACCESS_REMOTE_READ) !=
			   MROCE_MRC_OK) {
		/* Region deregistered while we were answering. */
		MROCE_STAT_INC(e, rx_bad_rkey);
		resp_fatal(e, qp, q, ROCEV2_NAK_REMOTE_ACCESS,
			   padd(j->msn, seg), now);
		return 0;
	}
	if (j->nsegs == 1)
		p.opcode = ROCEV2_OP_READ_RESP_ONLY;
	else if (seg == 0)
		p.opcode = ROCEV2_OP_READ_RESP_FIRST;
	else if (seg + 1 == j->nsegs)
		p.opcode = ROCEV2_OP_READ_RESP_LAST;
	else
		p.opcode = ROCEV2_OP_READ_RESP_MIDDLE;
	p.psn = padd(j->msn, seg);
	p.syndrome = RV2_SYN_ACK;
	p.msn = (uint32_t)j->tp[0];
	p.payload = len ? mroce_mr_ptr(e, j->rkey, true,
				       j->va + (uint64_t)seg * mtu)
			: (const uint8_t *)"";
	p.payload_len = len;
	err = emit(e, pkt, cap, &p, qp->peer, q->sport);
	if (err)
		return err;
	MROCE_STAT_INC(e, tx_data_pkts);
	q->tx_pkts++;
	if (pdiff(p.psn, q->resp_hw) < 0) {
		MROCE_STAT_INC(e, retransmits);
		q->retransmits++;
	} else {
		q->resp_hw = padd(p.psn, 1);
	}
	if (++j->next_seg >= j->segs_done) {
		j->used = false;
		qp->rd_head++;
	}
	return 1;
}

static const uint8_t send_ops[2][4] = {
	/* FIRST, MIDDLE, LAST, ONLY */
	{ ROCEV2_OP_SEND_FIRST, ROCEV2_OP_SEND_MIDDLE, ROCEV2_OP_SEND_LAST,
	  ROCEV2_OP_SEND_ONLY },
	{ ROCEV2_OP_SEND_FIRST, ROCEV2_OP_SEND_MIDDLE, ROCEV2_OP_SEND_LAST_IMM,
	  ROCEV2_OP_SEND_ONLY_IMM },
};

static const uint8_t write_ops[2][4] = {
	{ ROCEV2_OP_WRITE_FIRST, ROCEV2_OP_WRITE_MIDDLE, ROCEV2_OP_WRITE_LAST,
	  ROCEV2_OP_WRITE_ONLY },
	{ ROCEV2_OP_WRITE_FIRST, ROCEV2_OP_WRITE_MIDDLE,
	  ROCEV2_OP_WRITE_LAST_IMM, ROCEV2_OP_WRITE_ONLY_IMM },
};

/* One requester packet at the cursor. */
static int tx_req(struct mroce_engine *e, struct mroce_qp *qp,
		  struct rv2_qp *q, struct mroce_tx_pkt *pkt, size_t cap,
		  uint64_t now)
{
	struct mroce_wqe *w = mroce_sq_at(qp, q->cur);
	struct mroce_rv2_pkt p = { .dqpn = qp->dest_qpn };
	uint32_t mtu = e->cfg.mtu, seg, len, end;
	const struct mroce_send_wr *wr = &w->wr;
	enum rv2_pos pos;
	bool imm;
	int err;

	if (w->state == MROCE_WQE_QUEUED) {
		w->state = MROCE_WQE_ACTIVE;
		w->psn_first = q->snd_nxt;
		w->psn_last = padd(q->snd_nxt, w->nsegs - 1);
		w->segs_done = 0;
		q->snd_nxt = padd(q->snd_nxt, w->nsegs);
		q->cur_seg = 0;
		if (is_read(w))
			q->rd_out++;
		qp->sq_psn = q->snd_nxt;
	}
	seg = q->cur_seg;
	p.psn = padd(w->psn_first, seg);

	if (is_read(w)) {
		uint64_t off = (uint64_t)seg * mtu;

		p.opcode = ROCEV2_OP_READ_REQ;
		p.va = wr->remote_addr + off;
		p.rkey = wr->rkey;
		p.dma_len = off < wr->sge.length ?
				    (uint32_t)(wr->sge.length - off) : 0;
		/* The request takes PSNs up to psn_last. */
		end = padd(w->psn_last, 1);
	} else {
		len = seg_len(wr->sge.length, seg, mtu);
		pos = w->nsegs == 1	     ? POS_ONLY :
		      seg == 0		     ? POS_FIRST :
		      seg + 1 == w->nsegs ? POS_LAST :
					       POS_MIDDLE;
		imm = wr->opcode == MROCE_WR_SEND_WITH_IMM ||
		      wr->opcode == MROCE_WR_RDMA_WRITE_WITH_IMM;
		if (wr->opcode == MROCE_WR_SEND ||
		    wr->opcode == MROCE_WR_SEND_WITH_IMM) {
			p.opcode = send_ops[imm][pos];
		} else {
			p.opcode = write_ops[imm][pos];
			p.va = wr->remote_addr;
			p.rkey = wr->rkey;
			p.dma_len = wr->sge.length;
		}
		p.imm = wr->imm;
		if (pos == POS_LAST || pos == POS_ONLY) {
			/* SE means something only where the responder
			 * completes a receive: SEND and WRITE_WITH_IMM. */
			p.se = (wr->send_flags & MROCE_SEND_SOLICITED) &&
			       (imm || wr->opcode == MROCE_WR_SEND);
			p.ackreq = true;
		}
		p.payload = mroce_wqe_local_ptr(e, w, seg * mtu, len, 0);
		if (!p.payload) {
			/* Source region deregistered after posting. */
			mroce_sq_fail(e, qp, w, MROCE_WC_LOC_PROT_ERR);
			return 0;
		}
		p.payload_len = len;
		end = padd(p.psn, 1);
	}
	/* Periodic AckReq keeps ACKs flowing inside long messages. A READ
	 * request needs none: its responses are the acknowledgement. */
	if (!is_read(w) && ++q->since_ackreq >= RV2_ACKREQ_EVERY)
		p.ackreq = true;
	if (p.ackreq)
		q->since_ackreq = 0;

	err = emit(e, pkt, cap, &p, qp->peer, q->sport);
	if (err)
		return err;
	MROCE_STAT_INC(e, tx_data_pkts);
	q->tx_pkts++;
	if (pdiff(p.psn, q->sent_hw) < 0) {
		MROCE_STAT_INC(e, retransmits);
		q->retransmits++;
	}
	if (pdiff(end, q->sent_hw) > 0)
		q->sent_hw = end;
	if (is_read(w) || ++q->cur_seg == w->nsegs) {
		q->cur++;
		q->cur_seg = 0;
	}
	if (!q->rto_at) {
		q->rto_at = now + rv2_rto_ns(e, q);
		timer_update(e, q);
	}
	return 1;
}

static int rv2_tx(struct mroce_engine *e, struct mroce_tx_pkt *pkts, int n,
		  size_t buf_cap, uint64_t now)
{
	struct rv2_eng *g = rv2e(e);
	int k = 0, r;

	if (n == 0)
		return 0;
	if (buf_cap < RV2_MAX_HDR + e->cfg.mtu + 3 + MROCE_ICRC_LEN)
		return -EINVAL;
	while (k < n && g->gnak_head != g->gnak_tail)
		if (tx_gnak(e, &pkts[k], buf_cap) == 0)
			k++;
	/* Round robin over QPs with work: one packet per QP per turn. */
	while (k < n && !mroce_list_empty(&e->sched)) {
		struct mroce_qp *qp = mroce_container_of(e->sched.next,
							 struct mroce_qp,
							 sched);
		struct rv2_qp *q = rv2(qp);

		mroce_qp_unsched(qp);
		if (resp_has_tx(qp, q))
			r = tx_resp(e, qp, q, &pkts[k], buf_cap, now);
		else if (req_has_tx(qp, q, now))
			r = tx_req(e, qp, q, &pkts[k], buf_cap, now);
		else
			continue;
		if (r < 0) {
			/* Nothing was consumed: try again next call. */
			mroce_qp_sched(e, qp);
			return k ? k : r;
		}
		k += r;
		/* The QP may have gone to ERR (r == 0): then it has no
		 * work and stays off the list. */
		if (qp_has_tx(qp, now))
			mroce_qp_sched(e, qp);
	}
	/* Fatal NAKs queued while walking the QPs. */
	while (k < n && g->gnak_head != g->gnak_tail)
		if (tx_gnak(e, &pkts[k], buf_cap) == 0)
			k++;
	return k;
}

/* ------------------------------------------------------------------ */
/* Timers                                                               */
/* ------------------------------------------------------------------ */
static void rto_fire(struct mroce_engine *e, struct mroce_qp *qp,
		     struct rv2_qp *q, uint64_t now)
{
	struct mroce_wqe *w;
	uint32_t c;

	q->rto_at = 0;
	w = wqe_of_psn(qp, q->una, &c);
	if (!w || pdiff(q->sent_hw, q->una) <= 0)
		return;
	MROCE_STAT_INC(e, rto_fires);
	if (!spend_retry(e, qp, w))
		return;
	q->implied = false;
	if (q->backoff < RV2_MAX_BACKOFF)
		q->backoff++;
	rewind_to(qp, q, q->una, true);
	q->rto_at = now + rv2_rto_ns(e, q);
	kick(e, qp, now);
}

static void rv2_tick(struct mroce_engine *e, uint64_t now)
{
	struct rv2_eng *g = rv2e(e);
	struct mroce_list todo;

	if (mroce_list_empty(&g->timers))
		return;
	/* Work from a private list: handling one QP can move others to ERR
	 * (CQ overrun), which unlinks them from wherever they are. */
	todo.next = g->timers.next;
	todo.prev = g->timers.prev;
	todo.next->prev = &todo;
	todo.prev->next = &todo;
	mroce_list_init(&g->timers);
	while (!mroce_list_empty(&todo)) {
		struct rv2_qp *q = mroce_container_of(todo.next, struct rv2_qp,
						      timer_link);
		struct mroce_qp *qp = q->qp;

		mroce_list_del(&q->timer_link);
		mroce_list_add_tail(&g->timers, &q->timer_link);
		if (q->hold_until && now >= q->hold_until) {
			q->hold_until = 0;
			kick(e, qp, now);
		}
		if (q->rto_at && now >= q->rto_at)
			rto_fire(e, qp, q, now);
		timer_update(e, q);
	}
}

static uint64_t rv2_next_timer(const struct mroce_engine *e, uint64_t now)
{
	const struct rv2_eng *g = rv2e(e);
	const struct mroce_list *l;
	uint64_t t = UINT64_MAX;

	if (g->gnak_head != g->gnak_tail)
		return now;
	for (l = e->sched.next; l != &e->sched; l = l->next)
		if (qp_has_tx(mroce_container_of(l, struct mroce_qp, sched),
			      now))
			return now;
	for (l = g->timers.next; l != &g->timers; l = l->next) {
		const struct rv2_qp *q =
			mroce_container_of(l, struct rv2_qp, timer_link);

		if (q->rto_at && q->rto_at < t)
			t = q->rto_at;
		if (q->hold_until && q->hold_until < t)
			t = q->hold_until;
	}
	return t;
}

/* ------------------------------------------------------------------ */
/* Lifecycle                                                            */
/* ------------------------------------------------------------------ */
static int rv2_init(struct mroce_engine *e)
{
	struct rv2_eng *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	mroce_list_init(&g->timers);
	e->tp = g;
	return 0;
}

static void rv2_fini(struct mroce_engine *e)
{
	free(e->tp);
	e->tp = NULL;
}

static int rv2_qp_create(struct mroce_engine *e, struct mroce_qp *qp)
{
	struct rv2_qp *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	q->qp = qp;
	qp->tp = q;
	return 0;
}

static void rv2_qp_destroy(struct mroce_engine *e, struct mroce_qp *qp)
{
	struct rv2_qp *q = rv2(qp);

	if (!q)
		return;
	mroce_list_del(&q->timer_link);
	free(q);
	qp->tp = NULL;
}

static void rv2_reset(struct mroce_engine *e, struct rv2_qp *q)
{
	struct mroce_qp *qp = q->qp;

	mroce_list_del(&q->timer_link);
	memset(q, 0, sizeof(*q));
	q->qp = qp;
}

static int rv2_qp_modify(struct mroce_engine *e, struct mroce_qp *qp,
			 enum mroce_qp_state old_state,
			 const struct mroce_qp_attr *attr, uint32_t mask,
			 uint64_t now)
{
	struct rv2_qp *q = rv2(qp);

	switch (qp->state) {
	case MROCE_QPS_RESET:
		rv2_reset(e, q);
		break;
	case MROCE_QPS_RTR:
		if (old_state != MROCE_QPS_INIT)
			break;
		if (qp->rq_psn & ~ROCEV2_PSN_MASK)
			return -EINVAL;
		q->epsn = q->resp_hw = qp->rq_psn;
		q->msn = 0;
		q->msg = RV2_MSG_NONE;
		q->sport = rv2_sport(qp->qpn, qp->dest_qpn);
		break;
	case MROCE_QPS_RTS:
		if (old_state != MROCE_QPS_RTR)
			break;
		if (qp->sq_psn & ~ROCEV2_PSN_MASK)
			return -EINVAL;
		q->snd_nxt = q->una = q->sent_hw = qp->sq_psn;
		q->cur = qp->sq_head;
		q->cur_seg = 0;
		kick(e, qp, now);
		break;
	case MROCE_QPS_ERR:
		/* Queues are flushed already; stop all transmission (fatal
		 * NAKs of this QP are in the engine-wide queue). */
		q->ack_pending = false;
		q->rto_at = q->hold_until = 0;
		q->rd_out = 0;
		q->cur = qp->sq_tail;
		qp->rd_head = qp->rd_tail;
		mroce_list_del(&q->timer_link);
		mroce_qp_unsched(qp);
		break;
	default:
		break;
	}
	return 0;
}

static int rv2_post_send(struct mroce_engine *e, struct mroce_qp *qp,
			 struct mroce_wqe *wqe, uint64_t now)
{
	uint32_t nsegs = msg_nsegs(wqe->wr.sge.length, e->cfg.mtu);

	if (nsegs > RV2_MAX_SEGS)
		return -EINVAL;
	wqe->nsegs = nsegs;
	kick(e, qp, now);
	return 0;
}

/* idx-th QP (in QP-table order) that talks to peer: RoCEv2's "paths" are
 * its QPs, each pinned to one source port. */
static int rv2_path_info(const struct mroce_engine *e, int peer, int idx,
			 struct mroce_path_info *out)
{
	int k = 0;

	if (idx < 0)
		return -ENOENT;
	for (uint32_t i = 0; i < e->qp_tab_size; i++) {
		const struct mroce_qp *qp = e->qp_tab[i];
		const struct rv2_qp *q;

		if (!qp || qp->peer != peer || !qp->tp ||
		    qp->state < MROCE_QPS_RTR)
			continue;
		if (k++ != idx)
			continue;
		q = rv2(qp);
		memset(out, 0, sizeof(*out));
		out->sport = q->sport;
		out->alive = qp->state != MROCE_QPS_ERR;
		out->cwnd_pkts = RV2_WINDOW;
		out->inflight = qp->state == MROCE_QPS_RTS ?
					(uint32_t)pdiff(q->sent_hw, q->una) :
					0;
		out->tx_pkts = q->tx_pkts;
		out->retransmits = q->retransmits;
		out->ce_marks = q->ce_marks;
		return 0;
	}
	return -ENOENT;
}

/* A RoCEv2 "connection" is one QP. */
static size_t rv2_conn_mem(const struct mroce_engine *e)
{
	return sizeof(struct mroce_qp) + sizeof(struct rv2_qp);
}

const struct mroce_transport_ops mroce_rocev2_ops = {
	.name = "rocev2",
	.init = rv2_init,
	.fini = rv2_fini,
	.qp_create = rv2_qp_create,
	.qp_destroy = rv2_qp_destroy,
	.qp_modify = rv2_qp_modify,
	.post_send = rv2_post_send,
	.rx = rv2_rx,
	.tx = rv2_tx,
	.tick = rv2_tick,
	.next_timer = rv2_next_timer,
	.path_info = rv2_path_info,
	.conn_mem = rv2_conn_mem,
};
