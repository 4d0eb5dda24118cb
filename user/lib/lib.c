// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libmroce, embedded mode: the verbs objects of include/mroce/mroce.h
 * forwarded to an in-process engine, and the progress loop that moves
 * packets between the engine and one I/O backend.
 *
 * Progress runs only inside library calls made by the application (poll,
 * wait, post, progress): there is no thread, so a device is owned by one
 * thread at a time, like the engine and the backends underneath.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mroce/io_afxdp.h"
#include "mroce/wire.h"
#include "lib_int.h"

/*
 * The AF_XDP backend's extras exist only when user/io/afxdp.c is in the
 * library (see user/io/module.mk): weak references, NULL otherwise. Its XDP
 * program redirects a RoCEv2 packet to the socket only when the
 * destination QPN is registered, so every QP is registered at RTR.
 */
extern int mroce_io_afxdp_conn_add(struct mroce_io *io, uint8_t proto,
				   uint32_t id, const struct mroce_conn_val *v)
	__attribute__((weak));
extern int mroce_io_afxdp_conn_del(struct mroce_io *io, uint8_t proto,
				   uint32_t id) __attribute__((weak));

/* The public enums are promised to match the engine's numbering so that
 * conversion is a cast; keep them in lockstep. */
_Static_assert(MRV_WC_GENERAL_ERR == (int)MROCE_WC_GENERAL_ERR, "wc status");
_Static_assert(MRV_WC_RECV_RDMA_WITH_IMM == (int)MROCE_WC_RECV_RDMA_WITH_IMM,
	       "wc opcode");
_Static_assert(MRV_WR_RDMA_READ == (int)MROCE_WR_RDMA_READ, "wr opcode");
_Static_assert(MRV_QPS_ERR == (int)MROCE_QPS_ERR, "qp state");
_Static_assert((int)MRV_ACCESS_REMOTE_READ == (int)MROCE_ACCESS_REMOTE_READ,
	       "access");
_Static_assert((int)MRV_QP_SQ_PSN == (int)MROCE_QP_SQ_PSN, "qp attr mask");
_Static_assert((int)MRV_SEND_SOLICITED == (int)MROCE_SEND_SOLICITED,
	       "send flags");
_Static_assert((unsigned int)MRV_WC_WITH_IMM == MROCE_WC_WITH_IMM, "wc flags");

uint64_t mrv_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int mrv_random(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t r = getrandom(p, len, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

static int parse_addr(const char *s, uint8_t *family, uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (!s)
		return -EINVAL;
	if (inet_pton(AF_INET, s, addr) == 1) {
		*family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, addr) == 1) {
		*family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

/* Remember the address of engine peer `id` for transmit. */
static int note_peer(struct mrv_device *dev, int id,
		     const struct mroce_peer_addr *a)
{
	if (id >= dev->npeers) {
		int cap = dev->npeers ? dev->npeers : 16;
		struct mroce_peer_addr *np;

		while (cap <= id)
			cap *= 2;
		np = realloc(dev->peers, (size_t)cap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		memset(np + dev->npeers, 0,
		       (size_t)(cap - dev->npeers) * sizeof(*np));
		dev->peers = np;
		dev->npeers = cap;
	}
	dev->peers[id] = *a;
	return 0;
}

static int peer_for(struct mrv_device *dev, uint8_t family,
		    const uint8_t addr[16])
{
	struct mroce_peer_addr a = {.family = family};
	int id, err;

	if (family == dev->last_family && !memcmp(addr, dev->last_src, 16))
		return dev->last_peer;
	memcpy(a.addr, addr, 16);
	memcpy(a.local, dev->local, 16);
	id = mroce_peer_add(dev->e, &a);
	if (id < 0)
		return id;
	err = note_peer(dev, id, &a);
	if (err < 0)
		return err;
	dev->last_family = family;
	memcpy(dev->last_src, addr, 16);
	dev->last_peer = id;
	return id;
}

int mrv_peer_by_name(struct mrv_device *dev, const char *s)
{
	uint8_t family, addr[16];
	int err = parse_addr(s, &family, addr);

	if (err < 0)
		return err;
	if (family != dev->family)
		return -EAFNOSUPPORT;
	return peer_for(dev, family, addr);
}

/* ------------------------------------------------------------------ */
/* Device                                                               */
/* ------------------------------------------------------------------ */

/* AF_XDP frames are never fragmented: the payload per packet (the
 * engine's mtu) must fit the interface MTU with IPv6 + UDP + the largest
 * transport header and ICRC. RoCE-style, use the largest power of two
 * that fits with room to spare (1500 -> 1024, 9000 -> 8192). */
static int mtu_for_ifname(const char *ifname, uint16_t *out)
{
	struct ifreq ifr = {0};
	int fd, ifmtu, err = 0;

	if (strlen(ifname) >= sizeof(ifr.ifr_name))
		return -EINVAL;
	strcpy(ifr.ifr_name, ifname);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, SIOCGIFMTU, &ifr) < 0)
		err = -errno;
	close(fd);
	if (err)
		return err == -ENODEV ? -ENODEV : err;
	ifmtu = ifr.ifr_mtu;
	for (int m = MROCE_MAX_PAYLOAD; m >= 256; m /= 2)
		if (m + 128 <= ifmtu) {
			*out = (uint16_t)m;
			return 0;
		}
	return -EINVAL; /* below IPv6's minimum: not a usable link */
}
int mrv_open_device(const struct mrv_dev_attr *attr, struct mrv_device **out)
{
	struct mroce_engine_cfg ec = {0};
	struct mroce_io_cfg ic = {0};
	struct mrv_device *dev;
	int err;

	if (!attr || !out)
		return -EINVAL;
	*out = NULL;
	if (attr->mode == MRV_MODE_DAEMON)
		return -ENOTSUP;
	if (attr->mode != MRV_MODE_EMBEDDED)
		return -EINVAL;
	if (attr->transport && attr->transport != MRV_TRANSPORT_METAROCE &&
	    attr->transport != MRV_TRANSPORT_ROCEV2)
		return -EINVAL;
	if (attr->backend && attr->backend != MRV_BACKEND_UDP &&
	    attr->backend != MRV_BACKEND_AFXDP)
		return -EINVAL;
	if (attr->backend == MRV_BACKEND_AFXDP && !attr->ifname)
		return -EINVAL;
	/* MetaRoCE over AF_XDP needs each connection's id registered with
	 * the XDP program, and the engine does not expose it yet. */
	if (attr->backend == MRV_BACKEND_AFXDP &&
	    attr->transport != MRV_TRANSPORT_ROCEV2)
		return -ENOTSUP;
	if (attr->udp_port == 0xffff)
		return -EINVAL;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->last_family = 0xff; /* matches no real family */
	err = parse_addr(attr->local_addr, &dev->family, dev->local);
	if (err < 0)
		goto fail;

	ec.transport =
		attr->transport ? attr->transport : MRV_TRANSPORT_METAROCE;
	ec.npaths = attr->npaths;
	ec.mtu = attr->mtu;
	if (!ec.mtu && attr->backend == MRV_BACKEND_AFXDP) {
		err = mtu_for_ifname(attr->ifname, &ec.mtu);
		if (err < 0)
			goto fail;
	}
	ec.seed = attr->seed;
	ec.rto_min_us = attr->rto_min_us;
	if (ec.seed) {
		/* Reproducible runs: derive the cookie key from the seed. */
		for (int i = 0; i < 16; i++)
			ec.secret[i] = (uint8_t)(ec.seed >> (8 * (i & 7))) ^
				       (uint8_t)i;
	} else {
		err = mrv_random(&ec.seed, sizeof(ec.seed));
		if (!err)
			err = mrv_random(ec.secret, sizeof(ec.secret));
		if (err < 0)
			goto fail;
	}
	err = mroce_engine_create(&ec, &dev->e);
	if (err < 0)
		goto fail;
	dev->transport = ec.transport;
	dev->mtu = ec.mtu ? ec.mtu : 4096; /* the engine's default */
	dev->afxdp = attr->backend == MRV_BACKEND_AFXDP;

	ic.kind = attr->backend == MRV_BACKEND_AFXDP ? MROCE_IO_AFXDP
						     : MROCE_IO_UDP;
	ic.family = dev->family;
	memcpy(ic.local_addr, dev->local, 16);
	ic.mroce_port = attr->udp_port ? attr->udp_port : MROCE_UDP_PORT;
	ic.rocev2_port = attr->udp_port ? (uint16_t)(attr->udp_port + 1)
					: ROCEV2_UDP_PORT;
	ic.ifname = attr->ifname;
	ic.queue = attr->queue;
	ic.frame_size = 4096;
	ic.nframes = 4096;
	ic.multi_buffer = dev->mtu > 3072;
	ic.sport_min = MROCE_SPORT_MIN;
	ic.sport_max = MROCE_SPORT_MAX;
	err = mroce_io_open(&ic, &dev->io);
	if (err < 0)
		goto fail;

	dev->txcap = MROCE_MAX_PAYLOAD + 256;
	dev->txbuf = malloc(MRV_TX_BATCH * dev->txcap);
	if (!dev->txbuf) {
		err = -ENOMEM;
		goto fail;
	}
	*out = dev;
	return 0;
fail:
	if (dev->io)
		mroce_io_close(dev->io);
	if (dev->e)
		mroce_engine_destroy(dev->e);
	free(dev);
	return err;
}

int mrv_close_device(struct mrv_device *dev)
{
	if (!dev)
		return -EINVAL;
	if (dev->npds || dev->ncqs)
		return -EBUSY;
	mroce_io_close(dev->io);
	mroce_engine_destroy(dev->e);
	free(dev->peers);
	free(dev->txbuf);
	free(dev);
	return 0;
}

int mrv_device_mtu(const struct mrv_device *dev)
{
	return dev ? dev->mtu : -EINVAL;
}

int mrv_device_fd(const struct mrv_device *dev)
{
	return dev ? mroce_io_fd(dev->io) : -EINVAL;
}

static int progress_rx(struct mrv_device *dev, uint64_t now)
{
	struct mroce_io_rx rx[MRV_RX_BATCH];
	int total = 0;

	/* Bounded so that a flood cannot starve transmit and timers. */
	for (int round = 0; round < 4; round++) {
		int n = mroce_io_rx(dev->io, rx, MRV_RX_BATCH);

		if (n <= 0)
			return total ? total : n;
		for (int i = 0; i < n; i++) {
			struct mroce_rx_meta m = {
				.sport = rx[i].sport,
				.ce = rx[i].ce,
			};

			m.peer = peer_for(dev, rx[i].family, rx[i].src);
			if (m.peer < 0)
				continue;
			/* Drops are counted by the engine; nothing to do. */
			(void)mroce_engine_rx(dev->e, &m, rx[i].data, rx[i].len,
					      now);
		}
		mroce_io_rx_release(dev->io, rx, n);
		total += n;
		if (n < MRV_RX_BATCH)
			break;
	}
	return total;
}

static int progress_tx(struct mrv_device *dev, uint64_t now)
{
	struct mroce_io_tx tx[MRV_TX_BATCH];
	int total = 0;

	for (int round = 0; round < 16; round++) {
		int n, sent;

		if (!dev->tx_n) {
			for (int i = 0; i < MRV_TX_BATCH; i++)
				dev->tx[i].buf = dev->txbuf + i * dev->txcap;
			n = mroce_engine_tx(dev->e, dev->tx, MRV_TX_BATCH,
					    dev->txcap, now);
			if (n <= 0)
				break;
			dev->tx_head = 0;
			dev->tx_n = n;
		}
		n = dev->tx_n;
		for (int i = 0; i < n; i++) {
			const struct mroce_tx_pkt *p =
				&dev->tx[dev->tx_head + i];

			tx[i] = (struct mroce_io_tx){
				.data = p->buf,
				.len = p->len,
				.dst = p->peer >= 0 && p->peer < dev->npeers
					       ? &dev->peers[p->peer]
					       : NULL,
				.sport = p->sport,
				.dport = p->dport,
				.ect = p->ect,
			};
		}
		sent = mroce_io_tx(dev->io, tx, n);
		if (sent < 0) {
			/* Unsendable batch (e.g. unknown peer): lost as on a
			 * wire; the transport retransmits or fails it. */
			dev->tx_n = 0;
			break;
		}
		dev->tx_head += sent;
		dev->tx_n -= sent;
		total += sent;
		if (dev->tx_n || n < MRV_TX_BATCH)
			break;
	}
	return total;
}

int mrv_progress(struct mrv_device *dev)
{
	uint64_t now;
	int rx, tx;

	if (!dev)
		return -EINVAL;
	now = mrv_now_ns();
	rx = progress_rx(dev, now);
	if (mroce_engine_next_timer(dev->e, now) <= now)
		mroce_engine_tick(dev->e, now);
	tx = progress_tx(dev, now);
	if (rx < 0)
		return rx;
	return rx + tx;
}

int mrv_query_stats(const struct mrv_device *dev, struct mrv_dev_stats *st)
{
	struct mroce_engine_stats es;
	struct mroce_io_stats is;

	if (!dev || !st)
		return -EINVAL;
	mroce_engine_get_stats(dev->e, &es);
	mroce_io_get_stats(dev->io, &is);
	*st = (struct mrv_dev_stats){
		.tx_pkts = es.tx_pkts,
		.rx_pkts = es.rx_pkts,
		.tx_data_pkts = es.tx_data_pkts,
		.rx_data_pkts = es.rx_data_pkts,
		.retransmits = es.retransmits,
		.rx_dup = es.rx_dup,
		.rx_ooo = es.rx_ooo,
		.ce_marks = es.ce_marks,
		.path_rerolls = es.path_rerolls,
		.rto_fires = es.rto_fires,
		.rx_malformed = es.rx_malformed,
		.rx_bad_rkey = es.rx_bad_rkey,
		.io_tx_full = is.tx_full,
		.io_tx_errors = is.tx_errors,
	};
	return 0;
}

/* ------------------------------------------------------------------ */
/* PD and MR                                                            */
/* ------------------------------------------------------------------ */
int mrv_alloc_pd(struct mrv_device *dev, struct mrv_pd **out)
{
	struct mrv_pd *pd;

	if (!dev || !out)
		return -EINVAL;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	pd->dev = dev;
	dev->npds++;
	*out = pd;
	return 0;
}

int mrv_dealloc_pd(struct mrv_pd *pd)
{
	if (!pd)
		return -EINVAL;
	if (pd->nmrs || pd->nqps)
		return -EBUSY;
	pd->dev->npds--;
	free(pd);
	return 0;
}

static int reg(struct mrv_pd *pd, void *addr, size_t len, uint32_t access,
	       int fd, struct mrv_mr **out)
{
	struct mroce_mr emr;
	struct mrv_mr *mr;
	int err;

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	err = mroce_reg_mr(pd->dev->e, addr, len, access, &emr);
	if (err < 0) {
		free(mr);
		return err;
	}
	mr->addr = addr;
	mr->length = len;
	mr->lkey = emr.lkey;
	mr->rkey = emr.rkey;
	mr->access = access;
	mr->pd = pd;
	mr->fd = fd;
	pd->nmrs++;
	*out = mr;
	return 0;
}

int mrv_reg_mr(struct mrv_pd *pd, void *addr, size_t len, uint32_t access,
	       struct mrv_mr **out)
{
	if (!pd || !addr || !len || !out ||
	    (access &
	     ~(uint32_t)(MRV_ACCESS_LOCAL_WRITE | MRV_ACCESS_REMOTE_WRITE |
			 MRV_ACCESS_REMOTE_READ)))
		return -EINVAL;
	return reg(pd, addr, len, access, -1, out);
}

int mrv_alloc_mr(struct mrv_pd *pd, size_t len, uint32_t access,
		 struct mrv_mr **out)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t size;
	void *p;
	int fd, err;

	if (!pd || !len || !out || len > SIZE_MAX / 2)
		return -EINVAL;
	size = (len + (size_t)page - 1) & ~((size_t)page - 1);
	/* A memfd rather than anonymous memory: the daemon mode will map the
	 * same pages (zero copy), passed over its UNIX socket. */
	fd = memfd_create("mroce-mr", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	err = mrv_reg_mr(pd, p, size, access, out);
	if (err < 0) {
		munmap(p, size);
		close(fd);
		return err;
	}
	(*out)->fd = fd;
	return 0;
}

int mrv_dereg_mr(struct mrv_mr *mr)
{
	int err;

	if (!mr)
		return -EINVAL;
	err = mroce_dereg_mr(mr->pd->dev->e, mr->lkey);
	if (err < 0)
		return err;
	if (mr->fd >= 0) {
		munmap(mr->addr, mr->length);
		close(mr->fd);
	}
	mr->pd->nmrs--;
	free(mr);
	return 0;
}

/* ------------------------------------------------------------------ */
/* CQ                                                                   */
/* ------------------------------------------------------------------ */
int mrv_create_cq(struct mrv_device *dev, int depth, struct mrv_cq **out)
{
	struct mrv_cq *cq;
	int id;

	if (!dev || depth <= 0 || !out)
		return -EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	id = mroce_create_cq(dev->e, (uint32_t)depth);
	if (id < 0) {
		free(cq);
		return id;
	}
	cq->dev = dev;
	cq->id = id;
	dev->ncqs++;
	*out = cq;
	return 0;
}

int mrv_destroy_cq(struct mrv_cq *cq)
{
	int err;

	if (!cq)
		return -EINVAL;
	if (cq->nqps)
		return -EBUSY;
	err = mroce_destroy_cq(cq->dev->e, cq->id);
	if (err < 0)
		return err;
	cq->dev->ncqs--;
	free(cq);
	return 0;
}

static void conv_wc(struct mrv_wc *o, const struct mroce_wc *w)
{
	*o = (struct mrv_wc){
		.wr_id = w->wr_id,
		.status = (enum mrv_wc_status)w->status,
		.opcode = (enum mrv_wc_opcode)w->opcode,
		.byte_len = w->byte_len,
		.imm_data = w->imm,
		.qp_num = w->qpn,
		.wc_flags = w->flags,
	};
}

/* Moves engine completions into the stash; returns the stash count. */
static int fill_stash(struct mrv_cq *cq)
{
	struct mroce_wc w[MRV_CQ_STASH];
	int n;

	if (cq->stash_n)
		return cq->stash_n;
	n = mroce_poll_cq(cq->dev->e, cq->id, w, MRV_CQ_STASH);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		conv_wc(&cq->stash[i], &w[i]);
	cq->stash_head = 0;
	cq->stash_n = n;
	return n;
}

int mrv_poll_cq(struct mrv_cq *cq, int n, struct mrv_wc *wc)
{
	int got = 0, err;

	if (!cq || n < 0 || (n && !wc))
		return -EINVAL;
	err = mrv_progress(cq->dev);
	if (err < 0)
		return err;
	while (got < n) {
		int k = fill_stash(cq);

		if (k < 0)
			return got ? got : k;
		if (!k)
			break;
		while (k-- && got < n) {
			wc[got++] = cq->stash[cq->stash_head++];
			cq->stash_n--;
		}
	}
	return got;
}

int mrv_wait_cq(struct mrv_cq *cq, int timeout_ms)
{
	struct mrv_device *dev;
	uint64_t start, deadline, spin_until;
	struct pollfd pfd;

	if (!cq)
		return -EINVAL;
	dev = cq->dev;
	start = mrv_now_ns();
	deadline = timeout_ms < 0 ? UINT64_MAX
				  : start + (uint64_t)timeout_ms * 1000000ull;
	/* Adaptive: spin briefly (a reply is often microseconds away), then
	 * sleep on the backend fd until a packet or the next engine timer. */
	spin_until = start + 50000;
	pfd.fd = mroce_io_fd(dev->io);
	pfd.events = POLLIN;
	for (;;) {
		uint64_t now, wake;
		struct timespec ts;
		int k, err;

		err = mrv_progress(dev);
		if (err < 0)
			return err;
		k = fill_stash(cq);
		if (k < 0)
			return k;
		if (k > 0)
			return 1;
		now = mrv_now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		if (now < spin_until || pfd.fd < 0 || dev->tx_n)
			continue;
		wake = mroce_engine_next_timer(dev->e, now);
		if (wake > deadline)
			wake = deadline;
		if (wake <= now)
			continue;
		if (wake - now > 1000000000ull)
			wake = now + 1000000000ull;
		ts.tv_sec = (time_t)((wake - now) / 1000000000ull);
		ts.tv_nsec = (long)((wake - now) % 1000000000ull);
		if (ppoll(&pfd, 1, &ts, NULL) < 0 && errno != EINTR)
			return -errno;
	}
}

/* ------------------------------------------------------------------ */
/* QP                                                                   */
/* ------------------------------------------------------------------ */
int mrv_create_qp(struct mrv_pd *pd, const struct mrv_qp_init_attr *attr,
		  struct mrv_qp **out)
{
	struct mroce_qp_init_attr ia;
	struct mrv_qp *qp;
	int qpn;

	if (!pd || !attr || !out || !attr->send_cq || !attr->recv_cq ||
	    attr->send_cq->dev != pd->dev || attr->recv_cq->dev != pd->dev)
		return -EINVAL;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	ia = (struct mroce_qp_init_attr){
		.send_cq = attr->send_cq->id,
		.recv_cq = attr->recv_cq->id,
		.max_send_wr = attr->max_send_wr ? attr->max_send_wr : 128,
		.max_recv_wr = attr->max_recv_wr ? attr->max_recv_wr : 128,
	};
	qpn = mroce_create_qp(pd->dev->e, &ia);
	if (qpn < 0) {
		free(qp);
		return qpn;
	}
	qp->pd = pd;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	qp->qpn = (uint32_t)qpn;
	qp->peer = -1;
	pd->nqps++;
	qp->send_cq->nqps++;
	qp->recv_cq->nqps++;
	*out = qp;
	return 0;
}

int mrv_destroy_qp(struct mrv_qp *qp)
{
	int err;

	if (!qp)
		return -EINVAL;
	err = mroce_destroy_qp(qp->pd->dev->e, qp->qpn);
	if (err < 0)
		return err;
	if (qp->xdp_registered && mroce_io_afxdp_conn_del)
		(void)mroce_io_afxdp_conn_del(qp->pd->dev->io,
					      MROCE_CONN_ROCEV2, qp->qpn);
	qp->pd->nqps--;
	qp->send_cq->nqps--;
	qp->recv_cq->nqps--;
	free(qp);
	return 0;
}

uint32_t mrv_qp_num(const struct mrv_qp *qp)
{
	return qp ? qp->qpn : 0;
}

const char *mrv_qp_state_str(enum mrv_qp_state s)
{
	return mroce_qp_state_name((enum mroce_qp_state)s);
}

const char *mrv_wc_status_str(enum mrv_wc_status s)
{
	return mroce_wc_status_str((enum mroce_wc_status)s);
}

int mrv_modify_qp(struct mrv_qp *qp, const struct mrv_qp_attr *attr,
		  uint32_t mask)
{
	struct mroce_qp_attr a = {0};
	struct mrv_device *dev;
	int err;

	if (!qp || !attr)
		return -EINVAL;
	dev = qp->pd->dev;
	a.state = (enum mroce_qp_state)attr->qp_state;
	a.access = attr->qp_access_flags;
	a.dest_qpn = attr->dest_qp_num;
	a.rq_psn = attr->rq_psn;
	a.sq_psn = attr->sq_psn;
	a.peer = -1;
	if (mask & MRV_QP_DEST) {
		char name[sizeof(attr->dest_addr) + 1];

		memcpy(name, attr->dest_addr, sizeof(attr->dest_addr));
		name[sizeof(attr->dest_addr)] = 0;
		a.peer = mrv_peer_by_name(dev, name);
		if (a.peer < 0)
			return a.peer;
	}
	err = mroce_modify_qp(dev->e, qp->qpn, &a, mask, mrv_now_ns());
	if (err < 0)
		return err;
	if (mask & MRV_QP_DEST)
		qp->peer = a.peer;
	if (dev->afxdp && !qp->xdp_registered &&
	    attr->qp_state == MRV_QPS_RTR && (mask & MRV_QP_STATE)) {
		struct mroce_conn_val v = {0};

		if (!mroce_io_afxdp_conn_add)
			return -ENOTSUP;
		/* The slot indexes MetaRoCE receive state; unused here. */
		err = mroce_io_afxdp_conn_add(dev->io, MROCE_CONN_ROCEV2,
					      qp->qpn, &v);
		if (err < 0)
			return err;
		qp->xdp_registered = true;
	}
	/* RTR may have queued a handshake: send it now. */
	(void)mrv_progress(dev);
	return 0;
}

int mrv_query_qp(struct mrv_qp *qp, struct mrv_qp_attr *attr)
{
	struct mroce_qp_attr a;
	struct mrv_device *dev;
	int err;

	if (!qp || !attr)
		return -EINVAL;
	dev = qp->pd->dev;
	err = mroce_query_qp(dev->e, qp->qpn, &a);
	if (err < 0)
		return err;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum mrv_qp_state)a.state;
	attr->qp_access_flags = a.access;
	attr->dest_qp_num = a.dest_qpn;
	attr->rq_psn = a.rq_psn;
	attr->sq_psn = a.sq_psn;
	if (a.peer >= 0 && a.peer < dev->npeers)
		inet_ntop(dev->peers[a.peer].family, dev->peers[a.peer].addr,
			  attr->dest_addr, sizeof(attr->dest_addr));
	return 0;
}

int mrv_query_path(struct mrv_qp *qp, int idx, struct mrv_path_info *out)
{
	struct mroce_path_info pi;
	int err;

	if (!qp || !out || idx < 0)
		return -EINVAL;
	if (qp->peer < 0)
		return -ENOENT;
	err = mroce_engine_path_info(qp->pd->dev->e, qp->peer, idx, &pi);
	if (err < 0)
		return err;
	*out = (struct mrv_path_info){
		.sport = pi.sport,
		.alive = pi.alive,
		.srtt_us = pi.srtt_us,
		.cwnd_pkts = pi.cwnd_pkts,
		.inflight = pi.inflight,
		.tx_pkts = pi.tx_pkts,
		.retransmits = pi.retransmits,
		.ce_marks = pi.ce_marks,
	};
	return 0;
}

/* ------------------------------------------------------------------ */
/* Work requests                                                        */
/* ------------------------------------------------------------------ */
static int conv_sge(const struct mrv_sge *sg, int num, struct mroce_sge *o)
{
	if (num < 0 || num > 1 || (num && !sg))
		return -EINVAL;
	if (!num) {
		*o = (struct mroce_sge){0};
		return 0;
	}
	*o = (struct mroce_sge){
		.addr = sg->addr,
		.length = sg->length,
		.lkey = sg->lkey,
	};
	return 0;
}

int mrv_post_send(struct mrv_qp *qp, struct mrv_send_wr *wr,
		  struct mrv_send_wr **bad_wr)
{
	struct mrv_device *dev;
	int err = 0;
	uint64_t now;

	if (bad_wr)
		*bad_wr = wr;
	if (!qp || !wr || !bad_wr)
		return -EINVAL;
	dev = qp->pd->dev;
	now = mrv_now_ns();
	for (; wr; wr = wr->next) {
		struct mroce_send_wr w = {
			.wr_id = wr->wr_id,
			.opcode = (enum mroce_wr_opcode)wr->opcode,
			.send_flags = wr->send_flags,
			.imm = wr->imm_data,
			.remote_addr = wr->remote_addr,
			.rkey = wr->rkey,
		};

		*bad_wr = wr;
		if ((unsigned int)wr->opcode > MRV_WR_RDMA_READ) {
			err = -EINVAL;
			break;
		}
		err = conv_sge(wr->sg_list, wr->num_sge, &w.sge);
		if (!err)
			err = mroce_post_send(dev->e, qp->qpn, &w, now);
		if (err < 0)
			break;
	}
	if (!err)
		*bad_wr = NULL;
	/* Kick what was posted out at once (latency), errors or not. */
	(void)progress_tx(dev, now);
	return err;
}

int mrv_post_recv(struct mrv_qp *qp, struct mrv_recv_wr *wr,
		  struct mrv_recv_wr **bad_wr)
{
	int err = 0;

	if (bad_wr)
		*bad_wr = wr;
	if (!qp || !wr || !bad_wr)
		return -EINVAL;
	for (; wr; wr = wr->next) {
		struct mroce_recv_wr w = {.wr_id = wr->wr_id};

		*bad_wr = wr;
		err = conv_sge(wr->sg_list, wr->num_sge, &w.sge);
		if (!err)
			err = mroce_post_recv(qp->pd->dev->e, qp->qpn, &w);
		if (err < 0)
			return err;
	}
	*bad_wr = NULL;
	return 0;
}
