// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce_xdp_send - test helper for tests/net/xdp_ns.sh.
 *
 *   mroce_xdp_send [--dmac MAC] [--src IP] [--dst IP] IFNAME KIND...
 *	send one raw frame per KIND through an AF_PACKET socket on IFNAME,
 *	built in memory with the codec (no pcap, no external sender):
 *	  badver   version 1
 *	  badop    opcode 0x7f
 *	  noconn   SEND to conn 0x4242 (unknown)
 *	  arp      ARP request for --dst
 *	  udp53    UDP to port 53
 *   mroce_xdp_send --ping IP [--timeout MS]
 *	one ICMP echo (raw socket); exit 0 when the reply arrives
 *
 * Exit status: 0 success, 1 failure (message on stderr), 2 usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mroce/codec.h"

#define CONN 0x1001u
#define PATH 3
#define GEN 2

static uint8_t dmac[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
static uint8_t smac[6];
static struct in_addr src_ip, dst_ip;

static int die(const char *what)
{
	fprintf(stderr, "mroce_xdp_send: %s: %s\n", what, strerror(errno));
	return 1;
}

static int build_mr(uint8_t *buf, size_t cap, uint8_t op, uint32_t conn,
		    uint32_t psn)
{
	static const uint8_t payload[256];
	struct mroce_frame_spec s = {.vlan = -1};
	struct mroce_meta_pkt p = {0};
	size_t hl;
	int l4;

	memcpy(s.dmac, dmac, 6);
	memcpy(s.smac, smac, 6);
	s.l3.family = AF_INET;
	memcpy(s.l3.src, &src_ip, 4);
	memcpy(s.l3.dst, &dst_ip, 4);
	s.l3.ttl = 64;
	s.sport = 0xc123;
	s.dport = MROCE_UDP_PORT;
	p.opcode = op;
	p.conn_id = conn;
	p.path = PATH;
	p.path_gen = GEN;
	p.psn = psn;
	p.tsval = 0x01020304;
	p.msg_len = sizeof(payload);
	if (op == MROCE_OP_SEND) {
		p.payload = payload;
		p.payload_len = sizeof(payload);
	}
	hl = mroce_frame_hdr_len(&s);
	l4 = mroce_meta_build(&p, buf + hl, cap - hl);
	if (l4 < 0)
		return l4;
	return mroce_frame_build(&s, (size_t)l4, buf, cap);
}

static int build_kind(const char *kind, uint8_t *b, size_t cap)
{
	int n;

	if (!strcmp(kind, "noconn"))
		return build_mr(b, cap, MROCE_OP_SEND, 0x4242, 1);
	if (!strcmp(kind, "badver") || !strcmp(kind, "badop")) {
		n = build_mr(b, cap, MROCE_OP_SEND, CONN, 1000);
		if (n > 0 && kind[3] == 'v')
			b[42] = 1; /* version */
		else if (n > 0)
			b[43] = 0x7f; /* opcode */
		return n;
	}
	if (!strcmp(kind, "udp53")) {
		n = build_mr(b, cap, MROCE_OP_SEND, CONN, 1000);
		if (n > 0) {
			/* UDP checksum is 0 on IPv4: no fix-up needed */
			b[36] = 0;
			b[37] = 53;
		}
		return n;
	}
	if (!strcmp(kind, "arp")) {
		static const uint8_t bcast[6] = {0xff, 0xff, 0xff,
						 0xff, 0xff, 0xff};

		memset(b, 0, 60);
		memcpy(b, bcast, 6);
		memcpy(b + 6, smac, 6);
		b[12] = 0x08;
		b[13] = 0x06;
		b[15] = 1;    /* Ethernet */
		b[16] = 0x08; /* IPv4 */
		b[18] = 6;
		b[19] = 4;
		b[21] = 1; /* request */
		memcpy(b + 22, smac, 6);
		memcpy(b + 28, &src_ip, 4);
		memcpy(b + 38, &dst_ip, 4);
		return 60;
	}
	return -MROCE_E_INVAL;
}

static int send_frames(const char *ifname, char **kinds, int n)
{
	struct sockaddr_ll sll = {.sll_family = AF_PACKET};
	struct ifreq ifr;
	uint8_t buf[2048];
	int s;

	s = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (s < 0)
		return die("socket(AF_PACKET)");
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(s, SIOCGIFHWADDR, &ifr))
		return die(ifname);
	memcpy(smac, ifr.ifr_hwaddr.sa_data, 6);
	sll.sll_ifindex = (int)if_nametoindex(ifname);
	sll.sll_halen = 6;
	for (int i = 0; i < n; i++) {
		int len = build_kind(kinds[i], buf, sizeof(buf));

		if (len < 0) {
			fprintf(stderr, "mroce_xdp_send: bad kind '%s' (%s)\n",
				kinds[i], mroce_err_name(len));
			close(s);
			return 2;
		}
		if (sendto(s, buf, (size_t)len, 0, (struct sockaddr *)&sll,
			   sizeof(sll)) != len)
			return die("sendto");
	}
	close(s);
	return 0;
}

static uint16_t icmp_csum(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)b[i] << 8 | b[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

static int do_ping(int timeout_ms)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr = dst_ip};
	struct icmphdr h = {.type = ICMP_ECHO};
	uint8_t rx[1500];
	struct pollfd pfd;
	int s;

	s = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
	if (s < 0)
		return die("socket(ICMP)");
	h.un.echo.id = htons((uint16_t)getpid());
	h.un.echo.sequence = htons(1);
	h.checksum = icmp_csum(&h, sizeof(h));
	if (sendto(s, &h, sizeof(h), 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return die("sendto(ICMP)");
	pfd.fd = s;
	pfd.events = POLLIN;
	while (poll(&pfd, 1, timeout_ms) > 0) {
		ssize_t n = recv(s, rx, sizeof(rx), 0);
		size_t ihl;

		if (n < 20)
			continue;
		ihl = (rx[0] & 0xf) * 4u;
		if ((size_t)n >= ihl + 8 && rx[ihl] == ICMP_ECHOREPLY &&
		    !memcmp(rx + 12, &dst_ip, 4)) {
			close(s);
			return 0;
		}
	}
	close(s);
	fprintf(stderr, "mroce_xdp_send: no echo reply from %s\n",
		inet_ntoa(dst_ip));
	return 1;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"dmac", required_argument, NULL, 'm'},
		{"src", required_argument, NULL, 's'},
		{"dst", required_argument, NULL, 'd'},
		{"ping", required_argument, NULL, 'p'},
		{"timeout", required_argument, NULL, 't'},
		{0}};
	int c, timeout = 3000;
	bool ping = false;

	inet_pton(AF_INET, "10.0.0.2", &src_ip);
	inet_pton(AF_INET, "10.0.0.1", &dst_ip);
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (sscanf(optarg, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx",
				   &dmac[0], &dmac[1], &dmac[2], &dmac[3],
				   &dmac[4], &dmac[5]) != 6)
				return 2;
			break;
		case 's':
			if (inet_pton(AF_INET, optarg, &src_ip) != 1)
				return 2;
			break;
		case 'p':
			ping = true;
			/* fall through */
		case 'd':
			if (inet_pton(AF_INET, optarg, &dst_ip) != 1)
				return 2;
			break;
		case 't':
			timeout = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: see the comment at the top of "
					"tests/net/xdp_send.c\n");
			return 2;
		}
	}
	if (ping)
		return do_ping(timeout);
	if (optind + 2 > argc) {
		fprintf(stderr, "usage: mroce_xdp_send [--dmac MAC] [--src IP] "
				"[--dst IP] IFNAME KIND...\n");
		return 2;
	}
	return send_frames(argv[optind], argv + optind + 1, argc - optind - 1);
}
