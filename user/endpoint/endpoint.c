// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The endpoint pump (user/endpoint/endpoint.h): one I/O backend feeding up to
 * two engines (MetaRoCE on one UDP port, RoCEv2 on the other), shared by
 * libmroce's embedded mode and the mroced daemon.
 *
 * Per engine the endpoint keeps the address book the backend needs for
 * transmit (engine peer id -> address), a one-entry cache of the last
 * receive source (packets arrive in trains), and the packets the engine
 * produced that the backend has not accepted yet. Across engines it keeps
 * the connections and QPs it registered with the XDP program, so that
 * close() removes every entry it added.
 *
 * With cfg.all_queues an AF_XDP endpoint holds one backend per receive
 * queue of the interface: all are read each round, a packet is sent on
 * the backend of queue (source port % queues) and one epoll fd over the
 * sockets is the endpoint's fd. The XDP maps are per interface, so the
 * `conns` entries go through the first backend only.
 */
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mroce/abi.h"
#include "mroce/io_afxdp.h"
#include "mroce/wire.h"
#include "../common/util.h"
#include "endpoint.h"

/*
 * The AF_XDP backend's extras exist only when user/io/afxdp.c is in the
 * library (`make NO_AFXDP=1` leaves it out): weak references, NULL then.
 * Without afxdp.c no AF_XDP backend can be opened, so they are only called
 * when they exist.
 */
extern int mroce_io_afxdp_conn_add(struct mroce_io *io, uint8_t proto,
				   uint32_t id, const struct mroce_conn_val *v)
	__attribute__((weak));
extern int mroce_io_afxdp_conn_del(struct mroce_io *io, uint8_t proto,
				   uint32_t id) __attribute__((weak));
extern int mroce_io_afxdp_pub(struct mroce_io *io,
			      struct mroce_engine_pub *out)
	__attribute__((weak));

#define EP_RX_BATCH 64
#define EP_TX_BATCH 64
#define EP_RX_ROUNDS 4	/* bounded: a flood cannot starve tx and timers */
#define EP_TX_ROUNDS 16
/* Zero-copy transmit buffers asked of a single AF_XDP backend: what both
 * engines hold pending (2 x EP_TX_BATCH) plus what the kernel still has
 * in flight. 6 MiB of UMEM at 4 KiB frames with multi-buffer. */
#define EP_TX_SLOTS 512

struct ep_eng {
	struct mroce_engine *e;	/* NULL: transport not run */
	uint8_t transport;
	uint16_t port;		/* UDP destination port that feeds it */
	uint16_t mtu;
	/* engine peer id -> address (transmit destination) */
	struct mroce_peer_addr *peers;
	int npeers;
	/* last receive source */
	uint8_t last_family;
	uint8_t last_src[16];
	int last_peer;
	/* produced by the engine, not yet accepted by the backend */
	struct mroce_tx_pkt tx[EP_TX_BATCH];
	int tx_head, tx_n;
	uint8_t *txbuf;
	/* zero-copy buffers held for the next mroce_engine_tx() (the
	 * backend's; kept across rounds, not given back unfilled) */
	uint8_t *zb[EP_TX_BATCH];
	int nzb;
};

struct mroce_ep {
	struct mroce_io *io;	/* ios[0]: conns entries, stats of one */
	struct mroce_io **ios;	/* one per receive queue */
	uint32_t *qids;		/* the queue each is bound to */
	int nios;
	int epfd;		/* over the ios' fds when nios > 1, else -1 */
	bool afxdp;
	bool ack_offload;	/* XDP may answer for our MetaRoCE conns */
	bool zc;		/* the engines write into the backend's buffers */
	uint8_t family;
	uint8_t local[16];
	uint64_t link_bps;	/* the engines' line rate, and where from */
	const char *link_src;
	size_t txcap;
	struct ep_eng eng[2];	/* [0] MetaRoCE, [1] RoCEv2 */
	/* XDP `conns` entries we added: MetaRoCE conn ids by slot (0 =
	 * none), RoCEv2 QPNs in a plain array. */
	uint32_t *mr_ids;
	uint32_t mr_nslots;
	uint32_t *qpns;
	uint32_t nqpns, qpns_cap;
};

uint64_t mroce_ep_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* AF_XDP frames are never fragmented: the payload per packet must fit the
 * interface MTU with IPv6 + UDP + the largest transport header and ICRC.
 * RoCE-style, the largest power of two that fits with room to spare
 * (1500 -> 1024, 9000 -> 8192). */
static int mtu_for_ifname(const char *ifname, uint16_t *out)
{
	struct ifreq ifr = {0};
	int fd, err = 0;

	if (!ifname || strlen(ifname) >= sizeof(ifr.ifr_name))
		return -EINVAL;
	strcpy(ifr.ifr_name, ifname);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, SIOCGIFMTU, &ifr) < 0)
		err = -errno;
	close(fd);
	if (err)
		return err;
	for (int m = MROCE_MAX_PAYLOAD; m >= 256; m /= 2)
		if (m + 128 <= ifr.ifr_mtu) {
			*out = (uint16_t)m;
			return 0;
		}
	return -EINVAL; /* below IPv6's minimum: not a usable link */
}

/* The interface's line rate (/sys/class/net/IF/speed, Mbit/s) in bit/s;
 * 0 when it reports none (loopback, a down link) or is virtual (no
 * device behind it: a veth says 10000 whatever its peer can take). */
static uint64_t speed_of_ifname(const char *ifname)
{
	char path[96];
	long mbps = -1;
	FILE *f;

	if (!ifname || strchr(ifname, '/') ||
	    snprintf(path, sizeof(path), "/sys/class/net/%s/device", ifname) >=
		    (int)sizeof(path) ||
	    access(path, F_OK))
		return 0;
	snprintf(path, sizeof(path), "/sys/class/net/%s/speed", ifname);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%ld", &mbps) != 1)
		mbps = -1;
	fclose(f);
	return mbps > 0 ? (uint64_t)mbps * 1000000ull : 0;
}

/* The interface that holds the local address (UDP backend), into name. */
static bool ifname_of_addr(int family, const uint8_t *addr, char *name,
			   size_t len)
{
	struct ifaddrs *ifa, *i;
	bool found = false;

	if (getifaddrs(&ifa) < 0)
		return false;
	for (i = ifa; i && !found; i = i->ifa_next) {
		const void *a;

		if (!i->ifa_addr || i->ifa_addr->sa_family != family)
			continue;
		a = family == AF_INET
			    ? (const void *)&((struct sockaddr_in *)i->ifa_addr)
				      ->sin_addr
			    : (const void *)&((struct sockaddr_in6 *)i->ifa_addr)
				      ->sin6_addr;
		if (!memcmp(a, addr, family == AF_INET ? 4 : 16)) {
			snprintf(name, len, "%s", i->ifa_name);
			found = true;
		}
	}
	freeifaddrs(ifa);
	return found;
}

/* The line rate the engines use (docs/libmroce.md, link_mbps): configured,
 * else the interface's (AF_XDP: its own; UDP: the one holding the local
 * address), else the engine's default. */
static void link_rate(struct mroce_ep *ep, const struct mroce_ep_cfg *cfg)
{
	char name[IF_NAMESIZE];
	uint64_t bps = 0;

	for (int i = 0; i < 2; i++)
		if (cfg->eng[i].transport && cfg->eng[i].link_bps)
			bps = cfg->eng[i].link_bps;
	if (bps) {
		ep->link_bps = bps;
		ep->link_src = "configured";
		return;
	}
	if (ep->afxdp)
		bps = speed_of_ifname(cfg->io.ifname);
	else if (ifname_of_addr(ep->family, ep->local, name, sizeof(name)))
		bps = speed_of_ifname(name);
	ep->link_bps = bps ? bps : MROCE_DEFAULT_LINK_BPS;
	ep->link_src = bps ? "interface" : "default";
}

uint64_t mroce_ep_link_bps(const struct mroce_ep *ep, const char **src)
{
	if (src)
		*src = ep->link_src;
	return ep->link_bps;
}

static struct ep_eng *eng_of(struct mroce_ep *ep, enum mroce_transport t)
{
	struct ep_eng *g;

	if (t != MROCE_TRANSPORT_METAROCE && t != MROCE_TRANSPORT_ROCEV2)
		return NULL;
	g = &ep->eng[t == MROCE_TRANSPORT_ROCEV2];
	return g->e ? g : NULL;
}

/* ------------------------------------------------------------------ */
/* Open / close                                                         */
/* ------------------------------------------------------------------ */
static int eng_open(struct mroce_ep *ep, struct ep_eng *g,
		    const struct mroce_engine_cfg *in, uint8_t transport,
		    const char *ifname)
{
	struct mroce_engine_cfg ec = *in;
	int err;

	ec.transport = transport;
	ec.link_bps = ep->link_bps; /* link_rate(): never 0 */
	if (!ec.mtu && ep->afxdp) {
		err = mtu_for_ifname(ifname, &ec.mtu);
		if (err < 0)
			return err;
	}
	if (ep->afxdp && transport == MROCE_TRANSPORT_METAROCE) {
		/* Connection slots index the XDP program's per-connection
		 * arrays. */
		if (!ec.max_conns)
			ec.max_conns = MROCE_MAX_CONNS;
		if (ec.max_conns > MROCE_MAX_CONNS)
			return -EINVAL;
	}
	if (ec.seed) {
		/* Reproducible runs: derive the cookie key from the seed. */
		for (int i = 0; i < 16; i++)
			ec.secret[i] = (uint8_t)(ec.seed >> (8 * (i & 7))) ^
				       (uint8_t)i;
	} else {
		err = mroce_random_bytes(&ec.seed, sizeof(ec.seed));
		if (!err)
			err = mroce_random_bytes(ec.secret, sizeof(ec.secret));
		if (err < 0)
			return err;
	}
	mroce_engine_cfg_default(&ec);
	err = mroce_engine_create(&ec, &g->e);
	if (err < 0)
		return err;
	g->transport = transport;
	g->mtu = ec.mtu;
	g->last_family = 0xff; /* matches no real family */
	if (transport == MROCE_TRANSPORT_METAROCE && ep->afxdp) {
		ep->mr_ids = calloc(ec.max_conns, sizeof(*ep->mr_ids));
		if (!ep->mr_ids)
			return -ENOMEM;
		ep->mr_nslots = ec.max_conns;
	}
	return 0;
}

/* Receive queues of ifname: the rx-N entries of its sysfs queues
 * directory (of the caller's network namespace), at least 1, at most
 * MROCE_MAX_QUEUES (the XSKMAP's size). */
static int rx_queue_count(const char *ifname)
{
	char path[64 + IF_NAMESIZE];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	if (!ifname || strlen(ifname) >= IF_NAMESIZE || strchr(ifname, '/'))
		return -EINVAL;
	snprintf(path, sizeof(path), "/sys/class/net/%s/queues", ifname);
	dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? -ENODEV : -errno;
	while ((d = readdir(dir)))
		if (!strncmp(d->d_name, "rx-", 3))
			n++;
	closedir(dir);
	if (n < 1)
		n = 1;
	return n > MROCE_MAX_QUEUES ? MROCE_MAX_QUEUES : n;
}

/* Open the backend(s): one on ic->queue, or one per receive queue. */
static int ep_open_ios(struct mroce_ep *ep, struct mroce_io_cfg *ic,
		       bool all_queues)
{
	int n = 1, err;

	if (all_queues && ep->afxdp) {
		n = rx_queue_count(ic->ifname);
		if (n < 0)
			return n;
	}
	ep->ios = calloc((size_t)n, sizeof(*ep->ios));
	ep->qids = calloc((size_t)n, sizeof(*ep->qids));
	if (!ep->ios || !ep->qids)
		return -ENOMEM;
	/* Zero-copy buffers only with one backend: several take packets
	 * by source port, and a buffer belongs to one backend. */
	if (ep->afxdp && n == 1 && !ic->tx_slots)
		ic->tx_slots = EP_TX_SLOTS;
	else if (n > 1)
		ic->tx_slots = 0;
	for (int q = 0; q < n; q++) {
		if (n > 1)
			ic->queue = (uint32_t)q;
		err = mroce_io_open(ic, &ep->ios[q]);
		if (err < 0)
			return err;
		ep->qids[q] = ic->queue;
		ep->nios = q + 1;
	}
	ep->io = ep->ios[0];
	if (n == 1)
		return 0;
	ep->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ep->epfd < 0)
		return -errno;
	for (int q = 0; q < n; q++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = q};
		int fd = mroce_io_fd(ep->ios[q]);

		if (fd >= 0 && epoll_ctl(ep->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
			return -errno;
	}
	return 0;
}

/* The engines, the backend kind and the address family asked for are
 * ones the endpoint can run. */
static int cfg_check(const struct mroce_ep_cfg *cfg)
{
	if ((cfg->eng[0].transport &&
	     cfg->eng[0].transport != MROCE_TRANSPORT_METAROCE) ||
	    (cfg->eng[1].transport &&
	     cfg->eng[1].transport != MROCE_TRANSPORT_ROCEV2) ||
	    (!cfg->eng[0].transport && !cfg->eng[1].transport))
		return -EINVAL;
	if (cfg->io.kind != MROCE_IO_UDP && cfg->io.kind != MROCE_IO_AFXDP)
		return -EINVAL;
	if (cfg->io.family != AF_INET && cfg->io.family != AF_INET6)
		return -EINVAL;
	if (cfg->io.kind == MROCE_IO_AFXDP &&
	    (!cfg->io.ifname || !mroce_io_afxdp_conn_add ||
	     !mroce_io_afxdp_conn_del))
		return cfg->io.ifname ? -ENOTSUP : -EINVAL;
	return 0;
}

/* Each engine's transmit scratch, once the backend is open. */
static int tx_bufs_alloc(struct mroce_ep *ep)
{
	ep->txcap = MROCE_MAX_PAYLOAD + 256;
	if (ep->nios == 1) {
		uint32_t zcap;

		/* The engine gets one capacity for every buffer: the
		 * smaller of the zero-copy buffers' and the scratch's. */
		ep->zc = mroce_io_tx_bufs(ep->io, NULL, 0, &zcap) == 0;
		if (ep->zc && zcap < ep->txcap)
			ep->txcap = zcap;
	}
	for (int i = 0; i < 2; i++) {
		if (!ep->eng[i].e)
			continue;
		ep->eng[i].txbuf = malloc(EP_TX_BATCH * ep->txcap);
		if (!ep->eng[i].txbuf)
			return -ENOMEM;
	}
	return 0;
}

int mroce_ep_open(const struct mroce_ep_cfg *cfg, struct mroce_ep **out)
{
	struct mroce_io_cfg ic;
	struct mroce_ep *ep;
	uint16_t mtu = 0;
	int err;

	if (!cfg || !out)
		return -EINVAL;
	*out = NULL;
	err = cfg_check(cfg);
	if (err < 0)
		return err;
	ic = cfg->io;
	if (!ic.mroce_port)
		ic.mroce_port = MROCE_UDP_PORT;
	if (!ic.rocev2_port)
		ic.rocev2_port = ROCEV2_UDP_PORT;
	if (ic.mroce_port == ic.rocev2_port)
		return -EINVAL;

	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	ep->afxdp = ic.kind == MROCE_IO_AFXDP;
	ep->epfd = -1;
	ep->family = ic.family;
	memcpy(ep->local, ic.local_addr, 16);
	link_rate(ep, cfg);
	for (int i = 0; i < 2; i++) {
		struct ep_eng *g = &ep->eng[i];

		if (!cfg->eng[i].transport)
			continue;
		err = eng_open(ep, g, &cfg->eng[i], cfg->eng[i].transport,
			       ic.ifname);
		if (err < 0)
			goto fail;
		g->port = i ? ic.rocev2_port : ic.mroce_port;
		if (g->mtu > mtu)
			mtu = g->mtu;
	}

	if (!ic.frame_size)
		ic.frame_size = 4096;
	if (!ic.nframes)
		ic.nframes = 4096;
	if (mtu > 3072)
		ic.multi_buffer = true; /* frame + headers > one 4 KiB frame */
	if (!ic.sport_min && !ic.sport_max) {
		ic.sport_min = MROCE_SPORT_MIN;
		ic.sport_max = MROCE_SPORT_MAX;
	}
	err = ep_open_ios(ep, &ic, cfg->all_queues);
	if (err < 0)
		goto fail;

	err = tx_bufs_alloc(ep);
	if (err < 0)
		goto fail;
	if (ep->afxdp && ep->eng[0].e) {
		/* the XDP program's copy of the paths (docs/xdp.md) */
		struct mroce_engine_pub pub;

		err = mroce_io_afxdp_pub(ep->io, &pub);
		if (err < 0)
			goto fail;
		mroce_engine_set_pub(ep->eng[0].e, &pub);
		ep->ack_offload = !cfg->no_ack_offload;
	}
	*out = ep;
	return 0;
fail:
	mroce_ep_close(ep);
	return err;
}

void mroce_ep_close(struct mroce_ep *ep)
{
	if (!ep)
		return;
	if (ep->io && ep->afxdp) {
		/* Entries belong to us, not to the backend: remove them. */
		for (uint32_t s = 0; s < ep->mr_nslots; s++)
			if (ep->mr_ids[s])
				(void)mroce_io_afxdp_conn_del(
					ep->io, MROCE_CONN_METAROCE,
					ep->mr_ids[s]);
		for (uint32_t i = 0; i < ep->nqpns; i++)
			(void)mroce_io_afxdp_conn_del(ep->io, MROCE_CONN_ROCEV2,
						      ep->qpns[i]);
	}
	for (int q = ep->nios - 1; q >= 0; q--)
		mroce_io_close(ep->ios[q]);
	if (ep->epfd >= 0)
		close(ep->epfd);
	free(ep->ios);
	free(ep->qids);
	for (int i = 0; i < 2; i++) {
		mroce_engine_destroy(ep->eng[i].e);
		free(ep->eng[i].peers);
		free(ep->eng[i].txbuf);
	}
	free(ep->mr_ids);
	free(ep->qpns);
	free(ep);
}

struct mroce_engine *mroce_ep_engine(struct mroce_ep *ep,
				     enum mroce_transport t)
{
	struct ep_eng *g = ep ? eng_of(ep, t) : NULL;

	return g ? g->e : NULL;
}

struct mroce_io *mroce_ep_io(struct mroce_ep *ep)
{
	return ep ? ep->io : NULL;
}

int mroce_ep_nqueues(const struct mroce_ep *ep)
{
	return ep ? ep->nios : 0;
}

struct mroce_io *mroce_ep_queue_io(struct mroce_ep *ep, int i,
				   uint32_t *queue)
{
	if (!ep || i < 0 || i >= ep->nios)
		return NULL;
	if (queue)
		*queue = ep->qids[i];
	return ep->ios[i];
}

void mroce_ep_io_stats(const struct mroce_ep *ep, struct mroce_io_stats *s)
{
	memset(s, 0, sizeof(*s));
	if (!ep)
		return;
	for (int q = 0; q < ep->nios; q++) {
		struct mroce_io_stats one;

		mroce_io_get_stats(ep->ios[q], &one);
#define MROCE_X_SUM(n) s->n += one.n;
		MROCE_IO_STATS(MROCE_X_SUM)
#undef MROCE_X_SUM
	}
}

int mroce_ep_fd(const struct mroce_ep *ep)
{
	if (!ep)
		return -1;
	return ep->epfd >= 0 ? ep->epfd : mroce_io_fd(ep->io);
}

uint16_t mroce_ep_mtu(const struct mroce_ep *ep)
{
	uint16_t m = 0;

	if (!ep)
		return 0;
	for (int i = 0; i < 2; i++)
		if (ep->eng[i].e && ep->eng[i].mtu > m)
			m = ep->eng[i].mtu;
	return m;
}

/* ------------------------------------------------------------------ */
/* Peers                                                                */
/* ------------------------------------------------------------------ */
/* Remember the address of engine peer `id` for transmit. */
static int note_peer(struct ep_eng *g, int id, const struct mroce_peer_addr *a)
{
	if (id >= g->npeers) {
		int cap = g->npeers ? g->npeers : 16;
		struct mroce_peer_addr *np;

		while (cap <= id)
			cap *= 2;
		np = realloc(g->peers, (size_t)cap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		memset(np + g->npeers, 0,
		       (size_t)(cap - g->npeers) * sizeof(*np));
		g->peers = np;
		g->npeers = cap;
	}
	g->peers[id] = *a;
	return 0;
}

static int peer_for(struct mroce_ep *ep, struct ep_eng *g, uint8_t family,
		    const uint8_t addr[16])
{
	struct mroce_peer_addr a = {.family = family};
	int id, err;

	if (family == g->last_family && !memcmp(addr, g->last_src, 16))
		return g->last_peer;
	memcpy(a.addr, addr, 16);
	memcpy(a.local, ep->local, 16);
	id = mroce_peer_add(g->e, &a);
	if (id < 0)
		return id;
	err = note_peer(g, id, &a);
	if (err < 0)
		return err;
	g->last_family = family;
	memcpy(g->last_src, addr, 16);
	g->last_peer = id;
	return id;
}

int mroce_ep_peer_by_name(struct mroce_ep *ep, enum mroce_transport t,
			  const char *s)
{
	uint8_t family, addr[16];
	struct ep_eng *g;
	int err;

	if (!ep)
		return -EINVAL;
	err = mroce_parse_addr(s, &family, addr);
	if (err < 0)
		return err;
	g = eng_of(ep, t);
	if (!g)
		return -ENOENT;
	if (family != ep->family)
		return -EAFNOSUPPORT;
	return peer_for(ep, g, family, addr);
}

const struct mroce_peer_addr *mroce_ep_peer_addr(const struct mroce_ep *ep,
						 enum mroce_transport t,
						 int peer)
{
	const struct ep_eng *g;

	if (!ep || peer < 0)
		return NULL;
	g = eng_of((struct mroce_ep *)ep, t);
	if (!g || peer >= g->npeers || !g->peers[peer].family)
		return NULL;
	return &g->peers[peer];
}

/* ------------------------------------------------------------------ */
/* Events -> XDP conns map                                              */
/* ------------------------------------------------------------------ */
static int qpn_track(struct mroce_ep *ep, uint32_t qpn, bool add)
{
	for (uint32_t i = 0; i < ep->nqpns; i++) {
		if (ep->qpns[i] != qpn)
			continue;
		if (!add)
			ep->qpns[i] = ep->qpns[--ep->nqpns];
		return 0;
	}
	if (!add)
		return 0;
	if (ep->nqpns == ep->qpns_cap) {
		uint32_t cap = ep->qpns_cap ? ep->qpns_cap * 2 : 64;
		uint32_t *n = realloc(ep->qpns, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		ep->qpns = n;
		ep->qpns_cap = cap;
	}
	ep->qpns[ep->nqpns++] = qpn;
	return 0;
}

/* The connection's peer address, which the XDP program compares with the
 * source of every frame it would answer or take telemetry from. A peer
 * the endpoint does not know leaves it zero: XDP then answers nothing. */
static void conn_peer(const struct mroce_ep *ep, int peer,
		      struct mroce_conn_val *cv)
{
	const struct mroce_peer_addr *a =
		mroce_ep_peer_addr(ep, MROCE_TRANSPORT_METAROCE, peer);

	if (!a)
		return;
	cv->peer_family = a->family == AF_INET6 ? MROCE_PEER_IPV6
						 : MROCE_PEER_IPV4;
	memcpy(cv->peer_addr, a->addr,
	       a->family == AF_INET6 ? 16 : 4);
}

static int apply_event(struct mroce_ep *ep, const struct mroce_engine_event *v)
{
	struct mroce_conn_val cv = {0};
	int err;

	switch (v->type) {
	case MROCE_EV_CONN_UP:
		if (v->slot >= ep->mr_nslots)
			return -EINVAL;
		cv.slot = v->slot;
		cv.peer_conn_id = v->peer_id;
		conn_peer(ep, v->peer, &cv);
		/* XDP answers for the connection once its ACKs can carry the
		 * id the peer expects and go only to the peer. The engine
		 * itself keeps the slot's rx_state and scoreboard: it resets
		 * them when a connection takes the slot and when it leaves,
		 * in order with its own publishing (mroce_engine_set_pub). */
		if (ep->ack_offload && v->peer_id && cv.peer_family)
			cv.flags |= MROCE_CONN_F_ACK_OFFLOAD;
		err = mroce_io_afxdp_conn_add(ep->io, MROCE_CONN_METAROCE,
					      v->id, &cv);
		if (err < 0)
			return err;
		ep->mr_ids[v->slot] = v->id;
		return 0;
	case MROCE_EV_CONN_DOWN:
		if (v->slot < ep->mr_nslots && ep->mr_ids[v->slot] == v->id)
			ep->mr_ids[v->slot] = 0;
		err = mroce_io_afxdp_conn_del(ep->io, MROCE_CONN_METAROCE,
					      v->id);
		return err == -ENOENT ? 0 : err;
	case MROCE_EV_QP_UP:
		/* Track first: close() must be able to remove it. */
		err = qpn_track(ep, v->id, true);
		if (err < 0)
			return err;
		err = mroce_io_afxdp_conn_add(ep->io, MROCE_CONN_ROCEV2, v->id,
					      &cv);
		if (err < 0)
			(void)qpn_track(ep, v->id, false);
		return err;
	case MROCE_EV_QP_DOWN:
		(void)qpn_track(ep, v->id, false);
		err = mroce_io_afxdp_conn_del(ep->io, MROCE_CONN_ROCEV2, v->id);
		return err == -ENOENT ? 0 : err;
	default:
		return 0;
	}
}

int mroce_ep_sync(struct mroce_ep *ep)
{
	int first = 0;

	if (!ep)
		return -EINVAL;
	for (int i = 0; i < 2; i++) {
		struct mroce_engine_event v;

		if (!ep->eng[i].e)
			continue;
		while (mroce_engine_poll_event(ep->eng[i].e, &v) == 1) {
			int err;

			if (!ep->afxdp)
				continue; /* UDP: the kernel steers by port */
			err = apply_event(ep, &v);
			if (err < 0 && !first)
				first = err;
		}
	}
	return first;
}

/* ------------------------------------------------------------------ */
/* The pump                                                             */
/* ------------------------------------------------------------------ */
static int pump_rx_io(struct mroce_ep *ep, struct mroce_io *io, uint64_t now)
{
	struct mroce_io_rx rx[EP_RX_BATCH];
	int total = 0;

	for (int round = 0; round < EP_RX_ROUNDS; round++) {
		int n = mroce_io_rx(io, rx, EP_RX_BATCH);

		if (n <= 0)
			return total ? total : n;
		for (int i = 0; i < n; i++) {
			struct mroce_rx_meta m = {
				.sport = rx[i].sport,
				.ce = rx[i].ce,
			};
			struct ep_eng *g;

			if (ep->eng[0].e && rx[i].dport == ep->eng[0].port)
				g = &ep->eng[0];
			else if (ep->eng[1].e &&
				 rx[i].dport == ep->eng[1].port)
				g = &ep->eng[1];
			else
				continue; /* a transport we do not run */
			m.peer = peer_for(ep, g, rx[i].family, rx[i].src);
			if (m.peer < 0)
				continue;
			/* Drops are counted by the engine. */
			(void)mroce_engine_rx(g->e, &m, rx[i].data, rx[i].len,
					      now);
		}
		mroce_io_rx_release(io, rx, n);
		total += n;
		if (n < EP_RX_BATCH)
			break;
	}
	return total;
}

/* Every backend gets its turn; the first failure is reported after. */
static int pump_rx(struct mroce_ep *ep, uint64_t now)
{
	int total = 0, first = 0;

	for (int q = 0; q < ep->nios; q++) {
		int n = pump_rx_io(ep, ep->ios[q], now);

		if (n < 0 && !first)
			first = n;
		else if (n > 0)
			total += n;
	}
	return total ? total : first;
}

static struct mroce_io_tx io_tx_of(const struct ep_eng *g,
				   const struct mroce_tx_pkt *p)
{
	return (struct mroce_io_tx){
		.data = p->buf,
		.len = p->len,
		.dst = p->peer >= 0 && p->peer < g->npeers &&
				       g->peers[p->peer].family
			       ? &g->peers[p->peer]
			       : NULL,
		.sport = p->sport,
		.dport = p->dport,
		.ect = p->ect,
	};
}

/* Several backends: the pending packets go out per queue (source port %
 * queues: a copy-mode AF_XDP socket transmits on its own queue, and a
 * veth delivers on the same-numbered queue of its peer, so this spreads
 * the peer's receive load like the sprayed paths). The order within a
 * queue is kept; what a backend refuses stays pending, compacted to the
 * front. Returns packets sent, *full when anything stays. */
static int pump_tx_spread(struct mroce_ep *ep, struct ep_eng *g, bool *full)
{
	struct mroce_io_tx tx[EP_TX_BATCH];
	uint8_t idx[EP_TX_BATCH];
	bool keep[EP_TX_BATCH] = {0};
	int n = g->tx_n, sent = 0, m = 0;

	for (int q = 0; q < ep->nios; q++) {
		int k = 0, r;

		for (int i = 0; i < n; i++) {
			const struct mroce_tx_pkt *p = &g->tx[g->tx_head + i];

			if (p->sport % ep->nios != q)
				continue;
			tx[k] = io_tx_of(g, p);
			idx[k++] = (uint8_t)i;
		}
		if (!k)
			continue;
		r = mroce_io_tx(ep->ios[q], tx, k);
		if (r < 0)
			continue; /* unsendable: lost as on a wire */
		sent += r;
		for (int j = r; j < k; j++)
			keep[idx[j]] = true;
	}
	for (int i = 0; i < n; i++)
		if (keep[i])
			g->tx[m++] = g->tx[g->tx_head + i];
	g->tx_head = 0;
	g->tx_n = m;
	*full = m > 0;
	return sent;
}

/* One engine's transmit: returns packets sent, and whether the backend
 * pushed back (*full). */
static int pump_tx_eng(struct mroce_ep *ep, struct ep_eng *g, uint64_t now,
		       bool *full)
{
	struct mroce_io_tx tx[EP_TX_BATCH];
	int n, sent;

	*full = false;
	if (!g->tx_n) {
		int nz = g->nzb;

		/* Zero-copy: the engine writes into the backend's buffers;
		 * when they run short, the rest into scratch (copied). The
		 * ones it did not fill stay here for the next round. */
		if (ep->zc && nz < EP_TX_BATCH) {
			uint32_t cap;
			int k = mroce_io_tx_bufs(ep->io, g->zb + nz,
						 EP_TX_BATCH - nz, &cap);

			if (k > 0)
				g->nzb = nz += k;
		}
		for (int i = 0; i < EP_TX_BATCH; i++)
			g->tx[i].buf =
				i < nz ? g->zb[i] : g->txbuf + i * ep->txcap;
		n = mroce_engine_tx(g->e, g->tx, EP_TX_BATCH, ep->txcap, now);
		if (n < 0)
			n = 0;
		if (n && nz) {
			int used = n < nz ? n : nz;

			memmove(g->zb, g->zb + used,
				(size_t)(nz - used) * sizeof(g->zb[0]));
			g->nzb = nz - used;
		}
		if (!n)
			return 0;
		g->tx_head = 0;
		g->tx_n = n;
	}
	n = g->tx_n;
	if (ep->nios > 1)
		return pump_tx_spread(ep, g, full);
	if (n <= 0 || n > EP_TX_BATCH)
		return 0; /* cannot happen; tells the compiler tx[] is set */
	for (int i = 0; i < n; i++)
		tx[i] = io_tx_of(g, &g->tx[g->tx_head + i]);
	sent = mroce_io_tx(ep->io, tx, n);
	if (sent < 0) {
		/* Unsendable batch (e.g. unknown peer): lost as on a wire;
		 * the transport retransmits or fails it. Its zero-copy
		 * buffers go back (put ignores the scratch ones). */
		for (int i = 0; i < n; i++)
			mroce_io_tx_bufs_put(ep->io,
					     &g->tx[g->tx_head + i].buf, 1);
		g->tx_n = 0;
		return 0;
	}
	g->tx_head += sent;
	g->tx_n -= sent;
	*full = g->tx_n > 0;
	return sent;
}

static int pump_tx(struct mroce_ep *ep, uint64_t now)
{
	int total = 0;
	bool busy[2] = {ep->eng[0].e != NULL, ep->eng[1].e != NULL};

	for (int round = 0; round < EP_TX_ROUNDS && (busy[0] || busy[1]);
	     round++) {
		for (int i = 0; i < 2; i++) {
			bool full;
			int k;

			if (!busy[i])
				continue;
			k = pump_tx_eng(ep, &ep->eng[i], now, &full);
			total += k;
			/* Stop on pressure or when the engine ran dry. */
			if (full)
				return total;
			if (k < EP_TX_BATCH)
				busy[i] = false;
		}
	}
	return total;
}

int mroce_ep_flush(struct mroce_ep *ep, uint64_t now)
{
	int err;

	if (!ep)
		return -EINVAL;
	/* Events first: nothing leaves before its id is registered. */
	err = mroce_ep_sync(ep);
	if (err < 0) {
		(void)pump_tx(ep, now);
		return err;
	}
	return pump_tx(ep, now);
}

int mroce_ep_progress_rx(struct mroce_ep *ep, uint64_t now)
{
	int rx, err, serr;

	if (!ep)
		return -EINVAL;
	rx = pump_rx(ep, now);
	serr = mroce_ep_sync(ep);
	for (int i = 0; i < 2; i++)
		if (ep->eng[i].e &&
		    mroce_engine_next_timer(ep->eng[i].e, now) <= now)
			mroce_engine_tick(ep->eng[i].e, now);
	err = mroce_ep_sync(ep);
	if (rx < 0)
		return rx;
	return serr < 0 ? serr : err < 0 ? err : rx;
}

int mroce_ep_progress(struct mroce_ep *ep, uint64_t now)
{
	int rx, tx;

	if (!ep)
		return -EINVAL;
	rx = mroce_ep_progress_rx(ep, now);
	tx = pump_tx(ep, now);
	if (rx < 0)
		return rx;
	return rx + tx;
}

uint64_t mroce_ep_next_timer(const struct mroce_ep *ep, uint64_t now)
{
	uint64_t t = UINT64_MAX;

	if (!ep)
		return UINT64_MAX;
	for (int i = 0; i < 2; i++) {
		const struct ep_eng *g = &ep->eng[i];
		uint64_t w;

		if (!g->e)
			continue;
		if (g->tx_n)
			return now; /* refused packets wait to be sent */
		w = mroce_engine_next_timer(g->e, now);
		if (w < t)
			t = w;
	}
	return t;
}
