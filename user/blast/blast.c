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
 *
 * This file: the command line, the kernel UDP modes (blast and ping-pong),
 * the reports and main(); xsk.c has the AF_XDP modes.
 */
#include "blast.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../common/json.h"
#include "../common/util.h"

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
	"    mroce_blast --tcp --pingpong --rx|--tx [--dst IP] [options]\n"
	"    mroce_blast --handoff [--cpus C,D] [--count N] [--json]\n"
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
	"    --tcp --pingpong is the same over one TCP connection (Nagle\n"
	"    off): the RX side accepts one connection on --dport and echoes\n"
	"    every byte; a reply that does not come is an error, not a loss.\n"
	"    It is the kernel TCP row beside an iperf3 bulk flow.\n"
	"    --handoff measures no network: two processes pass a token back\n"
	"    and forth through shared memory, each polling for its turn and\n"
	"    calling sched_yield() between polls, as libmroce and mroced wait\n"
	"    on each other's rings. On one core (--cpus C,C) each pass is a\n"
	"    switch between the processes, on two a cache line crossing: what\n"
	"    daemon mode adds to a message over embedded mode, per hand-off.\n"
	"\n"
	"OPTIONS\n"
	"    --tx, --rx         direction (one is required)\n"
	"    --udp              kernel UDP socket instead of AF_XDP\n"
	"    --tcp              with --pingpong: over TCP (above)\n"
	"    --pingpong         with --udp or --tcp: latency ping-pong (above);\n"
	"                       --count defaults to 1000; UDP RX stops after\n"
	"                       --count echoes, TCP RX when the pinger closes,\n"
	"                       both after --seconds\n"
	"    --handoff          the process hand-off measure (above); --count\n"
	"                       passes (default 10000)\n"
	"    --cpus C,D         --handoff: the CPUs of the two processes\n"
	"                       (default 0,0: one core)\n"
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
	"    busy_kicks, errors, xdp_matched_pkts, xdp_redirected_pkts,\n"
"    kernel_dropped_pkts: AF_XDP RX, redirected but dropped by the\n"
"    kernel before the ring, from XDP_STATISTICS).\n"
	"    --pingpong TX: pings, replies, lost, half round trip min / p50 /\n"
	"    p99 / p99.9 / avg in us (JSON: \"mode\":\"udp-pingpong\" or\n"
	"    \"tcp-pingpong\",\n"
	"    half_rtt_min_us .. half_rtt_avg_us).\n"
	"    --handoff: passes, and one pass min / p50 / p99 / p99.9 / avg in\n"
	"    us (JSON: \"mode\":\"handoff\", cpus, handoffs, handoff_min_us ..\n"
	"    handoff_avg_us).\n"
	"\n"
	"EXIT STATUS\n"
	"    0 ran, 1 setup failed (message names the step) or, ping-pong,\n"
	"    no reply at all, 2 usage error.\n"
	"\n"
	"EXAMPLES\n"
	"    mroce_blast --udp --pingpong --rx --seconds 10 &\n"
	"    mroce_blast --udp --pingpong --tx --dst 10.77.2.2 --size 8 "
	"--count 5000\n"
	"    mroce_blast --handoff --cpus 0,0 --count 20000\n";

volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void signal_ready(const struct opts *o)
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

void pace(double t0, uint64_t sent, double pps)
{
	double due, t;

	if (pps <= 0)
		return;
	due = t0 + (double)sent / pps;
	t = now_s();
	if (due > t + 0.0005)
		usleep((useconds_t)((due - t) * 1e6));
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

int cmp_double(const void *a, const void *b)
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
int pp_setup(const struct opts *o, struct result *r, struct sockaddr_in *dst,
	     long *count, size_t *size)
{
	*dst = (struct sockaddr_in){.sin_family = AF_INET,
				    .sin_port = htons((uint16_t)o->dport)};
	*count = o->count > 0 ? o->count : 1000;
	*size = o->size < 8 ? 8 : (size_t)o->size;
	if (!o->dst || inet_pton(AF_INET, o->dst, &dst->sin_addr) != 1) {
		fprintf(stderr, "mroce_blast: --pingpong --tx needs --dst IP\n");
		return 2;
	}
	r->lat = calloc((size_t)*count, sizeof(*r->lat));
	if (!r->lat) {
		fprintf(stderr, "mroce_blast: out of memory\n");
		return 1;
	}
	return 0;
}

static int pp_tx(const struct opts *o, struct result *r)
{
	static char buf[65536], in[65536];
	struct sockaddr_in dst;
	long count;
	size_t size;
	double t0;
	int fd, rc = pp_setup(o, r, &dst, &count, &size);

	if (rc)
		return rc;
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
static double lat_avg(const struct result *r)
{
	double sum = 0;

	for (uint64_t i = 0; i < r->packets; i++)
		sum += r->lat[i];
	return r->packets ? sum / (double)r->packets : 0;
}

/* The sample's min, p50, p99, p99.9 and average as PREFIX{min,p50,p99,
 * p999,avg}_us with `decimals` decimals. */
static void lat_json(struct json_object *doc, const char *prefix,
		     const struct result *r, int decimals)
{
	static const char *const name[] = {"min", "p50", "p99", "p999",
					   "avg"};
	const double v[] = {pct(r, 0), pct(r, 0.5), pct(r, 0.99),
			    pct(r, 0.999), lat_avg(r)};
	char key[64];

	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "%s%s_us", prefix, name[i]);
		mroce_json_add_fixed(doc, key, v[i], decimals);
	}
}

static void pp_report(const struct opts *o, const struct result *r,
		      struct json_object *doc)
{
	if (doc) {
		mroce_json_add_i64(doc, "payload_bytes",
				   o->size < 8 ? 8 : o->size);
		mroce_json_add_u64(doc, "pings",
				   r->packets + r->lost + r->errors);
		mroce_json_add_u64(doc, "replies", r->packets);
		mroce_json_add_u64(doc, "lost", r->lost);
		lat_json(doc, "half_rtt_", r, 2);
		return;
	}
	printf("%s: %llu replies, %llu lost, %d-byte payload; half round trip "
	       "us: min %.2f p50 %.2f p99 %.2f p99.9 %.2f avg %.2f\n",
	       r->mode, (unsigned long long)r->packets,
	       (unsigned long long)r->lost, o->size < 8 ? 8 : o->size,
	       pct(r, 0), pct(r, 0.5), pct(r, 0.99), pct(r, 0.999), lat_avg(r));
}

static void handoff_report(const struct opts *o, const struct result *r,
			   struct json_object *doc)
{
	if (doc) {
		char cpus[32];

		snprintf(cpus, sizeof(cpus), "%d,%d", o->cpus[0], o->cpus[1]);
		mroce_json_add_str(doc, "cpus", cpus);
		mroce_json_add_u64(doc, "handoffs", r->packets);
		lat_json(doc, "handoff_", r, 3);
		return;
	}
	printf("handoff: %llu passes between CPUs %d and %d; one pass us: min "
	       "%.3f p50 %.3f p99 %.3f p99.9 %.3f avg %.3f\n",
	       (unsigned long long)r->packets, o->cpus[0], o->cpus[1],
	       pct(r, 0), pct(r, 0.5), pct(r, 0.99), pct(r, 0.999), lat_avg(r));
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
		mroce_json_add_fixed(doc, "duration_s", r->seconds, 3);
		mroce_json_add_fixed(doc, "rate_mpps", pps / 1e6, 6);
		mroce_json_add_fixed(doc, "rate_gbps", gbps, 3);
		mroce_json_add_u64(doc, "busy_kicks", r->busy);
		mroce_json_add_u64(doc, "errors", r->errors);
		mroce_json_add_u64(doc, "xdp_matched_pkts", r->xdp_matched);
		mroce_json_add_u64(doc, "xdp_redirected_pkts",
				   r->xdp_redirected);
		mroce_json_add_u64(doc, "kernel_dropped_pkts", r->kernel_drops);
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
		printf("  XDP program: %llu matched, %llu redirected; kernel "
		       "dropped %llu before the ring\n",
		       (unsigned long long)r->xdp_matched,
		       (unsigned long long)r->xdp_redirected,
		       (unsigned long long)r->kernel_drops);
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

#define CPU_MAX 1023

static const struct option lo[] = {
	{"tx", 0, 0, 'T'},	{"rx", 0, 0, 'R'},
	{"udp", 0, 0, 'U'},	{"json", 0, 0, 'j'},
	{"tcp", 0, 0, 'C'},
	{"ifname", 1, 0, 'i'},	{"queue", 1, 0, 'q'},
	{"src", 1, 0, 's'},	{"dst", 1, 0, 'd'},
	{"dmac", 1, 0, 'm'},	{"smac", 1, 0, 'M'},
	{"sport", 1, 0, 'p'},	{"dport", 1, 0, 'P'},
	{"flows", 1, 0, 'f'},	{"size", 1, 0, 'b'},
	{"seconds", 1, 0, 't'}, {"count", 1, 0, 'n'},
	{"pps", 1, 0, 'r'},	{"ready", 1, 0, 'y'},
	{"pingpong", 0, 0, 'g'},	{"spin", 0, 0, 'S'},
	{"handoff", 0, 0, 'H'},	{"cpus", 1, 0, 'c'},
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
	case 'c': {
		char *comma = strchr(arg, ',');

		if (!comma) {
			fprintf(stderr, "mroce_blast: --cpus: '%s' is not "
					"two CPUs C,D (see --help)\n", arg);
			exit(2);
		}
		*comma = 0;
		o->cpus[0] = (int)num(arg, "--cpus", 0, CPU_MAX);
		o->cpus[1] = (int)num(comma + 1, "--cpus", 0, CPU_MAX);
		return true;
	}
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
	case 'C': o->tcp = true; break;
	case 'S': o->spin = true; break;
	case 'j': o->json = true; break;
	case 'g': o->pingpong = true; break;
	case 'H': o->handoff = true; break;
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

	if (o->handoff)
		why = o->tx || o->rx || o->udp || o->tcp || o->pingpong
			      ? "--handoff takes no --tx, --rx, --udp, "
				"--pingpong"
			      : NULL;
	else if (o->tx == o->rx)
		why = "give exactly one of --tx, --rx";
	else if (o->sport + o->flows > 65536)
		why = "--sport + --flows goes past port 65535";
	else if (o->pingpong && o->udp == o->tcp)
		why = "--pingpong needs one of --udp, --tcp";
	else if (o->tcp && !o->pingpong)
		why = "--tcp is for --pingpong only";
	else if (!o->udp && !o->tcp && !o->ifname)
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

	if (o->pingpong || o->handoff) {
		rc = o->handoff ? handoff(o, r)
		     : o->tcp	? (o->tx ? tcp_pp_tx(o, r) : tcp_pp_rx(o, r))
		     : o->tx	? pp_tx(o, r)
				: pp_rx(o, r);
		if (!rc || (r->lat && !o->handoff)) {
			mroce_json_add_str(doc, "mode", r->mode);
			if (o->handoff)
				handoff_report(o, r, doc);
			else if (o->tx)
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
