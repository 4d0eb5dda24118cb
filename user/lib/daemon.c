// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libmroce, daemon mode: the verbs of include/mroce/mroce.h served by the
 * mroced daemon (user/mroced/mroced.c) through the protocol of
 * user/ipc/ipc.h.
 *
 * Control calls (create, modify, query, destroy) are synchronous requests
 * over the device's SOCK_SEQPACKET socket. Work requests go into the
 * shared submission ring and completions come out of one shared ring per
 * CQ: no system call per request while the daemon is awake; a doorbell
 * (eventfd write) only when the daemon said it sleeps.
 *
 * The library keeps, per QP, a record of every work request the daemon
 * has not completed yet (wr_id, opcode, buffer). It serves three things:
 * the queue limits (max_send_wr / max_recv_wr -> -EAGAIN, as ibverbs: an
 * unsignaled send is retired by a later completion of the same QP), the
 * copy back of bounce-buffered MRs at completion time, and the flush when
 * the daemon dies: every recorded request then completes with
 * MRV_WC_WR_FLUSH_ERR, after the completions already in the rings, and
 * later calls return -ENOTCONN. A dead daemon is seen as a hang-up of the
 * socket: checked in every control call, in mrv_wait_cq()'s poll() and,
 * at most once a millisecond, when mrv_poll_cq() finds its ring empty.
 *
 * Memory: mrv_alloc_mr() memory is a sealed memfd that the daemon maps
 * too (zero copy, registered at the application's address). mrv_reg_mr()
 * of arbitrary memory gets a bounce memfd shared with the daemon: the
 * library copies the source into it when posting a SEND/WRITE, and copies
 * received data (RECV, READ) back at completion. A peer's WRITE or READ
 * could not be copied at any defined moment, so REMOTE_* rights on such
 * memory are refused with -ENOTSUP.
 *
 * Files: this one holds the device and the control verbs, each a
 * request through the protocol client (dclient.c); daemon_rings.c the
 * data path. Reached only through daemon_ops (lib_int.h): verbs.c checked
 * the arguments and keeps the object counts.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon_int.h"

#define DM_REPLY_TIMEOUT_S 10 /* a daemon silent this long is dead */

static const struct mrl_dev_ops daemon_ops;

static struct dm_pd *to_dm_pd(struct mrv_pd *pd)
{
	return mrl_container_of(pd, struct dm_pd, base);
}

/* ------------------------------------------------------------------ */
/* Control requests                                                     */
/* ------------------------------------------------------------------ */
/* One request to the daemon; a session the client gave up on is a dead
 * daemon (flushed, -ENOTCONN from then on). */
static int request(struct dm_dev *d, uint16_t op, struct mrd_req *q,
		   struct mrd_rep *r, int sendfd)
{
	int err;

	if (d->dead)
		return -ENOTCONN;
	err = mrd_client_call(&d->cl, op, q, r, sendfd, NULL, 0);
	if (d->cl.broken)
		dm_went_dead(d);
	return err;
}

/* Asks the daemon to destroy the object q names. A daemon that is gone
 * took its objects with it: then the caller frees its own state all the
 * same, and this returns 0. */
static int request_destroy(struct dm_dev *d, uint16_t op, struct mrd_req *q)
{
	struct mrd_rep r;
	int err = request(d, op, q, &r, -1);

	return err < 0 && !d->dead ? err : 0;
}

/* Takes x off the singly linked list that starts at head (via ->next). */
#define LIST_UNLINK(head, x)                                                   \
	do {                                                                   \
		for (__typeof__(x) *pp_ = &(head); *pp_; pp_ = &(*pp_)->next)  \
			if (*pp_ == (x)) {                                     \
				*pp_ = (x)->next;                              \
				break;                                         \
			}                                                      \
	} while (0)

/* ------------------------------------------------------------------ */
/* Device                                                               */
/* ------------------------------------------------------------------ */
/* Maps the session's shared region (the HELLO reply's memfd) and checks
 * what the daemon put at its start. */
static int map_shm(struct dm_dev *d, const struct mrd_rep *r, int fd)
{
	d->shm_size = r->u.hello.shm_size;
	d->shm = mmap(NULL, d->shm_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		      0);
	if (d->shm == MAP_FAILED) {
		d->shm = NULL;
		return -errno;
	}
	d->hdr = d->shm;
	if (d->hdr->magic != MRD_SHM_MAGIC || d->hdr->version != MRD_VERSION)
		return -EPROTO;
	d->sq = (struct mrd_sqe *)((uint8_t *)d->shm + r->u.hello.sq_off);
	d->sq_entries = r->u.hello.sq_entries;
	return 0;
}

int mrl_daemon_open(const struct mrv_dev_attr *attr, struct mrv_device **out)
{
	struct mrd_rep r;
	struct dm_dev *d;
	int fds[3], err;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->kick_fd = d->cq_fd = -1;
	err = mrd_client_connect(&d->cl, attr->daemon_sock, DM_REPLY_TIMEOUT_S);
	if (err < 0)
		goto fail;
	err = mrd_client_hello(&d->cl,
			       attr->transport ? attr->transport
					       : MRV_TRANSPORT_METAROCE,
			       &r, fds);
	if (err < 0)
		goto fail;
	d->kick_fd = fds[1];
	d->cq_fd = fds[2];
	err = map_shm(d, &r, fds[0]);
	close(fds[0]);
	if (err < 0)
		goto fail;
	d->base.ops = &daemon_ops;
	d->base.transport = r.u.hello.transport;
	d->base.mtu = r.u.hello.mtu;
	d->base.link_mbps = (uint32_t)(r.u.hello.link_bps / 1000000ull);
	d->base.family = r.u.hello.family;
	memcpy(d->base.local, r.u.hello.local, 16);
	*out = &d->base;
	return 0;
fail:
	if (d->kick_fd >= 0)
		close(d->kick_fd);
	if (d->cq_fd >= 0)
		close(d->cq_fd);
	if (d->shm)
		munmap(d->shm, d->shm_size);
	mrd_client_close(&d->cl);
	free(d);
	return err;
}

static int dm_close_device(struct mrv_device *dev)
{
	struct dm_dev *d = to_dm_dev(dev);

	mrd_client_close(&d->cl); /* the daemon releases the session */
	munmap(d->shm, d->shm_size);
	close(d->kick_fd);
	close(d->cq_fd);
	free(d);
	return 0;
}

static int dm_progress(struct mrv_device *dev)
{
	struct dm_dev *d = to_dm_dev(dev);

	dm_check_alive_sometimes(d);
	if (d->dead)
		return -ENOTCONN;
	/* Called in loops that wait on memory: the daemon does the work
	 * and may need this core. */
	sched_yield();
	return 0;
}

static int dm_device_fd(const struct mrv_device *dev)
{
	struct dm_dev *d = to_dm_dev(dev);

	/* An application polling this fd itself cannot announce each
	 * sleep: the daemon then signals after every batch. */
	d->notify_always = true;
	atomic_store(&d->hdr->app_waiting, 1);
	return d->cq_fd;
}

static int dm_query_stats(const struct mrv_device *dev,
			  struct mrv_dev_stats *st)
{
	struct mrd_req q = {0};
	struct mrd_rep r;
	int err = request(to_dm_dev(dev), MRD_OP_QUERY_STATS, &q, &r, -1);

	if (err < 0)
		return err;
	*st = r.u.stats;
	return 0;
}

/* ------------------------------------------------------------------ */
/* PD and MR                                                            */
/* ------------------------------------------------------------------ */
static int dm_alloc_pd(struct mrv_device *dev, struct mrv_pd **out)
{
	struct mrd_req q = {0};
	struct mrd_rep r;
	struct dm_pd *pd;
	int err = request(to_dm_dev(dev), MRD_OP_ALLOC_PD, &q, &r, -1);

	if (err < 0)
		return err;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM; /* the daemon frees it with the session */
	pd->handle = r.u.pd.handle;
	*out = &pd->base;
	return 0;
}

static int dm_dealloc_pd(struct mrv_pd *pd)
{
	struct dm_dev *d = to_dm_dev(pd->dev);
	struct mrd_req q = {0};
	int err;

	q.u.pd.pd = to_dm_pd(pd)->handle;
	err = request_destroy(d, MRD_OP_DEALLOC_PD, &q);
	if (err < 0)
		return err;
	free(to_dm_pd(pd));
	return 0;
}

/* A memfd of `size` bytes sealed against resizing (so that the daemon,
 * which maps it too, can never be made to fault by a truncate), mapped
 * here. Returns the fd and sets *map, or -errno. */
static int sealed_memfd(size_t size, const char *name, void **map)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING), err;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	*map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (*map == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static size_t page_up(size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (len + page - 1) & ~(page - 1);
}

/* Registers [iova, iova+len) held by memfd `fd`. */
static int reg_fd(struct mrv_pd *pd, int fd, void *iova, size_t len,
		  uint32_t access, struct mrv_mr **out, struct dm_mr **dmr)
{
	struct dm_dev *d = to_dm_dev(pd->dev);
	struct mrd_req q = {0};
	struct mrd_rep r;
	struct mrv_mr *mr;
	struct dm_mr *m;
	int err;

	q.u.reg_mr.pd = to_dm_pd(pd)->handle;
	q.u.reg_mr.access = access;
	q.u.reg_mr.len = len;
	q.u.reg_mr.iova = (uint64_t)(uintptr_t)iova;
	err = request(d, MRD_OP_REG_MR, &q, &r, fd);
	if (err < 0)
		return err;
	mr = calloc(1, sizeof(*mr));
	m = calloc(1, sizeof(*m));
	if (!mr || !m) {
		free(mr);
		free(m);
		q.u.dereg_mr.lkey = r.u.mr.lkey;
		(void)request(d, MRD_OP_DEREG_MR, &q, &r, -1);
		return -ENOMEM;
	}
	mr->addr = iova;
	mr->length = len;
	mr->lkey = r.u.mr.lkey;
	mr->rkey = r.u.mr.rkey;
	mr->access = access;
	mr->fd = -1;
	mr->priv = m;
	m->mr = mr;
	m->lkey = mr->lkey;
	m->bounce_fd = -1;
	m->next = d->mrs;
	d->mrs = m;
	*out = mr;
	*dmr = m;
	return 0;
}

/* A new sealed memfd of len bytes (rounded up to pages), mapped here at
 * *map and registered as an MR at iova (NULL: at *map, the whole memfd).
 * Returns the fd, or -errno with nothing left behind. */
static int reg_new_memfd(struct mrv_pd *pd, void *iova, size_t len,
			 uint32_t access, const char *name, struct mrv_mr **out,
			 struct dm_mr **dmr, void **map)
{
	size_t size = page_up(len);
	int fd, err;

	fd = sealed_memfd(size, name, map);
	if (fd < 0)
		return fd;
	err = reg_fd(pd, fd, iova ? iova : *map, iova ? len : size, access, out,
		     dmr);
	if (err < 0) {
		munmap(*map, size);
		close(fd);
		return err;
	}
	(*dmr)->map_len = size;
	return fd;
}

static int dm_reg_mr(struct mrv_pd *pd, void *addr, size_t len, uint32_t access,
		     struct mrv_mr **out)
{
	struct dm_mr *m;
	void *p;
	int fd;

	/* Remote access to memory the daemon cannot map: see the top. */
	if (access & (MRV_ACCESS_REMOTE_WRITE | MRV_ACCESS_REMOTE_READ))
		return -ENOTSUP;
	fd = reg_new_memfd(pd, addr, len, access, "mroce-bounce", out, &m, &p);
	if (fd < 0)
		return fd;
	m->bounce = p;
	m->bounce_fd = fd;
	return 0;
}

static int dm_alloc_mr(struct mrv_pd *pd, size_t len, uint32_t access,
		       struct mrv_mr **out)
{
	struct dm_mr *m;
	void *p;
	int fd;

	fd = reg_new_memfd(pd, NULL, len, access, "mroce-mr", out, &m, &p);
	if (fd < 0)
		return fd;
	(*out)->fd = fd;
	return 0;
}

static int dm_dereg_mr(struct mrv_mr *mr)
{
	struct dm_dev *d = to_dm_dev(mr->pd->dev);
	struct dm_mr *m = mr->priv;
	struct mrd_req q = {0};
	int err;

	q.u.dereg_mr.lkey = mr->lkey;
	err = request_destroy(d, MRD_OP_DEREG_MR, &q);
	if (err < 0)
		return err;
	LIST_UNLINK(d->mrs, m);
	if (m->bounce) {
		munmap(m->bounce, m->map_len);
		close(m->bounce_fd);
	}
	if (mr->fd >= 0) {
		munmap(mr->addr, m->map_len);
		close(mr->fd);
	}
	free(m);
	free(mr);
	return 0;
}

struct dm_mr *dm_find_mr(struct dm_dev *d, uint32_t lkey)
{
	for (struct dm_mr *m = d->mrs; m; m = m->next)
		if (m->lkey == lkey)
			return m;
	return NULL;
}

/* ------------------------------------------------------------------ */
/* CQ                                                                   */
/* ------------------------------------------------------------------ */
static int dm_create_cq(struct mrv_device *dev, int depth, struct mrv_cq **out)
{
	struct dm_dev *d = to_dm_dev(dev);
	struct mrd_req q = {0};
	struct mrd_rep r;
	struct dm_cq *c;
	uint64_t end;
	int err;

	q.u.create_cq.depth = (uint32_t)depth;
	err = request(d, MRD_OP_CREATE_CQ, &q, &r, -1);
	if (err < 0)
		return err;
	end = (uint64_t)r.u.cq.ring_off + sizeof(struct mrd_ring_hdr) +
	      (uint64_t)r.u.cq.entries * sizeof(struct mrd_cqe);
	c = calloc(1, sizeof(*c));
	if (!c || end > d->shm_size || !r.u.cq.entries ||
	    (r.u.cq.entries & (r.u.cq.entries - 1)) || (r.u.cq.ring_off & 63)) {
		free(c);
		q.u.cq.cq = r.u.cq.cq;
		(void)request(d, MRD_OP_DESTROY_CQ, &q, &r, -1);
		return c ? -EPROTO : -ENOMEM;
	}
	c->base.id = (int)r.u.cq.cq;
	c->hdr = (struct mrd_ring_hdr *)((uint8_t *)d->shm + r.u.cq.ring_off);
	c->ring = (struct mrd_cqe *)(c->hdr + 1);
	c->entries = r.u.cq.entries;
	c->next = d->cqs;
	d->cqs = c;
	*out = &c->base;
	return 0;
}

static int dm_destroy_cq(struct mrv_cq *cq)
{
	struct dm_dev *d = to_dm_dev(cq->dev);
	struct dm_cq *c = to_dm_cq(cq);
	struct mrd_req q = {0};
	int err;

	q.u.cq.cq = (uint32_t)cq->id;
	err = request_destroy(d, MRD_OP_DESTROY_CQ, &q);
	if (err < 0)
		return err;
	LIST_UNLINK(d->cqs, c);
	free(c->local);
	free(c);
	return 0;
}

/* ------------------------------------------------------------------ */
/* QP                                                                   */
/* ------------------------------------------------------------------ */
static int dm_create_qp(struct mrv_pd *pd, const struct mrv_qp_init_attr *attr,
			struct mrv_qp **out)
{
	struct dm_dev *d = to_dm_dev(pd->dev);
	struct mrd_req q = {0};
	struct mrd_rep r;
	struct dm_qp *qp;
	int err;

	/* The records of outstanding requests are allocated here, whole. */
	if (attr->max_send_wr > 65536 || attr->max_recv_wr > 65536)
		return -EINVAL;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->sq.cap = attr->max_send_wr ? attr->max_send_wr : 128;
	qp->rq.cap = attr->max_recv_wr ? attr->max_recv_wr : 128;
	qp->sq.e = calloc(qp->sq.cap, sizeof(*qp->sq.e));
	qp->rq.e = calloc(qp->rq.cap, sizeof(*qp->rq.e));
	if (!qp->sq.e || !qp->rq.e) {
		err = -ENOMEM;
		goto fail;
	}
	q.u.create_qp.pd = to_dm_pd(pd)->handle;
	q.u.create_qp.send_cq = (uint32_t)attr->send_cq->id;
	q.u.create_qp.recv_cq = (uint32_t)attr->recv_cq->id;
	q.u.create_qp.max_send_wr = qp->sq.cap;
	q.u.create_qp.max_recv_wr = qp->rq.cap;
	err = request(d, MRD_OP_CREATE_QP, &q, &r, -1);
	if (err < 0)
		goto fail;
	qp->base.qpn = r.u.qp.qpn;
	qp->state = MRV_QPS_RESET;
	qp->next = d->qps;
	d->qps = qp;
	*out = &qp->base;
	return 0;
fail:
	free(qp->sq.e);
	free(qp->rq.e);
	free(qp);
	return err;
}

static int dm_destroy_qp(struct mrv_qp *qp)
{
	struct dm_dev *d = to_dm_dev(qp->pd->dev);
	struct dm_qp *x = to_dm_qp(qp);
	struct mrd_req q = {0};
	int err;

	q.u.qp.qpn = qp->qpn;
	err = request_destroy(d, MRD_OP_DESTROY_QP, &q);
	if (err < 0)
		return err;
	LIST_UNLINK(d->qps, x);
	if (d->last_qp == x)
		d->last_qp = NULL;
	free(x->sq.e);
	free(x->rq.e);
	free(x);
	return 0;
}

static int dm_modify_qp(struct mrv_qp *qp, const struct mrv_qp_attr *attr,
			uint32_t mask)
{
	struct dm_dev *d = to_dm_dev(qp->pd->dev);
	struct dm_qp *x = to_dm_qp(qp);
	struct mrd_req q = {0};
	struct mrd_rep r;
	int err;

	q.u.modify_qp.qpn = qp->qpn;
	q.u.modify_qp.mask = mask;
	q.u.modify_qp.state = attr->qp_state;
	q.u.modify_qp.access = attr->qp_access_flags;
	q.u.modify_qp.dest_qpn = attr->dest_qp_num;
	q.u.modify_qp.rq_psn = attr->rq_psn;
	q.u.modify_qp.sq_psn = attr->sq_psn;
	memcpy(q.u.modify_qp.dest_addr, attr->dest_addr,
	       sizeof(attr->dest_addr));
	err = request(d, MRD_OP_MODIFY_QP, &q, &r, -1);
	if (err < 0)
		return err;
	if (mask & MRV_QP_STATE) {
		x->state = attr->qp_state;
		if (x->state == MRV_QPS_RESET) /* the engine dropped them */
			x->sq.head = x->sq.n = x->rq.head = x->rq.n = 0;
	}
	return 0;
}

static int dm_query_qp(struct mrv_qp *qp, struct mrv_qp_attr *attr)
{
	struct mrd_req q = {0};
	struct mrd_rep r;
	int err;

	q.u.qp.qpn = qp->qpn;
	err = request(to_dm_dev(qp->pd->dev), MRD_OP_QUERY_QP, &q, &r, -1);
	if (err < 0)
		return err;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum mrv_qp_state)r.u.qattr.state;
	attr->qp_access_flags = r.u.qattr.access;
	attr->dest_qp_num = r.u.qattr.dest_qpn;
	attr->rq_psn = r.u.qattr.rq_psn;
	attr->sq_psn = r.u.qattr.sq_psn;
	memcpy(attr->dest_addr, r.u.qattr.dest_addr,
	       sizeof(attr->dest_addr) - 1);
	to_dm_qp(qp)->state = attr->qp_state;
	return 0;
}

static int dm_query_path(struct mrv_qp *qp, int idx, struct mrv_path_info *out)
{
	struct mrd_req q = {0};
	struct mrd_rep r;
	int err;

	q.u.qp.qpn = qp->qpn;
	q.u.qp.idx = idx;
	err = request(to_dm_dev(qp->pd->dev), MRD_OP_QUERY_PATH, &q, &r, -1);
	if (err < 0)
		return err;
	*out = r.u.path;
	return 0;
}

static const struct mrl_dev_ops daemon_ops = {
	.close_device = dm_close_device,
	.progress = dm_progress,
	.device_fd = dm_device_fd,
	.query_stats = dm_query_stats,
	.alloc_pd = dm_alloc_pd,
	.dealloc_pd = dm_dealloc_pd,
	.reg_mr = dm_reg_mr,
	.alloc_mr = dm_alloc_mr,
	.dereg_mr = dm_dereg_mr,
	.create_cq = dm_create_cq,
	.destroy_cq = dm_destroy_cq,
	.poll_cq = dm_poll_cq, /* daemon_rings.c */
	.wait_cq = dm_wait_cq, /* daemon_rings.c */
	.create_qp = dm_create_qp,
	.destroy_qp = dm_destroy_qp,
	.modify_qp = dm_modify_qp,
	.query_qp = dm_query_qp,
	.query_path = dm_query_path,
	.post_send = dm_post_send, /* daemon_rings.c */
	.post_recv = dm_post_recv, /* daemon_rings.c */
};
