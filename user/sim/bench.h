/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Engine CPU micro-benchmark of mroce_sim --bench-engine (tool only). */
#ifndef MROCE_SIM_BENCH_H
#define MROCE_SIM_BENCH_H

#include <stdint.h>

struct sim_bench {
	double rx_data_ns;	/* receiver: rx() of a data packet (parse,
				 * checks, placement, ACK state) plus its
				 * share of tx() producing the ACKs */
	double rx_ack_ns;	/* sender: rx() of one ACK */
	double tx_data_ns;	/* sender: tx() producing one data packet */
	uint64_t data_pkts, acks;
	uint64_t bytes;
	double wall_s;
	char why[128];		/* set on failure */
};

/* Two engines back to back (no network, no loss), WRITEs of msg_size
 * until `bytes` are acknowledged. 0 or -errno (why says what failed). */
int sim_bench_engine(uint8_t transport, uint32_t msg_size, uint64_t bytes,
		     struct sim_bench *out);

#endif
