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
 * Memory: all state lives in struct rv2_qp and its per-WQE array (both
 * allocated at QP creation), the engine's SQ/RQ rings and qp->rd; nothing
 * is allocated per packet.
 *
 * This file: the ops table, receive and transmit dispatch, the QP
 * lifecycle and path info; rocev2_int.h lists the other files.
 */
#include <stdlib.h>

#include "rocev2_int.h"

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

bool rv2_qp_has_tx(const struct mroce_qp *qp, uint64_t now)
{
	const struct rv2_qp *q = rv2(qp);

	return q && (rv2_resp_has_tx(qp, q) || rv2_req_has_tx(qp, q, now));
}

void rv2_kick(struct mroce_engine *e, struct mroce_qp *qp, uint64_t now)
{
	if (rv2_qp_has_tx(qp, now))
		mroce_qp_sched(e, qp);
	else
		mroce_qp_unsched(qp);
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
		return rv2_rx_request(e, qp, q, &p, now);
	if (qp->state != MROCE_QPS_RTS) {
		MROCE_STAT_INC(e, rx_no_conn);
		return -EPERM;
	}
	if (p.opcode == ROCEV2_OP_ACK)
		return rv2_rx_ack(e, qp, q, &p, now);
	if (p.opcode >= ROCEV2_OP_READ_RESP_FIRST &&
	    p.opcode <= ROCEV2_OP_READ_RESP_ONLY) {
		MROCE_STAT_INC(e, rx_data_pkts);
		return rv2_rx_read_resp(e, qp, q, &p, now);
	}
	MROCE_STAT_INC(e, rx_malformed);
	return -EPROTO;
}

int rv2_emit(struct mroce_engine *e, struct mroce_tx_pkt *pkt, size_t cap,
	     struct mroce_rv2_pkt *p, int peer, uint16_t sport)
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
		if (rv2_tx_gnak(e, &pkts[k], buf_cap) == 0)
			k++;
	/* Round robin over QPs with work: one packet per QP per turn. */
	while (k < n && !mroce_list_empty(&e->sched)) {
		struct mroce_qp *qp = mroce_container_of(e->sched.next,
							 struct mroce_qp,
							 sched);
		struct rv2_qp *q = rv2(qp);

		mroce_qp_unsched(qp);
		if (n - k > 1 && rv2_resp_ack_only(qp, q) &&
		    rv2_req_has_tx(qp, q, now)) {
			/* A request before the ACK, which follows at once (as
			 * in MetaRoCE's mr_tx: a reply must not wait behind
			 * the ACK of its request). */
			r = rv2_tx_req(e, qp, q, &pkts[k], buf_cap, now);
			if (r > 0 && k + r < n && rv2_resp_has_tx(qp, q)) {
				int a = rv2_tx_resp(e, qp, q, &pkts[k + r],
						    buf_cap, now);

				if (a > 0)
					r += a;
			}
		} else if (rv2_resp_has_tx(qp, q))
			r = rv2_tx_resp(e, qp, q, &pkts[k], buf_cap, now);
		else if (rv2_req_has_tx(qp, q, now))
			r = rv2_tx_req(e, qp, q, &pkts[k], buf_cap, now);
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
		if (rv2_qp_has_tx(qp, now))
			mroce_qp_sched(e, qp);
	}
	/* Fatal NAKs queued while walking the QPs. */
	while (k < n && g->gnak_head != g->gnak_tail)
		if (rv2_tx_gnak(e, &pkts[k], buf_cap) == 0)
			k++;
	return k;
}

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
	q->wqe = calloc(qp->sq_cap, sizeof(*q->wqe));
	if (!q->wqe) {
		free(q);
		return -ENOMEM;
	}
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
	free(q->wqe);
	free(q);
	qp->tp = NULL;
}

static void rv2_reset(struct mroce_engine *e, struct rv2_qp *q)
{
	struct mroce_qp *qp = q->qp;
	struct rv2_wqe *wqe = q->wqe;

	mroce_list_del(&q->timer_link);
	memset(q, 0, sizeof(*q));
	q->qp = qp;
	q->wqe = wqe;
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
		rv2_kick(e, qp, now);
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
		out->next_psn = q->sent_hw;
		out->rx_psn = q->epsn;
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
	.qp_events = true,
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
