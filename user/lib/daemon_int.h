/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Internal: libmroce's daemon mode (user/lib/daemon.c). The public
 * functions in lib.c hand a call over to its mrd_ twin when the device was
 * opened with MRV_MODE_DAEMON (dev->daemon != NULL). Same arguments, same
 * error convention, plus -ENOTCONN once the daemon is gone.
 */
#ifndef MROCE_LIB_DAEMON_INT_H
#define MROCE_LIB_DAEMON_INT_H

#include "mroce/mroce.h"

struct mrd_dev;

int mrd_open_device(const struct mrv_dev_attr *attr, struct mrv_device **out);
int mrd_close_device(struct mrv_device *dev);
int mrd_progress(struct mrv_device *dev);
int mrd_device_fd(const struct mrv_device *dev);
int mrd_query_stats(const struct mrv_device *dev, struct mrv_dev_stats *st);
int mrd_alloc_pd(struct mrv_device *dev, struct mrv_pd **out);
int mrd_dealloc_pd(struct mrv_pd *pd);
int mrd_reg_mr(struct mrv_pd *pd, void *addr, size_t len, uint32_t access,
	       struct mrv_mr **out);
int mrd_alloc_mr(struct mrv_pd *pd, size_t len, uint32_t access,
		 struct mrv_mr **out);
int mrd_dereg_mr(struct mrv_mr *mr);
int mrd_create_cq(struct mrv_device *dev, int depth, struct mrv_cq **out);
int mrd_destroy_cq(struct mrv_cq *cq);
int mrd_poll_cq(struct mrv_cq *cq, int n, struct mrv_wc *wc);
int mrd_wait_cq(struct mrv_cq *cq, int timeout_ms);
int mrd_create_qp(struct mrv_pd *pd, const struct mrv_qp_init_attr *attr,
		  struct mrv_qp **out);
int mrd_destroy_qp(struct mrv_qp *qp);
int mrd_modify_qp(struct mrv_qp *qp, const struct mrv_qp_attr *attr,
		  uint32_t mask);
int mrd_query_qp(struct mrv_qp *qp, struct mrv_qp_attr *attr);
int mrd_query_path(struct mrv_qp *qp, int idx, struct mrv_path_info *out);
int mrd_post_send(struct mrv_qp *qp, struct mrv_send_wr *wr,
		  struct mrv_send_wr **bad_wr);
int mrd_post_recv(struct mrv_qp *qp, struct mrv_recv_wr *wr,
		  struct mrv_recv_wr **bad_wr);

#endif
