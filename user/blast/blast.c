// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce_blast - the unreliable packet blast that measures the ceiling of a
 * fabric: how many UDP frames per second an AF_XDP socket (copy mode, the
 * mode veth offers) can push through it, and, for comparison, a kernel UDP
 * socket. No reliability, no congestion control: whatever a transport on
 * the same fabric achieves is to be read against this number.
 *
 * TX (AF_XDP): every UMEM frame is built once (Ethernet/IPv4/UDP, IPv4
 * checksum, UDP checksum 0 which IPv4 allows), flows differ in the UDP
 * source port so ECMP spreads them; the loop only moves frame addresses
 * between the completion and TX rings and kicks the kernel with sendto()
 * once per batch (copy mode transmits at most 32 frames per kick; EAGAIN,
 * EBUSY and ENOBUFS just mean "kick again").
 * RX (AF_XDP): bpf/fabric_xsk_rx.bpf.c redirects UDP frames for --dport to
 * the socket; frames are counted and handed back to the fill ring.
 * --udp: the same with kernel sockets (sendmmsg / recvmmsg).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <math.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include "mroce/codec.h"
#include "../common/json.h"
#include "../common/util.h"
#include "../../bpf/fabric.h"
#include "fabric_xsk_rx.skel.h"

#define NUM_FRAMES 4096
#define FRAME_SIZE 4096 /* UMEM chunk: one page */
#define BATCH 32	/* copy mode sends at most 32 per kick */
#define HDR_LEN (14 + 20 + 8)
#define MAX_FLOWS 4096
#define MAX_PAYLOAD (9000 - 28) /* MTU 9000 */
/* RX nap when the ring is empty: the fill ring holds NUM_FRAMES chunks,
 * over 1300 jumbo frames, i.e. milliseconds at any rate seen here. */
#define RX_NAP_US 200

/* Multi-buffer AF_XDP (Linux 6.6); Debian 12's uapi headers predate it. */
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif

static const char usage_text[] =
	"NAME\n"
	"    mroce_blast - unreliable AF_XDP / UDP packet blast (fabric "
	"ceiling)\n"
	"\n"
	"SYNOPSIS\n"
	"    mroce_blast --tx --ifname IF --src IP --dst IP --dmac MAC "
	"[options]\n"
	"    mroce_blast --rx --ifname IF [options]\n"
	"    mroce_blast --udp --tx --dst IP [options]\n"
	"    mroce_blast --udp --rx [options]\n"
	"    mroce_blast --udp --pingpong --rx [options]\n"
	"    mroce_blast --udp --pingpong --tx --dst IP [options]\n"
	"\n"
	"DESCRIPTION\n"
	"    Sends UDP frames as fast as the fabric takes them, or counts the "
	"ones\n"
	"    that arrive. AF_XDP in copy mode by default (TX: prebuilt frames, "
	"one\n"
	"    sendto() kick per batch of 32; RX: bpf/fabric_xsk_rx.bpf.o "
	"attached\n"
	"    to IF redirects UDP to --dport into the socket, and is detached "
	"at\n"
	"    exit); --udp uses kernel sockets instead (sendmmsg / recvmmsg).\n"
	"    The AF_XDP receiver naps 200 us whenever its ring is empty instead\n"
	"    of sleeping in poll(): on a namespace fabric the sender's core runs\n"
	"    the whole forwarding chain, and a sleeper on the socket would make\n"
	"    that core pay a wake-up for every frame delivered (about 1 us of\n"
	"    ~9 per jumbo frame here). The rings hold milliseconds of traffic.\n"
	"    --udp --pingpong measures latency instead: the TX side sends one\n"
	"    datagram of --size bytes from --sport and busy-waits for the RX\n"
	"    side to echo it, --count times (a reply missing for 100 ms is\n"
	"    counted as lost and the next ping goes out); both sides spin, as\n"
	"    mroce_perf's latency tests do. The TX side reports half the round\n"
	"    trip (min, median, 99th and 99.9th percentile, average, in us),\n"
	"    the unit of mroce_perf write_lat; the RX side the echoes it sent.\n"
	"\n"
	"OPTIONS\n"
	"    --tx, --rx         direction (one is required)\n"
	"    --udp              kernel UDP socket instead of AF_XDP\n"
	"    --pingpong         with --udp: latency ping-pong (above); --count\n"
	"                       defaults to 1000, RX stops after --count echoes\n"
	"                       or --seconds\n"
	"    --ifname IF        interface (AF_XDP; required)\n"
	"    --queue Q          queue of IF (default 0)\n"
	"    --src IP           source IPv4 address (AF_XDP TX)\n"
	"    --dst IP           destination IPv4 address (TX)\n"
	"    --dmac MAC         destination MAC, i.e. the next hop (AF_XDP "
	"TX)\n"
	"    --smac MAC         source MAC (default: IF's address)\n"
	"    --sport P          first UDP source port (default 49152)\n"
	"    --flows F          source ports sport..sport+F-1, round-robin "
	"(8)\n"
	"    --dport P          UDP destination port (default 4791)\n"
	"    --size B           UDP payload bytes (default 1024, at most "
	"8972);\n"
	"                       frames over one 4 KiB UMEM chunk use "
	"multi-buffer\n"
	"                       AF_XDP (XDP_USE_SG, Linux 6.6), on both sides\n"
	"    --seconds S        run time (default 5; RX: stops S s after start "
	"and\n"
	"                       reports the rate from its first to its last "
	"packet)\n"
	"    --count N          stop after N packets (default: no limit)\n"
	"    --pps R            TX: at most R packets per second (default: no "
	"limit)\n"
	"    --spin             AF_XDP RX: busy-poll the ring instead of napping\n"
	"                       (costs a core; faster only if one is idle)\n"
	"    --ready FILE       RX: create FILE once packets can be received\n"
	"                       (so a script knows when to start the sender)\n"
	"    --json             one JSON document instead of the text summary\n"
	"                       (keys in docs/json.md); a failed run prints\n"
	"                       one too, with an \"error\" object\n"
	"    -V, --version      print the version and exit\n"
	"    -h, --help         this text\n"
	"\n"
	"OUTPUT\n"
	"    mode, packets, bytes (whole frames), seconds, pps, Gbit/s of "
	"frames,\n"
	"    and TX: busy kicks (EAGAIN/EBUSY/ENOBUFS, normal) and hard "
	"errors\n"
	"    (JSON: pkts, frame_bytes, duration_s, rate_mpps, rate_gbps,\n"
	"    busy_kicks, errors, xdp_matched_pkts, xdp_redirected_pkts).\n"
	"    --pingpong TX: pings, replies, lost, half round trip min / p50 /\n"
	"    p99 / p99.9 / avg in us (JSON: \"mode\":\"udp-pingpong\",\n"
	"    half_rtt_min_us .. half_rtt_avg_us).\n"
	"\n"
	"EXIT STATUS\n"
	"    0 ran, 1 setup failed (message names the step) or, ping-pong,\n"
	"    no reply at all, 2 usage error.\n"
	"\n"
	"EXAMPLES\n"
	"    mroce_blast --udp --pingpong --rx --seconds 10 &\n"
	"    mroce_blast --udp --pingpong --tx --dst 10.77.2.2 --size 8 "
	"--count 5000\n";

struct opts {
	bool tx, rx, udp, json, pingpong, spin;
	const char *ifname, *src, *dst, *dmac, *smac, *ready;
	int queue, sport, flows, dport, size, seconds;
	long count;
	double pps;
};

struct result {
	const char *mode;
	uint64_t packets, bytes, busy, errors;
	uint64_t xdp_matched, xdp_redirected;
	double seconds;
	/* ping-pong: half round trips in us, sorted */
	double *lat;
	uint64_t lost;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4],
		   &b[5]) != 6)
		return -1;
	for (int i = 0; i < 6; i++) {
		if (b[i] > 255)
			return -1;
		mac[i] = (uint8_t)b[i];
	}
	return 0;
}

static int if_mac(const char *ifname, uint8_t mac[6])
{
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM, 0), rc;

	if (fd < 0)
		return -1;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	rc = ioctl(fd, SIOCGIFHWADDR, &ifr);
	close(fd);
	if (rc)
		return -1;
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	return 0;
}

/* Ethernet + IPv4 (DF, TTL 64, ECT(0)) + UDP (checksum 0) + pattern. */
static void build_frame(uint8_t *f, size_t cap, const uint8_t smac[6],
			const uint8_t dmac[6], uint32_t saddr, uint32_t daddr,
			uint16_t sport, uint16_t dport, int size)
{
	struct mroce_frame_spec spec = {
		.vlan = -1,
		.l3 = { .family = AF_INET, .tos = 0x02, .ttl = 64 },
		.sport = sport,
		.dport = dport,
	};
	size_t hl;

	memcpy(spec.dmac, dmac, 6);
	memcpy(spec.smac, smac, 6);
	memcpy(spec.l3.src, &saddr, 4);
	memcpy(spec.l3.dst, &daddr, 4);
	hl = mroce_frame_hdr_len(&spec);
	for (int i = 0; i < size; i++)
		f[hl + i] = (uint8_t)i;
	mroce_frame_build(&spec, (size_t)size, f, cap);
}

struct xsk {
	void *area;
	struct xsk_umem *umem;
	struct xsk_socket *sock;
	struct xsk_ring_prod fq, tx;
	struct xsk_ring_cons cq, rx;
};

static int xsk_open(struct xsk *x, const struct opts *o, bool rx, bool sg)
{
	struct xsk_umem_config ucfg = {
		.fill_size = NUM_FRAMES,
		.comp_size = NUM_FRAMES,
		.frame_size = FRAME_SIZE,
		.frame_headroom = 0,
	};
	struct xsk_socket_config scfg = {
		.rx_size = rx ? NUM_FRAMES : 0,
		.tx_size = rx ? 0 : NUM_FRAMES,
		/* our own program (RX) or none at all (TX) */
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = XDP_COPY | (sg ? XDP_USE_SG : 0),
	};
	size_t sz = (size_t)NUM_FRAMES * FRAME_SIZE;
	int err;

	x->area = mmap(NULL, sz, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x->area == MAP_FAILED) {
		fprintf(stderr, "mroce_blast: mmap UMEM: %s\n",
			strerror(errno));
		return -1;
	}
	err = xsk_umem__create(&x->umem, x->area, sz, &x->fq, &x->cq, &ucfg);
	if (err) {
		fprintf(stderr, "mroce_blast: UMEM: %s\n", strerror(-err));
		return -1;
	}
	err = xsk_socket__create(&x->sock, o->ifname, (uint32_t)o->queue,
				 x->umem, rx ? &x->rx : NULL,
				 rx ? NULL : &x->tx, &scfg);
	if (err) {
		fprintf(stderr,
			"mroce_blast: AF_XDP socket on %s queue %d: %s\n",
			o->ifname, o->queue, strerror(-err));
		return -1;
	}
	return 0;
}

static void xsk_close(struct xsk *x)
{
	if (x->sock)
		xsk_socket__delete(x->sock);
	if (x->umem)
		xsk_umem__delete(x->umem);
	if (x->area && x->area != MAP_FAILED)
		munmap(x->area, (size_t)NUM_FRAMES * FRAME_SIZE);
}

static void signal_ready(const struct opts *o)
{
	FILE *f;

	if (!o->ready)
		return;
	f = fopen(o->ready, "w");
	if (f)
		fclose(f);
	else
		fprintf(stderr, "mroce_blast: cannot create %s: %s\n", o->ready,
			strerror(errno));
}

/* Sleep until packet number `sent` is due at `pps` packets per second. */
static void pace(double t0, uint64_t sent, double pps)
{
	double due, t;

	if (pps <= 0)
		return;
	due = t0 + (double)sent / pps;
	t = now_s();
	if (due > t + 0.0005)
		usleep((useconds_t)((due - t) * 1e6));
}

/*
 * A packet occupies a slot of `k` consecutive UMEM chunks (k > 1 only for
 * frames over one chunk: multi-buffer). The UMEM is contiguous, so a
 * frame is simply written across its slot's chunks and sent as k
 * descriptors, all but the last flagged XDP_PKT_CONTD. Completions come
 * back in order, one per descriptor: a slot is free again when the
 * completion of its last chunk arrives.
 */
/* The AF_XDP sender's frames: a slot of k chunks per frame, and the
 * slots free to send (their last chunk's completion came back). */
struct tx_slots {
	struct xsk x;
	uint64_t *freel, slot_bytes;
	uint32_t nfree, k, nslots;
	int flen;
};

/* Addresses, the socket and every slot's frame, built once. 0, 1 (set-up
 * failed) or 2 (bad options), after a message. */
static int tx_setup(const struct opts *o, struct tx_slots *t)
{
	uint8_t smac[6], dmac[6];
	uint32_t saddr, daddr;

	if (!o->src || !o->dst || !o->dmac) {
		fprintf(stderr,
			"mroce_blast: --tx needs --src, --dst, --dmac\n");
		return 2;
	}
	if (inet_pton(AF_INET, o->src, &saddr) != 1 ||
	    inet_pton(AF_INET, o->dst, &daddr) != 1 ||
	    parse_mac(o->dmac, dmac) ||
	    (o->smac ? parse_mac(o->smac, smac) : if_mac(o->ifname, smac))) {
		fprintf(stderr, "mroce_blast: bad address or MAC (or no %s)\n",
			o->ifname);
		return 2;
	}
	t->flen = HDR_LEN + o->size;
	t->k = (uint32_t)(t->flen + FRAME_SIZE - 1) / FRAME_SIZE;
	t->nslots = NUM_FRAMES / t->k;
	t->slot_bytes = (uint64_t)t->k * FRAME_SIZE;
	t->freel = calloc(t->nslots, sizeof(*t->freel));
	if (!t->freel || xsk_open(&t->x, o, false, t->k > 1))
		return 1;
	for (uint32_t i = 0; i < t->nslots; i++) {
		uint64_t a = i * t->slot_bytes;

		build_frame(xsk_umem__get_data(t->x.area, a), t->slot_bytes,
			    smac, dmac, saddr, daddr,
			    (uint16_t)(o->sport + i % o->flows),
			    (uint16_t)o->dport, o->size);
		t->freel[t->nfree++] = a;
	}
	return 0;
}

/* Completions: a slot is free again when its last chunk is back. */
static uint32_t tx_reap(struct tx_slots *t)
{
	uint32_t idx = 0, n = xsk_ring_cons__peek(&t->x.cq, NUM_FRAMES, &idx);

	for (uint32_t i = 0; i < n; i++) {
		uint64_t a = *xsk_ring_cons__comp_addr(&t->x.cq, idx + i);

		if (a % t->slot_bytes == t->slot_bytes - FRAME_SIZE)
			t->freel[t->nfree++] = a - (t->slot_bytes - FRAME_SIZE);
	}
	if (n)
		xsk_ring_cons__release(&t->x.cq, n);
	return n;
}

/* Queues want frames (k descriptors each, all but the last flagged
 * XDP_PKT_CONTD) if the TX ring has room for all of them. */
static void tx_post(struct tx_slots *t, uint32_t want, struct result *r)
{
	uint32_t idx = 0, k = t->k;

	if (!want ||
	    xsk_ring_prod__reserve(&t->x.tx, want * k, &idx) != want * k)
		return;
	for (uint32_t i = 0; i < want; i++) {
		uint64_t a = t->freel[--t->nfree];
		uint32_t left = (uint32_t)t->flen;

		for (uint32_t c = 0; c < k; c++) {
			struct xdp_desc *d =
				xsk_ring_prod__tx_desc(&t->x.tx, idx + i * k + c);

			d->addr = a + (uint64_t)c * FRAME_SIZE;
			d->len = left > FRAME_SIZE ? FRAME_SIZE : left;
			d->options = c + 1 < k ? XDP_PKT_CONTD : 0;
			left -= d->len;
		}
	}
	xsk_ring_prod__submit(&t->x.tx, want * k);
	r->packets += want;
	r->bytes += (uint64_t)want * (uint64_t)t->flen;
}

static void tx_kick(struct tx_slots *t, struct result *r)
{
	if (sendto(xsk_socket__fd(t->x.sock), NULL, 0, MSG_DONTWAIT, NULL,
		   0) < 0) {
		if (errno == EAGAIN || errno == EBUSY || errno == ENOBUFS ||
		    errno == EINTR)
			r->busy++;
		else
			r->errors++;
	}
}

static int xdp_tx(const struct opts *o, struct result *r)
{
	struct tx_slots t = {0};
	double t0, end;
	int rc = tx_setup(o, &t);

	if (rc)
		goto out;
	r->mode = "xdp-tx";
	t0 = now_s();
	end = t0 + o->seconds;
	while (!stop && (o->count <= 0 || r->packets < (uint64_t)o->count)) {
		uint32_t want = BATCH / t.k;

		tx_reap(&t);
		if ((r->packets & 1023) < BATCH && now_s() >= end)
			break;
		if (o->count > 0 && (uint64_t)o->count - r->packets < want)
			want = (uint32_t)(o->count - (long)r->packets);
		if (want > t.nfree)
			want = t.nfree;
		pace(t0, r->packets, o->pps);
		tx_post(&t, want, r);
		tx_kick(&t, r);
	}
	r->seconds = now_s() - t0;
	/* let the last frames leave before the socket goes */
	for (int i = 0; i < 100 && t.nfree < t.nslots; i++) {
		sendto(xsk_socket__fd(t.x.sock), NULL, 0, MSG_DONTWAIT, NULL, 0);
		if (!tx_reap(&t))
			usleep(1000);
	}
out:
	xsk_close(&t.x);
	free(t.freel);
	return rc;
}

/* The socket (multi-buffer if the kernel has it), its XSKMAP entry and
 * a full fill ring. 0 or 1 after a message. */
static int rx_socket(const struct opts *o, struct fabric_xsk_rx *skel,
		     struct xsk *x)
{
	uint32_t key = (uint32_t)o->queue, idx = 0;
	int fd;

	/* multi-buffer so that jumbo frames arrive; without it (kernels
	 * before 6.6) frames over one chunk are dropped by the kernel */
	if (xsk_open(x, o, true, true)) {
		xsk_close(x);
		memset(x, 0, sizeof(*x));
		if (xsk_open(x, o, true, false))
			return 1;
		fprintf(stderr,
			"mroce_blast: no multi-buffer AF_XDP: frames "
			"over %d bytes will not arrive\n",
			FRAME_SIZE - 256);
	}
	fd = xsk_socket__fd(x->sock);
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.fabric_xsks), &key, &fd,
				BPF_ANY)) {
		fprintf(stderr, "mroce_blast: XSKMAP update: %s\n",
			strerror(errno));
		return 1;
	}
	if (xsk_ring_prod__reserve(&x->fq, NUM_FRAMES, &idx) != NUM_FRAMES)
		return 1;
	for (uint32_t i = 0; i < NUM_FRAMES; i++)
		*xsk_ring_prod__fill_addr(&x->fq, idx + i) =
			(uint64_t)i * FRAME_SIZE;
	xsk_ring_prod__submit(&x->fq, NUM_FRAMES);
	return 0;
}

/* Counts what arrives until --seconds, --count or a signal, handing
 * every frame straight back to the fill ring. */
static void rx_loop(const struct opts *o, struct xsk *x, struct result *r)
{
	double t0 = now_s(), end = t0 + o->seconds, first = 0, last = 0;

	while (!stop && now_s() < end &&
	       (o->count <= 0 || r->packets < (uint64_t)o->count)) {
		uint32_t n, idx = 0, fidx = 0;

		n = xsk_ring_cons__peek(&x->rx, BATCH * 4, &idx);
		if (!n) {
			/* A timed nap, not poll(): a socket with a sleeper on
			 * it makes every delivery wake us, and that wake-up
			 * runs on the sender's core (the fabric's forwarding
			 * runs there) and slows the very thing measured. */
			if (!o->spin)
				usleep(RX_NAP_US);
			continue;
		}
		/* the fill ring has room for every frame we hold */
		while (xsk_ring_prod__reserve(&x->fq, n, &fidx) != n)
			;
		for (uint32_t i = 0; i < n; i++) {
			const struct xdp_desc *d =
				xsk_ring_cons__rx_desc(&x->rx, idx + i);

			r->bytes += d->len;
			/* a packet ends at its descriptor without CONTD */
			if (!(d->options & XDP_PKT_CONTD))
				r->packets++;
			*xsk_ring_prod__fill_addr(&x->fq, fidx + i) =
				xsk_umem__extract_addr(d->addr);
		}
		xsk_ring_prod__submit(&x->fq, n);
		xsk_ring_cons__release(&x->rx, n);
		if (!first)
			first = now_s();
		last = now_s();
	}
	/* the rate while traffic arrived, not over the whole window */
	r->seconds = r->packets ? last - first : now_s() - t0;
}

/* The XDP program's own counters, summed over CPUs. */
static void rx_xdp_counters(struct fabric_xsk_rx *skel, struct result *r)
{
	int ncpu = libbpf_num_possible_cpus();

	if (ncpu > 0) {
		struct fabric_xsk_counters c[ncpu];
		uint32_t zero = 0;

		if (!bpf_map_lookup_elem(bpf_map__fd(skel->maps.fabric_xsk_cnt),
					 &zero, c))
			for (int i = 0; i < ncpu; i++) {
				r->xdp_matched += c[i].matched;
				r->xdp_redirected += c[i].redirected;
			}
	}
}

static int xdp_rx(const struct opts *o, struct result *r)
{
	struct fabric_xsk_rx *skel = NULL;
	struct xsk x = {0};
	int ifindex, fd, rc = 1;
	bool attached = false;

	ifindex = (int)if_nametoindex(o->ifname);
	if (!ifindex) {
		fprintf(stderr, "mroce_blast: no interface %s\n", o->ifname);
		return 2;
	}
	skel = fabric_xsk_rx__open();
	if (!skel) {
		fprintf(stderr, "mroce_blast: open RX program failed\n");
		return 1;
	}
	skel->rodata->cfg_udp_port = (uint16_t)o->dport;
	if (fabric_xsk_rx__load(skel)) {
		fprintf(stderr, "mroce_blast: load RX program failed\n");
		goto out;
	}
	fd = bpf_program__fd(skel->progs.fabric_xsk_rx);
	if (bpf_xdp_attach(ifindex, fd, XDP_FLAGS_DRV_MODE, NULL) &&
	    bpf_xdp_attach(ifindex, fd, XDP_FLAGS_SKB_MODE, NULL)) {
		fprintf(stderr,
			"mroce_blast: attach XDP to %s failed (another "
			"program there?)\n",
			o->ifname);
		goto out;
	}
	attached = true;
	if (rx_socket(o, skel, &x))
		goto out;
	signal_ready(o);
	r->mode = "xdp-rx";
	rx_loop(o, &x, r);
	rx_xdp_counters(skel, r);
	rc = 0;
out:
	xsk_close(&x);
	if (attached)
		bpf_xdp_detach(ifindex, 0, NULL);
	fabric_xsk_rx__destroy(skel);
	return rc;
}

static int udp_tx(const struct opts *o, struct result *r)
{
	static char buf[65536];
	struct sockaddr_in dst = {.sin_family = AF_INET,
				  .sin_port = htons((uint16_t)o->dport)};
	struct mmsghdr msgs[BATCH];
	struct iovec iov = {.iov_base = buf, .iov_len = (size_t)o->size};
	int fds[MAX_FLOWS], tos = 2, flow = 0, rc = 1;
	double t0, end;

	if (!o->dst || inet_pton(AF_INET, o->dst, &dst.sin_addr) != 1) {
		fprintf(stderr, "mroce_blast: --udp --tx needs --dst IP\n");
		return 2;
	}
	for (int f = 0; f < o->flows; f++) {
		struct sockaddr_in src = {
			.sin_family = AF_INET,
			.sin_port = htons((uint16_t)(o->sport + f))};

		fds[f] = socket(AF_INET, SOCK_DGRAM, 0);
		if (fds[f] < 0 ||
		    setsockopt(fds[f], IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) ||
		    bind(fds[f], (void *)&src, sizeof(src)) ||
		    connect(fds[f], (void *)&dst, sizeof(dst))) {
			fprintf(stderr, "mroce_blast: UDP socket: %s\n",
				strerror(errno));
			for (int g = 0; g <= f; g++)
				if (fds[g] >= 0)
					close(fds[g]);
			return 1;
		}
	}
	memset(msgs, 0, sizeof(msgs));
	for (int i = 0; i < BATCH; i++) {
		msgs[i].msg_hdr.msg_iov = &iov;
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	r->mode = "udp-tx";
	t0 = now_s();
	end = t0 + o->seconds;
	while (!stop && (o->count <= 0 || r->packets < (uint64_t)o->count)) {
		unsigned int want = BATCH;
		int n;

		if ((r->packets & 1023) < BATCH && now_s() >= end)
			break;
		if (o->count > 0 && (uint64_t)o->count - r->packets < want)
			want = (unsigned int)(o->count - (long)r->packets);
		pace(t0, r->packets, o->pps);
		n = sendmmsg(fds[flow], msgs, want, 0);
		flow = (flow + 1) % o->flows;
		if (n < 0) {
			if (errno == EAGAIN || errno == ENOBUFS ||
			    errno == EINTR || errno == ECONNREFUSED)
				r->busy++;
			else
				r->errors++;
			continue;
		}
		r->packets += (uint64_t)n;
		r->bytes += (uint64_t)n * (uint64_t)(HDR_LEN + o->size);
	}
	r->seconds = now_s() - t0;
	rc = 0;
	for (int f = 0; f < o->flows; f++)
		close(fds[f]);
	return rc;
}

static int udp_rx(const struct opts *o, struct result *r)
{
	static char bufs[BATCH][9216];
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)o->dport)};
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	int fd, big = 32 << 20;
	double t0, end, first = 0, last = 0;

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (void *)&a, sizeof(a))) {
		fprintf(stderr, "mroce_blast: UDP bind %d: %s\n", o->dport,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	signal_ready(o);
	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = sizeof(bufs[i]);
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	r->mode = "udp-rx";
	t0 = now_s();
	end = t0 + o->seconds;
	while (!stop && now_s() < end &&
	       (o->count <= 0 || r->packets < (uint64_t)o->count)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int n;

		if (poll(&p, 1, 10) <= 0)
			continue;
		n = recvmmsg(fd, msgs, BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			continue;
		if (!r->packets)
			first = now_s();
		last = now_s();
		r->packets += (uint64_t)n;
		for (int i = 0; i < n; i++)
			r->bytes += HDR_LEN + msgs[i].msg_len;
	}
	r->seconds = r->packets ? last - first : now_s() - t0;
	close(fd);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Kernel UDP ping-pong: the latency baseline                           */
/* ------------------------------------------------------------------ */
static int udp_socket(const struct opts *o, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0 || bind(fd, (void *)&a, sizeof(a))) {
		fprintf(stderr, "mroce_blast: UDP bind %u: %s\n", port,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	(void)o;
	return fd;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Echo every datagram back to its sender, spinning. */
static int pp_rx(const struct opts *o, struct result *r)
{
	static char buf[65536];
	int fd = udp_socket(o, (uint16_t)o->dport);
	double t0, end;

	if (fd < 0)
		return 1;
	signal_ready(o);
	r->mode = "udp-pingpong-rx";
	t0 = now_s();
	end = t0 + o->seconds;
	while (!stop && (o->count <= 0 || r->packets < (uint64_t)o->count)) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT,
				     (void *)&from, &fl);

		if (n < 0) {
			if ((r->busy++ & 1023) == 0 && now_s() >= end)
				break;
			continue;
		}
		if (sendto(fd, buf, (size_t)n, 0, (void *)&from, fl) != n) {
			r->errors++;
			continue;
		}
		r->packets++;
		r->bytes += HDR_LEN + (uint64_t)n;
	}
	r->seconds = now_s() - t0;
	r->busy = 0;
	close(fd);
	return 0;
}

/* Send one ping, spin until its echo (matched by sequence number) is
 * back; half the round trip is the sample. */
static int pp_tx(const struct opts *o, struct result *r)
{
	static char buf[65536], in[65536];
	struct sockaddr_in dst = {.sin_family = AF_INET,
				  .sin_port = htons((uint16_t)o->dport)};
	long count = o->count > 0 ? o->count : 1000;
	size_t size = o->size < 8 ? 8 : (size_t)o->size;
	double t0;
	int fd;

	if (!o->dst || inet_pton(AF_INET, o->dst, &dst.sin_addr) != 1) {
		fprintf(stderr, "mroce_blast: --pingpong --tx needs --dst IP\n");
		return 2;
	}
	r->lat = calloc((size_t)count, sizeof(*r->lat));
	if (!r->lat) {
		fprintf(stderr, "mroce_blast: out of memory\n");
		return 1;
	}
	fd = udp_socket(o, (uint16_t)o->sport);
	if (fd < 0)
		return 1;
	if (connect(fd, (void *)&dst, sizeof(dst))) {
		fprintf(stderr, "mroce_blast: UDP connect: %s\n",
			strerror(errno));
		close(fd);
		return 1;
	}
	memset(buf, 0xa5, size);
	r->mode = "udp-pingpong";
	t0 = now_s();
	for (uint64_t seq = 0; seq < (uint64_t)count && !stop; seq++) {
		double ts = now_s(), t;
		bool got = false;

		memcpy(buf, &seq, sizeof(seq));
		if (send(fd, buf, size, 0) != (ssize_t)size) {
			r->errors++;
			continue;
		}
		r->bytes += HDR_LEN + size;
		while (!stop) {
			ssize_t n = recv(fd, in, sizeof(in), MSG_DONTWAIT);
			uint64_t got_seq;

			t = now_s();
			if (n >= (ssize_t)sizeof(got_seq)) {
				memcpy(&got_seq, in, sizeof(got_seq));
				if (got_seq == seq) {
					got = true;
					break;
				}
				continue; /* a late echo of a lost ping */
			}
			if (t - ts > 0.1)
				break;
		}
		if (!got) {
			r->lost++;
			continue;
		}
		r->lat[r->packets++] = (t - ts) * 1e6 / 2;
	}
	r->seconds = now_s() - t0;
	close(fd);
	qsort(r->lat, r->packets, sizeof(*r->lat), cmp_double);
	return r->packets ? 0 : 1;
}

static double pct(const struct result *r, double p)
{
	uint64_t i;

	if (!r->packets)
		return 0;
	i = (uint64_t)(p * (double)(r->packets - 1) + 0.5);
	return r->lat[i];
}

/* A number with a fixed count of decimals (json-c's default of 17
 * significant digits shows binary noise). */
static void add_num(struct json_object *o, const char *key, double v,
		    int decimals)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%.*f", decimals, isfinite(v) ? v : 0.0);
	json_object_object_add(o, key, json_object_new_double_s(v, buf));
}

static void pp_report(const struct opts *o, const struct result *r,
		      struct json_object *doc)
{
	double sum = 0, avg;

	for (uint64_t i = 0; i < r->packets; i++)
		sum += r->lat[i];
	avg = r->packets ? sum / (double)r->packets : 0;
	if (doc) {
		mroce_json_add_i64(doc, "payload_bytes",
				   o->size < 8 ? 8 : o->size);
		mroce_json_add_u64(doc, "pings",
				   r->packets + r->lost + r->errors);
		mroce_json_add_u64(doc, "replies", r->packets);
		mroce_json_add_u64(doc, "lost", r->lost);
		add_num(doc, "half_rtt_min_us", pct(r, 0), 2);
		add_num(doc, "half_rtt_p50_us", pct(r, 0.5), 2);
		add_num(doc, "half_rtt_p99_us", pct(r, 0.99), 2);
		add_num(doc, "half_rtt_p999_us", pct(r, 0.999), 2);
		add_num(doc, "half_rtt_avg_us", avg, 2);
		return;
	}
	printf("%s: %llu replies, %llu lost, %d-byte payload; half round trip "
	       "us: min %.2f p50 %.2f p99 %.2f p99.9 %.2f avg %.2f\n",
	       r->mode, (unsigned long long)r->packets,
	       (unsigned long long)r->lost, o->size < 8 ? 8 : o->size,
	       pct(r, 0), pct(r, 0.5), pct(r, 0.99), pct(r, 0.999), avg);
}

static void report(const struct opts *o, const struct result *r,
		   struct json_object *doc)
{
	double s = r->seconds > 0 ? r->seconds : 1e-9;
	double pps = (double)r->packets / s,
	       gbps = (double)r->bytes * 8 / s / 1e9;
	bool rx = !strcmp(r->mode, "xdp-rx") || !strcmp(r->mode, "udp-rx") ||
		  !strcmp(r->mode, "udp-pingpong-rx");
	/* a receiver reports the average payload it saw */
	int size = !rx		? o->size
		   : r->packets ? (int)(r->bytes / r->packets) - HDR_LEN
				: 0;

	if (doc) {
		mroce_json_add_str(doc, "ifname", o->ifname);
		mroce_json_add_i64(doc, "payload_bytes", size);
		mroce_json_add_i64(doc, "flows", o->flows);
		mroce_json_add_u64(doc, "pkts", r->packets);
		mroce_json_add_u64(doc, "frame_bytes", r->bytes);
		add_num(doc, "duration_s", r->seconds, 3);
		add_num(doc, "rate_mpps", pps / 1e6, 6);
		add_num(doc, "rate_gbps", gbps, 3);
		mroce_json_add_u64(doc, "busy_kicks", r->busy);
		mroce_json_add_u64(doc, "errors", r->errors);
		mroce_json_add_u64(doc, "xdp_matched_pkts", r->xdp_matched);
		mroce_json_add_u64(doc, "xdp_redirected_pkts",
				   r->xdp_redirected);
		return;
	}
	printf("%s: %llu packets, %llu bytes in %.3f s: %.3f Mpps, %.3f Gbit/s"
	       " (%s%d-byte payload)\n",
	       r->mode, (unsigned long long)r->packets,
	       (unsigned long long)r->bytes, r->seconds, pps / 1e6, gbps,
	       rx ? "average " : "", size);
	if (!rx)
		printf("  %d flows, busy kicks %llu, errors %llu\n", o->flows,
		       (unsigned long long)r->busy,
		       (unsigned long long)r->errors);
	if (!strcmp(r->mode, "xdp-rx"))
		printf("  XDP program: %llu matched, %llu redirected\n",
		       (unsigned long long)r->xdp_matched,
		       (unsigned long long)r->xdp_redirected);
}

/* A number in [min, max] for option opt, or exit 2 naming it. */
static uint64_t num(const char *s, const char *opt, uint64_t min,
		    uint64_t max)
{
	uint64_t v;

	if (mroce_parse_u64(s, min, max, &v)) {
		fprintf(stderr,
			"mroce_blast: %s: '%s' is not a number in "
			"[%llu, %llu] (see --help)\n",
			opt, s, (unsigned long long)min,
			(unsigned long long)max);
		exit(2);
	}
	return v;
}

static const struct option lo[] = {
	{"tx", 0, 0, 'T'},	{"rx", 0, 0, 'R'},
	{"udp", 0, 0, 'U'},	{"json", 0, 0, 'j'},
	{"ifname", 1, 0, 'i'},	{"queue", 1, 0, 'q'},
	{"src", 1, 0, 's'},	{"dst", 1, 0, 'd'},
	{"dmac", 1, 0, 'm'},	{"smac", 1, 0, 'M'},
	{"sport", 1, 0, 'p'},	{"dport", 1, 0, 'P'},
	{"flows", 1, 0, 'f'},	{"size", 1, 0, 'b'},
	{"seconds", 1, 0, 't'}, {"count", 1, 0, 'n'},
	{"pps", 1, 0, 'r'},	{"ready", 1, 0, 'y'},
	{"pingpong", 0, 0, 'g'},	{"spin", 0, 0, 'S'},
	{"help", 0, 0, 'h'},	{"version", 0, 0, 'V'},
	{0, 0, 0, 0}};

/* Options with a number. False: not one of them. */
static bool parse_num_opt(int c, const char *arg, struct opts *o)
{
	double pps;

	switch (c) {
	case 'q':
		o->queue = (int)num(arg, "--queue", 0, 65535);
		return true;
	case 'p':
		o->sport = (int)num(arg, "--sport", 1, 65535);
		return true;
	case 'P':
		o->dport = (int)num(arg, "--dport", 1, 65535);
		return true;
	case 'f':
		o->flows = (int)num(arg, "--flows", 1, MAX_FLOWS);
		return true;
	case 'b':
		o->size = (int)num(arg, "--size", 0, MAX_PAYLOAD);
		return true;
	case 't':
		o->seconds = (int)num(arg, "--seconds", 1, 86400 * 365);
		return true;
	case 'n':
		o->count = (long)num(arg, "--count", 0, 1ull << 62);
		return true;
	case 'r':
		if (mroce_parse_double(arg, 0, 1e12, &pps)) {
			fprintf(stderr, "mroce_blast: --pps: '%s' is not a "
					"rate in [0, 1e12] (see --help)\n",
				arg);
			exit(2);
		}
		o->pps = pps;
		return true;
	}
	return false;
}

/* Every other option; exits for --help, --version and unknown ones. */
static void parse_other(int c, const char *arg, struct opts *o)
{
	switch (c) {
	case 'T': o->tx = true; break;
	case 'R': o->rx = true; break;
	case 'U': o->udp = true; break;
	case 'S': o->spin = true; break;
	case 'j': o->json = true; break;
	case 'g': o->pingpong = true; break;
	case 'i': o->ifname = arg; break;
	case 's': o->src = arg; break;
	case 'd': o->dst = arg; break;
	case 'm': o->dmac = arg; break;
	case 'M': o->smac = arg; break;
	case 'y': o->ready = arg; break;
	case 'h':
		fputs(usage_text, stdout);
		exit(0);
	case 'V':
		mroce_print_version(stdout, "mroce_blast");
		exit(0);
	default:
		fprintf(stderr, "see mroce_blast --help\n");
		exit(2);
	}
}

/* 0, or 2 after a message when the options do not make a run. */
static int check_opts(const struct opts *o)
{
	const char *why = NULL;

	if (o->tx == o->rx)
		why = "give exactly one of --tx, --rx";
	else if (o->sport + o->flows > 65536)
		why = "--sport + --flows goes past port 65535";
	else if (o->pingpong && !o->udp)
		why = "--pingpong needs --udp";
	else if (!o->udp && !o->ifname)
		why = "AF_XDP needs --ifname";
	if (!why)
		return 0;
	fprintf(stderr, "mroce_blast: %s (see --help)\n", why);
	return 2;
}

/* Runs the chosen mode; reports what it measured (into doc with --json)
 * and returns the exit status. */
static int run(const struct opts *o, struct result *r,
	       struct json_object *doc)
{
	int rc;

	if (o->pingpong) {
		rc = o->tx ? pp_tx(o, r) : pp_rx(o, r);
		if (!rc || r->lat) {
			mroce_json_add_str(doc, "mode", r->mode);
			if (o->tx)
				pp_report(o, r, doc);
			else
				report(o, r, doc);
		}
		free(r->lat);
		return rc;
	}
	if (o->udp)
		rc = o->tx ? udp_tx(o, r) : udp_rx(o, r);
	else
		rc = o->tx ? xdp_tx(o, r) : xdp_rx(o, r);
	if (!rc) {
		mroce_json_add_str(doc, "mode", r->mode);
		report(o, r, doc);
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o = {.sport = 49152,
			 .flows = 8,
			 .dport = 4791,
			 .size = 1024,
			 .seconds = 5};
	struct json_object *doc = NULL;
	struct result r = {0};
	int c, rc;

	while ((c = getopt_long(argc, argv, "hV", lo, NULL)) != -1)
		if (!parse_num_opt(c, optarg, &o))
			parse_other(c, optarg, &o);
	if (optind < argc) {
		fprintf(stderr, "mroce_blast: unexpected argument '%s' "
				"(see --help)\n", argv[optind]);
		return 2;
	}
	rc = check_opts(&o);
	if (rc)
		return rc;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (o.json)
		doc = mroce_json_doc("mroce_blast");
	rc = run(&o, &r, doc);
	if (doc) {
		if (rc)
			mroce_json_set_error(doc, rc,
					     r.mode ? "no reply at all"
						    : "set-up failed (the "
						      "message is on stderr)");
		mroce_json_emit(stdout, doc, 0);
	}
	return rc;
}
