// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * AF_XDP backend (include/mroce/io.h, include/mroce/io_afxdp.h).
 *
 * One AF_XDP socket on (ifname, queue), copy mode, registered in the XSKMAP
 * of the mroce XDP program that `mrocectl attach` loaded (we never load a
 * program: XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD).
 *
 * UMEM layout: nframes frames of frame_size bytes. The first half feeds
 * the fill ring (receive), the second half is a free stack of transmit
 * frames. Ring sizes equal the frame count of each half, so returning a
 * receive frame to the fill ring and a completion to the stack can never
 * find the ring full (no error path on release).
 *
 * Zero-copy transmit slots (cfg.tx_slots, mroce_io_tx_bufs()) follow the
 * frames, outside both halves, so that receive keeps all of its frames: a
 * slot is the largest frame rounded up to whole frames ("chunks": 3 of
 * 4 KiB with multi-buffer, else 1). The owner writes a payload of up to
 * the largest frame - AFXDP_TX_HEADROOM bytes at slot + AFXDP_TX_HEADROOM;
 * transmit writes the headers just in front of it and posts the frame as
 * one descriptor per chunk it touches (aligned UMEM: a descriptor never
 * crosses a chunk; the first starts mid-chunk). The completion ring is
 * sized for every frame and slot chunk at once (never full). Completions
 * are per descriptor and are not assumed to come in any order: a slot
 * counts the descriptors the kernel still holds and is free again when
 * none is left.
 *
 * Multi-buffer (cfg.multi_buffer, bind flag XDP_USE_SG): a frame larger
 * than one UMEM frame arrives as a chain of descriptors, all but the last
 * with XDP_PKT_CONTD. The receive path copies a chain into one of a fixed
 * pool of reassembly buffers (the engine wants contiguous payloads) and
 * gives the chain's frames back to the fill ring at once; single-frame
 * packets are handed out in place, without a copy. The transmit path
 * splits a frame over as many descriptors as it needs.
 *
 * Destination MACs come from the neighbour cache (afxdp_neigh.c): AF_XDP
 * bypasses the kernel's neighbour resolution.
 *
 * Everything is allocated in open(): nothing per packet.
 */
#include "mroce/io_afxdp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <xdp/xsk.h>

#include "afxdp_neigh.h"
#include "io_int.h"
#include "mroce/codec.h"

/* Debian 12's linux/if_xdp.h predates multi-buffer AF_XDP (Linux 6.6). */
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif

/* Largest frame the backend builds or reassembles: a 9000-byte MTU plus
 * Ethernet and a VLAN tag, rounded up. */
#define AFXDP_MAX_FRAME 9216
/* Room in front of a slot's payload for the headers: at least Ethernet +
 * 802.1Q + IPv6 + UDP (66 bytes), rounded to a cache line. */
#define AFXDP_TX_HEADROOM 128
/* Most slots a backend may have (UMEM and ring budget). */
#define AFXDP_MAX_SLOTS 4096
/* Reassembly buffers for chained receive frames (held until release). */
#define AFXDP_RBUFS 256
/* Descriptors looked at per rx() call. */
#define AFXDP_RX_PEEK 256
/* Cookie of a reassembled packet: bit 63 set, low bits the buffer index.
 * UMEM addresses never reach bit 63. */
#define AFXDP_COOKIE_RBUF (1ull << 63)

enum slot_state {
	SLOT_FREE = 0,
	SLOT_OWNER,  /* handed out by tx_bufs(), not sent yet */
	SLOT_KERNEL, /* posted: slot_refs[] descriptors not completed */
};

struct afxdp_io {
	struct mroce_io io; /* first: the dispatcher's view */
	char ifname[IF_NAMESIZE];
	int ifindex;
	uint8_t mac[6];

	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fq, tx;
	struct xsk_ring_cons cq, rx;
	uint8_t *area;
	size_t area_len;
	uint32_t frame_size, nframes, ring_size, comp_size;
	bool maps_open, xsk_registered;

	/* transmit frames not in the kernel's hands */
	uint64_t *tx_free;
	uint32_t tx_nfree;

	/* reassembly pool */
	uint8_t *rbuf;
	uint32_t rbuf_free[AFXDP_RBUFS];
	uint32_t rbuf_nfree;

	/* zero-copy transmit slots: UMEM offset slot_off onwards */
	uint64_t slot_off;
	uint32_t nslots, slot_size, slot_cap;
	uint32_t *slot_free;
	uint32_t slot_nfree;
	uint8_t *slot_state; /* enum slot_state */
	uint8_t *slot_refs;

	uint8_t *scratch; /* a multi-frame packet is built here, then split */
	uint16_t ip_id;

	struct mroce_xdp_maps maps;
	struct afxdp_neigh_cache neigh;
	struct mroce_io_afxdp_stats xstats;
};

static inline struct afxdp_io *to_afxdp(struct mroce_io *io)
{
	return (struct afxdp_io *)io;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* Rings                                                               */
/* ------------------------------------------------------------------ */

/* Give receive frames back to the kernel. The fill ring holds every
 * receive frame, so there is always room. */
static void fill_put(struct afxdp_io *a, const uint64_t *addrs, uint32_t n)
{
	uint32_t idx;

	if (!n || xsk_ring_prod__reserve(&a->fq, n, &idx) != n)
		return;
	for (uint32_t i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&a->fq, idx + i) =
			addrs[i] - addrs[i] % a->frame_size;
	xsk_ring_prod__submit(&a->fq, n);
}

static void slot_release(struct afxdp_io *a, uint32_t s)
{
	a->slot_state[s] = SLOT_FREE;
	a->slot_free[a->slot_nfree++] = s;
}

/* Completed descriptors: a copy frame back onto its stack, one more done
 * of a slot's (free when it was the last). */
static void tx_reclaim(struct afxdp_io *a)
{
	uint32_t idx, n = xsk_ring_cons__peek(&a->cq, a->comp_size, &idx);

	for (uint32_t i = 0; i < n; i++) {
		uint64_t addr = *xsk_ring_cons__comp_addr(&a->cq, idx + i);
		uint64_t s;

		if (addr < a->slot_off) {
			a->tx_free[a->tx_nfree++] = addr;
			continue;
		}
		s = (addr - a->slot_off) / a->slot_size;
		if (s < a->nslots && a->slot_state[s] == SLOT_KERNEL &&
		    !--a->slot_refs[s])
			slot_release(a, (uint32_t)s);
	}
	if (n)
		xsk_ring_cons__release(&a->cq, n);
}

/* The slot whose payload starts at data and that the owner holds, or -1
 * (any other pointer is an ordinary payload, copied). */
static int slot_of(const struct afxdp_io *a, const uint8_t *data)
{
	const uint8_t *base = a->area + a->slot_off;
	size_t off;

	if (!a->nslots || data < base ||
	    data >= base + (size_t)a->nslots * a->slot_size)
		return -1;
	off = (size_t)(data - base);
	if (off % a->slot_size != AFXDP_TX_HEADROOM ||
	    a->slot_state[off / a->slot_size] != SLOT_OWNER)
		return -1;
	return (int)(off / a->slot_size);
}

static bool tx_ring_empty(struct afxdp_io *a)
{
	return xsk_prod_nb_free(&a->tx, a->ring_size) >= a->ring_size;
}

/* Copy mode transmits from the sendto() call, at most 32 frames per call
 * (EAGAIN: more left). Kick until the ring is empty, bounded so that a
 * stalled device cannot spin us. EBUSY/ENOBUFS are back-pressure: the
 * frames stay in the ring for the next call. */
static void tx_kick(struct afxdp_io *a, uint32_t ndesc)
{
	uint32_t max = ndesc / 32 + 2;

	for (uint32_t k = 0; k < max && !tx_ring_empty(a); k++) {
		a->io.stats.tx_kicks++;
		if (sendto(xsk_socket__fd(a->xsk), NULL, 0, MSG_DONTWAIT, NULL,
			   0) >= 0)
			continue;
		if (errno == EAGAIN || errno == EINTR)
			continue;
		if (errno == EBUSY || errno == ENOBUFS) {
			tx_reclaim(a);
			break;
		}
		a->io.stats.tx_errors++;
		break;
	}
}

/* ------------------------------------------------------------------ */
/* Receive                                                             */
/* ------------------------------------------------------------------ */

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Parse one whole frame into out. true = hand it to the owner. */
static bool rx_accept(struct afxdp_io *a, const uint8_t *frame, uint32_t len,
		      struct mroce_io_rx *out)
{
	struct mroce_io *io = &a->io;
	struct mroce_frame f;

	if (mroce_frame_parse(frame, len, &f)) {
		io->stats.rx_bad_frame++;
		return false;
	}
	if (f.dport == io->cfg.rocev2_port) {
		/* the XDP program does not check data ICRCs (too long for
		 * it); a RoCEv2 frame's ICRC covers the IP/UDP headers only
		 * we can see, so it is verified here */
		if (f.l4_len < 16) {
			io->stats.rx_bad_frame++;
			return false;
		}
		if (mroce_rv2_icrc(&f) !=
		    get_le32(f.l4 + f.l4_len - MROCE_ICRC_LEN)) {
			io->stats.rx_bad_icrc++;
			return false;
		}
	} else if (f.dport != io->cfg.mroce_port) {
		io->stats.rx_not_ours++;
		return false;
	}
	out->data = f.l4;
	out->len = (uint32_t)f.l4_len;
	out->family = (uint8_t)f.l3.family;
	memcpy(out->src, f.l3.src, sizeof(out->src));
	out->sport = f.sport;
	out->dport = f.dport;
	out->ce = (f.l3.tos & 3) == 3;
	io->stats.rx_pkts++;
	io->stats.rx_bytes += f.l4_len;
	afxdp_neigh_learn(&a->neigh, out->family, out->src, f.smac);
	return true;
}

static int afxdp_rx(struct mroce_io *io, struct mroce_io_rx *pkts, int n)
{
	struct afxdp_io *a = to_afxdp(io);
	uint64_t give_back[AFXDP_RX_PEEK];
	uint32_t idx, avail, i = 0, nback = 0;
	int got = 0;

	/* frames left in the TX ring by a short kick go out now, so an idle
	 * sender still makes progress while it polls */
	if (!tx_ring_empty(a))
		tx_kick(a, 0);
	if (n <= 0)
		return 0;
	avail = xsk_ring_cons__peek(&a->rx, AFXDP_RX_PEEK, &idx);
	while (i < avail && got < n) {
		const struct xdp_desc *d =
			xsk_ring_cons__rx_desc(&a->rx, idx + i);
		struct mroce_io_rx *out = &pkts[got];
		uint32_t end = i, total = 0, b;
		uint8_t *buf;

		if (!(d->options & XDP_PKT_CONTD)) {
			const uint8_t *frame =
				xsk_umem__get_data(a->area, d->addr);

			if (rx_accept(a, frame, d->len, out)) {
				out->cookie = d->addr;
				got++;
			} else {
				give_back[nback++] = d->addr;
			}
			i++;
			continue;
		}
		/* a chain: its end must be in the peeked range (the kernel
		 * publishes a packet's descriptors together) */
		while (end < avail &&
		       (xsk_ring_cons__rx_desc(&a->rx, idx + end)->options &
			XDP_PKT_CONTD))
			end++;
		if (end == avail)
			break;
		if (!a->rbuf_nfree)
			break; /* the owner holds every buffer: later */
		b = a->rbuf_free[--a->rbuf_nfree];
		buf = a->rbuf + (size_t)b * AFXDP_MAX_FRAME;
		for (uint32_t j = i; j <= end; j++) {
			const struct xdp_desc *f =
				xsk_ring_cons__rx_desc(&a->rx, idx + j);

			if (total + f->len <= AFXDP_MAX_FRAME)
				memcpy(buf + total,
				       xsk_umem__get_data(a->area, f->addr),
				       f->len);
			total += f->len;
			give_back[nback++] = f->addr;
		}
		a->xstats.rx_chains++;
		if (total <= AFXDP_MAX_FRAME && rx_accept(a, buf, total, out)) {
			out->cookie = AFXDP_COOKIE_RBUF | b;
			got++;
		} else {
			if (total > AFXDP_MAX_FRAME)
				io->stats.rx_bad_frame++;
			a->rbuf_free[a->rbuf_nfree++] = b;
		}
		i = end + 1;
	}
	if (i < avail)
		xsk_ring_cons__cancel(&a->rx, avail - i);
	if (i)
		xsk_ring_cons__release(&a->rx, i);
	fill_put(a, give_back, nback);
	return got;
}

static void afxdp_rx_release(struct mroce_io *io, struct mroce_io_rx *pkts,
			     int n)
{
	struct afxdp_io *a = to_afxdp(io);
	uint64_t back[64];
	uint32_t nback = 0;

	for (int i = 0; i < n; i++) {
		uint64_t c = pkts[i].cookie;

		if (c & AFXDP_COOKIE_RBUF) {
			/* a double release must not overrun the free list */
			if (a->rbuf_nfree < AFXDP_RBUFS)
				a->rbuf_free[a->rbuf_nfree++] =
					(uint32_t)(c & ~AFXDP_COOKIE_RBUF);
			continue;
		}
		back[nback++] = c;
		if (nback == sizeof(back) / sizeof(back[0])) {
			fill_put(a, back, nback);
			nback = 0;
		}
	}
	fill_put(a, back, nback);
}

/* ------------------------------------------------------------------ */
/* Transmit                                                            */
/* ------------------------------------------------------------------ */

/* Headers (and ICRC) of the frame of p whose payload is already in place
 * at buf + header length. Returns the frame length or a negative value. */
static int tx_finish(struct afxdp_io *a, const struct mroce_io_tx *p,
		     const struct mroce_frame_spec *spec, uint8_t *buf,
		     size_t cap)
{
	int len = mroce_frame_build(spec, p->len, buf, cap);

	if (len < 0)
		return len;
	if (p->dport == a->io.cfg.rocev2_port &&
	    mroce_rv2_icrc_fill(buf, (size_t)len))
		return -EINVAL;
	return len;
}

/* Build the frame of p at buf: payload copied, then tx_finish(). */
static int tx_build(struct afxdp_io *a, const struct mroce_io_tx *p,
		    const struct mroce_frame_spec *spec, size_t hdr,
		    uint8_t *buf, size_t cap)
{
	memcpy(buf + hdr, p->data, p->len);
	return tx_finish(a, p, spec, buf, cap);
}

/* The per-packet part of the spec of p, and its header length in *hdr.
 * false: p can never be sent (counted; the caller consumes it). */
static bool tx_spec(struct afxdp_io *a, const struct mroce_io_tx *p,
		    uint64_t now, struct mroce_frame_spec *spec, size_t *hdr)
{
	struct mroce_io *io = &a->io;
	uint32_t cap = io->cfg.multi_buffer ? AFXDP_MAX_FRAME : a->frame_size;

	if (!p->dst) {
		io->stats.tx_errors++;
		return false;
	}
	spec->l3.family = p->dst->family;
	memcpy(spec->l3.src, io->cfg.local_addr, 16);
	memcpy(spec->l3.dst, p->dst->addr, 16);
	spec->l3.tos = p->ect ? 2 : 0; /* ECT(0) */
	spec->sport = p->sport;
	spec->dport = p->dport;
	*hdr = mroce_frame_hdr_len(spec);
	if (!*hdr || *hdr + p->len > cap || p->len > 0xffff) {
		io->stats.tx_errors++;
		return false;
	}
	if (afxdp_neigh_resolve(&a->neigh, spec->l3.family, spec->l3.dst, now,
				spec->dmac)) {
		a->xstats.tx_no_neigh++;
		io->stats.tx_errors++;
		return false;
	}
	return true;
}

/* Queue the frame of p through copy frames. Returns the descriptors
 * queued, 0 if it was dropped (counted), -ENOBUFS when the ring or the
 * frames are short (nothing done). */
static int tx_copy(struct afxdp_io *a, const struct mroce_io_tx *p,
		   struct mroce_frame_spec *spec, size_t hdr)
{
	uint32_t flen = (uint32_t)(hdr + p->len), idx;
	uint32_t nfrag = (flen + a->frame_size - 1) / a->frame_size;
	int len;

	if (a->tx_nfree < nfrag ||
	    xsk_ring_prod__reserve(&a->tx, nfrag, &idx) != nfrag)
		return -ENOBUFS;
	spec->ip_id = a->ip_id++;
	if (nfrag == 1) {
		uint64_t addr = a->tx_free[a->tx_nfree - 1];
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&a->tx, idx);

		len = tx_build(a, p, spec, hdr,
			       xsk_umem__get_data(a->area, addr),
			       a->frame_size);
		d->addr = addr;
		d->len = (uint32_t)len;
		d->options = 0;
	} else {
		/* Several frames. IPv4 MetaRoCE: the headers do not depend
		 * on the payload (no UDP checksum; the ICRC came with it),
		 * so they are built alone and the payload goes straight into
		 * the UMEM frames. IPv6 (UDP checksum) and RoCEv2 (ICRC over
		 * the headers) need the whole packet: built contiguous
		 * first. */
		bool direct = spec->l3.family == AF_INET &&
			      p->dport != a->io.cfg.rocev2_port;
		const uint8_t *src = a->scratch;

		if (direct)
			len = mroce_frame_build(spec, p->len, a->scratch,
						AFXDP_MAX_FRAME);
		else
			len = tx_build(a, p, spec, hdr, a->scratch,
				       AFXDP_MAX_FRAME);
		for (uint32_t j = 0, off = 0; len > 0 && j < nfrag; j++) {
			uint64_t addr = a->tx_free[a->tx_nfree - 1 - j];
			struct xdp_desc *d =
				xsk_ring_prod__tx_desc(&a->tx, idx + j);
			uint8_t *dst = xsk_umem__get_data(a->area, addr);
			uint32_t chunk = flen - off < a->frame_size
						 ? flen - off
						 : a->frame_size;
			uint32_t h = 0;

			if (direct && off < hdr) {
				/* the headers, then the payload */
				h = (uint32_t)hdr - off < chunk
					    ? (uint32_t)hdr - off
					    : chunk;
				memcpy(dst, src + off, h);
			}
			if (direct)
				memcpy(dst + h, p->data + (off + h - hdr),
				       chunk - h);
			else
				memcpy(dst, src + off, chunk);
			d->addr = addr;
			d->len = chunk;
			d->options = j + 1 < nfrag ? XDP_PKT_CONTD : 0;
			off += chunk;
		}
		a->xstats.tx_chains++;
	}
	if (len < 0) {
		/* the codec refused the spec (cannot happen for the sizes
		 * checked): give the descriptors back */
		a->tx.cached_prod -= nfrag; /* libxdp 1.3 has no
					     * xsk_ring_prod__cancel */
		a->io.stats.tx_errors++;
		return 0;
	}
	a->tx_nfree -= nfrag;
	return (int)nfrag;
}

/* Queue the frame of p, whose payload is in slot s: headers written in
 * front of it, one descriptor per chunk the frame touches. Returns as
 * tx_copy(); on 0 the caller frees the slot. */
static int tx_zc(struct afxdp_io *a, const struct mroce_io_tx *p,
		 struct mroce_frame_spec *spec, size_t hdr, uint32_t s)
{
	uint64_t addr = a->slot_off + (uint64_t)s * a->slot_size +
			AFXDP_TX_HEADROOM - hdr;
	uint32_t flen = (uint32_t)(hdr + p->len), fs = a->frame_size, idx;
	uint32_t ndesc = (uint32_t)((addr + flen - 1) / fs - addr / fs + 1);
	uint8_t *frame = a->area + addr;

	if (p->len > a->slot_cap || (ndesc > 1 && !a->io.cfg.multi_buffer)) {
		a->io.stats.tx_errors++; /* more than the slot holds */
		return 0;
	}
	if (xsk_ring_prod__reserve(&a->tx, ndesc, &idx) != ndesc)
		return -ENOBUFS;
	spec->ip_id = a->ip_id++;
	if (tx_finish(a, p, spec, frame, flen) < 0) {
		a->tx.cached_prod -= ndesc;
		a->io.stats.tx_errors++;
		return 0;
	}
	for (uint32_t j = 0, off = 0; j < ndesc; j++) {
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&a->tx, idx + j);
		uint32_t room = fs - (uint32_t)(addr % fs);
		uint32_t chunk = flen - off < room ? flen - off : room;

		d->addr = addr;
		d->len = chunk;
		d->options = j + 1 < ndesc ? XDP_PKT_CONTD : 0;
		addr += chunk;
		off += chunk;
	}
	a->slot_state[s] = SLOT_KERNEL;
	a->slot_refs[s] = (uint8_t)ndesc;
	a->xstats.tx_zc_pkts++;
	if (ndesc > 1)
		a->xstats.tx_chains++;
	return (int)ndesc;
}

static int afxdp_tx(struct mroce_io *io, const struct mroce_io_tx *pkts, int n)
{
	struct afxdp_io *a = to_afxdp(io);
	struct mroce_frame_spec spec;
	uint32_t ndesc = 0;
	uint64_t now = now_ns();
	int done = 0;

	tx_reclaim(a);
	memset(&spec, 0, sizeof(spec));
	memcpy(spec.smac, a->mac, 6);
	spec.vlan = -1;
	spec.l3.ttl = 64;
	for (; done < n; done++) {
		const struct mroce_io_tx *p = &pkts[done];
		int s = slot_of(a, p->data), r = 0;
		size_t hdr;

		if (tx_spec(a, p, now, &spec, &hdr))
			r = s >= 0 ? tx_zc(a, p, &spec, hdr, (uint32_t)s)
				   : tx_copy(a, p, &spec, hdr);
		if (r == -ENOBUFS) {
			/* the rest (slots included) stays the caller's */
			io->stats.tx_full += (uint64_t)(n - done);
			break;
		}
		if (!r) {
			/* can never be sent: consumed, its slot freed */
			if (s >= 0)
				slot_release(a, (uint32_t)s);
			continue;
		}
		ndesc += (uint32_t)r;
		io->stats.tx_pkts++;
		io->stats.tx_bytes += p->len;
	}
	if (ndesc) {
		xsk_ring_prod__submit(&a->tx, ndesc);
		tx_kick(a, ndesc);
	} else if (done < n && !tx_ring_empty(a)) {
		/* full of frames a dropped one (EBUSY) left behind: only a
		 * kick moves them, and a caller that only transmits would
		 * otherwise find the ring full for ever */
		tx_kick(a, 0);
	}
	return done;
}

static int afxdp_tx_bufs(struct mroce_io *io, uint8_t **bufs, int n,
			 uint32_t *cap)
{
	struct afxdp_io *a = to_afxdp(io);
	int got = 0;

	if (!a->nslots)
		return -EOPNOTSUPP;
	*cap = a->slot_cap;
	if (n && a->slot_nfree < (uint32_t)n) {
		/* slots come back as the ring drains: move it on first */
		if (!tx_ring_empty(a))
			tx_kick(a, 0);
		tx_reclaim(a);
	}
	while (got < n && a->slot_nfree) {
		uint32_t s = a->slot_free[--a->slot_nfree];

		a->slot_state[s] = SLOT_OWNER;
		bufs[got++] = a->area + a->slot_off +
			      (uint64_t)s * a->slot_size + AFXDP_TX_HEADROOM;
	}
	return got;
}

static void afxdp_tx_bufs_put(struct mroce_io *io, uint8_t *const *bufs, int n)
{
	struct afxdp_io *a = to_afxdp(io);

	for (int i = 0; i < n; i++) {
		int s = slot_of(a, bufs[i]);

		if (s >= 0)
			slot_release(a, (uint32_t)s);
	}
}

static int afxdp_fd(const struct mroce_io *io)
{
	const struct afxdp_io *a = (const struct afxdp_io *)io;

	return a->xsk ? xsk_socket__fd(a->xsk) : -1;
}

/* ------------------------------------------------------------------ */
/* Open / close                                                        */
/* ------------------------------------------------------------------ */

static void afxdp_close(struct mroce_io *io)
{
	struct afxdp_io *a = to_afxdp(io);

	if (!a)
		return;
	if (a->xsk_registered)
		mroce_xdp_xsk_set(&a->maps, io->cfg.queue, -1);
	if (a->xsk)
		xsk_socket__delete(a->xsk);
	if (a->umem)
		xsk_umem__delete(a->umem);
	if (a->maps_open)
		mroce_xdp_maps_close(&a->maps);
	if (a->area)
		munmap(a->area, a->area_len);
	if (a->rbuf)
		munmap(a->rbuf, (size_t)AFXDP_RBUFS * AFXDP_MAX_FRAME);
	afxdp_neigh_close(&a->neigh);
	free(a->tx_free);
	free(a->slot_free);
	free(a->slot_state);
	free(a->slot_refs);
	free(a->scratch);
	free(a);
}

static int map_err(int xdp_err)
{
	switch (-xdp_err) {
	case MROCE_XDP_E_NOT_ATTACHED:
		return -ENOENT;
	case MROCE_XDP_E_NO_PRIV:
		return -EPERM;
	case MROCE_XDP_E_INVAL:
		return -EINVAL;
	default:
		return -EIO;
	}
}

static int if_mac(const char *ifname, uint8_t mac[6])
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, ifname, strlen(ifname) + 1); /* < IF_NAMESIZE */
	if (ioctl(fd, SIOCGIFHWADDR, &ifr))
		err = -errno;
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
	return err;
}

static int open_xsk(struct afxdp_io *a)
{
	const struct mroce_io_cfg *cfg = &a->io.cfg;
	struct xsk_umem_config ucfg = {
		.fill_size = a->ring_size,
		.comp_size = a->comp_size,
		.frame_size = a->frame_size,
		.frame_headroom = 0,
		.flags = 0,
	};
	struct xsk_socket_config scfg = {
		.rx_size = a->ring_size,
		.tx_size = a->ring_size,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.xdp_flags = 0,
		.bind_flags = XDP_COPY | (cfg->multi_buffer ? XDP_USE_SG : 0),
	};
	uint32_t rx_frames = a->ring_size;
	uint64_t *addrs;
	int err;

	a->area_len = a->slot_off + (size_t)a->nslots * a->slot_size;
	a->area = mmap(NULL, a->area_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (a->area == MAP_FAILED) {
		a->area = NULL;
		return -ENOMEM;
	}
	err = xsk_umem__create(&a->umem, a->area, a->area_len, &a->fq, &a->cq,
			       &ucfg);
	if (err) {
		a->umem = NULL;
		return err < 0 ? err : -err;
	}
	err = xsk_socket__create(&a->xsk, a->ifname, cfg->queue, a->umem,
				 &a->rx, &a->tx, &scfg);
	if (err) {
		a->xsk = NULL;
		return err < 0 ? err : -err;
	}
	/* receive half into the fill ring, transmit half onto the stack */
	addrs = a->tx_free; /* borrowed as scratch, refilled below */
	for (uint32_t i = 0; i < rx_frames; i++)
		addrs[i] = (uint64_t)i * a->frame_size;
	fill_put(a, addrs, rx_frames);
	a->tx_nfree = 0;
	for (uint32_t i = 0; i < a->ring_size; i++)
		a->tx_free[a->tx_nfree++] =
			(uint64_t)(rx_frames + i) * a->frame_size;
	for (uint32_t i = 0; i < a->nslots; i++)
		a->slot_free[a->slot_nfree++] = a->nslots - 1 - i;
	return 0;
}

/* Slot geometry and the completion ring's size (see the top comment):
 * a slot holds AFXDP_TX_HEADROOM and the largest frame; the completion
 * ring holds every transmit frame and slot chunk. */
static void size_slots(struct afxdp_io *a)
{
	uint32_t fs = a->frame_size, chunks;

	a->nslots = a->io.cfg.tx_slots;
	if (a->io.cfg.multi_buffer) {
		a->slot_size = (AFXDP_MAX_FRAME + fs - 1) / fs * fs;
		a->slot_cap = AFXDP_MAX_FRAME - AFXDP_TX_HEADROOM;
	} else {
		a->slot_size = fs;
		a->slot_cap = fs - AFXDP_TX_HEADROOM;
	}
	chunks = a->slot_size / fs;
	a->slot_off = (uint64_t)a->nframes * fs;
	a->comp_size = 1;
	while (a->comp_size < a->ring_size + a->nslots * chunks)
		a->comp_size *= 2;
}

/* The backend's own memory beside the UMEM: transmit frame stack, slot
 * tables, the scratch frame and the reassembly pool. 0 or -ENOMEM
 * (afxdp_close() frees what was allocated). */
static int alloc_bufs(struct afxdp_io *a)
{
	a->tx_free = calloc(a->ring_size, sizeof(*a->tx_free));
	a->slot_free = calloc(a->nslots + 1, sizeof(*a->slot_free));
	a->slot_state = calloc(a->nslots + 1, 1);
	a->slot_refs = calloc(a->nslots + 1, 1);
	a->scratch = malloc(AFXDP_MAX_FRAME);
	if (!a->tx_free || !a->slot_free || !a->slot_state || !a->slot_refs ||
	    !a->scratch)
		return -ENOMEM;
	a->rbuf = mmap(NULL, (size_t)AFXDP_RBUFS * AFXDP_MAX_FRAME,
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);
	if (a->rbuf == MAP_FAILED) {
		a->rbuf = NULL;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < AFXDP_RBUFS; i++)
		a->rbuf_free[a->rbuf_nfree++] = AFXDP_RBUFS - 1 - i;
	return 0;
}

static int afxdp_open(const struct mroce_io_cfg *cfg, struct mroce_io **out)
{
	struct afxdp_io *a;
	int err;

	*out = NULL;
	if (!cfg->ifname || strlen(cfg->ifname) >= IF_NAMESIZE ||
	    (cfg->family != AF_INET && cfg->family != AF_INET6) ||
	    cfg->queue >= MROCE_MAX_QUEUES || cfg->tx_slots > AFXDP_MAX_SLOTS)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->neigh.nl_fd = -1;
	a->io.ops = &mroce_io_afxdp_ops;
	a->io.cfg = *cfg;
	strcpy(a->ifname, cfg->ifname);
	a->io.cfg.ifname = a->ifname; /* the caller's string may go away */
	a->frame_size = cfg->frame_size ? cfg->frame_size : 4096;
	a->nframes = cfg->nframes ? cfg->nframes : 4096;
	if (!a->io.cfg.mroce_port)
		a->io.cfg.mroce_port = MROCE_UDP_PORT;
	if (!a->io.cfg.rocev2_port)
		a->io.cfg.rocev2_port = ROCEV2_UDP_PORT;
	/* aligned UMEM: power-of-two frames of 2 KiB .. one page */
	err = -EINVAL;
	if (a->frame_size < 2048 || a->frame_size > 4096 ||
	    (a->frame_size & (a->frame_size - 1)) || a->nframes < 64)
		goto fail;
	/* each half gets the largest power of two that fits */
	a->ring_size = 1;
	while (a->ring_size * 4 <= a->nframes)
		a->ring_size *= 2;
	a->ifindex = (int)if_nametoindex(a->ifname);
	err = -ENODEV;
	if (!a->ifindex)
		goto fail;
	err = if_mac(a->ifname, a->mac);
	if (err)
		goto fail;
	size_slots(a);
	err = alloc_bufs(a);
	if (err)
		goto fail;
	err = afxdp_neigh_open(&a->neigh, a->ifindex);
	if (err)
		goto fail;
	err = mroce_xdp_maps_open(a->ifname, &a->maps);
	if (err) {
		err = map_err(err);
		goto fail;
	}
	a->maps_open = true;
	err = open_xsk(a);
	if (err)
		goto fail;
	err = mroce_xdp_xsk_set(&a->maps, cfg->queue, xsk_socket__fd(a->xsk));
	if (err) {
		err = map_err(err);
		goto fail;
	}
	a->xsk_registered = true;
	*out = &a->io;
	return 0;
fail:
	afxdp_close(&a->io);
	return err;
}

const struct mroce_io_ops mroce_io_afxdp_ops = {
	.open = afxdp_open,
	.close = afxdp_close,
	.rx = afxdp_rx,
	.rx_release = afxdp_rx_release,
	.tx = afxdp_tx,
	.fd = afxdp_fd,
	.tx_bufs = afxdp_tx_bufs,
	.tx_bufs_put = afxdp_tx_bufs_put,
};

/* ------------------------------------------------------------------ */
/* io_afxdp.h                                                          */
/* ------------------------------------------------------------------ */

static struct afxdp_io *afxdp_of(const struct mroce_io *io)
{
	return io && io->ops == &mroce_io_afxdp_ops ? (struct afxdp_io *)io
						    : NULL;
}

int mroce_io_afxdp_conn_add(struct mroce_io *io, uint8_t proto, uint32_t id,
			    const struct mroce_conn_val *v)
{
	struct afxdp_io *a = afxdp_of(io);
	int err;

	if (!a)
		return -EINVAL;
	err = mroce_xdp_conn_add(&a->maps, proto, id, v);
	if (err == -MROCE_XDP_E_MAP_UPDATE)
		return errno == E2BIG || errno == ENOMEM ? -ENOSPC : -EIO;
	return err ? map_err(err) : 0;
}

int mroce_io_afxdp_conn_del(struct mroce_io *io, uint8_t proto, uint32_t id)
{
	struct afxdp_io *a = afxdp_of(io);

	if (!a)
		return -EINVAL;
	if (mroce_xdp_conn_del(&a->maps, proto, id))
		return errno == ENOENT ? -ENOENT : -EIO;
	return 0;
}

/* The engine's path state, into the maps of the XDP program. */
static void pub_reset(void *ctx, uint32_t slot)
{
	mroce_xdp_slot_reset(ctx, slot);
}

static void pub_rx(void *ctx, const struct mroce_pub_rx *r)
{
	struct mroce_rx_path *rp = mroce_xdp_rx_path(ctx, r->slot, r->path);

	if (rp)
		mroce_rx_publish(rp, r->gen, MROCE_RXP_F_VALID, r->cum_psn,
				 r->rx_high, r->rate_mbps, r->sack);
}

static void pub_ack(void *ctx, const struct mroce_pub_ack *a)
{
	struct mroce_rx_path *rp = mroce_xdp_rx_path(ctx, a->slot, a->path);

	if (rp)
		mroce_rx_publish_ack(rp, a->cum_psn, a->lost_at_us);
}

static void pub_tx(void *ctx, const struct mroce_pub_tx *t)
{
	mroce_xdp_sb_publish(ctx, t->slot, t->path, t->npaths, t->sport,
			     t->gen, t->active);
}

int mroce_io_afxdp_pub(struct mroce_io *io, struct mroce_engine_pub *out)
{
	struct afxdp_io *a = afxdp_of(io);

	if (!a)
		return -EINVAL;
	*out = (struct mroce_engine_pub){
		.ctx = &a->maps,
		.reset = pub_reset,
		.rx = pub_rx,
		.tx = pub_tx,
		.ack = pub_ack,
	};
	return 0;
}

const struct mroce_xdp_maps *mroce_io_afxdp_maps(const struct mroce_io *io)
{
	struct afxdp_io *a = afxdp_of(io);

	return a ? &a->maps : NULL;
}

int mroce_io_afxdp_get_stats(const struct mroce_io *io,
			     struct mroce_io_afxdp_stats *s)
{
	struct afxdp_io *a = afxdp_of(io);
	struct xdp_statistics ks;
	socklen_t len = sizeof(ks);

	if (!a)
		return -EINVAL;
	*s = a->xstats;
	memset(&ks, 0, sizeof(ks));
	if (getsockopt(xsk_socket__fd(a->xsk), SOL_XDP, XDP_STATISTICS, &ks,
		       &len))
		return -errno;
	s->rx_dropped = ks.rx_dropped;
	s->rx_invalid_descs = ks.rx_invalid_descs;
	s->tx_invalid_descs = ks.tx_invalid_descs;
	s->rx_ring_full = ks.rx_ring_full;
	s->rx_fill_ring_empty_descs = ks.rx_fill_ring_empty_descs;
	s->tx_ring_empty_descs = ks.tx_ring_empty_descs;
	s->tx_slots = a->nslots;
	s->tx_slots_free = a->slot_nfree;
	return 0;
}
