// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libmroce, embedded mode: the verbs objects of include/mroce/mroce.h
 * forwarded to an in-process engine. Packets move between the engine and
 * one I/O backend through the endpoint pump (user/io/endpoint.c, shared
 * with the daemon): an embedded device is an endpoint with one engine.
 * Reached only through embedded_ops (lib_int.h): verbs.c checked the
 * arguments and keeps the object counts.
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mroce/engine.h"
#include "mroce/io.h"
#include "mroce/wire.h"
#include "../ipc/devstats.h"
#include "../common/util.h"
#include "../endpoint/endpoint.h"
#include "lib_int.h"

#define EMB_CQ_STASH 32
/* mrv_wait_cq spins this long after the last round that moved packets */
#define EMB_SPIN_NS 50000ull

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

struct emb_dev {
	struct mrv_device base;
	struct mroce_ep *ep;	/* backend + engine: the pump */
	struct mroce_engine *e; /* the endpoint's one engine */
	struct mroce_io *io;	/* the endpoint's backend */
	bool tx_owed;		/* a poll returned completions before its tx */
};

struct emb_cq {
	struct mrv_cq base;
	struct mrv_wc stash[EMB_CQ_STASH]; /* fetched, not yet returned */
	int stash_head, stash_n;
};

struct emb_qp {
	struct mrv_qp base;
	int peer; /* engine peer id after RTR, else -1 */
};

static const struct mrl_dev_ops embedded_ops;

static struct emb_dev *to_edev(const struct mrv_device *dev)
{
	return mrl_container_of(dev, struct emb_dev, base);
}

static struct emb_cq *to_ecq(struct mrv_cq *cq)
{
	return mrl_container_of(cq, struct emb_cq, base);
}

static struct emb_qp *to_eqp(struct mrv_qp *qp)
{
	return mrl_container_of(qp, struct emb_qp, base);
}

/* ------------------------------------------------------------------ */
/* Device                                                               */
/* ------------------------------------------------------------------ */
/* The endpoint configuration for attr (already checked by verbs.c). */
static void ep_cfg(const struct mrv_dev_attr *attr, const struct emb_dev *d,
		   struct mroce_ep_cfg *cfg)
{
	struct mroce_engine_cfg *ec;

	/* One engine: eng[0] runs MetaRoCE, eng[1] RoCEv2. */
	ec = &cfg->eng[d->base.transport == MRV_TRANSPORT_ROCEV2];
	ec->transport = d->base.transport;
	ec->npaths = attr->npaths;
	ec->mtu = attr->mtu; /* 0 on AF_XDP: from the interface */
	ec->seed = attr->seed;
	ec->rto_min_us = attr->rto_min_us;
	/* Software endpoints: scheduling noise, not queueing, dominates
	 * the RTT (docs/engine.md, cfg.jitter_us). */
	ec->jitter_us = MROCE_EP_SW_JITTER_US;
	ec->queue_us = attr->queue_us;
	ec->link_bps = (uint64_t)attr->link_mbps * 1000000ull;

	cfg->io.kind = attr->backend == MRV_BACKEND_AFXDP ? MROCE_IO_AFXDP
							  : MROCE_IO_UDP;
	cfg->io.family = d->base.family;
	memcpy(cfg->io.local_addr, d->base.local, 16);
	cfg->io.mroce_port = attr->udp_port ? attr->udp_port : MROCE_UDP_PORT;
	cfg->io.rocev2_port = attr->udp_port ? (uint16_t)(attr->udp_port + 1)
					     : ROCEV2_UDP_PORT;
	cfg->io.ifname = attr->ifname;
	cfg->io.queue = attr->queue;
	cfg->no_ack_offload = attr->flags & MRV_DEV_NO_ACK_OFFLOAD;
}

int mrl_embedded_open(const struct mrv_dev_attr *attr, struct mrv_device **out)
{
	struct mroce_ep_cfg cfg = {0};
	struct emb_dev *d;
	int err;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	err = mroce_parse_addr(attr->local_addr, &d->base.family,
			       d->base.local);
	if (err < 0)
		goto fail;
	d->base.ops = &embedded_ops;
	d->base.transport =
		attr->transport ? attr->transport : MRV_TRANSPORT_METAROCE;
	ep_cfg(attr, d, &cfg);
	err = mroce_ep_open(&cfg, &d->ep);
	if (err < 0)
		goto fail;
	d->e = mroce_ep_engine(d->ep, d->base.transport);
	d->io = mroce_ep_io(d->ep);
	d->base.mtu = mroce_ep_mtu(d->ep);
	d->base.link_mbps = (uint32_t)(mroce_ep_link_bps(d->ep, NULL) / 1000000ull);
	*out = &d->base;
	return 0;
fail:
	free(d);
	return err;
}

static int emb_close_device(struct mrv_device *dev)
{
	struct emb_dev *d = to_edev(dev);

	mroce_ep_close(d->ep);
	free(d);
	return 0;
}

static int emb_device_fd(const struct mrv_device *dev)
{
	return mroce_ep_fd(to_edev(dev)->ep);
}

static int emb_progress(struct mrv_device *dev)
{
	struct emb_dev *d = to_edev(dev);

	d->tx_owed = false;
	return mroce_ep_progress(d->ep, mroce_ep_now());
}

/* The pump, for a caller that waits for completions: receive and run
 * the timers first (after what an earlier call left to transmit)... */
static int emb_pump_rx(struct emb_dev *d, uint64_t now)
{
	if (d->tx_owed) {
		d->tx_owed = false;
		(void)mroce_ep_flush(d->ep, now);
	}
	return mroce_ep_progress_rx(d->ep, now);
}

/* ... then transmit, unless the caller is about to return completions:
 * the application may answer them at once, and its answer should not
 * wait behind our ACKs (each send() of a copy-mode AF_XDP socket or a
 * UDP socket carries its packets through the kernel in our context).
 * The ACKs then leave with the next call, whatever it is, behind the
 * answer if it posts one. */
static int emb_pump_tx(struct emb_dev *d, uint64_t now, bool deliver)
{
	int n;

	if (deliver) {
		d->tx_owed = true;
		return 0;
	}
	n = mroce_ep_flush(d->ep, now);
	return n > 0 ? n : 0;
}

static int emb_query_stats(const struct mrv_device *dev,
			   struct mrv_dev_stats *st)
{
	struct emb_dev *d = to_edev(dev);
	struct mroce_engine_stats es;
	struct mroce_io_stats is;

	mroce_engine_get_stats(d->e, &es);
	mroce_io_get_stats(d->io, &is);
	mroce_dev_stats_fill(st, &es, &is);
	return 0;
}

/* ------------------------------------------------------------------ */
/* PD and MR                                                            */
/* ------------------------------------------------------------------ */
static int emb_alloc_pd(struct mrv_device *dev, struct mrv_pd **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

static int emb_dealloc_pd(struct mrv_pd *pd)
{
	free(pd);
	return 0;
}

static int emb_reg_mr(struct mrv_pd *pd, void *addr, size_t len,
		      uint32_t access, struct mrv_mr **out)
{
	struct mroce_mr emr;
	struct mrv_mr *mr;
	int err;

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	err = mroce_reg_mr(to_edev(pd->dev)->e, addr, len, access, &emr);
	if (err < 0) {
		free(mr);
		return err;
	}
	mr->addr = addr;
	mr->length = len;
	mr->lkey = emr.lkey;
	mr->rkey = emr.rkey;
	mr->access = access;
	mr->fd = -1;
	*out = mr;
	return 0;
}

static int emb_alloc_mr(struct mrv_pd *pd, size_t len, uint32_t access,
			struct mrv_mr **out)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t size;
	void *p;
	int fd, err;

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
	err = emb_reg_mr(pd, p, size, access, out);
	if (err < 0) {
		munmap(p, size);
		close(fd);
		return err;
	}
	(*out)->fd = fd;
	return 0;
}

static int emb_dereg_mr(struct mrv_mr *mr)
{
	int err = mroce_dereg_mr(to_edev(mr->pd->dev)->e, mr->lkey);

	if (err < 0)
		return err;
	if (mr->fd >= 0) {
		munmap(mr->addr, mr->length);
		close(mr->fd);
	}
	free(mr);
	return 0;
}

/* ------------------------------------------------------------------ */
/* CQ                                                                   */
/* ------------------------------------------------------------------ */
static int emb_create_cq(struct mrv_device *dev, int depth, struct mrv_cq **out)
{
	struct emb_cq *c;
	int id;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	id = mroce_create_cq(to_edev(dev)->e, (uint32_t)depth);
	if (id < 0) {
		free(c);
		return id;
	}
	c->base.id = id;
	*out = &c->base;
	return 0;
}

static int emb_destroy_cq(struct mrv_cq *cq)
{
	int err = mroce_destroy_cq(to_edev(cq->dev)->e, cq->id);

	if (err < 0)
		return err;
	free(to_ecq(cq));
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
static int fill_stash(struct emb_cq *c)
{
	struct mroce_wc w[EMB_CQ_STASH];
	int n;

	if (c->stash_n)
		return c->stash_n;
	n = mroce_poll_cq(to_edev(c->base.dev)->e, c->base.id, w, EMB_CQ_STASH);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		conv_wc(&c->stash[i], &w[i]);
	c->stash_head = 0;
	c->stash_n = n;
	return n;
}

static int emb_poll_cq(struct mrv_cq *cq, int n, struct mrv_wc *wc)
{
	struct emb_cq *c = to_ecq(cq);
	struct emb_dev *d = to_edev(cq->dev);
	int got = 0, err;
	uint64_t now = mroce_ep_now();
	bool pumped = !c->stash_n;

	/* What an earlier call fetched goes first, without a pump turn. */
	if (pumped) {
		err = emb_pump_rx(d, now);
		if (err < 0)
			return err;
	}
	while (got < n) {
		int k = fill_stash(c);

		if (k < 0)
			return got ? got : k;
		if (!k)
			break;
		while (k-- && got < n) {
			wc[got++] = c->stash[c->stash_head++];
			c->stash_n--;
		}
	}
	if (pumped)
		(void)emb_pump_tx(d, now, got > 0);
	return got;
}

/* Sleeps in ppoll() on fd until a packet, the next engine timer or the
 * deadline, at most a second. */
static int sleep_until_event(struct emb_dev *d, struct pollfd *pfd,
			     uint64_t now, uint64_t deadline)
{
	uint64_t wake = mroce_ep_next_timer(d->ep, now);
	struct timespec ts;

	if (wake > deadline)
		wake = deadline;
	if (wake <= now)
		return 0;
	if (wake - now > 1000000000ull)
		wake = now + 1000000000ull;
	ts.tv_sec = (time_t)((wake - now) / 1000000000ull);
	ts.tv_nsec = (long)((wake - now) % 1000000000ull);
	if (ppoll(pfd, 1, &ts, NULL) < 0 && errno != EINTR)
		return -errno;
	return 0;
}

static int emb_wait_cq(struct mrv_cq *cq, int timeout_ms)
{
	struct emb_dev *d = to_edev(cq->dev);
	uint64_t start, deadline, spin_until;
	struct pollfd pfd;

	if (to_ecq(cq)->stash_n)
		return 1;
	start = mroce_ep_now();
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
	spin_until = start + EMB_SPIN_NS;
	pfd.fd = mroce_ep_fd(d->ep);
	pfd.events = POLLIN;
	for (;;) {
		uint64_t now;
		int k, err;

		now = mroce_ep_now();
		err = emb_pump_rx(d, now);
		if (err < 0)
			return err;
		k = fill_stash(to_ecq(cq));
		err += emb_pump_tx(d, now, k > 0);
		if (k < 0)
			return k;
		if (k > 0)
			return 1;
		now = mroce_ep_now();
		if (now >= deadline)
			return -ETIMEDOUT;
		if (err > 0)
			spin_until = now + EMB_SPIN_NS;
		if (now < spin_until || pfd.fd < 0)
			continue;
		err = sleep_until_event(d, &pfd, now, deadline);
		if (err < 0)
			return err;
	}
}

/* ------------------------------------------------------------------ */
/* QP                                                                   */
/* ------------------------------------------------------------------ */
static int emb_create_qp(struct mrv_pd *pd, const struct mrv_qp_init_attr *attr,
			 struct mrv_qp **out)
{
	struct mroce_qp_init_attr ia;
	struct emb_qp *qp;
	int qpn;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	ia = (struct mroce_qp_init_attr){
		.send_cq = attr->send_cq->id,
		.recv_cq = attr->recv_cq->id,
		.max_send_wr = attr->max_send_wr ? attr->max_send_wr : 128,
		.max_recv_wr = attr->max_recv_wr ? attr->max_recv_wr : 128,
	};
	qpn = mroce_create_qp(to_edev(pd->dev)->e, &ia);
	if (qpn < 0) {
		free(qp);
		return qpn;
	}
	qp->base.qpn = (uint32_t)qpn;
	qp->peer = -1;
	*out = &qp->base;
	return 0;
}

static int emb_destroy_qp(struct mrv_qp *qp)
{
	struct emb_dev *d = to_edev(qp->pd->dev);
	int err;

	err = mroce_destroy_qp(d->e, qp->qpn);
	if (err < 0)
		return err;
	/* Unregisters the QP from the XDP program (AF_XDP). */
	(void)mroce_ep_sync(d->ep);
	free(to_eqp(qp));
	return 0;
}

static int emb_modify_qp(struct mrv_qp *qp, const struct mrv_qp_attr *attr,
			 uint32_t mask)
{
	struct emb_dev *d = to_edev(qp->pd->dev);
	struct mroce_qp_attr a = {0};
	int err;

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
		/* The engine's peer id for the address (added if new). */
		a.peer = mroce_ep_peer_by_name(d->ep, d->base.transport, name);
		if (a.peer < 0)
			return a.peer;
	}
	err = mroce_modify_qp(d->e, qp->qpn, &a, mask, mroce_ep_now());
	if (err < 0)
		return err;
	if (mask & MRV_QP_DEST)
		to_eqp(qp)->peer = a.peer;
	/* RTR registers the QP (RoCEv2) or the connection (MetaRoCE) with
	 * the XDP program on AF_XDP, before anything of it is sent. */
	err = mroce_ep_sync(d->ep);
	if (err < 0)
		return err;
	/* RTR may have queued a handshake: send it now. */
	(void)emb_progress(&d->base);
	return 0;
}

static int emb_query_qp(struct mrv_qp *qp, struct mrv_qp_attr *attr)
{
	struct emb_dev *d = to_edev(qp->pd->dev);
	const struct mroce_peer_addr *pa;
	struct mroce_qp_attr a;
	int err;

	err = mroce_query_qp(d->e, qp->qpn, &a);
	if (err < 0)
		return err;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum mrv_qp_state)a.state;
	attr->qp_access_flags = a.access;
	attr->dest_qp_num = a.dest_qpn;
	attr->rq_psn = a.rq_psn;
	attr->sq_psn = a.sq_psn;
	pa = mroce_ep_peer_addr(d->ep, d->base.transport, a.peer);
	if (pa)
		inet_ntop(pa->family, pa->addr, attr->dest_addr,
			  sizeof(attr->dest_addr));
	return 0;
}

static int emb_query_path(struct mrv_qp *qp, int idx, struct mrv_path_info *out)
{
	struct mroce_path_info pi;
	int peer = to_eqp(qp)->peer;
	int err;

	if (peer < 0)
		return -ENOENT;
	err = mroce_engine_path_info(to_edev(qp->pd->dev)->e, peer, idx, &pi);
	if (err < 0)
		return err;
	mroce_path_info_fill(out, &pi);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Work requests                                                        */
/* ------------------------------------------------------------------ */
static int conv_sge(const struct mrv_sge *sg, int num, struct mroce_sge *o)
{
	int err = mrl_sge_check(sg, num);

	if (err < 0)
		return err;
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

static int emb_post_send(struct mrv_qp *qp, struct mrv_send_wr *wr,
			 struct mrv_send_wr **bad_wr)
{
	struct emb_dev *d = to_edev(qp->pd->dev);
	uint64_t now = mroce_ep_now();
	int err = 0;

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
		err = mrl_wr_check(wr);
		if (!err)
			err = conv_sge(wr->sg_list, wr->num_sge, &w.sge);
		if (!err)
			err = mroce_post_send(d->e, qp->qpn, &w, now);
		if (err < 0)
			break;
	}
	if (!err)
		*bad_wr = NULL;
	/* Kick what was posted out at once (latency), errors or not. */
	(void)mroce_ep_flush(d->ep, now);
	return err;
}

static int emb_post_recv(struct mrv_qp *qp, struct mrv_recv_wr *wr,
			 struct mrv_recv_wr **bad_wr)
{
	struct mroce_engine *e = to_edev(qp->pd->dev)->e;
	int err;

	for (; wr; wr = wr->next) {
		struct mroce_recv_wr w = {.wr_id = wr->wr_id};

		*bad_wr = wr;
		err = conv_sge(wr->sg_list, wr->num_sge, &w.sge);
		if (!err)
			err = mroce_post_recv(e, qp->qpn, &w);
		if (err < 0)
			return err;
	}
	*bad_wr = NULL;
	return 0;
}

static const struct mrl_dev_ops embedded_ops = {
	.close_device = emb_close_device,
	.progress = emb_progress,
	.device_fd = emb_device_fd,
	.query_stats = emb_query_stats,
	.alloc_pd = emb_alloc_pd,
	.dealloc_pd = emb_dealloc_pd,
	.reg_mr = emb_reg_mr,
	.alloc_mr = emb_alloc_mr,
	.dereg_mr = emb_dereg_mr,
	.create_cq = emb_create_cq,
	.destroy_cq = emb_destroy_cq,
	.poll_cq = emb_poll_cq,
	.wait_cq = emb_wait_cq,
	.create_qp = emb_create_qp,
	.destroy_qp = emb_destroy_qp,
	.modify_qp = emb_modify_qp,
	.query_qp = emb_query_qp,
	.query_path = emb_query_path,
	.post_send = emb_post_send,
	.post_recv = emb_post_recv,
};
