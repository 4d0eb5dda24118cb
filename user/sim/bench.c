// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce_sim --bench-engine: CPU cost of the engine's data path, with no
 * network in between. Sender A and receiver B are wired back to back;
 * packets move in batches and each batch of calls is timed as a whole
 * (a clock read per packet would cost as much as what it measures).
 * Virtual time advances 1 us per round so timers behave as on a fast
 * lossless link.
 *
 * mroce_sim --bench-crc: the CRC-32 behind both ICRCs, per buffer, for
 * each implementation (tables, PCLMULQDQ, AVX-512 VPCLMULQDQ) this CPU
 * runs; alone, fused with the copy (mroce_crc32_copy) and after a memcpy
 * (what mroce_meta_build did before the fused copy).
 */
#include "bench.h"

#include "../codec/crc32_int.h"
#include "mroce/engine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define BATCH	64
#define BUFCAP	(8192 + 512)

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct side {
	struct mroce_engine *e;
	int cq, peer;
	uint32_t qpn;
	uint8_t *mem;
	struct mroce_mr mr;
};

static int side_init(struct side *s, uint8_t transport, uint64_t seed,
		     size_t memlen, int me)
{
	struct mroce_engine_cfg c = { 0 };
	struct mroce_peer_addr a = { .family = AF_INET };
	struct mroce_qp_init_attr qa = { 0 };
	int err;

	c.transport = transport;
	c.seed = seed;
	c.link_bps = 100000000000ull;
	c.secret[0] = (uint8_t)seed;
	mroce_engine_cfg_default(&c);
	err = mroce_engine_create(&c, &s->e);
	if (err)
		return err;
	a.addr[0] = 10;
	a.addr[3] = (uint8_t)(2 - me);
	a.local[0] = 10;
	a.local[3] = (uint8_t)(1 + me);
	s->peer = mroce_peer_add(s->e, &a);
	if (s->peer < 0)
		return s->peer;
	s->cq = mroce_create_cq(s->e, 4096);
	if (s->cq < 0)
		return s->cq;
	s->mem = calloc(1, memlen);
	if (!s->mem)
		return -ENOMEM;
	err = mroce_reg_mr(s->e, s->mem, memlen,
			   MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE,
			   &s->mr);
	if (err)
		return err;
	qa.send_cq = qa.recv_cq = s->cq;
	qa.max_send_wr = qa.max_recv_wr = 256;
	err = mroce_create_qp(s->e, &qa);
	if (err < 0)
		return err;
	s->qpn = (uint32_t)err;
	return 0;
}

static int bringup(struct side *s, uint32_t dest, uint32_t rq, uint32_t sq)
{
	struct mroce_qp_attr a = { 0 };
	int err;

	a.state = MROCE_QPS_INIT;
	a.access = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE;
	err = mroce_modify_qp(s->e, s->qpn, &a,
			      MROCE_QP_STATE | MROCE_QP_ACCESS_FLAGS, 0);
	if (err)
		return err;
	a.state = MROCE_QPS_RTR;
	a.peer = s->peer;
	a.dest_qpn = dest;
	a.rq_psn = rq;
	err = mroce_modify_qp(s->e, s->qpn, &a,
			      MROCE_QP_STATE | MROCE_QP_DEST | MROCE_QP_RQ_PSN,
			      0);
	if (err)
		return err;
	a.state = MROCE_QPS_RTS;
	a.sq_psn = sq;
	return mroce_modify_qp(s->e, s->qpn, &a,
			       MROCE_QP_STATE | MROCE_QP_SQ_PSN, 0);
}

/* Moves up to BATCH packets from `from` to `to`; returns the count and
 * adds the nanoseconds spent in tx() and rx(). */
static int pump(struct side *from, struct side *to, uint8_t (*bufs)[BUFCAP],
		uint64_t now, uint64_t *tx_ns, uint64_t *rx_ns,
		uint64_t *data)
{
	struct mroce_tx_pkt p[BATCH];
	uint64_t t0, t1, t2;
	int n;

	for (int i = 0; i < BATCH; i++) {
		memset(&p[i], 0, sizeof(p[i]));
		p[i].buf = bufs[i];
	}
	t0 = wall_ns();
	n = mroce_engine_tx(from->e, p, BATCH, BUFCAP, now);
	t1 = wall_ns();
	for (int i = 0; i < n; i++) {
		struct mroce_rx_meta m = {
			.peer = to->peer, .sport = p[i].sport, .ce = false,
		};

		mroce_engine_rx(to->e, &m, p[i].buf, p[i].len, now);
	}
	t2 = wall_ns();
	*tx_ns += t1 - t0;
	*rx_ns += t2 - t1;
	if (data)
		*data += n > 0 ? (uint64_t)n : 0;
	return n;
}

int sim_bench_engine(uint8_t transport, uint32_t msg_size, uint64_t bytes,
		     struct sim_bench *out)
{
	struct side a = { 0 }, b = { 0 };
	uint8_t (*bufs)[BUFCAP] = malloc(sizeof(*bufs) * BATCH);
	uint64_t posted = 0, done = 0, nmsgs, now = 1000, start;
	uint64_t a_tx = 0, b_rx = 0, b_tx = 0, a_rx = 0;
	uint64_t data = 0, acks = 0, idle = 0;
	const uint32_t outstanding = 16;
	struct mroce_engine_stats st;
	int err;

	memset(out, 0, sizeof(*out));
	if (!bufs || msg_size == 0)
		return -EINVAL;
	nmsgs = (bytes + msg_size - 1) / msg_size;
	err = side_init(&a, transport, 11, (size_t)msg_size * outstanding, 0);
	if (!err)
		err = side_init(&b, transport, 22, (size_t)msg_size * outstanding,
				1);
	if (!err)
		err = bringup(&a, b.qpn, 500, 100);
	if (!err)
		err = bringup(&b, a.qpn, 100, 500);
	if (err) {
		snprintf(out->why, sizeof(out->why), "engine setup: %d", err);
		goto out;
	}
	start = wall_ns();
	while (done < nmsgs) {
		struct mroce_wc wc[BATCH];
		int n, moved;

		while (posted < nmsgs && posted - done < outstanding) {
			uint64_t off = (posted % outstanding) * msg_size;
			struct mroce_send_wr wr = {
				.wr_id = posted,
				.opcode = MROCE_WR_RDMA_WRITE,
				.send_flags = MROCE_SEND_SIGNALED,
				.sge = { .addr = (uint64_t)(uintptr_t)(a.mem + off),
					 .length = msg_size, .lkey = a.mr.lkey },
				.remote_addr = (uint64_t)(uintptr_t)(b.mem + off),
				.rkey = b.mr.rkey,
			};

			err = mroce_post_send(a.e, a.qpn, &wr, now);
			if (err) {
				snprintf(out->why, sizeof(out->why),
					 "post_send: %d", err);
				goto out;
			}
			posted++;
		}
		moved = pump(&a, &b, bufs, now, &a_tx, &b_rx, &data);
		moved += pump(&b, &a, bufs, now, &b_tx, &a_rx, &acks);
		mroce_engine_tick(a.e, now);
		mroce_engine_tick(b.e, now);
		n = mroce_poll_cq(a.e, a.cq, wc, BATCH);
		for (int i = 0; i < n; i++) {
			if (wc[i].status != MROCE_WC_SUCCESS) {
				snprintf(out->why, sizeof(out->why),
					 "error completion: %s",
					 mroce_wc_status_str(wc[i].status));
				err = -EIO;
				goto out;
			}
			done++;
		}
		now += 1000;
		idle = moved || n > 0 ? 0 : idle + 1;
		if (idle > 100000) {
			snprintf(out->why, sizeof(out->why),
				 "no progress (%llu of %llu messages)",
				 (unsigned long long)done,
				 (unsigned long long)nmsgs);
			err = -ETIMEDOUT;
			goto out;
		}
	}
	out->wall_s = (double)(wall_ns() - start) / 1e9;
	mroce_engine_get_stats(b.e, &st);
	out->data_pkts = st.rx_data_pkts ? st.rx_data_pkts : data;
	mroce_engine_get_stats(a.e, &st);
	out->acks = st.rx_acks ? st.rx_acks : acks;
	out->bytes = bytes;
	if (out->data_pkts) {
		out->rx_data_ns = (double)(b_rx + b_tx) / out->data_pkts;
		out->tx_data_ns = (double)a_tx / out->data_pkts;
	}
	if (out->acks)
		out->rx_ack_ns = (double)a_rx / out->acks;
out:
	if (a.e)
		mroce_engine_destroy(a.e);
	if (b.e)
		mroce_engine_destroy(b.e);
	free(a.mem);
	free(b.mem);
	free(bufs);
	return err;
}

#define CRC_ROUNDS 7

/* Best of CRC_ROUNDS rounds of `iters` calls of what (0: CRC, 1: copy +
 * CRC, 2: memcpy then CRC, 3: memcpy alone), in ns per call. */
static double crc_time(enum crc32_impl impl, int what, uint8_t *dst,
		       const uint8_t *src, size_t len, unsigned iters)
{
	volatile uint32_t sink = 0;
	double best = 0;

	for (int r = 0; r < CRC_ROUNDS; r++) {
		uint64_t t0 = wall_ns();
		double ns;

		for (unsigned i = 0; i < iters; i++) {
			switch (what) {
			case 0:
				sink += crc32_impl_crc(impl, 0, src, len);
				break;
			case 1:
				sink += crc32_impl_copy(impl, 0, dst, src, len);
				break;
			case 2:
				memcpy(dst, src, len);
				sink += crc32_impl_crc(impl, 0, dst, len);
				break;
			default:
				memcpy(dst, src, len);
				/* keep the copy: nothing reads dst here */
				__asm__ volatile("" : : "r"(dst) : "memory");
				break;
			}
		}
		ns = (double)(wall_ns() - t0) / iters;
		if (r == 0 || ns < best)
			best = ns;
	}
	(void)sink;
	return best;
}

int sim_bench_crc(size_t len, struct sim_bench_crc *out)
{
	/* dst at the misalignment of a payload behind the Ethernet, IPv4,
	 * UDP and MetaRoCE SEND headers in a page-aligned frame */
	const size_t dst_off = 10;
	/* about 32 MiB per round and measure */
	unsigned iters = (unsigned)((32u << 20) / (len ? len : 1));
	size_t cap = (len + 64 + 63) & ~(size_t)63;
	uint8_t *src = aligned_alloc(64, cap);
	uint8_t *dst = aligned_alloc(64, cap);

	memset(out, 0, sizeof(*out));
	if (!src || !dst) {
		free(src);
		free(dst);
		return -ENOMEM;
	}
	if (iters < 16)
		iters = 16;
	for (size_t i = 0; i < len; i++)
		src[i] = (uint8_t)(i * 131 + 7);
	memset(dst, 0, cap);
	out->len = len;
	out->selected = crc32_impl_name(crc32_impl_selected());
	out->memcpy_ns = crc_time(CRC32_IMPL_TABLE, 3, dst + dst_off, src, len,
				  iters);
	for (int i = 0; i < CRC32_IMPL_COUNT && out->n < 4; i++) {
		enum crc32_impl impl = (enum crc32_impl)i;
		/* the tables are ~20x slower: fewer calls */
		unsigned it = impl == CRC32_IMPL_TABLE ? iters / 8 + 1 : iters;

		if (!crc32_impl_available(impl))
			continue;
		out->row[out->n].impl = crc32_impl_name(impl);
		out->row[out->n].crc_ns = crc_time(impl, 0, NULL, src, len, it);
		out->row[out->n].copy_ns = crc_time(impl, 1, dst + dst_off, src,
						    len, it);
		out->row[out->n].memcpy_crc_ns = crc_time(impl, 2,
							  dst + dst_off, src,
							  len, it);
		out->n++;
	}
	free(src);
	free(dst);
	return 0;
}
