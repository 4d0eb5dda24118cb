// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroced's data path between the shared rings and the engine (ring
 * layout, ownership and ordering: user/ipc/ipc.h).
 *
 * Submissions: the application produces work requests into its session's
 * submission ring; drain_sq() hands them to the engine in order. What the
 * engine cannot take yet (-EAGAIN: send queue full) waits in a per-QP
 * backlog, and later entries of that QP queue behind it, so program order
 * holds. Completions: deliver() moves the engine's completions, after the
 * ones the daemon made itself (failed submissions, flushed backlog), into
 * each CQ's ring while it has room.
 *
 * Every queue the daemon keeps for a session is bounded, whatever the
 * application writes into its ring: a QP's backlog holds at most
 * max_send_wr + max_recv_wr requests (what libmroce can have outstanding
 * on it, so the library never meets the bound) and a CQ's daemon-made
 * completions at most the ring's size. An entry that would go past a
 * bound stays in the submission ring (the session is "stalled", counted
 * in sq_stalls) until the engine or the application makes room: the
 * ring fills and the application's posts get -EAGAIN, the verbs' own
 * back-pressure. (The stall holds the session's later entries too: the
 * ring is one queue.)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mroced.h"

/* Adds a daemon-made completion: -ENOBUFS at the bound (drain_sq() never
 * lets it come to that; a shutdown flush may, and the library then
 * flushes the rest itself from its records). */
static int synth_push(struct sess *s, struct sess_cq *c,
		      const struct mrd_cqe *e)
{
	if (c->nsynth == (int)c->entries)
		return -ENOBUFS;
	if (c->nsynth == c->capsynth) {
		int cap = c->capsynth ? 2 * c->capsynth : 16;
		struct mrd_cqe *n;

		if (cap > (int)c->entries)
			cap = (int)c->entries;
		n = realloc(c->synth, (size_t)cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		c->synth = n;
		c->capsynth = cap;
	}
	c->synth[c->nsynth++] = *e;
	if ((uint64_t)c->nsynth > s->c[MRD_SESS_synth_max])
		s->c[MRD_SESS_synth_max] = (uint64_t)c->nsynth;
	return 0;
}

static uint8_t wc_opcode_of(const struct mrd_sqe *q)
{
	if (q->kind == MRD_SQE_RECV)
		return MRV_WC_RECV;
	switch (q->opcode) {
	case MRV_WR_RDMA_WRITE:
	case MRV_WR_RDMA_WRITE_WITH_IMM:
		return MRV_WC_RDMA_WRITE;
	case MRV_WR_RDMA_READ:
		return MRV_WC_RDMA_READ;
	default:
		return MRV_WC_SEND;
	}
}

/* Moves completions (daemon-made first, then the engine's) into the CQ's
 * ring while it has room. Returns the number moved. */
static int deliver_cq(struct sess *s, struct sess_cq *c)
{
	uint32_t head =
		atomic_load_explicit(&c->hdr->head, memory_order_relaxed);
	uint32_t tail =
		atomic_load_explicit(&c->hdr->tail, memory_order_acquire);
	uint32_t room = c->entries - (head - tail);
	int moved = 0;

	if (head - tail > c->entries) {
		s->dead = true; /* corrupted by the application */
		return 0;
	}
	if (c->nsynth && room) {
		int k = c->nsynth < (int)room ? c->nsynth : (int)room;

		for (int i = 0; i < k; i++)
			c->ring[(head + (uint32_t)i) & (c->entries - 1)] =
				c->synth[i];
		memmove(c->synth, c->synth + k,
			(size_t)(c->nsynth - k) * sizeof(*c->synth));
		c->nsynth -= k;
		head += (uint32_t)k;
		room -= (uint32_t)k;
		moved += k;
	}
	while (room && !c->nsynth) {
		struct mroce_wc w[64];
		int want = room < 64 ? (int)room : 64;
		int n = mroce_poll_cq(s->e, c->id, w, want);

		if (n <= 0)
			break;
		for (int i = 0; i < n; i++)
			c->ring[(head + (uint32_t)i) & (c->entries - 1)] =
				(struct mrd_cqe){
					.wr_id = w[i].wr_id,
					.status = w[i].status,
					.opcode = w[i].opcode,
					.byte_len = w[i].byte_len,
					.imm = w[i].imm,
					.qpn = w[i].qpn,
					.flags = w[i].flags,
				};
		head += (uint32_t)n;
		room -= (uint32_t)n;
		moved += n;
		if (n < want)
			break;
	}
	if (moved) {
		atomic_store_explicit(&c->hdr->head, head,
				      memory_order_seq_cst);
		s->c[MRD_SESS_cqes] += (uint64_t)moved;
		s->c[MRD_SESS_cq_batches]++;
	}
	/* Full: the app kicks us when it frees room while we sleep. */
	c->blocked = !room;
	if (!room && moved)
		s->c[MRD_SESS_cq_ring_full]++;
	return moved;
}

int deliver(struct sess *s)
{
	int moved = 0;

	for (struct sess_cq *c = s->cqs; c; c = c->next)
		moved += deliver_cq(s, c);
	if (moved && atomic_load(&s->hdr->app_waiting)) {
		uint64_t one = 1;

		(void)!write(s->cq_fd, &one, sizeof(one));
		s->c[MRD_SESS_cq_doorbells]++;
	}
	return moved;
}

/* Queues an entry behind the QP's backlog (drain_sq() checked the bound). */
static int bl_push(struct sess *s, struct sess_qp *q, const struct mrd_sqe *e)
{
	if (q->bl_n == q->bl_max)
		return -ENOBUFS;
	if (q->bl_n == q->bl_cap) {
		int cap = q->bl_cap ? 2 * q->bl_cap : 64;
		struct mrd_sqe *n;

		if (cap > q->bl_max)
			cap = q->bl_max;
		n = malloc((size_t)cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (int i = 0; i < q->bl_n; i++)
			n[i] = q->bl[(q->bl_head + i) % q->bl_cap];
		free(q->bl);
		q->bl = n;
		q->bl_head = 0;
		q->bl_cap = cap;
	}
	q->bl[(q->bl_head + q->bl_n) % q->bl_cap] = *e;
	q->bl_n++;
	s->c[MRD_SESS_backlogged]++;
	if ((uint64_t)q->bl_n > s->c[MRD_SESS_backlog_max])
		s->c[MRD_SESS_backlog_max] = (uint64_t)q->bl_n;
	return 0;
}

/* Hands one entry to the engine: 0 taken (or failed into a completion),
 * -EAGAIN engine queue full (keep it). */
static int submit(struct sess *s, struct sess_qp *q, const struct mrd_sqe *x,
		  uint64_t now)
{
	struct mroce_sge sge = {0};
	enum mrv_wc_status st;
	struct mroce_qp_attr qa;
	int err;

	if (x->num_sge)
		sge = (struct mroce_sge){
			.addr = x->sge_addr,
			.length = x->sge_len,
			.lkey = x->lkey,
		};
	if (x->kind == MRD_SQE_SEND) {
		struct mroce_send_wr w = {
			.wr_id = x->wr_id,
			.opcode = (enum mroce_wr_opcode)x->opcode,
			.send_flags = x->send_flags,
			.sge = sge,
			.imm = x->imm,
			.remote_addr = x->remote_addr,
			.rkey = x->rkey,
		};

		err = x->opcode > MRV_WR_RDMA_READ || x->num_sge > 1
			      ? -EINVAL
			      : mroce_post_send(s->e, q->qpn, &w, now);
	} else {
		struct mroce_recv_wr w = {.wr_id = x->wr_id, .sge = sge};

		err = x->num_sge > 1 ? -EINVAL
				     : mroce_post_recv(s->e, q->qpn, &w);
	}
	if (!err || err == -EAGAIN)
		return err;
	/* The library checked state, opcode and lkey before posting; what
	 * still fails here failed later (QP moved to ERR meanwhile, MR
	 * deregistered): report it the way ibverbs would. */
	if (err == -EPERM && !mroce_query_qp(s->e, q->qpn, &qa) &&
	    qa.state == MROCE_QPS_ERR)
		st = MRV_WC_WR_FLUSH_ERR;
	else if (err == -EINVAL)
		st = MRV_WC_LOC_PROT_ERR;
	else
		st = MRV_WC_LOC_QP_OP_ERR;
	(void)synth_push(s, x->kind == MRD_SQE_SEND ? q->scq : q->rcq,
			 &(struct mrd_cqe){
				 .wr_id = x->wr_id,
				 .status = st,
				 .opcode = wc_opcode_of(x),
				 .qpn = q->qpn,
			 });
	return 0;
}

int run_backlog(struct sess *s, uint64_t now)
{
	int moved = 0;
	bool left = false;

	for (struct sess_qp *q = s->qps; q; q = q->next) {
		while (q->bl_n) {
			if (submit(s, q, &q->bl[q->bl_head], now) == -EAGAIN)
				break;
			q->bl_head = (q->bl_head + 1) % q->bl_cap;
			q->bl_n--;
			moved++;
		}
		if (q->bl_n)
			left = true;
	}
	s->backlog = left;
	return moved;
}

/* Room for one more entry of QP q: it may have to wait in the backlog
 * and may fail into a daemon-made completion. */
static bool has_room(const struct sess_qp *q, const struct mrd_sqe *x)
{
	const struct sess_cq *c = x->kind == MRD_SQE_SEND ? q->scq : q->rcq;

	return q->bl_n < q->bl_max && c->nsynth < (int)c->entries;
}

/* Drains up to `budget` submission entries; stops early (stalled) at an
 * entry there is no room for. */
int drain_sq(struct sess *s, uint64_t now, int budget)
{
	uint32_t tail =
		atomic_load_explicit(&s->hdr->sq.tail, memory_order_relaxed);
	uint32_t head =
		atomic_load_explicit(&s->hdr->sq.head, memory_order_acquire);
	int n = 0;

	if (head - tail > s->sq_entries) {
		s->dead = true;
		return 0;
	}
	s->stalled = false;
	while (tail != head && n < budget) {
		struct mrd_sqe x = s->sq[tail & (s->sq_entries - 1)];
		struct sess_qp *q = find_qp(s, x.qpn);

		if (!q || (x.kind != MRD_SQE_SEND && x.kind != MRD_SQE_RECV)) {
			mroced.ctl[MRD_CTL_sq_bad_entries]++;
		} else if (!has_room(q, &x)) {
			s->stalled = true;
			s->c[MRD_SESS_sq_stalls]++;
			break;
		} else if (q->bl_n || submit(s, q, &x, now) == -EAGAIN) {
			if (bl_push(s, q, &x) < 0)
				s->dead = true; /* out of memory */
			s->backlog = true;
		}
		tail++;
		n++;
		mroced.ctl[MRD_CTL_sq_entries]++;
	}
	if (n) {
		atomic_store_explicit(&s->hdr->sq.tail, tail,
				      memory_order_release);
		s->c[MRD_SESS_sq_entries] += (uint64_t)n;
		s->c[MRD_SESS_sq_batches]++;
	}
	return n;
}

void drain_sq_all(struct sess *s, uint64_t now)
{
	while (sq_pending(s) && !s->dead && drain_sq(s, now, 1 << 30) > 0)
		;
}

bool sq_pending(const struct sess *s)
{
	return atomic_load(&s->hdr->sq.head) !=
	       atomic_load_explicit(&s->hdr->sq.tail, memory_order_relaxed);
}

/* A backlog never reached the engine: on shutdown its work requests
 * complete here, with flush errors. */
void flush_backlog(struct sess *s, struct sess_qp *q)
{
	while (q->bl_n) {
		struct mrd_sqe *x = &q->bl[q->bl_head];

		(void)synth_push(
			s, x->kind == MRD_SQE_SEND ? q->scq : q->rcq,
			&(struct mrd_cqe){.wr_id = x->wr_id,
					  .status = MRV_WC_WR_FLUSH_ERR,
					  .opcode = wc_opcode_of(x),
					  .qpn = q->qpn});
		q->bl_head = (q->bl_head + 1) % q->bl_cap;
		q->bl_n--;
	}
}
