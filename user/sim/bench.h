/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Engine CPU micro-benchmark of mroce_sim --bench-engine (tool only). */
#ifndef MROCE_SIM_BENCH_H
#define MROCE_SIM_BENCH_H

#include <stddef.h>
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

/* mroce_sim --bench-crc: the ICRC's cost per buffer of `len` bytes for
 * each CRC-32 implementation this CPU runs, best of several rounds. */
struct sim_bench_crc {
	size_t len;
	const char *selected;	/* the one mroce_crc32() uses */
	double memcpy_ns;	/* memcpy alone */
	int n;
	struct {
		const char *impl;
		double crc_ns;		/* the CRC alone */
		double copy_ns;		/* copy + CRC in one pass */
		double memcpy_crc_ns;	/* memcpy, then the CRC */
	} row[4];
};

/* 0 or -ENOMEM. */
int sim_bench_crc(size_t len, struct sim_bench_crc *out);

#endif
