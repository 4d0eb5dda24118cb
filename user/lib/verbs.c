// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libmroce's front: every public verb of include/mroce/mroce.h, in one
 * place for both device modes. Each entry point checks its arguments,
 * keeps the object counts that make a destroy -EBUSY, and hands the call
 * to the device's mode through dev->ops (embedded.c, daemon.c): the
 * contract is in lib_int.h.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "mroce/engine.h"
#include "mroce/version.h"
#include "lib_int.h"

const char *mroce_version(void)
{
	return MROCE_VERSION;
}

static bool transport_valid(uint8_t t)
{
	return !t || t == MRV_TRANSPORT_METAROCE || t == MRV_TRANSPORT_ROCEV2;
}

static bool access_valid(uint32_t access)
{
	return !(access &
		 ~(uint32_t)(MRV_ACCESS_LOCAL_WRITE | MRV_ACCESS_REMOTE_WRITE |
			     MRV_ACCESS_REMOTE_READ));
}

/* ------------------------------------------------------------------ */
/* Device                                                               */
/* ------------------------------------------------------------------ */
int mrv_open_device(const struct mrv_dev_attr *attr, struct mrv_device **out)
{
	if (!attr || !out)
		return -EINVAL;
	*out = NULL;
	if (!transport_valid(attr->transport))
		return -EINVAL;
	switch (attr->mode) {
	case MRV_MODE_DAEMON:
		/* Only transport and daemon_sock count: the rest is the
		 * daemon's. */
		return mrl_daemon_open(attr, out);
	case MRV_MODE_EMBEDDED:
		if (attr->backend && attr->backend != MRV_BACKEND_UDP &&
		    attr->backend != MRV_BACKEND_AFXDP)
			return -EINVAL;
		if (attr->backend == MRV_BACKEND_AFXDP && !attr->ifname)
			return -EINVAL;
		if (attr->udp_port == 0xffff) /* RoCEv2 takes port + 1 */
			return -EINVAL;
		if (attr->flags & ~(uint32_t)MRV_DEV_NO_ACK_OFFLOAD)
			return -EINVAL;
		return mrl_embedded_open(attr, out);
	default:
		return -EINVAL;
	}
}

int mrv_close_device(struct mrv_device *dev)
{
	if (!dev)
		return -EINVAL;
	if (dev->npds || dev->ncqs)
		return -EBUSY;
	return dev->ops->close_device(dev);
}

int mrv_device_mtu(const struct mrv_device *dev)
{
	return dev ? dev->mtu : -EINVAL;
}

int mrv_device_link_mbps(const struct mrv_device *dev)
{
	return dev ? (int)dev->link_mbps : -EINVAL;
}

int mrv_device_fd(const struct mrv_device *dev)
{
	return dev ? dev->ops->device_fd(dev) : -EINVAL;
}

int mrv_progress(struct mrv_device *dev)
{
	return dev ? dev->ops->progress(dev) : -EINVAL;
}

int mrv_query_stats(const struct mrv_device *dev, struct mrv_dev_stats *st)
{
	if (!dev || !st)
		return -EINVAL;
	return dev->ops->query_stats(dev, st);
}

/* ------------------------------------------------------------------ */
/* PD and MR                                                            */
/* ------------------------------------------------------------------ */
int mrv_alloc_pd(struct mrv_device *dev, struct mrv_pd **out)
{
	struct mrv_pd *pd;
	int err;

	if (!dev || !out)
		return -EINVAL;
	err = dev->ops->alloc_pd(dev, &pd);
	if (err < 0)
		return err;
	pd->dev = dev;
	dev->npds++;
	*out = pd;
	return 0;
}

int mrv_dealloc_pd(struct mrv_pd *pd)
{
	struct mrv_device *dev;
	int err;

	if (!pd)
		return -EINVAL;
	if (pd->nmrs || pd->nqps)
		return -EBUSY;
	dev = pd->dev;
	err = dev->ops->dealloc_pd(pd);
	if (err < 0)
		return err;
	dev->npds--;
	return 0;
}

static void mr_added(struct mrv_pd *pd, struct mrv_mr *mr, struct mrv_mr **out)
{
	mr->pd = pd;
	pd->nmrs++;
	*out = mr;
}

int mrv_reg_mr(struct mrv_pd *pd, void *addr, size_t len, uint32_t access,
	       struct mrv_mr **out)
{
	struct mrv_mr *mr;
	int err;

	if (!pd || !addr || !len || !out || !access_valid(access))
		return -EINVAL;
	err = pd->dev->ops->reg_mr(pd, addr, len, access, &mr);
	if (err < 0)
		return err;
	mr_added(pd, mr, out);
	return 0;
}

int mrv_alloc_mr(struct mrv_pd *pd, size_t len, uint32_t access,
		 struct mrv_mr **out)
{
	struct mrv_mr *mr;
	int err;

	if (!pd || !len || !out || len > SIZE_MAX / 2 || !access_valid(access))
		return -EINVAL;
	err = pd->dev->ops->alloc_mr(pd, len, access, &mr);
	if (err < 0)
		return err;
	mr_added(pd, mr, out);
	return 0;
}

int mrv_dereg_mr(struct mrv_mr *mr)
{
	struct mrv_pd *pd;
	int err;

	if (!mr)
		return -EINVAL;
	pd = mr->pd;
	err = pd->dev->ops->dereg_mr(mr);
	if (err < 0)
		return err;
	pd->nmrs--;
	return 0;
}

/* ------------------------------------------------------------------ */
/* CQ                                                                   */
/* ------------------------------------------------------------------ */
int mrv_create_cq(struct mrv_device *dev, int depth, struct mrv_cq **out)
{
	struct mrv_cq *cq;
	int err;

	if (!dev || depth <= 0 || !out)
		return -EINVAL;
	err = dev->ops->create_cq(dev, depth, &cq);
	if (err < 0)
		return err;
	cq->dev = dev;
	dev->ncqs++;
	*out = cq;
	return 0;
}

int mrv_destroy_cq(struct mrv_cq *cq)
{
	struct mrv_device *dev;
	int err;

	if (!cq)
		return -EINVAL;
	if (cq->nqps)
		return -EBUSY;
	dev = cq->dev;
	err = dev->ops->destroy_cq(cq);
	if (err < 0)
		return err;
	dev->ncqs--;
	return 0;
}

int mrv_poll_cq(struct mrv_cq *cq, int n, struct mrv_wc *wc)
{
	if (!cq || n < 0 || (n && !wc))
		return -EINVAL;
	return cq->dev->ops->poll_cq(cq, n, wc);
}

int mrv_wait_cq(struct mrv_cq *cq, int timeout_ms)
{
	return cq ? cq->dev->ops->wait_cq(cq, timeout_ms) : -EINVAL;
}

/* ------------------------------------------------------------------ */
/* QP                                                                   */
/* ------------------------------------------------------------------ */
int mrv_create_qp(struct mrv_pd *pd, const struct mrv_qp_init_attr *attr,
		  struct mrv_qp **out)
{
	struct mrv_qp *qp;
	int err;

	if (!pd || !attr || !out || !attr->send_cq || !attr->recv_cq ||
	    attr->send_cq->dev != pd->dev || attr->recv_cq->dev != pd->dev)
		return -EINVAL;
	err = pd->dev->ops->create_qp(pd, attr, &qp);
	if (err < 0)
		return err;
	qp->pd = pd;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	pd->nqps++;
	qp->send_cq->nqps++;
	qp->recv_cq->nqps++;
	*out = qp;
	return 0;
}

int mrv_destroy_qp(struct mrv_qp *qp)
{
	struct mrv_cq *scq, *rcq;
	struct mrv_pd *pd;
	int err;

	if (!qp)
		return -EINVAL;
	pd = qp->pd;
	scq = qp->send_cq;
	rcq = qp->recv_cq;
	err = pd->dev->ops->destroy_qp(qp);
	if (err < 0)
		return err;
	pd->nqps--;
	scq->nqps--;
	rcq->nqps--;
	return 0;
}

uint32_t mrv_qp_num(const struct mrv_qp *qp)
{
	return qp ? qp->qpn : 0;
}

/* The names come from the engine's tables: the public enums share its
 * numbering (asserted in embedded.c), whichever mode runs the engine. */
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
	if (!qp || !attr)
		return -EINVAL;
	return qp->pd->dev->ops->modify_qp(qp, attr, mask);
}

int mrv_query_qp(struct mrv_qp *qp, struct mrv_qp_attr *attr)
{
	if (!qp || !attr)
		return -EINVAL;
	return qp->pd->dev->ops->query_qp(qp, attr);
}

int mrv_query_path(struct mrv_qp *qp, int idx, struct mrv_path_info *out)
{
	if (!qp || !out || idx < 0)
		return -EINVAL;
	return qp->pd->dev->ops->query_path(qp, idx, out);
}

/* ------------------------------------------------------------------ */
/* Work requests                                                        */
/* ------------------------------------------------------------------ */
int mrv_post_send(struct mrv_qp *qp, struct mrv_send_wr *wr,
		  struct mrv_send_wr **bad_wr)
{
	if (bad_wr)
		*bad_wr = wr;
	if (!qp || !wr || !bad_wr)
		return -EINVAL;
	return qp->pd->dev->ops->post_send(qp, wr, bad_wr);
}

int mrv_post_recv(struct mrv_qp *qp, struct mrv_recv_wr *wr,
		  struct mrv_recv_wr **bad_wr)
{
	if (bad_wr)
		*bad_wr = wr;
	if (!qp || !wr || !bad_wr)
		return -EINVAL;
	return qp->pd->dev->ops->post_recv(qp, wr, bad_wr);
}
