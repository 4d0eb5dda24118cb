/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * INTERNAL header of the RoCEv2 RC transport (user/engine/rocev2/ only).
 *
 * The transport is split the way Linux rxe splits its RC code:
 *   rocev2.c     the ops table, rx/tx dispatch, QP lifecycle, path info
 *   requester.c  the send cursor: PSN assignment, go-back-N rewinds,
 *                building request packets (rxe_req.c)
 *   completer.c  ACK/NAK and READ responses at the requester: completes
 *                WQEs in order, retries, implied NAKs (rxe_comp.c)
 *   responder.c  requests at the responder: placement, receives, READ
 *                jobs, the coalesced ACK/NAK slot, fatal NAKs (rxe_resp.c)
 *   timers.c     retransmission timeout and RNR back-off
 * Everything here is RoCEv2-only state; the generic verbs objects are in
 * ../engine_int.h, whose transport contract every function here keeps.
 */
#ifndef MROCE_ROCEV2_INT_H
#define MROCE_ROCEV2_INT_H

#include "../engine_int.h"

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

/* Per-WQE requester state, parallel to the engine's SQ ring (same index:
 * the WQE's SQ counter modulo sq_cap). Valid once the WQE left QUEUED. */
struct rv2_wqe {
	uint32_t psn_first;	/* PSN of its first packet */
	uint32_t psn_last;	/* last PSN (READ: of its last response) */
};

/* Message the responder is in the middle of (between FIRST and LAST). */
enum rv2_msg {
	RV2_MSG_NONE = 0,
	RV2_MSG_SEND,
	RV2_MSG_WRITE,
};

struct rv2_qp {
	struct mroce_qp *qp;
	struct rv2_wqe *wqe;	/* sq_cap entries, parallel to qp->sq */
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
	/* AETH MSN of each READ job, parallel to qp->rd (same slot). */
	uint32_t rd_msn[MROCE_MAX_RD_ATOMIC];

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

static inline bool is_read(const struct mroce_wqe *w)
{
	return w->wr.opcode == MROCE_WR_RDMA_READ;
}

/* RoCEv2 state of an SQ WQE of qp. */
static inline struct rv2_wqe *rv2w(const struct mroce_qp *qp,
				   const struct mroce_wqe *w)
{
	return &rv2(qp)->wqe[w - qp->sq];
}

/* Where segment seg of an nsegs-packet message sits (transmit side; the
 * receive side reads it from the opcode table, p->desc->pos). */
static inline enum mroce_pkt_pos rv2_seg_pos(uint32_t seg, uint32_t nsegs)
{
	return (seg == 0 ? MROCE_POS_FIRST : 0) |
	       (seg + 1 == nsegs ? MROCE_POS_LAST : 0);
}

/* rocev2.c */
bool rv2_qp_has_tx(const struct mroce_qp *qp, uint64_t now);
/* Put qp on the transmit list if it has work now, else take it off. */
void rv2_kick(struct mroce_engine *e, struct mroce_qp *qp, uint64_t now);
/* Build p into pkt (addressed to peer from sport) and count it. */
int rv2_emit(struct mroce_engine *e, struct mroce_tx_pkt *pkt, size_t cap,
	     struct mroce_rv2_pkt *p, int peer, uint16_t sport);

/* requester.c */
uint32_t rv2_cursor_psn(const struct mroce_qp *qp, const struct rv2_qp *q);
bool rv2_req_has_tx(const struct mroce_qp *qp, const struct rv2_qp *q,
		    uint64_t now);
struct mroce_wqe *rv2_wqe_of_psn(struct mroce_qp *qp, uint32_t psn,
				 uint32_t *c);
void rv2_rewind_to(struct mroce_qp *qp, struct rv2_qp *q, uint32_t psn,
		   bool force);
int rv2_tx_req(struct mroce_engine *e, struct mroce_qp *qp, struct rv2_qp *q,
	       struct mroce_tx_pkt *pkt, size_t cap, uint64_t now);
int rv2_post_send(struct mroce_engine *e, struct mroce_qp *qp,
		  struct mroce_wqe *wqe, uint64_t now);

/* completer.c */
bool rv2_spend_retry(struct mroce_engine *e, struct mroce_qp *qp,
		     struct mroce_wqe *w);
int rv2_rx_ack(struct mroce_engine *e, struct mroce_qp *qp, struct rv2_qp *q,
	       const struct mroce_rv2_pkt *p, uint64_t now);
int rv2_rx_read_resp(struct mroce_engine *e, struct mroce_qp *qp,
		     struct rv2_qp *q, const struct mroce_rv2_pkt *p,
		     uint64_t now);

/* responder.c */
bool rv2_resp_has_tx(const struct mroce_qp *qp, const struct rv2_qp *q);
/* The responder's only work is its ACK/NAK slot (no READ response). */
bool rv2_resp_ack_only(const struct mroce_qp *qp, const struct rv2_qp *q);
int rv2_rx_request(struct mroce_engine *e, struct mroce_qp *qp,
		   struct rv2_qp *q, const struct mroce_rv2_pkt *p,
		   uint64_t now);
int rv2_tx_resp(struct mroce_engine *e, struct mroce_qp *qp, struct rv2_qp *q,
		struct mroce_tx_pkt *pkt, size_t cap, uint64_t now);
int rv2_tx_gnak(struct mroce_engine *e, struct mroce_tx_pkt *pkt,
		size_t cap);

/* timers.c */
uint64_t rv2_rto_ns(const struct mroce_engine *e, const struct rv2_qp *q);
/* Link q on the engine's timer list while a deadline is armed. */
void rv2_timer_update(struct mroce_engine *e, struct rv2_qp *q);
void rv2_tick(struct mroce_engine *e, uint64_t now);
uint64_t rv2_next_timer(const struct mroce_engine *e, uint64_t now);

#endif /* MROCE_ROCEV2_INT_H */
