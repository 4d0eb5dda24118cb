// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * `mrocectl bench` (hidden): the XDP program's cost per packet, measured
 * with bpf_prog_test_run on a private copy of the program and maps (no
 * interface is touched). Runs in a private network namespace, where an
 * AF_XDP socket on lo fills the XSKMAP so that redirects take their real
 * path.
 *
 * Two measures: "repeat" runs the program R times inside one syscall (the
 * kernel's own average; only for cases that leave the frame unchanged,
 * since repeats reuse the modified frame), and "single" averages the
 * duration the kernel reports for N one-shot runs (every case; includes
 * the timer's own cost, so compare cases only within a column).
 */
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <xdp/xsk.h>

#include "mrocectl.h"
#include "mroce/codec.h"
#include "mroce/xdp.h"
#include "mroce_xdp.skel.h"
#include "../common/json.h"
#include "../common/util.h"

const char help_bench[] =
	"NAME\n"
	"    mrocectl bench - cost of the XDP program per packet\n"
	"\n"
	"SYNOPSIS\n"
	"    mrocectl bench [--repeat N] [--json]\n"
	"\n"
	"DESCRIPTION\n"
	"    Loads a private copy of the program and its maps (nothing is\n"
	"    attached), builds one frame per case with the codec, and runs it\n"
	"    with bpf_prog_test_run inside a private network namespace. "
	"Cases:\n"
	"    not ours (XDP_PASS), new data to the daemon (parse + steer,\n"
	"    XDP_REDIRECT) on IPv4 and on IPv6+VLAN, an ACK (telemetry +\n"
	"    redirect), duplicates of several payload sizes: answered with an\n"
	"    XDP ACK (XDP_TX) after their ICRC up to MROCE_XDP_VERIFY_MAX\n"
	"    bytes, to the daemon when longer; the same duplicates with a\n"
	"    damaged ICRC (XDP_DROP: what the ICRC costs, without the ACK), a\n"
	"    PROBE padded as mroce sends it (answered with an XDP ACK) and\n"
	"    one without padding (to the daemon: its ACK would be longer).\n"
	"    Reports\n"
	"    nanoseconds per packet: 'repeat' = the kernel's\n"
	"    average over N runs in one call (frames the program does not\n"
	"    modify), 'single' = average of N one-run calls (every case).\n"
	"    Quote ratios from one run: the machine is shared.\n"
	"\n"
	"OPTIONS\n"
	"    --repeat N   runs per case (default 200000)\n"
	"    --json       one JSON document per case, one per line: case,\n"
	"                 verdict, repeat_ns (null where not measurable),\n"
	"                 single_ns, runs (docs/json.md)\n";

#define CONN 0x1001u
#define PEER 0x2002u
#define SLOT 5
#define PATH 3
#define GEN 2
#define CUM 1000u

struct bcase {
	const char *name;
	uint8_t op;
	uint32_t psn;
	bool ipv6, vlan, modifies;
	uint16_t dport;
	uint16_t payload; /* SEND: payload bytes; PROBE: padding */
	bool bad_icrc;	  /* the ICRC's last byte flipped */
};

/* A SEND duplicate with n bytes of payload: its MetaRoCE packet is 44 + n
 * bytes (40 of headers, 4 of ICRC). The program rewrites it into an ACK
 * up to MROCE_XDP_VERIFY_MAX. */
#define DUP(name, n)                                                           \
	{name, MROCE_OP_SEND, CUM - 1, false, false,                           \
	 44 + (n) <= MROCE_XDP_VERIFY_MAX, MROCE_UDP_PORT, n, false}
#define BAD_DUP(name, n)                                                       \
	{name, MROCE_OP_SEND, CUM - 1, false, false, false, MROCE_UDP_PORT,    \
	 n, true}

static const struct bcase cases[] = {
	{"not ours: udp to port 53", MROCE_OP_SEND, CUM, false, false, false,
	 53, 1024, false},
	{"new data 1 KiB -> daemon", MROCE_OP_SEND, CUM, false, false, false,
	 MROCE_UDP_PORT, 1024, false},
	{"new data 1 KiB, ipv6+vlan -> daemon", MROCE_OP_SEND, CUM, true, true,
	 false, MROCE_UDP_PORT, 1024, false},
	{"ACK -> telemetry + daemon", MROCE_OP_ACK, 0, false, false, false,
	 MROCE_UDP_PORT, 0, false},
	DUP("duplicate 64 B", 64),
	DUP("duplicate 256 B", 256),
	DUP("duplicate 512 B", 512),
	DUP("duplicate at the bound", MROCE_XDP_VERIFY_MAX - 44),
	DUP("duplicate 1 KiB", 1024),
	DUP("duplicate 2 KiB", 2048),
	DUP("duplicate 8000 B", 8000),
	BAD_DUP("damaged duplicate 64 B", 64),
	BAD_DUP("damaged duplicate 256 B", 256),
	BAD_DUP("damaged duplicate 512 B", 512),
	BAD_DUP("damaged duplicate at the bound",
		MROCE_XDP_VERIFY_MAX - 44),
	BAD_DUP("damaged duplicate 1 KiB", 1024),
	BAD_DUP("damaged duplicate 2 KiB", 2048),
	BAD_DUP("damaged duplicate 8000 B", 8000),
	{"PROBE -> XDP ACK", MROCE_OP_PROBE, CUM, false, false, true,
	 MROCE_UDP_PORT, MROCE_PROBE_PAD, false},
	{"unpadded PROBE -> daemon (its ACK is longer)", MROCE_OP_PROBE, CUM,
	 false, false, false, MROCE_UDP_PORT, 0, false},
};

static int build(const struct bcase *c, uint8_t *buf, size_t cap)
{
	static uint8_t payload[MROCE_MAX_PAYLOAD];
	struct mroce_frame_spec s = {.vlan = c->vlan ? 100 : -1};
	struct mroce_meta_pkt p = {0};
	size_t hl;
	int l4;

	memcpy(s.dmac, "\x02\0\0\0\0\x02", 6);
	memcpy(s.smac, "\x02\0\0\0\0\x01", 6);
	s.l3.family = c->ipv6 ? AF_INET6 : AF_INET;
	s.l3.src[0] = c->ipv6 ? 0xfd : 10;
	s.l3.dst[0] = c->ipv6 ? 0xfd : 10;
	s.l3.src[c->ipv6 ? 15 : 3] = 1;
	s.l3.dst[c->ipv6 ? 15 : 3] = 2;
	s.l3.ttl = 64;
	s.sport = 0xc123;
	s.dport = c->dport;
	p.opcode = c->op;
	p.conn_id = CONN;
	p.path = c->op == MROCE_OP_ACK ? 0 : PATH;
	p.path_gen = c->op == MROCE_OP_ACK ? 0 : GEN;
	p.psn = c->psn;
	p.next_psn = c->psn;
	p.tsval = mroce_now_us();
	p.ack.tsecr = mroce_now_us();
	p.msg_len = 65536;
	if (c->op == MROCE_OP_SEND || c->op == MROCE_OP_PROBE) {
		p.payload = payload; /* a PROBE's: padding, zeros */
		p.payload_len = c->payload;
	}
	hl = mroce_frame_hdr_len(&s);
	l4 = mroce_meta_build(&p, buf + hl, cap - hl);
	if (l4 < 0)
		return l4;
	if (c->bad_icrc)
		buf[hl + (size_t)l4 - 1] ^= 1;
	return mroce_frame_build(&s, (size_t)l4, buf, cap);
}

static int fixture(struct mroce_xdp_maps *m)
{
	struct mroce_conn_val v = {.slot = SLOT,
				   .peer_conn_id = PEER,
				   .flags = MROCE_CONN_F_ACK_OFFLOAD,
				   .peer_family = MROCE_PEER_IPV4};
	uint8_t sack[MROCE_SACK_BYTES] = {0x21};
	struct mroce_sb_conn *sb = &m->scoreboard[SLOT];
	int err;

	memcpy(v.peer_addr, "\x0a\0\0\x01", 4); /* build()'s 10.0.0.1 */

	err = mroce_xdp_conn_add(m, MROCE_CONN_METAROCE, CONN, &v);
	if (err)
		return err;
	/* the daemon has taken in the "new data" cases' packet (PSN CUM):
	 * the PROBE case finds nothing queued for it */
	mroce_rx_publish(mroce_xdp_rx_path(m, SLOT, PATH), GEN,
			 MROCE_RXP_F_VALID, CUM, CUM + 1, 10000, sack);
	sb->n_paths = 8;
	for (int i = 0; i < 8; i++) {
		sb->path[i].sport = (uint16_t)(0xc000 + i);
		sb->active_mask |= 1ull << i;
		sb->path[i].srtt_us = 20 + (uint32_t)i;
	}
	return 0;
}

/* Private namespace, lo up, an AF_XDP socket on lo queue 0 in xsks[0]. */
static int bind_xsk(struct mroce_xdp_maps *m)
{
	struct xsk_socket_config cfg = {
		.rx_size = 64,
		.tx_size = 64,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.xdp_flags = XDP_FLAGS_SKB_MODE,
		.bind_flags = XDP_COPY,
	};
	static struct xsk_ring_prod fq, tx;
	static struct xsk_ring_cons cq, rx;
	static struct xsk_umem *umem;
	static struct xsk_socket *xsk;
	struct ifreq ifr = {.ifr_name = "lo"};
	size_t sz = 64 * 4096;
	void *area;
	int s;

	if (unshare(CLONE_NEWNET))
		return -errno;
	s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		return -errno;
	if (!ioctl(s, SIOCGIFFLAGS, &ifr)) {
		ifr.ifr_flags |= IFF_UP;
		ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	close(s);
	area = mmap(NULL, sz, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		return -errno;
	if (xsk_umem__create(&umem, area, sz, &fq, &cq, NULL) ||
	    xsk_socket__create(&xsk, "lo", 0, umem, &rx, &tx, &cfg))
		return -EIO;
	return mroce_xdp_xsk_set(m, 0, xsk_socket__fd(xsk));
}

static const char *verdict(unsigned int v)
{
	static const char *const n[] = {"ABORTED", "DROP", "PASS", "TX",
					"REDIRECT"};

	return v <= 4 ? n[v] : "?";
}

/* One case: its frame, then both measures, printed as a row or a JSON
 * line. -errno when the frame cannot be built. */
static int bench_case(int fd, const struct bcase *bc, long repeat, bool json)
{
	static uint8_t in[12288], out[12288];
	double rep = -1, single;
	unsigned long long sum = 0;
	unsigned int v = 0;
	int len = build(bc, in, sizeof(in));

	if (len < 0)
		return len;
	if (!bc->modifies) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in,
			    .data_size_in = (uint32_t)len,
			    .repeat = (int)repeat);
		if (bpf_prog_test_run_opts(fd, &o) == 0)
			rep = o.duration;
	}
	for (long r = 0; r < repeat; r++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in,
			    .data_size_in = (uint32_t)len, .data_out = out,
			    .data_size_out = sizeof(out), .repeat = 1);
		if (bpf_prog_test_run_opts(fd, &o))
			break;
		sum += o.duration;
		v = o.retval;
	}
	single = (double)sum / (double)repeat;
	if (json) {
		struct json_object *d = mroce_json_doc("mrocectl");

		mroce_json_add_str(d, "command", "bench");
		mroce_json_add_str(d, "case", bc->name);
		mroce_json_add_str(d, "verdict", verdict(v));
		/* null: not measurable (the program modifies the frame) */
		json_object_object_add(d, "repeat_ns",
				       rep >= 0 ? mroce_json_new_fixed(rep, 1)
						: NULL);
		mroce_json_add_fixed(d, "single_ns", single, 1);
		mroce_json_add_i64(d, "runs", repeat);
		mroce_json_emit(stdout, d, 0);
	} else if (rep >= 0)
		printf("%-40s %-9s %14.1f %14.1f\n", bc->name, verdict(v), rep,
		       single);
	else
		printf("%-40s %-9s %14s %14.1f\n", bc->name, verdict(v), "-",
		       single);
	return 0;
}

/* Loads the private copy and its fixture. 0 or 1 after a message. */
static int bench_setup(struct mroce_xdp **skelp, struct mroce_xdp_maps *m)
{
	struct mroce_xdp *skel;
	int err;

	if (geteuid() != 0) {
		fprintf(stderr, "mrocectl: bench: NO_PRIV: %s\n",
			mroce_xdp_err_text(-MROCE_XDP_E_NO_PRIV));
		return 1;
	}
	skel = mroce_xdp__open_and_load();
	if (!skel) {
		fprintf(stderr, "mrocectl: bench: LOAD: %s\n",
			mroce_xdp_err_text(-MROCE_XDP_E_LOAD));
		return 1;
	}
	err = mroce_xdp_maps_from_fds(m, bpf_map__fd(skel->maps.conns),
				      bpf_map__fd(skel->maps.xsks),
				      bpf_map__fd(skel->maps.rx_state),
				      bpf_map__fd(skel->maps.scoreboard),
				      bpf_map__fd(skel->maps.counters));
	if (!err)
		err = fixture(m);
	if (!err) {
		/* no ack_limit: each run of the duplicate case must take the
		 * XDP_TX path it measures */
		struct mroce_ack_limit l = {.per_ms = UINT32_MAX};
		__u32 zero = 0;

		if (bpf_map_update_elem(bpf_map__fd(skel->maps.ack_limit),
					&zero, &l, BPF_ANY))
			err = -MROCE_XDP_E_MAP;
	}
	if (!err)
		err = bind_xsk(m);
	if (err) {
		fprintf(stderr, "mrocectl: bench: setup failed: %s\n",
			err < 0 && -err < MROCE_XDP_E__COUNT
				? mroce_xdp_err_name(err)
				: strerror(-err));
		mroce_xdp__destroy(skel);
		return 1;
	}
	*skelp = skel;
	return 0;
}

int cmd_bench(int argc, char **argv)
{
	static const struct option lo[] = {
		{"repeat", required_argument, NULL, 'r'},
		{"json", no_argument, NULL, 'j'},
		{0}};
	struct mroce_xdp_maps m;
	struct mroce_xdp *skel;
	uint64_t repeat = 200000;
	bool json = false;
	int c, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 'r') {
			if (mroce_parse_u64(optarg, 1, 100000000, &repeat)) {
				fprintf(stderr,
					"mrocectl: bench: --repeat: '%s' is "
					"not a number in [1, 100000000]\n",
					optarg);
				return 2;
			}
		} else if (c == 'j') {
			json = true;
		} else {
			fprintf(stderr, "mrocectl: bench: unknown option (see "
					"mrocectl bench --help)\n");
			return 2;
		}
	}
	err = bench_setup(&skel, &m);
	if (err)
		return err;
	if (!json)
		printf("%-40s %-9s %14s %14s\n", "case", "verdict",
		       "repeat ns/pkt", "single ns/pkt");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err = bench_case(bpf_program__fd(skel->progs.mroce_xdp),
				 &cases[i], (long)repeat, json);
		if (err) {
			fprintf(stderr, "mrocectl: bench: build: %s\n",
				mroce_err_name(err));
			break;
		}
	}
	mroce_xdp_maps_close(&m);
	mroce_xdp__destroy(skel);
	return 0;
}
