/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What one mroce_engine_tx() call sends first, for the transmit-order tests
 * of both transports (test_metaroce_tx.c, test_rocev2_transfer.c). Include
 * after ../harness.h.
 */
#ifndef MROCE_TEST_TX_FIRST_OPS_H
#define MROCE_TEST_TX_FIRST_OPS_H

#include <string.h>

#include "mroce/codec.h"
#include "mroce/engine.h"
#include "mroce/wire.h"

/* One tx() call of e with room for `room` packets (at most 8): returns how
 * many left, their first two opcodes in op[] (MetaRoCE or RoCEv2, by
 * destination port). */
static inline int tx_first_ops(struct mroce_engine *e, int room, uint64_t now,
			       uint8_t op[2])
{
	static uint8_t bufs[8][9216];
	struct mroce_tx_pkt pk[8];
	int n;

	ck_assert_int_le(room, 8);
	for (int i = 0; i < 8; i++) {
		memset(&pk[i], 0, sizeof(pk[i]));
		pk[i].buf = bufs[i];
	}
	n = mroce_engine_tx(e, pk, room, sizeof(bufs[0]), now);
	for (int i = 0; i < n && i < 2; i++) {
		struct mroce_meta_pkt m;
		struct mroce_rv2_pkt r;

		if (pk[i].dport == MROCE_UDP_PORT) {
			ck_assert_int_eq(mroce_meta_parse(pk[i].buf, pk[i].len,
							  &m),
					 0);
			op[i] = m.opcode;
		} else {
			ck_assert_int_eq(mroce_rv2_parse_l4(pk[i].buf,
							    pk[i].len, &r),
					 0);
			op[i] = r.opcode;
		}
	}
	return n;
}

/* A request-reply driven by hand (one per transport): side A's request has
 * reached side B, which owes it an ACK and has posted its reply; returns
 * tx_first_ops() of B's next tx() call with room for `room`. */
typedef int (*reply_and_ack_fn)(int room, uint8_t op[2]);

/* The reply (data_op) leaves before the ACK of its request (ack_op), which
 * follows in the same call; with room for one packet, the ACK. */
static inline void reply_before_ack(reply_and_ack_fn f, uint8_t data_op,
				    uint8_t ack_op)
{
	uint8_t op[2] = {0};

	ck_assert_int_eq(f(8, op), 2);
	ck_assert_uint_eq(op[0], data_op);
	ck_assert_uint_eq(op[1], ack_op);
	ck_assert_int_eq(f(1, op), 1);
	ck_assert_uint_eq(op[0], ack_op);
}

#endif
