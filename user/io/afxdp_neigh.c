// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The AF_XDP backend's neighbour cache (afxdp_neigh.h): route and
 * neighbour lookups over rtnetlink, cached per destination address.
 */
#include "afxdp_neigh.h"

#include <errno.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define NEIGH_TTL_NS 1000000000ull
#define NEIGH_NEG_TTL_NS 100000000ull

enum neigh_state {
	NEIGH_EMPTY = 0,
	NEIGH_OK,     /* from the kernel's neighbour table */
	NEIGH_NONE,   /* the kernel has no usable entry */
	NEIGH_LEARNT, /* source MAC of a frame received from the address */
};

static size_t addr_len(uint8_t family)
{
	return family == AF_INET6 ? 16 : 4;
}

int afxdp_neigh_open(struct afxdp_neigh_cache *nc, int ifindex)
{
	struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
	struct sockaddr_nl local = {.nl_family = AF_NETLINK};

	nc->ifindex = ifindex;
	nc->nl_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (nc->nl_fd < 0)
		return -errno;
	/* a lookup may wait at most this long (transmit path) */
	if (setsockopt(nc->nl_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    bind(nc->nl_fd, (struct sockaddr *)&local, sizeof(local)))
		return -errno;
	return 0;
}

void afxdp_neigh_close(struct afxdp_neigh_cache *nc)
{
	if (nc->nl_fd >= 0)
		close(nc->nl_fd);
	nc->nl_fd = -1;
}

/* Append an attribute to the request at msg (cap bytes in all). */
static void nl_put_attr(void *msg, size_t cap, uint16_t type, const void *data,
			size_t len)
{
	struct nlmsghdr *nh = msg;
	struct rtattr *rta =
		(struct rtattr *)((uint8_t *)msg + NLMSG_ALIGN(nh->nlmsg_len));

	if (NLMSG_ALIGN(nh->nlmsg_len) + RTA_SPACE(len) > cap)
		return; /* callers size their buffers: cannot happen */
	rta->rta_type = type;
	rta->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), data, len);
	nh->nlmsg_len = NLMSG_ALIGN(nh->nlmsg_len) + RTA_SPACE(len);
}

/* Send one request and wait (bounded by SO_RCVTIMEO) for its answer.
 * Returns the reply's length in resp, or a negative errno (the kernel's
 * error for NLMSG_ERROR). */
static int nl_call(struct afxdp_neigh_cache *nc, struct nlmsghdr *req,
		   void *resp, size_t cap)
{
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	uint32_t seq = ++nc->nl_seq;

	req->nlmsg_seq = seq;
	if (sendto(nc->nl_fd, req, req->nlmsg_len, 0,
		   (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	for (;;) {
		ssize_t n = recv(nc->nl_fd, resp, cap, 0);
		struct nlmsghdr *nh = resp;

		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		/* a stale answer to an earlier, timed-out request: skip it */
		if (!NLMSG_OK(nh, (size_t)n) || nh->nlmsg_seq != seq)
			continue;
		if (nh->nlmsg_type == NLMSG_ERROR) {
			struct nlmsgerr *e = NLMSG_DATA(nh);

			return e->error ? e->error : -ENOENT;
		}
		return (int)n;
	}
}

/* The next hop towards dst through our interface: the route's gateway, or
 * dst itself when it is on-link (or when there is no route to ask). */
static void route_nexthop(struct afxdp_neigh_cache *nc, uint8_t family,
			  const uint8_t *dst, uint8_t *nh_out)
{
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
		uint8_t attrs[64];
	} req;
	uint8_t resp[4096] __attribute__((aligned(4)));
	size_t alen = addr_len(family);
	struct nlmsghdr *nh = (struct nlmsghdr *)resp;
	struct rtattr *rta;
	int n, len;

	memcpy(nh_out, dst, alen);
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	req.nh.nlmsg_type = RTM_GETROUTE;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.rt.rtm_family = family;
	req.rt.rtm_dst_len = (uint8_t)(alen * 8);
	nl_put_attr(&req, sizeof(req), RTA_DST, dst, alen);
	nl_put_attr(&req, sizeof(req), RTA_OIF, &nc->ifindex,
		    sizeof(nc->ifindex));
	n = nl_call(nc, &req.nh, resp, sizeof(resp));
	if (n < 0 || nh->nlmsg_type != RTM_NEWROUTE)
		return;
	len = (int)RTM_PAYLOAD(nh);
	for (rta = RTM_RTA(NLMSG_DATA(nh)); RTA_OK(rta, len);
	     rta = RTA_NEXT(rta, len))
		if (rta->rta_type == RTA_GATEWAY && RTA_PAYLOAD(rta) == alen)
			memcpy(nh_out, RTA_DATA(rta), alen);
}

/* The MAC of addr in the kernel's neighbour table on our interface, if
 * the entry is usable. 0 or -ENOENT. */
static int neigh_get(struct afxdp_neigh_cache *nc, uint8_t family,
		     const uint8_t *addr, uint8_t mac[6])
{
	struct {
		struct nlmsghdr nh;
		struct ndmsg nd;
		uint8_t attrs[32];
	} req;
	uint8_t resp[1024] __attribute__((aligned(4)));
	struct nlmsghdr *nh = (struct nlmsghdr *)resp;
	struct ndmsg *nd;
	struct rtattr *rta;
	int n, len;

	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ndmsg));
	req.nh.nlmsg_type = RTM_GETNEIGH;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.nd.ndm_family = family;
	req.nd.ndm_ifindex = nc->ifindex;
	nl_put_attr(&req, sizeof(req), NDA_DST, addr, addr_len(family));
	n = nl_call(nc, &req.nh, resp, sizeof(resp));
	if (n < 0 || nh->nlmsg_type != RTM_NEWNEIGH)
		return -ENOENT;
	nd = NLMSG_DATA(nh);
	if (!(nd->ndm_state & (NUD_PERMANENT | NUD_NOARP | NUD_REACHABLE |
			       NUD_STALE | NUD_DELAY | NUD_PROBE)))
		return -ENOENT;
	len = (int)RTM_PAYLOAD(nh);
	for (rta = (struct rtattr *)((uint8_t *)nd +
				     NLMSG_ALIGN(sizeof(struct ndmsg)));
	     RTA_OK(rta, len); rta = RTA_NEXT(rta, len))
		if (rta->rta_type == NDA_LLADDR && RTA_PAYLOAD(rta) == 6) {
			memcpy(mac, RTA_DATA(rta), 6);
			return 0;
		}
	return -ENOENT;
}

static struct afxdp_neigh *neigh_slot(struct afxdp_neigh_cache *nc,
				      uint8_t family, const uint8_t *addr)
{
	/* FNV-1a over the address: cheap, and good enough to spread the
	 * handful of peers a host talks to */
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < addr_len(family); i++)
		h = (h ^ addr[i]) * 16777619u;
	return &nc->slot[(h ^ (h >> 16)) % AFXDP_NEIGH_SLOTS];
}

static bool neigh_is(const struct afxdp_neigh *n, uint8_t family,
		     const uint8_t *addr)
{
	return n->state != NEIGH_EMPTY && n->family == family &&
	       !memcmp(n->addr, addr, addr_len(family));
}

/* Destination MAC for dst. 0 or -EHOSTUNREACH. */
int afxdp_neigh_resolve(struct afxdp_neigh_cache *nc, uint8_t family,
			const uint8_t *dst, uint64_t now, uint8_t mac[6])
{
	struct afxdp_neigh *n = neigh_slot(nc, family, dst);
	uint8_t nexthop[16];
	bool hit = neigh_is(n, family, dst);

	if (hit && now < n->expires) {
		if (n->state == NEIGH_NONE)
			return -EHOSTUNREACH;
		memcpy(mac, n->mac, 6);
		return 0;
	}
	route_nexthop(nc, family, dst, nexthop);
	if (!neigh_get(nc, family, nexthop, mac)) {
		n->state = NEIGH_OK;
		n->expires = now + NEIGH_TTL_NS;
	} else if (hit && n->state == NEIGH_LEARNT) {
		/* the kernel does not know the peer but it talked to us:
		 * keep answering through the router/port it came from */
		n->expires = now + NEIGH_TTL_NS;
		memcpy(mac, n->mac, 6);
		return 0;
	} else {
		n->state = NEIGH_NONE;
		n->expires = now + NEIGH_NEG_TTL_NS;
	}
	n->family = family;
	memcpy(n->addr, dst, addr_len(family));
	if (n->state == NEIGH_NONE)
		return -EHOSTUNREACH;
	memcpy(n->mac, mac, 6);
	return 0;
}

/* A frame from src arrived with this source MAC: remember it for peers
 * the kernel has no neighbour entry for (AF_XDP traffic never creates
 * one). Never overrides what the kernel said. */
void afxdp_neigh_learn(struct afxdp_neigh_cache *nc, uint8_t family,
		       const uint8_t *src, const uint8_t mac[6])
{
	struct afxdp_neigh *n = neigh_slot(nc, family, src);

	if (neigh_is(n, family, src) && n->state != NEIGH_NONE)
		return;
	n->state = NEIGH_LEARNT;
	n->family = family;
	memcpy(n->addr, src, addr_len(family));
	memcpy(n->mac, mac, 6);
	/* expired on purpose: the next transmit asks the kernel first */
	n->expires = 0;
}
