/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Shared fixture of the libmroce tests (tests/unit/test_lib.c in embedded
 * mode, tests/unit/test_daemon.c in daemon mode): one side of a connection,
 * a device with a PD, a 256-entry CQ, a QP and a 64 KiB MR open to local
 * write and remote read/write, brought to RTS against its peer (both PSNs
 * 100). Addresses are 127.a.b.HOST with a, b from the pid, so that parallel
 * runs never share ports. Failures are Check assertions.
 */
#ifndef MROCE_TEST_LIB_FIXTURE_H
#define MROCE_TEST_LIB_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "mroce/mroce.h"

struct side {
	char addr[46]; /* where the peer sends: the device's or its daemon's */
	struct mrv_device *dev;
	struct mrv_pd *pd;
	struct mrv_cq *cq;
	struct mrv_qp *qp;
	struct mrv_mr *mr;
};

/* "127.a.b.HOST" for this process. */
void side_addr(uint8_t host, char *out, size_t len);

/* Open the device of attributes `a` and its objects; `addr` is what the
 * peer will send to. max_send_wr 0: the default. */
void side_open(struct side *s, const struct mrv_dev_attr *a, const char *addr,
	       uint32_t max_send_wr);
void side_close(struct side *s);

/* RESET -> INIT (remote read/write) -> RTR towards peer. */
void side_to_rtr(struct side *s, const struct side *peer);
/* RTR -> RTS. */
void side_to_rts(struct side *s);
/* Both to RTR, then both to RTS. */
void side_connect(struct side *a, struct side *b);

/* An SGE of s's MR: len bytes at offset off. */
struct mrv_sge side_sge(const struct side *s, size_t off, uint32_t len);

/* A signalled RDMA op (WRITE, READ, ...) of sg to or from peer's MR at
 * offset peer_off. */
struct mrv_send_wr side_rdma_wr(uint64_t wr_id, enum mrv_wr_opcode op,
				struct mrv_sge *sg, const struct side *peer,
				size_t peer_off);

#endif
