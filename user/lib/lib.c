// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libmroce, embedded mode: the verbs objects of include/mroce/mroce.h
 * forwarded to an in-process engine. Packets move between the engine and
 * one I/O backend through the endpoint pump (user/io/endpoint.c, shared
 * with the daemon): an embedded device is an endpoint with one engine.
 *
 * Progress runs only inside library calls made by the application (poll,
 * wait, post, progress): there is no thread, so a device is owned by one
 * thread at a time, like the engine and the backends underneath.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mroce/wire.h"
#include "../common/devstats.h"
#include "daemon_int.h"
#include "lib_int.h"

extern int mroce_io_afxdp_conn_del(struct mroce_io *io, uint8_t proto,
				   uint32_t id) __attribute__((weak));

/* The public enums are promised to match the engine's numbering so that
 * conversion is a cast; keep them in lockstep. */
_Static_assert(MRV_WC_GENERAL_ERR == (int)MROCE_WC_GENERAL_ERR, "wc status");
_Static_assert(MRV_WC_RECV_RDMA_WITH_IMM == (int)MROCE_WC_RECV_RDMA_WITH_IMM,
	       "wc opcode");
_Static_assert(MRV_WR_RDMA_READ == (int)MROCE_WR_RDMA_READ, "wr opcode");
_Static_assert(MRV_QPS_ERR == (int)MROCE_QPS_ERR, "qp state");
_Static_assert((int)MRV_ACCESS_REMOTE_READ == (int)MROCE_ACCESS_REMOTE_READ,
	       "access");
_Static_assert((int)MRV_QP_SQ_PSN == (int)MROCE_QP_SQ_PSN, "qp attr mask");
_Static_assert((int)MRV_SEND_SOLICITED == (int)MROCE_SEND_SOLICITED,
	       "send flags");
_Static_assert((unsigned int)MRV_WC_WITH_IMM == MROCE_WC_WITH_IMM, "wc flags");

uint64_t mrv_now_ns(void)
{
	return mroce_ep_now();
}

int mrv_random(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t r = getrandom(p, len, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

static int parse_addr(const char *s, uint8_t *family, uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (!s)
		return -EINVAL;
	if (inet_pton(AF_INET, s, addr) == 1) {
		*family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, addr) == 1) {
		*family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}



int mrv_peer_by_name(struct mrv_device *dev, const char *s)
{
	return mroce_ep_peer_by_name(dev->ep, dev->transport, s);
}

/* ------------------------------------------------------------------ */
/* Device                                                               */
/* ------------------------------------------------------------------ */

int mrv_open_device(const struct mrv_dev_attr *attr, struct mrv_device **out)
{
	struct mroce_ep_cfg cfg = {0};
	struct mroce_engine_cfg *ec;
	struct mrv_device *dev;
	uint8_t transport;
	int err;

	if (!attr || !out)
		return -EINVAL;
	*out = NULL;
	if (attr->mode == MRV_MODE_DAEMON)
		return mrd_open_device(attr, out); /* daemon.c */
	if (attr->mode != MRV_MODE_EMBEDDED)
		return -EINVAL;
	if (attr->transport && attr->transport != MRV_TRANSPORT_METAROCE &&
	    attr->transport != MRV_TRANSPORT_ROCEV2)
		return -EINVAL;
	if (attr->backend && attr->backend != MRV_BACKEND_UDP &&
	    attr->backend != MRV_BACKEND_AFXDP)
		return -EINVAL;
	if (attr->backend == MRV_BACKEND_AFXDP && !attr->ifname)
		return -EINVAL;
	if (attr->udp_port == 0xffff)
		return -EINVAL;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	err = parse_addr(attr->local_addr, &dev->family, dev->local);
	if (err < 0)
		goto fail;

	transport = attr->transport ? attr->transport : MRV_TRANSPORT_METAROCE;
	/* One engine: eng[0] runs MetaRoCE, eng[1] RoCEv2. */
	ec = &cfg.eng[transport == MRV_TRANSPORT_ROCEV2];
	ec->transport = transport;
	ec->npaths = attr->npaths;
	ec->mtu = attr->mtu; /* 0 on AF_XDP: from the interface */
	ec->seed = attr->seed;
	ec->rto_min_us = attr->rto_min_us;
	/* Software endpoints: scheduling noise, not queueing, dominates
	 * the RTT (docs/engine.md, cfg.jitter_us). */
	ec->jitter_us = MROCE_EP_SW_JITTER_US;

	cfg.io.kind = attr->backend == MRV_BACKEND_AFXDP ? MROCE_IO_AFXDP
							 : MROCE_IO_UDP;
	cfg.io.family = dev->family;
	memcpy(cfg.io.local_addr, dev->local, 16);
	cfg.io.mroce_port = attr->udp_port ? attr->udp_port : MROCE_UDP_PORT;
	cfg.io.rocev2_port = attr->udp_port ? (uint16_t)(attr->udp_port + 1)
					    : ROCEV2_UDP_PORT;
	cfg.io.ifname = attr->ifname;
	cfg.io.queue = attr->queue;
	err = mroce_ep_open(&cfg, &dev->ep);
	if (err < 0)
		goto fail;
	dev->e = mroce_ep_engine(dev->ep, transport);
	dev->io = mroce_ep_io(dev->ep);
	dev->transport = transport;
	dev->mtu = mroce_ep_mtu(dev->ep);
	dev->afxdp = attr->backend == MRV_BACKEND_AFXDP;
	*out = dev;
	return 0;
fail:
	free(dev);
	return err;
}

int mrv_close_device(struct mrv_device *dev)
{
	if (!dev)
		return -EINVAL;
	if (dev->daemon)
		return mrd_close_device(dev);
	if (dev->npds || dev->ncqs)
		return -EBUSY;
	mroce_ep_close(dev->ep);
	free(dev);
	return 0;
}

int mrv_device_mtu(const struct mrv_device *dev)
{
	return dev ? dev->mtu : -EINVAL;
}

int mrv_device_fd(const struct mrv_device *dev)
{
	if (dev && dev->daemon)
		return mrd_device_fd(dev);
	return dev ? mroce_ep_fd(dev->ep) : -EINVAL;
}

int mrv_progress(struct mrv_device *dev)
{
	if (!dev)
		return -EINVAL;
	if (dev->daemon)
		return mrd_progress(dev);
	return mroce_ep_progress(dev->ep, mrv_now_ns());
}

int mrv_query_stats(const struct mrv_device *dev, struct mrv_dev_stats *st)
{
	struct mroce_engine_stats es;
	struct mroce_io_stats is;

	if (!dev || !st)
		return -EINVAL;
	if (dev->daemon)
		return mrd_query_stats(dev, st);
	mroce_engine_get_stats(dev->e, &es);
	mroce_io_get_stats(dev->io, &is);
	mroce_dev_stats_fill(st, &es, &is);
	return 0;
}

/* ------------------------------------------------------------------ */
/* PD and MR                                                            */
/* ------------------------------------------------------------------ */
int mrv_alloc_pd(struct mrv_device *dev, struct mrv_pd **out)
{
	struct mrv_pd *pd;

	if (!dev || !out)
		return -EINVAL;
	if (dev->daemon)
		return mrd_alloc_pd(dev, out);
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	pd->dev = dev;
	dev->npds++;
	*out = pd;
	return 0;
}

int mrv_dealloc_pd(struct mrv_pd *pd)
{
	if (!pd)
		return -EINVAL;
	if (pd->nmrs || pd->nqps)
		return -EBUSY;
	if (pd->dev->daemon)
		return mrd_dealloc_pd(pd);
	pd->dev->npds--;
	free(pd);
	return 0;
}

static int reg(struct mrv_pd *pd, void *addr, size_t len, uint32_t access,
	       int fd, struct mrv_mr **out)
{
	struct mroce_mr emr;
	struct mrv_mr *mr;
	int err;

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	err = mroce_reg_mr(pd->dev->e, addr, len, access, &emr);
	if (err < 0) {
		free(mr);
		return err;
	}
	mr->addr = addr;
	mr->length = len;
	mr->lkey = emr.lkey;
	mr->rkey = emr.rkey;
	mr->access = access;
	mr->pd = pd;
	mr->fd = fd;
	pd->nmrs++;
	*out = mr;
	return 0;
}

int mrv_reg_mr(struct mrv_pd *pd, void *addr, size_t len, uint32_t access,
	       struct mrv_mr **out)
{
	if (!pd || !addr || !len || !out ||
	    (access &
	     ~(uint32_t)(MRV_ACCESS_LOCAL_WRITE | MRV_ACCESS_REMOTE_WRITE |
			 MRV_ACCESS_REMOTE_READ)))
		return -EINVAL;
	if (pd->dev->daemon)
		return mrd_reg_mr(pd, addr, len, access, out);
	return reg(pd, addr, len, access, -1, out);
}

int mrv_alloc_mr(struct mrv_pd *pd, size_t len, uint32_t access,
		 struct mrv_mr **out)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t size;
	void *p;
	int fd, err;

	if (!pd || !len || !out || len > SIZE_MAX / 2)
		return -EINVAL;
	if (pd->dev->daemon)
		return mrd_alloc_mr(pd, len, access, out);
	size = (len + (size_t)page - 1) & ~((size_t)page - 1);
	/* A memfd rather than anonymous memory: the daemon mode will map the
	 * same pages (zero copy), passed over its UNIX socket. */
	fd = memfd_create("mroce-mr", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	err = mrv_reg_mr(pd, p, size, access, out);
	if (err < 0) {
		munmap(p, size);
		close(fd);
		return err;
	}
	(*out)->fd = fd;
	return 0;
}

int mrv_dereg_mr(struct mrv_mr *mr)
{
	int err;

	if (!mr)
		return -EINVAL;
	if (mr->pd->dev->daemon)
		return mrd_dereg_mr(mr);
	err = mroce_dereg_mr(mr->pd->dev->e, mr->lkey);
	if (err < 0)
		return err;
	if (mr->fd >= 0) {
		munmap(mr->addr, mr->length);
		close(mr->fd);
	}
	mr->pd->nmrs--;
	free(mr);
	return 0;
}

/* ------------------------------------------------------------------ */
/* CQ                                                                   */
/* ------------------------------------------------------------------ */
int mrv_create_cq(struct mrv_device *dev, int depth, struct mrv_cq **out)
{
	struct mrv_cq *cq;
	int id;

	if (!dev || depth <= 0 || !out)
		return -EINVAL;
	if (dev->daemon)
		return mrd_create_cq(dev, depth, out);
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	id = mroce_create_cq(dev->e, (uint32_t)depth);
	if (id < 0) {
		free(cq);
		return id;
	}
	cq->dev = dev;
	cq->id = id;
	dev->ncqs++;
	*out = cq;
	return 0;
}

int mrv_destroy_cq(struct mrv_cq *cq)
{
	int err;

	if (!cq)
		return -EINVAL;
	if (cq->nqps)
		return -EBUSY;
	if (cq->dev->daemon)
		return mrd_destroy_cq(cq);
	err = mroce_destroy_cq(cq->dev->e, cq->id);
	if (err < 0)
		return err;
	cq->dev->ncqs--;
	free(cq);
	return 0;
}

static void conv_wc(struct mrv_wc *o, const struct mroce_wc *w)
{
	*o = (struct mrv_wc){
		.wr_id = w->wr_id,
		.status = (enum mrv_wc_status)w->status,
		.opcode = (enum mrv_wc_opcode)w->opcode,
		.byte_len = w->byte_len,
		.imm_data = w->imm,
		.qp_num = w->qpn,
		.wc_flags = w->flags,
	};
}

/* Moves engine completions into the stash; returns the stash count. */
static int fill_stash(struct mrv_cq *cq)
{
	struct mroce_wc w[MRV_CQ_STASH];
	int n;

	if (cq->stash_n)
		return cq->stash_n;
	n = mroce_poll_cq(cq->dev->e, cq->id, w, MRV_CQ_STASH);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		conv_wc(&cq->stash[i], &w[i]);
	cq->stash_head = 0;
	cq->stash_n = n;
	return n;
}

int mrv_poll_cq(struct mrv_cq *cq, int n, struct mrv_wc *wc)
{
	int got = 0, err;

	if (!cq || n < 0 || (n && !wc))
		return -EINVAL;
	if (cq->dev->daemon)
		return mrd_poll_cq(cq, n, wc);
	err = mrv_progress(cq->dev);
	if (err < 0)
		return err;
	while (got < n) {
		int k = fill_stash(cq);

		if (k < 0)
			return got ? got : k;
		if (!k)
			break;
		while (k-- && got < n) {
			wc[got++] = cq->stash[cq->stash_head++];
			cq->stash_n--;
		}
	}
	return got;
}

int mrv_wait_cq(struct mrv_cq *cq, int timeout_ms)
{
	struct mrv_device *dev;
	uint64_t start, deadline, spin_until;
	struct pollfd pfd;

	if (!cq)
		return -EINVAL;
	if (cq->dev->daemon)
		return mrd_wait_cq(cq, timeout_ms);
	dev = cq->dev;
	start = mrv_now_ns();
	deadline = timeout_ms < 0 ? UINT64_MAX
				  : start + (uint64_t)timeout_ms * 1000000ull;
	/* Adaptive: spin while packets move and briefly after (a reply is
	 * often microseconds away), then sleep on the backend fd until a
	 * packet or the next engine timer. The spin restarts with every
	 * round that moved packets: a process that waits while traffic
	 * flows through its engine (the target of WRITEs gets no
	 * completions) would otherwise sleep and be woken for every packet,
	 * and each wake-up runs on the sending core, inside the kernel's
	 * delivery of the packet (write_bw's sender paid for it). */
	spin_until = start + MRV_SPIN_NS;
	pfd.fd = mroce_ep_fd(dev->ep);
	pfd.events = POLLIN;
	for (;;) {
		uint64_t now, wake;
		struct timespec ts;
		int k, err;

		err = mrv_progress(dev);
		if (err < 0)
			return err;
		k = fill_stash(cq);
		if (k < 0)
			return k;
		if (k > 0)
			return 1;
		now = mrv_now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		if (err > 0)
			spin_until = now + MRV_SPIN_NS;
		if (now < spin_until || pfd.fd < 0)
			continue;
		wake = mroce_ep_next_timer(dev->ep, now);
		if (wake > deadline)
			wake = deadline;
		if (wake <= now)
			continue;
		if (wake - now > 1000000000ull)
			wake = now + 1000000000ull;
		ts.tv_sec = (time_t)((wake - now) / 1000000000ull);
		ts.tv_nsec = (long)((wake - now) % 1000000000ull);
		if (ppoll(&pfd, 1, &ts, NULL) < 0 && errno != EINTR)
			return -errno;
	}
}

/* ------------------------------------------------------------------ */
/* QP                                                                   */
/* ------------------------------------------------------------------ */
int mrv_create_qp(struct mrv_pd *pd, const struct mrv_qp_init_attr *attr,
		  struct mrv_qp **out)
{
	struct mroce_qp_init_attr ia;
	struct mrv_qp *qp;
	int qpn;

	if (!pd || !attr || !out || !attr->send_cq || !attr->recv_cq ||
	    attr->send_cq->dev != pd->dev || attr->recv_cq->dev != pd->dev)
		return -EINVAL;
	if (pd->dev->daemon)
		return mrd_create_qp(pd, attr, out);
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	ia = (struct mroce_qp_init_attr){
		.send_cq = attr->send_cq->id,
		.recv_cq = attr->recv_cq->id,
		.max_send_wr = attr->max_send_wr ? attr->max_send_wr : 128,
		.max_recv_wr = attr->max_recv_wr ? attr->max_recv_wr : 128,
	};
	qpn = mroce_create_qp(pd->dev->e, &ia);
	if (qpn < 0) {
		free(qp);
		return qpn;
	}
	qp->pd = pd;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	qp->qpn = (uint32_t)qpn;
	qp->peer = -1;
	pd->nqps++;
	qp->send_cq->nqps++;
	qp->recv_cq->nqps++;
	*out = qp;
	return 0;
}

int mrv_destroy_qp(struct mrv_qp *qp)
{
	int err;

	if (!qp)
		return -EINVAL;
	if (qp->pd->dev->daemon)
		return mrd_destroy_qp(qp);
	err = mroce_destroy_qp(qp->pd->dev->e, qp->qpn);
	if (err < 0)
		return err;
	/* Unregisters the QP from the XDP program (AF_XDP). */
	(void)mroce_ep_sync(qp->pd->dev->ep);
	qp->pd->nqps--;
	qp->send_cq->nqps--;
	qp->recv_cq->nqps--;
	free(qp);
	return 0;
}

uint32_t mrv_qp_num(const struct mrv_qp *qp)
{
	return qp ? qp->qpn : 0;
}

const char *mrv_qp_state_str(enum mrv_qp_state s)
{
	return mroce_qp_state_name((enum mroce_qp_state)s);
}

const char *mrv_wc_status_str(enum mrv_wc_status s)
{
	return mroce_wc_status_str((enum mroce_wc_status)s);
}

int mrv_modify_qp(struct mrv_qp *qp, const struct mrv_qp_attr *attr,
		  uint32_t mask)
{
	struct mroce_qp_attr a = {0};
	struct mrv_device *dev;
	int err;

	if (!qp || !attr)
		return -EINVAL;
	dev = qp->pd->dev;
	if (dev->daemon)
		return mrd_modify_qp(qp, attr, mask);
	a.state = (enum mroce_qp_state)attr->qp_state;
	a.access = attr->qp_access_flags;
	a.dest_qpn = attr->dest_qp_num;
	a.rq_psn = attr->rq_psn;
	a.sq_psn = attr->sq_psn;
	a.peer = -1;
	if (mask & MRV_QP_DEST) {
		char name[sizeof(attr->dest_addr) + 1];

		memcpy(name, attr->dest_addr, sizeof(attr->dest_addr));
		name[sizeof(attr->dest_addr)] = 0;
		a.peer = mrv_peer_by_name(dev, name);
		if (a.peer < 0)
			return a.peer;
	}
	err = mroce_modify_qp(dev->e, qp->qpn, &a, mask, mrv_now_ns());
	if (err < 0)
		return err;
	if (mask & MRV_QP_DEST)
		qp->peer = a.peer;
	/* RTR registers the QP (RoCEv2) or the connection (MetaRoCE) with
	 * the XDP program on AF_XDP, before anything of it is sent. */
	err = mroce_ep_sync(dev->ep);
	if (err < 0)
		return err;
	/* RTR may have queued a handshake: send it now. */
	(void)mrv_progress(dev);
	return 0;
}

int mrv_query_qp(struct mrv_qp *qp, struct mrv_qp_attr *attr)
{
	const struct mroce_peer_addr *pa;
	struct mroce_qp_attr a;
	struct mrv_device *dev;
	int err;

	if (!qp || !attr)
		return -EINVAL;
	dev = qp->pd->dev;
	if (dev->daemon)
		return mrd_query_qp(qp, attr);
	err = mroce_query_qp(dev->e, qp->qpn, &a);
	if (err < 0)
		return err;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum mrv_qp_state)a.state;
	attr->qp_access_flags = a.access;
	attr->dest_qp_num = a.dest_qpn;
	attr->rq_psn = a.rq_psn;
	attr->sq_psn = a.sq_psn;
	pa = mroce_ep_peer_addr(dev->ep, dev->transport, a.peer);
	if (pa)
		inet_ntop(pa->family, pa->addr, attr->dest_addr,
			  sizeof(attr->dest_addr));
	return 0;
}

int mrv_query_path(struct mrv_qp *qp, int idx, struct mrv_path_info *out)
{
	struct mroce_path_info pi;
	int err;

	if (!qp || !out || idx < 0)
		return -EINVAL;
	if (qp->pd->dev->daemon)
		return mrd_query_path(qp, idx, out);
	if (qp->peer < 0)
		return -ENOENT;
	err = mroce_engine_path_info(qp->pd->dev->e, qp->peer, idx, &pi);
	if (err < 0)
		return err;
	*out = (struct mrv_path_info){
		.sport = pi.sport,
		.alive = pi.alive,
		.srtt_us = pi.srtt_us,
		.cwnd_pkts = pi.cwnd_pkts,
		.inflight = pi.inflight,
		.tx_pkts = pi.tx_pkts,
		.retransmits = pi.retransmits,
		.ce_marks = pi.ce_marks,
	};
	return 0;
}

/* ------------------------------------------------------------------ */
/* Work requests                                                        */
/* ------------------------------------------------------------------ */
static int conv_sge(const struct mrv_sge *sg, int num, struct mroce_sge *o)
{
	if (num < 0 || num > 1 || (num && !sg))
		return -EINVAL;
	if (!num) {
		*o = (struct mroce_sge){0};
		return 0;
	}
	*o = (struct mroce_sge){
		.addr = sg->addr,
		.length = sg->length,
		.lkey = sg->lkey,
	};
	return 0;
}

int mrv_post_send(struct mrv_qp *qp, struct mrv_send_wr *wr,
		  struct mrv_send_wr **bad_wr)
{
	struct mrv_device *dev;
	int err = 0;
	uint64_t now;

	if (bad_wr)
		*bad_wr = wr;
	if (!qp || !wr || !bad_wr)
		return -EINVAL;
	dev = qp->pd->dev;
	if (dev->daemon)
		return mrd_post_send(qp, wr, bad_wr);
	now = mrv_now_ns();
	for (; wr; wr = wr->next) {
		struct mroce_send_wr w = {
			.wr_id = wr->wr_id,
			.opcode = (enum mroce_wr_opcode)wr->opcode,
			.send_flags = wr->send_flags,
			.imm = wr->imm_data,
			.remote_addr = wr->remote_addr,
			.rkey = wr->rkey,
		};

		*bad_wr = wr;
		if ((unsigned int)wr->opcode > MRV_WR_RDMA_READ) {
			err = -EINVAL;
			break;
		}
		err = conv_sge(wr->sg_list, wr->num_sge, &w.sge);
		if (!err)
			err = mroce_post_send(dev->e, qp->qpn, &w, now);
		if (err < 0)
			break;
	}
	if (!err)
		*bad_wr = NULL;
	/* Kick what was posted out at once (latency), errors or not. */
	(void)mroce_ep_flush(dev->ep, now);
	return err;
}

int mrv_post_recv(struct mrv_qp *qp, struct mrv_recv_wr *wr,
		  struct mrv_recv_wr **bad_wr)
{
	int err = 0;

	if (bad_wr)
		*bad_wr = wr;
	if (!qp || !wr || !bad_wr)
		return -EINVAL;
	if (qp->pd->dev->daemon)
		return mrd_post_recv(qp, wr, bad_wr);
	for (; wr; wr = wr->next) {
		struct mroce_recv_wr w = {.wr_id = wr->wr_id};

		*bad_wr = wr;
		err = conv_sge(wr->sg_list, wr->num_sge, &w.sge);
		if (!err)
			err = mroce_post_recv(qp->pd->dev->e, qp->qpn, &w);
		if (err < 0)
			return err;
	}
	*bad_wr = NULL;
	return 0;
}
