// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce_afxdp_peer - one end of tests/net/afxdp_ns.sh: drives the AF_XDP
 * backend (user/io/afxdp.c) through include/mroce/io.h on an interface
 * that `mrocectl attach` has prepared.
 *
 * usage: mroce_afxdp_peer MODE IFNAME LOCAL_IP PEER_IP [options]
 *   (IPv4 or IPv6 addresses; bench-udp is IPv4 only)
 *   serve   register conn SERVE_CONN and QPN SERVE_QPN, print "ready",
 *           receive, check every payload byte, echo each MetaRoCE data
 *           packet back (to conn PING_CONN, ECT(0)); exit 0 once it saw
 *           --count data packets, one CE-marked packet, one RoCEv2 packet
 *           and one RoCEv2 packet with a bad ICRC (dropped and counted by
 *           the backend), and nothing else but at most the one SEND to an
 *           unregistered connection (the XDP program lets one such packet
 *           per 100 us through, for the engine's NAK NO_CONN)
 *   ping    register PING_CONN; send --count SENDs of lengths 1..--max-len
 *           to the server and check the echoes byte for byte; one SEND to
 *           an unregistered connection (the server's XDP program drops it
 *           or, at most one per 100 us, passes it up), one RoCEv2 SEND_ONLY through the backend (ICRC filled by
 *           it), then through an AF_PACKET socket one CE-marked MetaRoCE
 *           SEND and one RoCEv2 frame with a broken ICRC
 *   tx      send --count SENDs to an unregistered connection at PEER_IP
 *           (which may be off-link or have no neighbour) and print the
 *           backend's counters: tests the next-hop/MAC resolution
 *   sink    register SERVE_CONN, print "ready", receive --count SENDs
 *           (any psn below --count, each once) and check every byte
 *   burst   (zero-copy, tiny rings) send --count SENDs of lengths
 *           1..--max-len to SERVE_CONN, a whole batch of slots per call so
 *           that the transmit ring fills: the refused packets are sent
 *           again from the same slots; then wait until every slot is free
 *           again (none leaked) and check the counters
 *   bench-xdp / bench-udp
 *           send --len byte SENDs to an unregistered connection for
 *           --seconds through the backend / kernel UDP sendmmsg() and print
 *           packets per second (the peer's XDP program drops them);
 *           bench-xdp --build builds every SEND afresh with the codec
 *           (into the backend's buffers with --zc)
 * options: --count N, --max-len N, --len N, --seconds N, --timeout MS,
 *          --mb (multi-buffer), --peer-mac MAC (for the raw frames),
 *          --zc (serve, ping: build every packet the backend sends in a
 *          buffer of mroce_io_tx_bufs(), written in place; with --mb the
 *          RoCEv2 SEND carries 6000 bytes), --nframes N (UMEM frames),
 *          --slots N (zero-copy buffers, 64)
 * Exit: 0 ok, 1 check failed, 2 usage/setup error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mroce/codec.h"
#include "mroce/engine.h"
#include "mroce/io.h"
#include "mroce/io_afxdp.h"

#define SERVE_CONN 0x1002u
#define PING_CONN 0x1001u
#define SERVE_QPN 0x123u
#define UNKNOWN_CONN 0x7777u
#define CE_PSN 0xfff000u
#define BATCH 32

static struct {
	const char *mode, *ifname;
	struct mroce_peer_addr peer;
	uint8_t local[16];
	uint8_t peer_mac[6];
	int count, max_len, len, seconds, timeout_ms, nframes, slots;
	bool mb, have_mac, zc, build;
} opt = {.count = 200,
	 .max_len = 1400,
	 .len = 1024,
	 .seconds = 2,
	 .timeout_ms = 10000,
	 .nframes = 4096,
	 .slots = 64};

static uint8_t pat(uint32_t psn, uint32_t j)
{
	return (uint8_t)(psn * 131u + j * 7u + (j >> 8));
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int open_io(struct mroce_io **io)
{
	struct mroce_io_cfg cfg = {
		.kind = MROCE_IO_AFXDP,
		.family = opt.peer.family,
		.mroce_port = MROCE_UDP_PORT,
		.rocev2_port = ROCEV2_UDP_PORT,
		.ifname = opt.ifname,
		.queue = 0,
		.frame_size = 4096,
		.nframes = (uint32_t)opt.nframes,
		.multi_buffer = opt.mb,
		.tx_slots = opt.zc ? (uint32_t)opt.slots : 0,
	};
	int err;

	memcpy(cfg.local_addr, opt.local, 16);
	err = mroce_io_open(&cfg, io);
	if (err)
		fprintf(stderr, "mroce_io_open(%s): %s\n", opt.ifname,
			strerror(-err));
	return err;
}

static int add_conn(struct mroce_io *io, uint8_t proto, uint32_t id,
		    uint32_t slot)
{
	struct mroce_conn_val v = {.slot = slot, .peer_conn_id = 0};
	int err = mroce_io_afxdp_conn_add(io, proto, id, &v);

	if (err)
		fprintf(stderr, "conn_add(%u, 0x%x): %s\n", proto, id,
			strerror(-err));
	return err;
}

/* A MetaRoCE SEND (psn, len bytes of pattern) into buf. */
static int build_send(uint8_t *buf, size_t cap, uint32_t conn, uint32_t psn,
		      uint32_t len, uint8_t *payload)
{
	struct mroce_meta_pkt p;

	for (uint32_t j = 0; j < len; j++)
		payload[j] = pat(psn, j);
	memset(&p, 0, sizeof(p));
	p.opcode = MROCE_OP_SEND;
	p.conn_id = conn;
	p.path = (uint8_t)(psn % 8);
	p.psn = psn;
	p.msg_len = len;
	p.payload = payload;
	p.payload_len = len;
	return mroce_meta_build(&p, buf, cap);
}

/* A transmit buffer of size *cap: with --zc one of the backend's (waiting
 * for a completion to free one), else the static fallback. NULL: none
 * came within the timeout. */
static uint8_t *tx_buf(struct mroce_io *io, uint8_t *fallback, size_t *cap)
{
	uint64_t deadline = mono_ns() + (uint64_t)opt.timeout_ms * 1000000ull;
	uint8_t *b;
	uint32_t c;

	if (!opt.zc)
		return fallback;
	while (mroce_io_tx_bufs(io, &b, 1, &c) != 1) {
		if (mono_ns() > deadline) {
			fprintf(stderr, "no zero-copy buffer came free\n");
			return NULL;
		}
	}
	*cap = c;
	return b;
}

/* Every slot free again (completions in), within the timeout; and puts
 * of buffers not held are ignored. */
static bool slots_all_back(struct mroce_io *io)
{
	uint64_t deadline = mono_ns() + (uint64_t)opt.timeout_ms * 1000000ull;
	uint8_t **b = calloc((size_t)opt.slots + 1, sizeof(*b));
	bool ok = false;
	uint32_t cap;

	while (b && !ok && mono_ns() < deadline) {
		int k = mroce_io_tx_bufs(io, b, opt.slots + 1, &cap);

		if (k < 0)
			break;
		ok = k == opt.slots;
		mroce_io_tx_bufs_put(io, b, k);
		if (!ok)
			usleep(1000);
	}
	if (ok) {
		/* Puts of what is not held are ignored: holding every slot,
		 * put half back, then the same half again and a pointer into
		 * a held slot that is not its start; exactly that half, no
		 * more, comes out again (the free list never gets a buffer
		 * twice, nor one still in use). */
		uint8_t **c = calloc((size_t)opt.slots + 1, sizeof(*c));
		int h = opt.slots / 2, k, k2 = -1;
		uint8_t *odd;

		k = c ? mroce_io_tx_bufs(io, b, opt.slots + 1, &cap) : -1;
		if (k == opt.slots) {
			odd = b[h] + 1;
			mroce_io_tx_bufs_put(io, b, h);
			mroce_io_tx_bufs_put(io, b, h);
			mroce_io_tx_bufs_put(io, &odd, 1);
			k2 = mroce_io_tx_bufs(io, c, opt.slots + 1, &cap);
			if (k2 > 0)
				mroce_io_tx_bufs_put(io, c, k2);
			mroce_io_tx_bufs_put(io, b + h, opt.slots - h);
		} else if (k > 0) {
			mroce_io_tx_bufs_put(io, b, k);
		}
		if (k2 != h)
			fprintf(stderr, "slots: %d came out after puts of %d held "
				"and 1 + %d not held, not %d\n", k2, h, h, h);
		ok = k2 == h;
		free(c);
	}
	free(b);
	return ok;
}

/* Send all n, waiting (poll on the socket) while the backend is full. */
static int tx_all(struct mroce_io *io, struct mroce_io_tx *t, int n)
{
	uint64_t deadline = mono_ns() + (uint64_t)opt.timeout_ms * 1000000ull;
	int done = 0;

	while (done < n) {
		int k = mroce_io_tx(io, t + done, n - done);

		if (k < 0)
			return k;
		done += k;
		if (done < n && mono_ns() > deadline)
			return -ETIMEDOUT;
	}
	return 0;
}

static bool payload_ok(const uint8_t *p, uint32_t len, uint32_t psn)
{
	for (uint32_t j = 0; j < len; j++)
		if (p[j] != pat(psn, j))
			return false;
	return true;
}

static void print_stats(const char *who, struct mroce_io *io)
{
	struct mroce_io_afxdp_stats x;
	struct mroce_io_stats s;

	mroce_io_get_stats(io, &s);
	printf("%s:", who);
#define X_PRINT(n) printf(" %s=%llu", #n, (unsigned long long)s.n);
	MROCE_IO_STATS(X_PRINT)
#undef X_PRINT
	if (!mroce_io_afxdp_get_stats(io, &x))
		printf(" rx_chains=%llu tx_chains=%llu kernel_rx_dropped=%llu "
		       "rx_ring_full=%llu tx_no_neigh=%llu tx_zc_pkts=%llu "
		       "tx_slots_free=%llu/%llu",
		       (unsigned long long)x.rx_chains,
		       (unsigned long long)x.tx_chains,
		       (unsigned long long)x.rx_dropped,
		       (unsigned long long)x.rx_ring_full,
		       (unsigned long long)x.tx_no_neigh,
		       (unsigned long long)x.tx_zc_pkts,
		       (unsigned long long)x.tx_slots_free,
		       (unsigned long long)x.tx_slots);
	printf("\n");
}

/* ------------------------------------------------------------------ */

static int serve(void)
{
	static uint8_t out[MROCE_MAX_PAYLOAD + 256];
	struct mroce_io_rx rx[BATCH];
	struct mroce_io *io;
	int data = 0, ce = 0, rv2 = 0, bad = 0, unexpected = 0, noconn = 0;
	int rc = 1;
	uint64_t deadline;
	struct mroce_io_stats s;

	if (open_io(&io))
		return 2;
	if (add_conn(io, MROCE_CONN_METAROCE, SERVE_CONN, 1) ||
	    add_conn(io, MROCE_CONN_ROCEV2, SERVE_QPN, 2))
		goto out;
	printf("ready\n");
	fflush(stdout);
	deadline = mono_ns() + (uint64_t)opt.timeout_ms * 1000000ull;
	for (;;) {
		struct pollfd pfd = {.fd = mroce_io_fd(io), .events = POLLIN};
		int n;

		mroce_io_get_stats(io, &s);
		if (data >= opt.count && ce == 1 && rv2 == 1 &&
		    s.rx_bad_icrc >= 1)
			break;
		if (mono_ns() > deadline) {
			fprintf(stderr, "serve: timeout\n");
			break;
		}
		n = mroce_io_rx(io, rx, BATCH);
		if (n <= 0) {
			poll(&pfd, 1, 10);
			continue;
		}
		for (int i = 0; i < n; i++) {
			struct mroce_io_rx *r = &rx[i];

			if (r->dport == ROCEV2_UDP_PORT) {
				struct mroce_rv2_pkt p;

				if (mroce_rv2_parse_l4(r->data, r->len, &p) ||
				    p.dqpn != SERVE_QPN ||
				    !payload_ok(p.payload, p.payload_len,
						p.psn))
					bad++;
				else
					rv2++;
				continue;
			}
			struct mroce_meta_pkt p;
			struct mroce_io_tx t;
			size_t cap = sizeof(out);
			uint8_t *ob;
			int len;

			if (mroce_meta_parse(r->data, r->len, &p) ||
			    p.opcode != MROCE_OP_SEND ||
			    !payload_ok(p.payload, p.payload_len, p.psn)) {
				bad++;
				continue;
			}
			if (p.conn_id == UNKNOWN_CONN) {
				noconn++;
				continue;
			}
			if (p.conn_id != SERVE_CONN) {
				unexpected++;
				continue;
			}
			if (p.psn == CE_PSN) {
				ce += r->ce;
				if (!r->ce)
					unexpected++;
				continue;
			}
			if (r->ce)
				unexpected++;
			data++;
			/* echo to the pinger's connection */
			p.conn_id = PING_CONN;
			ob = tx_buf(io, out, &cap);
			len = ob ? mroce_meta_build(&p, ob, cap) : -1;
			if (len < 0) {
				bad++;
				if (ob && ob != out)
					mroce_io_tx_bufs_put(io, &ob, 1);
				continue;
			}
			t = (struct mroce_io_tx){
				.data = ob,
				.len = (uint32_t)len,
				.dst = &opt.peer,
				.sport = (uint16_t)(MROCE_SPORT_MIN +
						    p.psn % 64),
				.dport = MROCE_UDP_PORT,
				.ect = true,
			};
			if (tx_all(io, &t, 1))
				bad++;
		}
		mroce_io_rx_release(io, rx, n);
	}
	if (opt.zc && !slots_all_back(io)) {
		fprintf(stderr, "serve: zero-copy buffers leaked\n");
		bad++;
	}
	mroce_io_get_stats(io, &s);
	printf("serve: data=%d ce=%d rocev2=%d bad=%d unexpected=%d "
	       "noconn=%d bad_icrc=%llu\n",
	       data, ce, rv2, bad, unexpected, noconn,
	       (unsigned long long)s.rx_bad_icrc);
	print_stats("serve", io);
	rc = data == opt.count && ce == 1 && rv2 == 1 && !bad && !unexpected &&
			     noconn <= 1 && s.rx_bad_icrc == 1
		     ? 0
		     : 1;
out:
	mroce_io_close(io);
	return rc;
}

/* ------------------------------------------------------------------ */

/* A full frame (Ethernet..ICRC) through an AF_PACKET socket: the backend
 * cannot send a CE mark or a wrong ICRC, so these come from here. */
static int send_raw(const uint8_t *l4, size_t l4_len, uint16_t dport,
		    uint8_t tos, bool rocev2_bad_icrc)
{
	uint8_t frame[2048];
	struct mroce_frame_spec spec;
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_halen = 6};
	size_t hdr;
	int len, fd, rc = 0;

	memset(&spec, 0, sizeof(spec));
	memcpy(spec.dmac, opt.peer_mac, 6);
	spec.smac[0] = 0x02;
	spec.vlan = -1;
	spec.l3.family = opt.peer.family;
	memcpy(spec.l3.src, opt.local, 16);
	memcpy(spec.l3.dst, opt.peer.addr, 16);
	spec.l3.tos = tos;
	spec.l3.ttl = 64;
	spec.sport = MROCE_SPORT_MIN;
	spec.dport = dport;
	hdr = mroce_frame_hdr_len(&spec);
	if (hdr + l4_len > sizeof(frame))
		return -1;
	memcpy(frame + hdr, l4, l4_len);
	len = mroce_frame_build(&spec, l4_len, frame, sizeof(frame));
	if (len < 0)
		return -1;
	if (dport == ROCEV2_UDP_PORT) {
		mroce_rv2_icrc_fill(frame, (size_t)len);
		if (rocev2_bad_icrc)
			frame[len - 1] ^= 0x5a;
	}
	fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0)
		return -1;
	sll.sll_ifindex = (int)if_nametoindex(opt.ifname);
	memcpy(sll.sll_addr, opt.peer_mac, 6);
	if (sendto(fd, frame, (size_t)len, 0, (struct sockaddr *)&sll,
		   sizeof(sll)) != len)
		rc = -1;
	close(fd);
	return rc;
}

/* Payload length of ping packet psn: every 4th the largest, the others
 * spread over 1..max_len. */
static uint32_t ping_len(uint32_t psn)
{
	uint32_t max = (uint32_t)opt.max_len;

	return psn % 4 == 0 ? max : 1 + (psn * 997u) % max;
}

/* Check n received SENDs for conn (psn < --count, each once, length
 * ping_len(psn), every byte), mark them in seen and release them.
 * Returns how many were new and good; the others count in *bad. */
static int take_sends(struct mroce_io *io, struct mroce_io_rx *rx, int n,
		      uint32_t conn, uint8_t *seen, int *bad)
{
	int good = 0;

	for (int i = 0; i < n; i++) {
		struct mroce_meta_pkt p;

		if (mroce_meta_parse(rx[i].data, rx[i].len, &p) ||
		    p.conn_id != conn || p.psn >= (uint32_t)opt.count ||
		    seen[p.psn] ||
		    !payload_ok(p.payload, p.payload_len, p.psn) ||
		    p.payload_len != ping_len(p.psn)) {
			(*bad)++;
			continue;
		}
		seen[p.psn] = 1;
		good++;
	}
	mroce_io_rx_release(io, rx, n);
	return good;
}

static int ping(void)
{
	static uint8_t pay[MROCE_MAX_PAYLOAD],
		buf[BATCH][MROCE_MAX_PAYLOAD + 256];
	struct mroce_io_rx rx[BATCH];
	struct mroce_io *io;
	uint8_t *seen = calloc((size_t)opt.count, 1);
	int sent = 0, echoed = 0, bad = 0, rc = 1;
	uint64_t deadline;

	if (!seen || open_io(&io))
		return 2;
	if (add_conn(io, MROCE_CONN_METAROCE, PING_CONN, 1))
		goto out;
	deadline = mono_ns() + (uint64_t)opt.timeout_ms * 1000000ull;
	while (echoed < opt.count && mono_ns() < deadline) {
		struct mroce_io_tx t[BATCH];
		int k = 0, n;

		/* at most 4 batches in flight: the echo path is as fast */
		while (sent < opt.count && sent - echoed < 4 * BATCH &&
		       k < BATCH) {
			uint32_t psn = (uint32_t)sent;
			uint32_t len = ping_len(psn);
			size_t cap = sizeof(buf[k]);
			uint8_t *b = tx_buf(io, buf[k], &cap);
			int l = b ? build_send(b, cap, SERVE_CONN, psn, len,
					       pay)
				  : -MROCE_E_NOSPACE;

			if (l < 0) {
				fprintf(stderr, "build: %s\n",
					mroce_err_name(l));
				goto out;
			}
			t[k] = (struct mroce_io_tx){
				.data = b,
				.len = (uint32_t)l,
				.dst = &opt.peer,
				.sport = (uint16_t)(MROCE_SPORT_MIN + psn % 64),
				.dport = MROCE_UDP_PORT,
				.ect = psn % 2,
			};
			k++;
			sent++;
		}
		if (k && tx_all(io, t, k)) {
			fprintf(stderr, "ping: transmit stuck\n");
			goto out;
		}
		n = mroce_io_rx(io, rx, BATCH);
		if (n <= 0) {
			struct pollfd pfd = {.fd = mroce_io_fd(io),
					     .events = POLLIN};

			if (sent - echoed >= 4 * BATCH || sent == opt.count)
				poll(&pfd, 1, 10);
			continue;
		}
		echoed += take_sends(io, rx, n, PING_CONN, seen, &bad);
	}
	printf("ping: sent=%d echoed=%d bad=%d\n", sent, echoed, bad);
	if (echoed != opt.count || bad)
		goto out;

	/* an unregistered connection: the server's XDP drops it */
	{
		struct mroce_io_tx t = {.dst = &opt.peer,
					.sport = MROCE_SPORT_MIN,
					.dport = MROCE_UDP_PORT};
		int l = build_send(buf[0], sizeof(buf[0]), UNKNOWN_CONN, 1, 64,
				   pay);

		t.data = buf[0];
		t.len = (uint32_t)l;
		if (l < 0 || tx_all(io, &t, 1))
			goto out;
	}
	/* RoCEv2 through the backend: it fills the ICRC (over the headers:
	 * with --zc --mb built in place over three UMEM chunks) */
	{
		struct mroce_rv2_pkt p;
		struct mroce_io_tx t = {.dst = &opt.peer,
					.sport = MROCE_SPORT_MIN + 1,
					.dport = ROCEV2_UDP_PORT};
		uint32_t big = opt.zc && opt.mb ? 6000 : 301;
		size_t cap = sizeof(buf[1]);
		uint8_t *b = tx_buf(io, buf[1], &cap);
		int l;

		for (uint32_t j = 0; j < big; j++)
			pay[j] = pat(7, j);
		memset(&p, 0, sizeof(p));
		p.opcode = ROCEV2_OP_SEND_ONLY;
		p.pkey = 0xffff;
		p.dqpn = SERVE_QPN;
		p.psn = 7;
		p.payload = pay;
		p.payload_len = big;
		l = b ? mroce_rv2_build(&p, b, cap) : -1;
		t.data = b;
		t.len = (uint32_t)l;
		if (l < 0 || tx_all(io, &t, 1))
			goto out;
		/* and a short one with a broken ICRC, through AF_PACKET */
		p.payload_len = 301;
		l = mroce_rv2_build(&p, buf[0], sizeof(buf[0]));
		if (opt.have_mac &&
		    (l < 0 ||
		     send_raw(buf[0], (size_t)l, ROCEV2_UDP_PORT, 0, true))) {
			fprintf(stderr, "ping: raw bad-ICRC frame: %s\n",
				strerror(errno));
			goto out;
		}
	}
	/* a CE-marked SEND, through AF_PACKET (the backend only sets ECT) */
	if (opt.have_mac) {
		int l = build_send(buf[0], sizeof(buf[0]), SERVE_CONN, CE_PSN,
				   100, pay);

		if (l < 0 ||
		    send_raw(buf[0], (size_t)l, MROCE_UDP_PORT, 3, false)) {
			fprintf(stderr, "ping: raw CE frame failed\n");
			goto out;
		}
	}
	if (opt.zc && !slots_all_back(io)) {
		fprintf(stderr, "ping: zero-copy buffers leaked\n");
		goto out;
	}
	rc = 0;
out:
	print_stats("ping", io);
	mroce_io_close(io);
	free(seen);
	return rc;
}

/* ------------------------------------------------------------------ */

/* Packets of one bench-xdp round into t: the prebuilt pkt as it is, or
 * (--build) each SEND built afresh by the codec (payload copied and its
 * CRC computed: the engine's part of a transmit) into a static buffer or,
 * with --zc, into a zero-copy buffer. Returns the count. */
static int bench_fill(struct mroce_io *io, struct mroce_io_tx *t,
		      struct mroce_meta_pkt *mp, const uint8_t *pkt, int len)
{
	static uint8_t bufs[64][MROCE_MAX_PAYLOAD + 256];
	uint8_t *zb[64];
	uint32_t cap = sizeof(bufs[0]);
	int n = 64;

	if (opt.build && opt.zc) {
		n = mroce_io_tx_bufs(io, zb, 64, &cap);
		if (n < 0)
			return n;
	}
	for (int i = 0; i < n; i++) {
		t[i] = (struct mroce_io_tx){
			.data = pkt,
			.len = (uint32_t)len,
			.dst = &opt.peer,
			.sport = (uint16_t)(MROCE_SPORT_MIN + i),
			.dport = MROCE_UDP_PORT};
		if (!opt.build)
			continue;
		t[i].data = opt.zc ? zb[i] : bufs[i];
		mp->psn++;
		len = mroce_meta_build(mp, (uint8_t *)t[i].data, cap);
		if (len < 0)
			return len;
		t[i].len = (uint32_t)len;
	}
	return n;
}

static int bench_xdp(void)
{
	static uint8_t pay[MROCE_MAX_PAYLOAD], pkt[MROCE_MAX_PAYLOAD + 256];
	struct mroce_io_tx t[64];
	struct mroce_meta_pkt mp;
	struct mroce_io *io;
	struct mroce_io_stats s;
	uint64_t t0, t1 = 0, sent = 0;
	int l = build_send(pkt, sizeof(pkt), UNKNOWN_CONN, 1, (uint32_t)opt.len,
			   pay);

	if (l < 0 || mroce_meta_parse(pkt, (size_t)l, &mp) || open_io(&io))
		return 2;
	t0 = mono_ns();
	do {
		int n = bench_fill(io, t, &mp, pkt, l), done = 0;

		if (n < 0)
			break;
		/* every packet built goes out (its buffer is in use) */
		while (done < n) {
			int k = mroce_io_tx(io, t + done, n - done);

			if (k < 0)
				break;
			done += k;
		}
		sent += (uint64_t)done;
		t1 = mono_ns();
	} while (t1 - t0 < (uint64_t)opt.seconds * 1000000000ull);
	mroce_io_get_stats(io, &s);
	printf("bench-xdp: len=%d%s%s packets=%llu seconds=%.2f pps=%.0f "
	       "kicks_per_64=%.2f\n",
	       opt.len, opt.build ? " build" : "", opt.zc ? " zc" : "",
	       (unsigned long long)sent, (double)(t1 - t0) / 1e9,
	       (double)sent * 1e9 / (double)(t1 - t0),
	       sent ? (double)s.tx_kicks * 64.0 / (double)sent : 0.0);
	print_stats("bench-xdp", io);
	mroce_io_close(io);
	return 0;
}

static int sink(void)
{
	struct mroce_io_rx rx[BATCH];
	struct mroce_io *io;
	uint8_t *seen = calloc((size_t)opt.count, 1);
	int got = 0, bad = 0;
	uint64_t deadline;

	if (!seen || open_io(&io))
		return 2;
	if (add_conn(io, MROCE_CONN_METAROCE, SERVE_CONN, 1)) {
		mroce_io_close(io);
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	deadline = mono_ns() + (uint64_t)opt.timeout_ms * 1000000ull;
	while (got < opt.count && mono_ns() < deadline) {
		int n = mroce_io_rx(io, rx, BATCH);

		if (n <= 0) {
			struct pollfd pfd = {.fd = mroce_io_fd(io),
					     .events = POLLIN};

			poll(&pfd, 1, 10);
			continue;
		}
		got += take_sends(io, rx, n, SERVE_CONN, seen, &bad);
	}
	printf("sink: got=%d bad=%d\n", got, bad);
	print_stats("sink", io);
	mroce_io_close(io);
	free(seen);
	return got == opt.count && !bad ? 0 : 1;
}

static int burst(void)
{
	static uint8_t pay[MROCE_MAX_PAYLOAD];
	struct mroce_io_tx *t = calloc((size_t)opt.slots, sizeof(*t));
	struct mroce_io_afxdp_stats x;
	struct mroce_io_stats s;
	struct mroce_io *io;
	int sent = 0, rc = 1, calls = 0;
	uint64_t deadline = mono_ns() + (uint64_t)opt.timeout_ms * 1000000ull;

	opt.zc = true;
	if (!t || open_io(&io))
		return 2;
	while (sent < opt.count) {
		if (mono_ns() > deadline) {
			fprintf(stderr, "burst: timeout\n");
			goto out;
		}
		int k = 0, done = 0;
		uint8_t *b;
		uint32_t cap;

		/* as many slots as free (all of them, as a rule) */
		while (sent + k < opt.count && k < opt.slots &&
		       mroce_io_tx_bufs(io, &b, 1, &cap) == 1) {
			uint32_t psn = (uint32_t)(sent + k);
			int l = build_send(b, cap, SERVE_CONN, psn,
					   ping_len(psn), pay);

			if (l < 0)
				goto out;
			t[k++] = (struct mroce_io_tx){
				.data = b,
				.len = (uint32_t)l,
				.dst = &opt.peer,
				.sport = (uint16_t)(MROCE_SPORT_MIN + psn % 64),
				.dport = MROCE_UDP_PORT};
		}
		/* refused entries keep their slots: offered again as they
		 * are until the ring takes them */
		while (done < k) {
			int r = mroce_io_tx(io, t + done, k - done);

			if (r < 0 || mono_ns() > deadline)
				goto out;
			done += r;
			calls++;
		}
		sent += k;
	}
	mroce_io_get_stats(io, &s);
	if (!slots_all_back(io)) {
		fprintf(stderr, "burst: slots leaked\n");
		goto out;
	}
	if (mroce_io_afxdp_get_stats(io, &x))
		goto out;
	printf("burst: sent=%d calls=%d\n", sent, calls);
	rc = s.tx_pkts == (uint64_t)opt.count && s.tx_full > 0 &&
			     x.tx_zc_pkts == (uint64_t)opt.count &&
			     x.tx_slots_free == x.tx_slots
		     ? 0
		     : 1;
out:
	print_stats("burst", io);
	mroce_io_close(io);
	free(t);
	return rc;
}

static int tx_only(void)
{
	static uint8_t pay[MROCE_MAX_PAYLOAD], pkt[MROCE_MAX_PAYLOAD + 256];
	struct mroce_io *io;
	int l = build_send(pkt, sizeof(pkt), UNKNOWN_CONN, 1, 64, pay);

	if (l < 0 || open_io(&io))
		return 2;
	for (int i = 0; i < opt.count; i++) {
		struct mroce_io_tx t = {.data = pkt,
					.len = (uint32_t)l,
					.dst = &opt.peer,
					.sport = MROCE_SPORT_MIN,
					.dport = MROCE_UDP_PORT};

		if (tx_all(io, &t, 1))
			break;
	}
	print_stats("tx", io);
	mroce_io_close(io);
	return 0;
}

static int bench_udp(void)
{
	static uint8_t pay[MROCE_MAX_PAYLOAD], pkt[MROCE_MAX_PAYLOAD + 256];
	struct sockaddr_in dst = {.sin_family = AF_INET,
				  .sin_port = htons(MROCE_UDP_PORT)};
	struct sockaddr_in src = {.sin_family = AF_INET,
				  .sin_port = htons(MROCE_SPORT_MIN)};
	struct mmsghdr m[64];
	struct iovec iov = {.iov_base = pkt};
	uint64_t t0, t1 = 0, sent = 0;
	int l = build_send(pkt, sizeof(pkt), UNKNOWN_CONN, 1, (uint32_t)opt.len,
			   pay);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (l < 0 || fd < 0 || opt.peer.family != AF_INET)
		return 2; /* IPv4 only */
	iov.iov_len = (size_t)l;
	memcpy(&dst.sin_addr, opt.peer.addr, 4);
	memcpy(&src.sin_addr, opt.local, 4);
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)))
		return 2;
	memset(m, 0, sizeof(m));
	for (int i = 0; i < 64; i++) {
		m[i].msg_hdr.msg_name = &dst;
		m[i].msg_hdr.msg_namelen = sizeof(dst);
		m[i].msg_hdr.msg_iov = &iov;
		m[i].msg_hdr.msg_iovlen = 1;
	}
	t0 = mono_ns();
	do {
		int k = sendmmsg(fd, m, 64, 0);

		if (k > 0)
			sent += (uint64_t)k;
		t1 = mono_ns();
	} while (t1 - t0 < (uint64_t)opt.seconds * 1000000000ull);
	printf("bench-udp: len=%d packets=%llu seconds=%.2f pps=%.0f\n",
	       opt.len, (unsigned long long)sent, (double)(t1 - t0) / 1e9,
	       (double)sent * 1e9 / (double)(t1 - t0));
	close(fd);
	return 0;
}

/* ------------------------------------------------------------------ */

static int usage(void)
{
	fprintf(stderr,
		"usage: mroce_afxdp_peer "
		"serve|ping|sink|burst|tx|bench-xdp|bench-udp "
		"IFNAME "
		"LOCAL_IP PEER_IP\n"
		"       [--count N] [--max-len N] [--len N] [--seconds N]\n"
		"       [--timeout MS] [--mb] [--peer-mac MAC] [--zc]\n"
		"       [--nframes N] [--slots N] [--build]\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 5)
		return usage();
	opt.mode = argv[1];
	opt.ifname = argv[2];
	opt.peer.family = strchr(argv[3], ':') ? AF_INET6 : AF_INET;
	if (inet_pton(opt.peer.family, argv[3], opt.local) != 1 ||
	    inet_pton(opt.peer.family, argv[4], opt.peer.addr) != 1)
		return usage();
	memcpy(opt.peer.local, opt.local, 16);
	for (int i = 5; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--mb")) {
			opt.mb = true;
			continue;
		}
		if (!strcmp(a, "--zc")) {
			opt.zc = true;
			continue;
		}
		if (!strcmp(a, "--build")) {
			opt.build = true;
			continue;
		}
		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "--count"))
			opt.count = atoi(v);
		else if (!strcmp(a, "--max-len"))
			opt.max_len = atoi(v);
		else if (!strcmp(a, "--len"))
			opt.len = atoi(v);
		else if (!strcmp(a, "--seconds"))
			opt.seconds = atoi(v);
		else if (!strcmp(a, "--timeout"))
			opt.timeout_ms = atoi(v);
		else if (!strcmp(a, "--nframes"))
			opt.nframes = atoi(v);
		else if (!strcmp(a, "--slots"))
			opt.slots = atoi(v);
		else if (!strcmp(a, "--peer-mac"))
			opt.have_mac =
				sscanf(v, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx",
				       &opt.peer_mac[0], &opt.peer_mac[1],
				       &opt.peer_mac[2], &opt.peer_mac[3],
				       &opt.peer_mac[4], &opt.peer_mac[5]) == 6;
		else
			return usage();
	}
	if (opt.count <= 0 || opt.max_len <= 0 || opt.slots <= 0 ||
	    opt.max_len > MROCE_MAX_PAYLOAD || opt.len <= 0 ||
	    opt.len > MROCE_MAX_PAYLOAD)
		return usage();
	if (!strcmp(opt.mode, "serve"))
		return serve();
	if (!strcmp(opt.mode, "ping"))
		return ping();
	if (!strcmp(opt.mode, "tx"))
		return tx_only();
	if (!strcmp(opt.mode, "sink"))
		return sink();
	if (!strcmp(opt.mode, "burst"))
		return burst();
	if (!strcmp(opt.mode, "bench-xdp"))
		return bench_xdp();
	if (!strcmp(opt.mode, "bench-udp"))
		return bench_udp();
	return usage();
}
