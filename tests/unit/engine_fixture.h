/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Small helpers of the engine core's tests (tests/unit/test_engine*.c):
 * an engine with a seed, a peer, a QP, a QP walked to a state. Include
 * after ../harness.h.
 */
#ifndef MROCE_TEST_ENGINE_FIXTURE_H
#define MROCE_TEST_ENGINE_FIXTURE_H

#include <sys/socket.h>

#include "../../user/engine/engine_int.h"

#define ACC_ALL MROCE_ACCESS_ALL

static inline struct mroce_engine *mk(uint64_t seed)
{
	struct mroce_engine_cfg cfg = { .seed = seed };
	struct mroce_engine *e;

	ck_assert_int_eq(mroce_engine_create(&cfg, &e), 0);
	return e;
}

static inline int mk_peer(struct mroce_engine *e, uint8_t last)
{
	struct mroce_peer_addr a = { .family = AF_INET };

	a.addr[0] = 10;
	a.addr[3] = last;
	return mroce_peer_add(e, &a);
}

static inline uint32_t mk_qp(struct mroce_engine *e, int cq, uint32_t nsend,
			     uint32_t nrecv)
{
	struct mroce_qp_init_attr a = { .send_cq = cq, .recv_cq = cq,
					.max_send_wr = nsend,
					.max_recv_wr = nrecv };
	int r = mroce_create_qp(e, &a);

	ck_assert_int_gt(r, 0);
	return (uint32_t)r;
}

static inline int to_state(struct mroce_engine *e, uint32_t qpn,
			   enum mroce_qp_state s, int peer)
{
	struct mroce_qp_attr a = { .peer = peer, .dest_qpn = 0x123 };
	enum mroce_qp_state path[] = { MROCE_QPS_INIT, MROCE_QPS_RTR,
				       MROCE_QPS_RTS };
	int err;

	if (s == MROCE_QPS_RESET)
		return 0;
	if (s == MROCE_QPS_ERR) {
		a.state = MROCE_QPS_ERR;
		return mroce_modify_qp(e, qpn, &a, MROCE_QP_STATE, 0);
	}
	for (int i = 0; i < 3; i++) {
		a.state = path[i];
		err = mroce_modify_qp(e, qpn, &a,
				      MROCE_QP_STATE |
					      (path[i] == MROCE_QPS_RTR ?
						       MROCE_QP_DEST :
						       0),
				      0);
		if (err)
			return err;
		if (path[i] == s)
			return 0;
	}
	return 0;
}

static inline enum mroce_qp_state state_of(struct mroce_engine *e, uint32_t qpn)
{
	struct mroce_qp_attr a;

	ck_assert_int_eq(mroce_query_qp(e, qpn, &a), 0);
	return a.state;
}

#endif /* MROCE_TEST_ENGINE_FIXTURE_H */
