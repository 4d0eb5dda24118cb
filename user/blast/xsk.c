// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce_blast's AF_XDP modes (copy mode, the mode veth offers).
 *
 * TX: every UMEM frame is built once (Ethernet/IPv4/UDP, IPv4 checksum,
 * UDP checksum 0 which IPv4 allows), flows differ in the UDP source port
 * so ECMP spreads them; the loop only moves frame addresses between the
 * completion and TX rings and kicks the kernel with sendto() once per
 * batch (copy mode transmits at most 32 frames per kick; EAGAIN, EBUSY
 * and ENOBUFS just mean "kick again").
 * RX: bpf/fabric_xsk_rx.bpf.c redirects UDP frames for --dport to the
 * socket; frames are counted and handed back to the fill ring.
 */
#include "blast.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include "mroce/codec.h"
#include "../../bpf/fabric.h"
#include "fabric_xsk_rx.skel.h"

#define NUM_FRAMES 4096
#define FRAME_SIZE 4096 /* UMEM chunk: one page */
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

/*
 * A packet occupies a slot of `k` consecutive UMEM chunks (k > 1 only for
 * frames over one chunk: multi-buffer). The UMEM is contiguous, so a
 * frame is simply written across its slot's chunks and sent as k
 * descriptors, all but the last flagged XDP_PKT_CONTD. Completions come
 * back in order, one per descriptor: a slot is free again when the
 * completion of its last chunk arrives. struct tx_slots holds the slots
 * and those free to send.
 */
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
			struct xdp_desc *d = xsk_ring_prod__tx_desc(
				&t->x.tx, idx + i * k + c);

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

int xdp_tx(const struct opts *o, struct result *r)
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
		sendto(xsk_socket__fd(t.x.sock), NULL, 0, MSG_DONTWAIT, NULL,
		       0);
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

/* What the kernel dropped on the way from the XDP program's redirect to
 * our RX ring (ring full, no fill buffer, bad descriptors). */
static void rx_kernel_drops(struct xsk *x, struct result *r)
{
	struct xdp_statistics ks;
	socklen_t len = sizeof(ks);

	if (!getsockopt(xsk_socket__fd(x->sock), SOL_XDP, XDP_STATISTICS, &ks,
			&len))
		r->kernel_drops = ks.rx_dropped + ks.rx_ring_full +
				  ks.rx_invalid_descs;
}

int xdp_rx(const struct opts *o, struct result *r)
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
	rx_kernel_drops(&x, r);
	rc = 0;
out:
	xsk_close(&x);
	if (attached)
		bpf_xdp_detach(ifindex, 0, NULL);
	fabric_xsk_rx__destroy(skel);
	return rc;
}
