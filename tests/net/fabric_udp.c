// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce_fabric_udp - traffic helper of the fabric tests
 * (tests/net/fabric_*.sh).
 *
 * Three small jobs that the shell cannot do with stock Debian tools:
 *   send  UDP flows from chosen source ports, with a chosen TOS (ECT), paced;
 *   recv  count UDP datagrams and their ECN field (IP_RECVTOS);
 *   ping  ICMP echo of a given size with DF set (the image has no ping).
 * Output is one line of key=value pairs, for the scripts to eval.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_FLOWS 1024
#define MAX_SIZE 65000

static const char usage_text[] =
	"NAME\n"
	"    mroce_fabric_udp - UDP/ICMP traffic helper for the fabric tests\n"
	"\n"
	"SYNOPSIS\n"
	"    mroce_fabric_udp send --dst IP --port P [--sport S] [--flows F]\n"
	"                          [--count N] [--rounds R] [--size B] [--tos "
	"T]\n"
	"                          [--pps R] [--connect]\n"
	"    mroce_fabric_udp recv --port P [--count N] [--seconds S] "
	"[--idle-ms M]\n"
	"                          [--ready FILE]\n"
	"    mroce_fabric_udp ping --dst IP [--size B] [--count N]\n"
	"\n"
	"DESCRIPTION\n"
	"    send: F sockets bound to source ports S..S+F-1 (default 40000, 1) "
	"send\n"
	"    N datagrams (default 100) of B payload bytes (default 64) "
	"round-robin\n"
	"    with IP TOS T (default 0; 2 = ECT(0)), at most R per second "
	"(default\n"
	"    unpaced). --rounds repeats this with fresh sockets each time;\n"
	"    --connect connects them (the kernel then gives each a random "
	"hash).\n"
	"    recv: counts datagrams to port P and their ECN field until N "
	"arrived,\n"
	"    S seconds passed (default 10) or, once traffic started, nothing "
	"came\n"
	"    for M ms (default 500). --ready FILE is created once the socket "
	"is\n"
	"    bound, so a script knows when to start sending.\n"
	"    ping: N (default 3) ICMP echo requests with B bytes of data "
	"(default\n"
	"    56) and DF set; each reply is awaited 1 s.\n"
	"\n"
	"OUTPUT\n"
	"    send: sent=N errors=E\n"
	"    recv: received=N bytes=B not_ect=X ect0=Y ect1=Z ce=C\n"
	"    ping: sent=N received=M\n"
	"\n"
	"EXIT STATUS\n"
	"    0 done (ping: every reply came), 1 error, 2 usage.\n";

struct opts {
	const char *dst, *ready;
	int port, sport, flows, count, rounds, size, tos, seconds, idle_ms;
	bool connect;
	double pps;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int do_send(const struct opts *o)
{
	static char buf[MAX_SIZE];
	struct sockaddr_in dst = {.sin_family = AF_INET,
				  .sin_port = htons(o->port)};
	long sent = 0, errors = 0;
	int fds[MAX_FLOWS];
	double t0 = now_s();

	if (inet_pton(AF_INET, o->dst, &dst.sin_addr) != 1) {
		fprintf(stderr, "bad --dst '%s'\n", o->dst);
		return 1;
	}
	memset(buf, 0xa5, sizeof(buf));
	for (int r = 0; r < o->rounds; r++) {
		for (int f = 0; f < o->flows; f++) {
			struct sockaddr_in src = {.sin_family = AF_INET,
						  .sin_port =
							  htons(o->sport + f)};
			int one = 1;

			fds[f] = socket(AF_INET, SOCK_DGRAM, 0);
			if (fds[f] < 0 ||
			    setsockopt(fds[f], SOL_SOCKET, SO_REUSEADDR, &one,
				       sizeof(one)) ||
			    setsockopt(fds[f], IPPROTO_IP, IP_TOS, &o->tos,
				       sizeof(o->tos)) ||
			    bind(fds[f], (void *)&src, sizeof(src))) {
				perror("socket/bind");
				return 1;
			}
			/* A connected socket gives its packets a random flow
			 * hash (sk_txhash): what the leaf must not reuse. */
			if (o->connect &&
			    connect(fds[f], (void *)&dst, sizeof(dst))) {
				perror("connect");
				return 1;
			}
		}
		for (int i = 0; i < o->count; i++) {
			if (o->pps > 0) {
				double due = t0 + sent / o->pps, t = now_s();

				/* Never catch up after a stall (a busy machine):
				 * a burst could exceed what the test calls slow. */
				if (t > due + 2 / o->pps) {
					t0 += t - due;
					due = t;
				}
				if (due > t)
					usleep((useconds_t)((due - t) * 1e6));
			}
			if (sendto(fds[i % o->flows], buf, o->size, 0,
				   o->connect ? NULL : (void *)&dst,
				   o->connect ? 0 : sizeof(dst)) < 0)
				errors++;
			else
				sent++;
		}
		for (int f = 0; f < o->flows; f++)
			close(fds[f]);
	}
	printf("sent=%ld errors=%ld\n", sent, errors);
	return 0;
}

static int do_recv(const struct opts *o)
{
	static char buf[MAX_SIZE];
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(o->port)};
	long n = 0, bytes = 0, ecn[4] = {0};
	double end = now_s() + o->seconds;
	int fd, one = 1, rcvbuf = 8 << 20;

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)) ||
	    bind(fd, (void *)&a, sizeof(a))) {
		perror("recv socket");
		return 1;
	}
	/* A deep buffer: the count, not the socket, should set the result
	 * (SO_RCVBUFFORCE as root, else whatever rmem_max allows). */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (o->ready) {
		FILE *f = fopen(o->ready, "w");

		if (f)
			fclose(f);
	}
	while (o->count <= 0 || n < o->count) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		double left = end - now_s();
		int ms = (int)(left * 1000);

		if (left <= 0)
			break;
		if (n > 0 && ms > o->idle_ms)
			ms = o->idle_ms;
		if (poll(&p, 1, ms) <= 0)
			break;
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
		struct msghdr m = {.msg_iov = &iov,
				   .msg_iovlen = 1,
				   .msg_control = cbuf,
				   .msg_controllen = sizeof(cbuf)};
		ssize_t len = recvmsg(fd, &m, 0);
		int tos = -1;

		if (len < 0)
			continue;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c;
		     c = CMSG_NXTHDR(&m, c))
			if (c->cmsg_level == IPPROTO_IP &&
			    c->cmsg_type == IP_TOS)
				tos = *(unsigned char *)CMSG_DATA(c);
		n++;
		bytes += len;
		if (tos >= 0)
			ecn[tos & 3]++;
	}
	printf("received=%ld bytes=%ld not_ect=%ld ect0=%ld ect1=%ld ce=%ld\n",
	       n, bytes, ecn[0], ecn[2], ecn[1], ecn[3]);
	close(fd);
	return 0;
}

static uint16_t csum16(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (len & 1)
		s += (uint32_t)b[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return htons((uint16_t)~s);
}

static int do_ping(const struct opts *o)
{
	static uint8_t pkt[MAX_SIZE], rbuf[MAX_SIZE + 128];
	struct sockaddr_in dst = {.sin_family = AF_INET};
	int fd, pmtu = IP_PMTUDISC_DO, got = 0;
	uint16_t id = (uint16_t)getpid();

	if (inet_pton(AF_INET, o->dst, &dst.sin_addr) != 1) {
		fprintf(stderr, "bad --dst '%s'\n", o->dst);
		return 1;
	}
	fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
	if (fd < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu))) {
		perror("raw ICMP socket");
		return 1;
	}
	for (int seq = 1; seq <= o->count; seq++) {
		struct icmphdr *h = (struct icmphdr *)pkt;
		size_t len = sizeof(*h) + (size_t)o->size;
		double end = now_s() + 1.0;

		memset(pkt, 0, len);
		for (size_t i = sizeof(*h); i < len; i++)
			pkt[i] = (uint8_t)i;
		h->type = ICMP_ECHO;
		h->un.echo.id = htons(id);
		h->un.echo.sequence = htons((uint16_t)seq);
		h->checksum = csum16(pkt, len);
		if (sendto(fd, pkt, len, 0, (void *)&dst, sizeof(dst)) < 0) {
			fprintf(stderr, "sendto: %s\n", strerror(errno));
			continue;
		}
		while (now_s() < end) {
			struct pollfd p = {.fd = fd, .events = POLLIN};

			if (poll(&p, 1, (int)((end - now_s()) * 1000) + 1) <= 0)
				break;
			ssize_t r = recv(fd, rbuf, sizeof(rbuf), 0);
			if (r < (ssize_t)sizeof(struct iphdr))
				continue;
			struct iphdr *ip = (struct iphdr *)rbuf;
			size_t hl = ip->ihl * 4u;
			struct icmphdr *e = (struct icmphdr *)(rbuf + hl);

			if ((size_t)r != hl + len ||
			    e->type != ICMP_ECHOREPLY ||
			    e->un.echo.id != htons(id) ||
			    e->un.echo.sequence != htons((uint16_t)seq))
				continue;
			got++;
			break;
		}
	}
	printf("sent=%d received=%d\n", o->count, got);
	close(fd);
	return got == o->count ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"dst", 1, 0, 'd'},
					   {"port", 1, 0, 'p'},
					   {"sport", 1, 0, 's'},
					   {"flows", 1, 0, 'f'},
					   {"count", 1, 0, 'n'},
					   {"rounds", 1, 0, 'r'},
					   {"size", 1, 0, 'b'},
					   {"tos", 1, 0, 't'},
					   {"pps", 1, 0, 'R'},
					   {"seconds", 1, 0, 'S'},
					   {"idle-ms", 1, 0, 'i'},
					   {"ready", 1, 0, 'y'},
					   {"connect", 0, 0, 'c'},
					   {"help", 0, 0, 'h'},
					   {0, 0, 0, 0}};
	struct opts o = {.port = 0,
			 .sport = 40000,
			 .flows = 1,
			 .count = -1,
			 .rounds = 1,
			 .size = -1,
			 .seconds = 10,
			 .idle_ms = 500};
	const char *mode;
	int c;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage_text, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	mode = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			o.dst = optarg;
			break;
		case 'p':
			o.port = atoi(optarg);
			break;
		case 's':
			o.sport = atoi(optarg);
			break;
		case 'f':
			o.flows = atoi(optarg);
			break;
		case 'n':
			o.count = atoi(optarg);
			break;
		case 'r':
			o.rounds = atoi(optarg);
			break;
		case 'b':
			o.size = atoi(optarg);
			break;
		case 't':
			o.tos = atoi(optarg);
			break;
		case 'R':
			o.pps = atof(optarg);
			break;
		case 'S':
			o.seconds = atoi(optarg);
			break;
		case 'i':
			o.idle_ms = atoi(optarg);
			break;
		case 'y':
			o.ready = optarg;
			break;
		case 'c':
			o.connect = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			return 2;
		}
	}
	if (o.flows < 1 || o.flows > MAX_FLOWS || o.rounds < 1 ||
	    o.size > MAX_SIZE - 64 || o.sport < 1 ||
	    o.sport + o.flows > 65536) {
		fprintf(stderr, "bad --flows/--rounds/--size/--sport\n");
		return 2;
	}
	if (!strcmp(mode, "send")) {
		if (!o.dst || o.port <= 0) {
			fprintf(stderr, "send needs --dst and --port\n");
			return 2;
		}
		if (o.count < 0)
			o.count = 100;
		if (o.size < 0)
			o.size = 64;
		return do_send(&o);
	}
	if (!strcmp(mode, "recv")) {
		if (o.port <= 0) {
			fprintf(stderr, "recv needs --port\n");
			return 2;
		}
		return do_recv(&o);
	}
	if (!strcmp(mode, "ping")) {
		if (!o.dst) {
			fprintf(stderr, "ping needs --dst\n");
			return 2;
		}
		if (o.count < 0)
			o.count = 3;
		if (o.size < 0)
			o.size = 56;
		return do_ping(&o);
	}
	fprintf(stderr, "unknown mode '%s' (send, recv, ping; see --help)\n",
		mode);
	return 2;
}
