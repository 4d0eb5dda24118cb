/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * mroce_blast's pieces (tool only): blast.c holds the command line, the
 * kernel UDP modes, the reports and main(); xsk.c the AF_XDP sender and
 * receiver; handoff.c the process hand-off measure. What they share is here.
 */
#ifndef MROCE_BLAST_H
#define MROCE_BLAST_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#define BATCH 32	/* copy mode sends at most 32 per kick */
#define HDR_LEN (14 + 20 + 8)
#define MAX_FLOWS 4096
#define MAX_PAYLOAD (9000 - 28) /* MTU 9000 */

struct opts {
	bool tx, rx, udp, tcp, json, pingpong, spin, handoff;
	const char *ifname, *src, *dst, *dmac, *smac, *ready;
	int queue, sport, flows, dport, size, seconds;
	int cpus[2];	/* --handoff: the two processes' CPUs */
	long count;
	double pps;
};

struct result {
	const char *mode;
	uint64_t packets, bytes, busy, errors;
	uint64_t xdp_matched, xdp_redirected;
	uint64_t kernel_drops; /* AF_XDP RX: redirected, dropped by the
				* kernel before our ring (XDP_STATISTICS) */
	double seconds;
	/* ping-pong: half round trips in us, sorted */
	double *lat;
	uint64_t lost;
};

/* Set by SIGINT / SIGTERM: every loop stops and reports. */
extern volatile sig_atomic_t stop;

double now_s(void);
/* --ready FILE: created once packets can be received. */
void signal_ready(const struct opts *o);
/* Sleep until packet number `sent` is due at `pps` packets per second. */
void pace(double t0, uint64_t sent, double pps);
/* qsort() order of doubles, ascending. */
int cmp_double(const void *a, const void *b);
/* Ping-pong TX: the destination (--dst, --dport), --count (1000) and
 * --size (at least 8), and r->lat for the samples; 0, or the exit status
 * after a message. */
struct sockaddr_in;
int pp_setup(const struct opts *o, struct result *r, struct sockaddr_in *dst,
	     long *count, size_t *size);
/* --tcp --pingpong (tcp_pp.c): the echo side and the pinger. */
int tcp_pp_rx(const struct opts *o, struct result *r);
int tcp_pp_tx(const struct opts *o, struct result *r);

/* xsk.c: the AF_XDP modes. 0, 1 (set-up failed) or 2 (bad options),
 * after a message naming the step. */
int xdp_tx(const struct opts *o, struct result *r);
int xdp_rx(const struct opts *o, struct result *r);

/* handoff.c: --handoff. 0, or 1 after a message naming the step. */
int handoff(const struct opts *o, struct result *r);

#endif
