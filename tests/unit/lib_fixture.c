// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The libmroce tests' shared fixture: see lib_fixture.h.
 */
#include "lib_fixture.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../harness.h"

void side_addr(uint8_t host, char *out, size_t len)
{
	pid_t p = getpid();

	snprintf(out, len, "127.%u.%u.%u", 1 + p % 250, (p / 250) % 256, host);
}

void side_open(struct side *s, const struct mrv_dev_attr *a, const char *addr,
	       uint32_t max_send_wr)
{
	struct mrv_qp_init_attr qa;

	memset(s, 0, sizeof(*s));
	snprintf(s->addr, sizeof(s->addr), "%s", addr);
	ck_assert_int_eq(mrv_open_device(a, &s->dev), 0);
	ck_assert_int_eq(mrv_alloc_pd(s->dev, &s->pd), 0);
	ck_assert_int_eq(mrv_create_cq(s->dev, 256, &s->cq), 0);
	qa = (struct mrv_qp_init_attr){
		.send_cq = s->cq, .recv_cq = s->cq, .max_send_wr = max_send_wr};
	ck_assert_int_eq(mrv_create_qp(s->pd, &qa, &s->qp), 0);
	ck_assert_int_eq(mrv_alloc_mr(s->pd, 65536,
				      MRV_ACCESS_LOCAL_WRITE |
					      MRV_ACCESS_REMOTE_WRITE |
					      MRV_ACCESS_REMOTE_READ,
				      &s->mr),
			 0);
}

void side_close(struct side *s)
{
	ck_assert_int_eq(mrv_destroy_qp(s->qp), 0);
	ck_assert_int_eq(mrv_dereg_mr(s->mr), 0);
	ck_assert_int_eq(mrv_destroy_cq(s->cq), 0);
	ck_assert_int_eq(mrv_dealloc_pd(s->pd), 0);
	ck_assert_int_eq(mrv_close_device(s->dev), 0);
}

void side_to_rtr(struct side *s, const struct side *peer)
{
	struct mrv_qp_attr a = {.qp_state = MRV_QPS_INIT,
				.qp_access_flags = MRV_ACCESS_REMOTE_WRITE |
						   MRV_ACCESS_REMOTE_READ};

	ck_assert_int_eq(
		mrv_modify_qp(s->qp, &a, MRV_QP_STATE | MRV_QP_ACCESS_FLAGS),
		0);
	a.qp_state = MRV_QPS_RTR;
	snprintf(a.dest_addr, sizeof(a.dest_addr), "%s", peer->addr);
	a.dest_qp_num = mrv_qp_num(peer->qp);
	a.rq_psn = 100;
	ck_assert_int_eq(
		mrv_modify_qp(s->qp, &a,
			      MRV_QP_STATE | MRV_QP_DEST | MRV_QP_RQ_PSN),
		0);
}

void side_to_rts(struct side *s)
{
	struct mrv_qp_attr a = {.qp_state = MRV_QPS_RTS, .sq_psn = 100};

	ck_assert_int_eq(mrv_modify_qp(s->qp, &a, MRV_QP_STATE | MRV_QP_SQ_PSN),
			 0);
}

void side_connect(struct side *a, struct side *b)
{
	side_to_rtr(a, b);
	side_to_rtr(b, a);
	side_to_rts(a);
	side_to_rts(b);
}

struct mrv_sge side_sge(const struct side *s, size_t off, uint32_t len)
{
	return (struct mrv_sge){.addr = (uintptr_t)s->mr->addr + off,
				.length = len,
				.lkey = s->mr->lkey};
}

struct mrv_send_wr side_rdma_wr(uint64_t wr_id, enum mrv_wr_opcode op,
				struct mrv_sge *sg, const struct side *peer,
				size_t peer_off)
{
	return (struct mrv_send_wr){.wr_id = wr_id,
				    .sg_list = sg,
				    .num_sge = 1,
				    .opcode = op,
				    .send_flags = MRV_SEND_SIGNALED,
				    .remote_addr = (uintptr_t)peer->mr->addr +
						   peer_off,
				    .rkey = peer->mr->rkey};
}
