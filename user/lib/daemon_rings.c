// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libmroce, daemon mode: the data path (see daemon.c's top for the whole
 * mode). Work requests go into the shared submission ring and completions
 * come out of one shared ring per CQ, with the doorbell protocol of
 * user/ipc/ipc.h: no system call per request while the daemon is
 * awake. Every posted request is recorded per QP until its completion
 * (queue limits, bounce copy back, the flush when the daemon dies).
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "daemon_int.h"

#define DM_CHECK_NS 1000000ull /* liveness check while idle */
#define DM_SPIN_NS 50000ull
/* mrv_poll_cq() with the CQ's own sends outstanding: after this long of
 * empty polls, an empty poll naps on the completion doorbell for at most
 * DM_NAP_NS instead of only yielding (see dm_poll_cq). */
#define DM_POLL_SPIN_NS 20000ull
#define DM_NAP_NS 200000ull

/* ------------------------------------------------------------------ */
/* Completions                                                          */
/* ------------------------------------------------------------------ */
static struct dm_qp *find_qp(struct dm_dev *d, uint32_t qpn)
{
	if (d->last_qp && d->last_qp->base.qpn == qpn)
		return d->last_qp;
	for (struct dm_qp *q = d->qps; q; q = q->next)
		if (q->base.qpn == qpn)
			return d->last_qp = q;
	return NULL;
}

static struct dm_wr *fifo_at(struct dm_wr_fifo *f, uint32_t i)
{
	return &f->e[(f->head + i) % f->cap];
}

static void fifo_pop(struct dm_wr_fifo *f, uint32_t k)
{
	f->head = (f->head + k) % f->cap;
	f->n -= k;
}

static void copy_back(struct dm_dev *d, const struct dm_wr *w, uint32_t len)
{
	struct dm_mr *m = w->bounce;
	uint64_t off;

	if (!m || len > w->len)
		len = m ? w->len : 0;
	if (!m || !len)
		return;
	off = w->addr - (uint64_t)(uintptr_t)m->mr->addr;
	memcpy((void *)(uintptr_t)w->addr, m->bounce + off, len);
	dm_count(d, MRD_APP_bytes_copied, len);
}

/* Retires the request a completion belongs to (and, for sends, the
 * unsignaled ones posted before it). */
static void retire(struct dm_dev *d, const struct mrv_wc *wc)
{
	struct dm_qp *q = find_qp(d, wc->qp_num);

	if (!q)
		return;
	if (wc->opcode == MRV_WC_RECV ||
	    wc->opcode == MRV_WC_RECV_RDMA_WITH_IMM) {
		if (q->rq.n) {
			if (wc->status == MRV_WC_SUCCESS)
				copy_back(d, fifo_at(&q->rq, 0), wc->byte_len);
			fifo_pop(&q->rq, 1);
		}
		return;
	}
	for (uint32_t i = 0; i < q->sq.n; i++) {
		struct dm_wr *w = fifo_at(&q->sq, i);

		if (w->wr_id != wc->wr_id)
			continue;
		if (wc->status == MRV_WC_SUCCESS &&
		    w->opcode == MRV_WR_RDMA_READ)
			copy_back(d, w, w->len);
		fifo_pop(&q->sq, i + 1);
		return;
	}
}

static int local_push(struct dm_cq *c, const struct mrv_wc *wc)
{
	if (c->nlocal == c->caplocal) {
		int cap = c->caplocal ? 2 * c->caplocal : 64;
		struct mrv_wc *n;

		if (c->localhead) {
			memmove(c->local, c->local + c->localhead,
				(size_t)(c->nlocal - c->localhead) *
					sizeof(*n));
			c->nlocal -= c->localhead;
			c->localhead = 0;
		}
		if (c->nlocal < c->caplocal)
			goto add;
		n = realloc(c->local, (size_t)cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		c->local = n;
		c->caplocal = cap;
	}
add:
	c->local[c->nlocal++] = *wc;
	return 0;
}

static void cqe_to_wc(const struct mrd_cqe *e, struct mrv_wc *wc)
{
	*wc = (struct mrv_wc){
		.wr_id = e->wr_id,
		.status = (enum mrv_wc_status)e->status,
		.opcode = (enum mrv_wc_opcode)e->opcode,
		.byte_len = e->byte_len,
		.imm_data = e->imm,
		.qp_num = e->qpn,
		.wc_flags = e->flags,
	};
}

/* Takes up to n completions from the shared ring. */
static int ring_take(struct dm_dev *d, struct dm_cq *c, int n,
		     struct mrv_wc *wc)
{
	uint32_t tail =
		atomic_load_explicit(&c->hdr->tail, memory_order_relaxed);
	uint32_t head =
		atomic_load_explicit(&c->hdr->head, memory_order_acquire);
	bool was_full = head - tail == c->entries;
	int got = 0;

	while (tail != head && got < n) {
		struct mrd_cqe e = c->ring[tail & (c->entries - 1)];

		tail++;
		cqe_to_wc(&e, &wc[got]);
		retire(d, &wc[got]);
		got++;
	}
	if (got) {
		atomic_store(&c->hdr->tail, tail); /* seq_cst: see ipc.h */
		/* The daemon stops filling a full ring and may have gone to
		 * sleep with completions still in the engine: wake it. */
		if (was_full && atomic_load(&d->hdr->daemon_sleeping)) {
			uint64_t one = 1;

			(void)!write(d->kick_fd, &one, sizeof(one));
			dm_count(d, MRD_APP_cq_kicks, 1);
		}
	}
	return got;
}

static bool ring_ready(struct dm_cq *c)
{
	return c->nlocal > c->localhead ||
	       atomic_load(&c->hdr->head) !=
		       atomic_load_explicit(&c->hdr->tail,
					    memory_order_relaxed);
}

static void flush_fifo(struct dm_qp *q, struct dm_wr_fifo *f, bool recv)
{
	struct dm_cq *c = to_dm_cq(recv ? q->base.recv_cq : q->base.send_cq);

	for (uint32_t i = 0; i < f->n; i++) {
		struct dm_wr *w = fifo_at(f, i);
		struct mrv_wc wc = {
			.wr_id = w->wr_id,
			.status = MRV_WC_WR_FLUSH_ERR,
			.qp_num = q->base.qpn,
		};

		if (recv)
			wc.opcode = MRV_WC_RECV;
		else if (w->opcode == MRV_WR_RDMA_READ)
			wc.opcode = MRV_WC_RDMA_READ;
		else if (w->opcode == MRV_WR_RDMA_WRITE ||
			 w->opcode == MRV_WR_RDMA_WRITE_WITH_IMM)
			wc.opcode = MRV_WC_RDMA_WRITE;
		else
			wc.opcode = MRV_WC_SEND;
		(void)local_push(c, &wc);
	}
	f->head = f->n = 0;
}

/* The daemon is gone: what it completed stays in the rings' order, then
 * every request still recorded completes flushed. */
void dm_went_dead(struct dm_dev *d)
{
	if (d->dead)
		return;
	d->dead = true;
	for (struct dm_cq *c = d->cqs; c; c = c->next) {
		struct mrv_wc wc[64];
		int n;

		while ((n = ring_take(d, c, 64, wc)) > 0)
			for (int i = 0; i < n; i++)
				(void)local_push(c, &wc[i]);
	}
	for (struct dm_qp *q = d->qps; q; q = q->next) {
		flush_fifo(q, &q->sq, false);
		flush_fifo(q, &q->rq, true);
		q->state = MRV_QPS_ERR;
	}
}

/* Non-blocking: has the daemon hung up? */
static bool check_alive(struct dm_dev *d)
{
	struct pollfd p = {.fd = d->cl.sock, .events = POLLIN};
	char c;

	if (d->dead)
		return false;
	if (poll(&p, 1, 0) > 0 &&
	    ((p.revents & (POLLHUP | POLLERR)) ||
	     recv(d->cl.sock, &c, 1, MSG_PEEK | MSG_DONTWAIT) <= 0)) {
		dm_went_dead(d);
		return false;
	}
	return true;
}

void dm_check_alive_sometimes(struct dm_dev *d)
{
	uint64_t now = mrl_now_ns();

	if (now >= d->next_check) {
		d->next_check = now + DM_CHECK_NS;
		(void)check_alive(d);
	}
}

/* ------------------------------------------------------------------ */
/* Polling and waiting                                                  */
/* ------------------------------------------------------------------ */
/* Sleeps on the completion doorbell and the control socket until the
 * ring has entries, the daemon hangs up or timeout_ns (UINT64_MAX: none)
 * passed. Announces the sleep first and looks once more (see ipc.h). */
static int nap(struct dm_dev *d, struct dm_cq *c, uint64_t timeout_ns)
{
	struct pollfd p[2] = {{.fd = d->cq_fd, .events = POLLIN},
			      {.fd = d->cl.sock, .events = POLLIN}};
	struct timespec ts, *tsp = NULL;
	uint64_t v;
	int err = 0;

	atomic_store(&d->hdr->app_waiting, 1);
	if (!ring_ready(c)) {
		dm_count(d, MRD_APP_naps, 1);
		if (timeout_ns != UINT64_MAX) {
			ts.tv_sec = (time_t)(timeout_ns / 1000000000ull);
			ts.tv_nsec = (long)(timeout_ns % 1000000000ull);
			tsp = &ts;
		}
		if (ppoll(p, 2, tsp, NULL) < 0 && errno != EINTR)
			err = -errno;
		else if (p[1].revents)
			(void)check_alive(d);
	}
	if (!d->notify_always)
		atomic_store_explicit(&d->hdr->app_waiting, 0,
				      memory_order_relaxed);
	/* Consume the doorbell (a late one only costs a spurious wake-up
	 * of the next nap, which then finds the ring as it is). */
	if (p[0].revents & POLLIN) {
		(void)!read(d->cq_fd, &v, sizeof(v));
		dm_count(d, MRD_APP_nap_doorbells, 1);
	}
	return err;
}

/* Are sends whose completions go to this CQ outstanding? */
static bool sends_pending(struct dm_dev *d, struct dm_cq *c)
{
	for (struct dm_qp *q = d->qps; q; q = q->next)
		if (q->sq.n && to_dm_cq(q->base.send_cq) == c)
			return true;
	return false;
}

/* Tells the daemon which CPU this application waits on (ipc.h,
 * app_cpu); written only when it changed, so the line stays shared. */
static void note_cpu(struct dm_dev *d)
{
	int cpu = sched_getcpu();

	if (atomic_load_explicit(&d->hdr->app_cpu, memory_order_relaxed) != cpu)
		atomic_store_explicit(&d->hdr->app_cpu, cpu,
				      memory_order_relaxed);
}

int dm_poll_cq(struct mrv_cq *cq, int n, struct mrv_wc *wc)
{
	struct dm_dev *d = to_dm_dev(cq->dev);
	struct dm_cq *c = to_dm_cq(cq);
	int got = 0;
	uint64_t now;

	if (!d->dead)
		dm_count(d, MRD_APP_polls, 1);
	if (d->notify_always && !d->dead) {
		uint64_t v;

		/* Reset the fd the application polls before looking at the
		 * ring: a completion arriving after this signals it again. */
		(void)!read(d->cq_fd, &v, sizeof(v));
	}
	while (got < n && c->localhead < c->nlocal)
		wc[got++] = c->local[c->localhead++];
	if (c->localhead == c->nlocal)
		c->localhead = c->nlocal = 0;
	if (!d->dead && got < n)
		got += ring_take(d, c, n - got, wc + got);
	if (got) {
		c->empty_since = 0;
		return got;
	}
	if (d->dead)
		return n ? -ENOTCONN : 0;
	dm_count(d, MRD_APP_polls_empty, 1);
	note_cpu(d);
	dm_check_alive_sometimes(d);
	if (d->dead) /* the flush may have filled the local list */
		return dm_poll_cq(cq, n, wc);
	/* Nothing yet: the work happens in the daemon, which may share this
	 * core (2-core hosts). First let it run; once the ring stayed empty
	 * for a while and this CQ waits for our own sends, sleep until the
	 * daemon rings (bounded): a caller that spins on an empty CQ would
	 * otherwise keep a core the daemon needs. */
	now = mrl_now_ns();
	if (!c->empty_since || now - c->empty_last > DM_NAP_NS)
		c->empty_since = now; /* a new run of empty polls */
	c->empty_last = now;
	if (now - c->empty_since < DM_POLL_SPIN_NS || !n ||
	    !sends_pending(d, c)) {
		sched_yield();
		return 0;
	}
	(void)nap(d, c, DM_NAP_NS);
	c->empty_last = mrl_now_ns(); /* the nap continues the run */
	if (d->dead)
		return dm_poll_cq(cq, n, wc);
	got = ring_take(d, c, n, wc);
	if (got)
		c->empty_since = 0;
	return got;
}

int dm_wait_cq(struct mrv_cq *cq, int timeout_ms)
{
	struct dm_dev *d = to_dm_dev(cq->dev);
	struct dm_cq *c = to_dm_cq(cq);
	uint64_t start = mrl_now_ns(), deadline;

	deadline = timeout_ms < 0 ? UINT64_MAX
				  : start + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		uint64_t now;
		int err;

		if (ring_ready(c))
			return 1;
		if (d->dead)
			return -ENOTCONN;
		now = mrl_now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		if (now - start < DM_SPIN_NS) {
			/* The daemon may need this core to make the
			 * completion we wait for. */
			sched_yield();
			continue;
		}
		err = nap(d, c,
			  deadline == UINT64_MAX ? UINT64_MAX : deadline - now);
		if (err < 0)
			return err;
	}
}

/* ------------------------------------------------------------------ */
/* Work requests                                                        */
/* ------------------------------------------------------------------ */
/* Room in the submission ring. */
static uint32_t sq_room(struct dm_dev *d, uint32_t head)
{
	uint32_t tail =
		atomic_load_explicit(&d->hdr->sq.tail, memory_order_acquire);

	return d->sq_entries - (head - tail);
}

static void sq_publish(struct dm_dev *d, uint32_t head)
{
	atomic_store(&d->hdr->sq.head, head); /* seq_cst: see ipc.h */
	if (atomic_load(&d->hdr->daemon_sleeping)) {
		uint64_t one = 1;

		(void)!write(d->kick_fd, &one, sizeof(one));
		dm_count(d, MRD_APP_sq_doorbells, 1);
	}
}

/* Checks the SGE against the application's MRs; the bounce MR when the
 * memory is bounce-buffered. */
static int check_sge(struct dm_dev *d, const struct mrv_sge *sg, int num,
		     struct dm_mr **bounce)
{
	struct dm_mr *m;
	uint64_t start;

	*bounce = NULL;
	if (mrl_sge_check(sg, num) < 0)
		return -EINVAL;
	if (!num)
		return 0;
	m = dm_find_mr(d, sg->lkey);
	if (!m)
		return -EINVAL;
	start = (uint64_t)(uintptr_t)m->mr->addr;
	if (sg->addr < start || sg->addr - start > m->mr->length ||
	    sg->length > m->mr->length - (sg->addr - start))
		return -EINVAL;
	if (m->bounce)
		*bounce = m;
	return 0;
}

/* One post_send / post_recv call: the ring's head as it goes. */
struct sq_post {
	struct dm_dev *d;
	struct dm_qp *x;
	uint32_t from, head;
};

static int sq_begin(struct mrv_qp *qp, struct sq_post *p)
{
	p->d = to_dm_dev(qp->pd->dev);
	p->x = to_dm_qp(qp);
	if (p->d->dead)
		return -ENOTCONN;
	p->from = p->head =
		atomic_load_explicit(&p->d->hdr->sq.head, memory_order_relaxed);
	return 0;
}

/* May one more request with this SGE go into fifo f (state_ok: the QP's
 * state allows the kind)? 0, or the error of the first check failing. */
static int sq_check(struct sq_post *p, const struct dm_wr_fifo *f,
		    const struct mrv_sge *sg, int num_sge, bool state_ok,
		    struct dm_mr **bounce)
{
	int err = check_sge(p->d, sg, num_sge, bounce);

	if (err < 0)
		return err;
	if (!state_ok)
		return -EPERM;
	if (f->n == f->cap)
		return -EAGAIN;
	if (!sq_room(p->d, p->head)) {
		dm_count(p->d, MRD_APP_post_ring_full, 1);
		return -EAGAIN;
	}
	return 0;
}

/* Writes one request into the ring and its record into f (after
 * sq_check()), with the SGE, if any, in both. */
static void sq_put(struct sq_post *p, struct dm_wr_fifo *f, struct mrd_sqe e,
		   struct dm_wr w, const struct mrv_sge *sg, int num_sge)
{
	if (num_sge) {
		e.sge_addr = w.addr = sg->addr;
		e.sge_len = w.len = sg->length;
		e.lkey = sg->lkey;
	}
	p->d->sq[p->head & (p->d->sq_entries - 1)] = e;
	*fifo_at(f, f->n) = w;
	f->n++;
	p->head++;
}

/* Ends the call: publishes what it wrote. */
static int sq_end(struct sq_post *p, int err)
{
	if (p->head != p->from) {
		sq_publish(p->d, p->head);
		dm_count(p->d, MRD_APP_posts, p->head - p->from);
	}
	return err;
}

int dm_post_send(struct mrv_qp *qp, struct mrv_send_wr *wr,
		 struct mrv_send_wr **bad_wr)
{
	struct sq_post p;
	int err = sq_begin(qp, &p);

	if (err)
		return err;
	for (*bad_wr = wr; wr; wr = wr->next, *bad_wr = wr) {
		struct dm_mr *b;

		err = mrl_wr_check(wr);
		if (!err)
			err = sq_check(&p, &p.x->sq, wr->sg_list, wr->num_sge,
				       p.x->state == MRV_QPS_RTS, &b);
		if (err)
			break;
		if (b && wr->opcode != MRV_WR_RDMA_READ) {
			memcpy(b->bounce + (wr->sg_list->addr -
					    (uint64_t)(uintptr_t)b->mr->addr),
			       (void *)(uintptr_t)wr->sg_list->addr,
			       wr->sg_list->length);
			dm_count(p.d, MRD_APP_bytes_copied,
				 wr->sg_list->length);
		}
		sq_put(&p, &p.x->sq,
		       (struct mrd_sqe){
			       .wr_id = wr->wr_id,
			       .remote_addr = wr->remote_addr,
			       .qpn = qp->qpn,
			       .rkey = wr->rkey,
			       .imm = wr->imm_data,
			       .send_flags = wr->send_flags,
			       .kind = MRD_SQE_SEND,
			       .opcode = (uint8_t)wr->opcode,
			       .num_sge = (uint8_t)wr->num_sge,
		       },
		       (struct dm_wr){
			       .wr_id = wr->wr_id,
			       .opcode = (uint8_t)wr->opcode,
			       .bounce = wr->opcode == MRV_WR_RDMA_READ ? b
									: NULL,
		       },
		       wr->sg_list, wr->num_sge);
	}
	return sq_end(&p, err);
}

int dm_post_recv(struct mrv_qp *qp, struct mrv_recv_wr *wr,
		 struct mrv_recv_wr **bad_wr)
{
	struct sq_post p;
	int err = sq_begin(qp, &p);

	if (err)
		return err;
	for (*bad_wr = wr; wr; wr = wr->next, *bad_wr = wr) {
		struct dm_mr *b;

		err = sq_check(&p, &p.x->rq, wr->sg_list, wr->num_sge,
			       p.x->state != MRV_QPS_RESET, &b);
		if (err)
			break;
		sq_put(&p, &p.x->rq,
		       (struct mrd_sqe){
			       .wr_id = wr->wr_id,
			       .qpn = qp->qpn,
			       .kind = MRD_SQE_RECV,
			       .num_sge = (uint8_t)wr->num_sge,
		       },
		       (struct dm_wr){.wr_id = wr->wr_id, .bounce = b},
		       wr->sg_list, wr->num_sge);
	}
	return sq_end(&p, err);
}
