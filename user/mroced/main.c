// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroced - the mroce daemon: one endpoint (packet I/O backend + a MetaRoCE
 * engine + a RoCEv2 engine, user/endpoint/endpoint.h) shared by many
 * applications. Applications reach it through libmroce's daemon mode
 * (user/lib/daemon.c); the protocol is in user/ipc/ipc.h. mroced.h
 * says which file holds what.
 *
 * This file: the options, the start-up (attach, endpoint, signals, control
 * socket), readiness for systemd, and the undoing of it all on exit. The
 * daemon never forks: a service manager (Type=notify, see mroced_notify())
 * or the shell's & puts it in the background.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "../common/util.h"
#include "../xdp/loader.h"
#include "mroce/wire.h"
#include "mroced.h"

/* clang-format off */
static const char help_text[] =
"NAME\n"
"    mroced - the mroce daemon: RDMA transports for many applications\n"
"\n"
"SYNOPSIS\n"
"    mroced --local ADDR [--backend udp|afxdp] [--ifname IF]\n"
"           [--queue Q|all] [--attach] [--sock PATH] [--paths N]\n"
"           [--mtu BYTES] [--link-gbps R] [--queue-us USEC]\n"
"           [--rto-min USEC] [--udp-port PORT] [--spin-us USEC]\n"
"           [--sock-mode MODE] [--sock-group GROUP] [--no-ack-offload]\n"
"           [--seed N] [-v]\n"
"\n"
"DESCRIPTION\n"
"    Owns the packet I/O of one local address (kernel UDP sockets, or an\n"
"    AF_XDP sockets, one per receive queue of IF, behind the XDP program\n"
"    of `mrocectl attach IF`) and runs both transports on it: MetaRoCE (UDP\n"
"    port 4792) and RoCEv2 (4791). Applications use it through libmroce\n"
"    with struct mrv_dev_attr.mode = MRV_MODE_DAEMON (mroce_perf\n"
"    --daemon): verbs calls travel over the UNIX socket PATH, work requests\n"
"    and completions over rings in memory shared with each application,\n"
"    without a system call per request. Memory from mrv_alloc_mr() is\n"
"    mapped by the daemon too (zero copy).\n"
"\n"
"    The daemon spins while there is work and sleeps in epoll after\n"
"    --spin-us without any (these machines have 2 cores). An application\n"
"    that exits or dies loses its QPs, CQs and MRs at once. SIGINT or\n"
"    SIGTERM: outstanding work completes with flush errors in the\n"
"    applications, the socket is removed, what --attach attached is\n"
"    detached, exit 0. `mrocectl daemon` shows its state.\n"
"\n"
"    mroced never forks: run it under systemd or with &. Under systemd\n"
"    (Type=notify) it sends READY=1 to $NOTIFY_SOCKET once the control\n"
"    socket accepts connections, and STOPPING=1 when a signal ends it.\n"
"\n"
"OPTIONS\n"
"    -l, --local=ADDR     numeric IPv4/IPv6 address to use (required)\n"
"    -b, --backend=B      udp (default) or afxdp\n"
"    -i, --ifname=IF      interface (afxdp)\n"
"    -q, --queue=Q|all    afxdp: bind only receive queue Q of IF, or one\n"
"                         socket per receive queue (all, the default);\n"
"                         a packet leaves on queue (source port % queues).\n"
"                         The per-queue counters are logged on exit\n"
"    -A, --attach         attach the XDP program to IF first (as\n"
"                         `mrocectl attach IF`) and detach it on exit\n"
"    -s, --sock=PATH      control socket (default " MRD_DEFAULT_SOCK ")\n"
"    -p, --paths=N        MetaRoCE paths per peer (default 8)\n"
"    -m, --mtu=BYTES      payload bytes per packet (default: 4096 on udp,\n"
"                         from the interface MTU on afxdp)\n"
"    -r, --rto-min=USEC   minimum retransmission timeout (default 200)\n"
"        --link-gbps=R    the line rate MetaRoCE paces at and shares out\n"
"                         among senders, Gbit/s (default: the interface's\n"
"                         speed - afxdp: IF; udp: the one holding ADDR -\n"
"                         or 100 where it reports none or is virtual)\n"
"        --queue-us=USEC  the standing queue a MetaRoCE path may keep,\n"
"                         judged by each round trip's smallest RTT sample\n"
"                         (default: none but the 10 ms scheduling-noise\n"
"                         allowance; docs/engine.md, \"Short queues\")\n"
"    -u, --udp-port=PORT  MetaRoCE port; RoCEv2 uses PORT+1 (default\n"
"                         4792/4791)\n"
"        --sock-mode=MODE chmod the socket (e.g. 0666: every local user;\n"
"                         default: as the umask leaves it, 0660 with\n"
"                         --sock-group). Connecting needs write\n"
"                         permission on the socket\n"
"        --sock-group=GROUP  the socket belongs to GROUP (a name or a\n"
"                         number) with mode 0660: its members may use\n"
"                         the daemon\n"
"        --spin-us=USEC   busy-poll this long after the last work before\n"
"                         sleeping (default 50)\n"
"        --no-ack-offload afxdp: the XDP program answers nothing for this\n"
"                         daemon's MetaRoCE connections (by default it\n"
"                         answers duplicates of data already placed,\n"
"                         docs/xdp.md); every ACK comes from the daemon.\n"
"                         For comparison\n"
"        --seed=N         fixed engine seed (tests only)\n"
"    -v, --verbose        log every session and control error\n"
"    -V, --version        print the version and exit\n"
"    -h, --help           this text\n"
"\n"
"EXIT STATUS\n"
"    0 clean shutdown (SIGINT/SIGTERM); 1 start-up failed (address,\n"
"    interface, socket in use by a running mroced); 2 bad arguments.\n"
"\n"
"EXAMPLE\n"
"    mroced --local 10.0.0.1 --sock /tmp/mroced.sock &\n"
"    mroce_perf write_bw --daemon=/tmp/mroced.sock &\n"
"    mroced --backend afxdp --ifname eth1 --attach --local 10.0.0.1\n";
/* clang-format on */

struct mroced mroced;

/* What the command line asks for beyond the daemon's own state. */
struct opts {
	struct mroce_ep_cfg cfg;
	const char *local, *ifname;
	bool one_queue;
	uint16_t udp_port;
	uint64_t seed;
};

void mroced_log(const char *lvl, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mroced: %s", lvl);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* libbpf/libxdp chatter (fallbacks they handle themselves) only with -v;
 * failures become our own named errors. */
static int bpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return mroced.verbose ? vfprintf(stderr, fmt, ap) : 0;
}

static int xdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	return mroced.verbose ? vfprintf(stderr, fmt, ap) : 0;
}

/*
 * systemd's readiness protocol (sd_notify(3)) without libsystemd: one
 * datagram holding the state to the AF_UNIX socket named by
 * $NOTIFY_SOCKET, an abstract address when the name starts with '@'.
 * Nothing happens when it is unset (not started by a service manager).
 */
void mroced_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t n = path ? strlen(path) : 0;
	int fd;

	if (n < 2 || n >= sizeof(a.sun_path) ||
	    (path[0] != '/' && path[0] != '@'))
		return;
	memcpy(a.sun_path, path, n);
	if (a.sun_path[0] == '@')
		a.sun_path[0] = 0;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    sendto(fd, state, strlen(state), MSG_NOSIGNAL,
		   (struct sockaddr *)&a,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)) < 0)
		pr_err("cannot notify %s of %s: %s", path, state,
		       strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* Creates the socket's directory when missing; refuses to take over the
 * socket of a live daemon (it answers; a stale socket file refuses). */
static int sock_prepare(const struct sockaddr_un *a)
{
	char dir[sizeof(a->sun_path)];
	char *slash;
	int probe;

	strcpy(dir, a->sun_path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			pr_err("cannot create %s: %s", dir, strerror(errno));
			return -1;
		}
	}
	probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (probe >= 0 &&
	    !connect(probe, (const struct sockaddr *)a, sizeof(*a))) {
		close(probe);
		pr_err("another mroced is running (socket %s)", a->sun_path);
		return -1;
	}
	if (probe >= 0)
		close(probe);
	unlink(a->sun_path);
	return 0;
}

static int listen_sock(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		pr_err("socket path too long: %s", path);
		return -1;
	}
	strcpy(a.sun_path, path);
	if (sock_prepare(&a) < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(fd, 64) < 0 ||
	    (mroced.sock_gid >= 0 &&
	     chown(path, (uid_t)-1, (gid_t)mroced.sock_gid) < 0) ||
	    (mroced.sock_mode >= 0 &&
	     chmod(path, (mode_t)mroced.sock_mode) < 0)) {
		pr_err("cannot listen on %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void usage_err(const char *fmt, const char *arg)
{
	fprintf(stderr, "mroced: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'mroced --help'.\n");
	exit(2);
}

/* A number in [min, max] from the command line; exit 2 if it is not. */
static uint64_t num(const char *s, const char *what, uint64_t min, uint64_t max)
{
	uint64_t v;

	if (mroce_parse_u64(s, min, max, &v) < 0) {
		fprintf(stderr, "mroced: invalid %s: '%s'\n", what, s);
		fprintf(stderr, "Try 'mroced --help'.\n");
		exit(2);
	}
	return v;
}

/* --sock-group: a group name, or a number. */
static int group_id(const char *name)
{
	struct group *g = getgrnam(name);
	uint64_t v;

	if (g)
		return (int)g->gr_gid;
	if (mroce_parse_u64(name, 0, INT32_MAX, &v) < 0)
		usage_err("unknown group '%s'", name);
	return (int)v;
}

enum { O_SPIN = 256, O_SEED, O_MODE, O_GROUP, O_NO_OFFLOAD, O_LINK, O_QUEUE_US };

static const struct option long_opts[] = {
	{"local", required_argument, NULL, 'l'},
	{"backend", required_argument, NULL, 'b'},
	{"ifname", required_argument, NULL, 'i'},
	{"queue", required_argument, NULL, 'q'},
	{"attach", no_argument, NULL, 'A'},
	{"sock", required_argument, NULL, 's'},
	{"paths", required_argument, NULL, 'p'},
	{"mtu", required_argument, NULL, 'm'},
	{"rto-min", required_argument, NULL, 'r'},
	{"link-gbps", required_argument, NULL, O_LINK},
	{"queue-us", required_argument, NULL, O_QUEUE_US},
	{"udp-port", required_argument, NULL, 'u'},
	{"spin-us", required_argument, NULL, O_SPIN},
	{"seed", required_argument, NULL, O_SEED},
	{"sock-mode", required_argument, NULL, O_MODE},
	{"sock-group", required_argument, NULL, O_GROUP},
	{"no-ack-offload", no_argument, NULL, O_NO_OFFLOAD},
	{"verbose", no_argument, NULL, 'v'},
	{"version", no_argument, NULL, 'V'},
	{"help", no_argument, NULL, 'h'},
	{0}};

/* One option into o and the daemon's state; exits on a bad value. */
static void apply_opt(int c, const char *arg, struct opts *o)
{
	struct mroce_ep_cfg *cfg = &o->cfg;

	switch (c) {
	case 'l':
		o->local = arg;
		break;
	case 'b':
		if (!strcmp(arg, "udp"))
			mroced.backend = MRV_BACKEND_UDP;
		else if (!strcmp(arg, "afxdp"))
			mroced.backend = MRV_BACKEND_AFXDP;
		else
			usage_err("unknown backend '%s' (udp or afxdp)", arg);
		break;
	case 'i':
		o->ifname = arg;
		break;
	case 'q':
		o->one_queue = strcmp(arg, "all") != 0;
		if (o->one_queue)
			cfg->io.queue = (uint32_t)num(arg, "queue", 0,
						      MROCE_MAX_QUEUES - 1);
		break;
	case 'A':
		mroced.attached = true; /* requested; set for real later */
		break;
	case 's':
		mroced.sock_path = arg;
		break;
	case 'p':
		cfg->eng[0].npaths = (uint8_t)num(arg, "paths", 1, 64);
		break;
	case 'm':
		cfg->eng[0].mtu = cfg->eng[1].mtu =
			(uint16_t)num(arg, "MTU", 256, 8192);
		break;
	case 'r':
		cfg->eng[0].rto_min_us = cfg->eng[1].rto_min_us =
			(uint32_t)num(arg, "RTO", 1, 10000000);
		break;
	case O_LINK: {
		double g;

		if (mroce_parse_double(arg, 0.001, 10000, &g) < 0)
			usage_err("invalid link rate '%s' (Gbit/s, 0.001 to "
				  "10000)", arg);
		cfg->eng[0].link_bps = cfg->eng[1].link_bps =
			(uint64_t)(g * 1e9);
		break;
	}
	case O_QUEUE_US:
		cfg->eng[0].queue_us = (uint32_t)num(arg, "queue", 1, 1000000);
		break;
	case 'u':
		o->udp_port = (uint16_t)num(arg, "UDP port", 1, 65534);
		break;
	case O_SPIN:
		mroced.spin_ns = 1000ull * num(arg, "spin time", 0, 1000000);
		break;
	case O_MODE:
		mroced.sock_mode = (int)num(arg, "socket mode", 0, 0777);
		break;
	case O_GROUP:
		mroced.sock_gid = group_id(arg);
		break;
	case O_SEED:
		o->seed = num(arg, "seed", 1, __LONG_MAX__);
		break;
	case O_NO_OFFLOAD:
		cfg->no_ack_offload = true;
		break;
	case 'v':
		mroced.verbose = true;
		break;
	}
}

/* Parses the command line; exits for --help, --version and bad ones. */
static void parse_opts(int argc, char **argv, struct opts *o)
{
	int c;

	while ((c = getopt_long(argc, argv, "l:b:i:q:As:p:m:r:u:vVh", long_opts,
				NULL)) != -1) {
		if (c == 'h') {
			fputs(help_text, stdout);
			exit(0);
		}
		if (c == 'V') {
			mroce_print_version(stdout, "mroced");
			exit(0);
		}
		if (c == '?' || c == ':') {
			fprintf(stderr, "Try 'mroced --help'.\n");
			exit(2);
		}
		apply_opt(c, optarg, o);
	}
	if (optind < argc)
		usage_err("unexpected argument '%s'", argv[optind]);
	if (!o->local)
		usage_err("%s", "--local ADDR is required");
	if (mroced.backend == MRV_BACKEND_AFXDP && !o->ifname)
		usage_err("%s", "--backend afxdp needs --ifname");
	if (mroced.attached && mroced.backend != MRV_BACKEND_AFXDP)
		usage_err("%s", "--attach needs --backend afxdp");
	if (mroce_parse_addr(o->local, &mroced.family, mroced.local) < 0)
		usage_err("--local needs a numeric address, not '%s'",
			  o->local);
	if (o->ifname)
		snprintf(mroced.ifname, sizeof(mroced.ifname), "%s", o->ifname);
	if (mroced.sock_gid >= 0 && mroced.sock_mode < 0)
		mroced.sock_mode = 0660;
}

/* The endpoint's configuration from the options. */
static void ep_cfg_finish(struct opts *o)
{
	struct mroce_ep_cfg *cfg = &o->cfg;

	cfg->io.kind = mroced.backend == MRV_BACKEND_AFXDP ? MROCE_IO_AFXDP
							   : MROCE_IO_UDP;
	cfg->io.family = mroced.family;
	memcpy(cfg->io.local_addr, mroced.local, 16);
	cfg->io.mroce_port = o->udp_port ? o->udp_port : MROCE_UDP_PORT;
	cfg->io.rocev2_port =
		o->udp_port ? (uint16_t)(o->udp_port + 1) : ROCEV2_UDP_PORT;
	cfg->io.ifname = o->ifname;
	cfg->all_queues = mroced.backend == MRV_BACKEND_AFXDP && !o->one_queue;
	cfg->io.frame_size = 4096;
	cfg->io.nframes = 4096;
	cfg->io.sport_min = MROCE_SPORT_MIN;
	cfg->io.sport_max = MROCE_SPORT_MAX;
	for (int t = 0; t < 2; t++)
		cfg->eng[t].seed = o->seed ? o->seed + (uint64_t)t : 0;
}

/* --attach: the XDP program on the interface, as `mrocectl attach`. */
static int attach_xdp(const struct opts *o)
{
	struct ctl_attach_opts ao = {.mode = CTL_MODE_NATIVE,
				     .ack_offload = true,
				     .mroce_port = o->cfg.io.mroce_port,
				     .rocev2_port = o->cfg.io.rocev2_port};
	struct ctl_iface_info info;
	int err;

	mroced.attached = false;
	err = ctl_attach(o->ifname, &ao, &info);
	if (err) {
		pr_err("cannot attach the XDP program to %s: %s (%d)",
		       o->ifname, mroce_xdp_err_text(err), err);
		return -1;
	}
	mroced.attached = true;
	pr_info("attached XDP program to %s (prog id %u, %s)", o->ifname,
		info.prog_id, info.mode);
	return 0;
}

static void detach_xdp(void)
{
	int err;

	if (!mroced.attached)
		return;
	err = ctl_detach(mroced.ifname);
	if (err)
		pr_err("detach from %s: %s", mroced.ifname,
		       mroce_xdp_err_text(err));
	else
		pr_info("detached XDP program from %s", mroced.ifname);
}

/* Signals, epoll and the control socket around the open endpoint. 0, or
 * -1 with what is open left for close_loop(). */
static int open_loop(void)
{
	sigset_t mask;

	/* Signals through the loop: handled between requests, never
	 * inside one. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	mroced.sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	mroced.epfd = epoll_create1(EPOLL_CLOEXEC);
	mroced.lfd = listen_sock(mroced.sock_path);
	if (mroced.sigfd < 0 || mroced.epfd < 0 || mroced.lfd < 0)
		return -1;
	mroced.tag_listen = (struct evtag){EV_LISTEN, NULL};
	mroced.tag_signal = (struct evtag){EV_SIGNAL, NULL};
	mroced.tag_ep = (struct evtag){EV_EP, NULL};
	if (ep_add(mroced.lfd, &mroced.tag_listen) < 0 ||
	    ep_add(mroced.sigfd, &mroced.tag_signal) < 0 ||
	    (mroce_ep_fd(mroced.ep) >= 0 &&
	     ep_add(mroce_ep_fd(mroced.ep), &mroced.tag_ep) < 0)) {
		pr_err("epoll: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void close_loop(void)
{
	if (mroced.lfd >= 0) {
		close(mroced.lfd);
		unlink(mroced.sock_path);
	}
	if (mroced.epfd >= 0)
		close(mroced.epfd);
	if (mroced.sigfd >= 0)
		close(mroced.sigfd);
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	const char *link_src;
	uint64_t link;
	int err;

	mroced.sock_path = MRD_DEFAULT_SOCK;
	mroced.backend = MRV_BACKEND_UDP;
	mroced.spin_ns = 50000;
	mroced.sock_mode = -1;
	mroced.sock_gid = -1;
	mroced.epfd = mroced.lfd = mroced.sigfd = -1;
	for (int t = 0; t < 2; t++) {
		o.cfg.eng[t].transport =
			t ? MROCE_TRANSPORT_ROCEV2 : MROCE_TRANSPORT_METAROCE;
		/* a process, not a NIC: as libmroce's embedded mode */
		o.cfg.eng[t].jitter_us = MROCE_EP_SW_JITTER_US;
	}
	parse_opts(argc, argv, &o);
	ep_cfg_finish(&o);
	libbpf_set_print(bpf_print);
	libxdp_set_print(xdp_print);
	if (mroced.attached && attach_xdp(&o) < 0)
		return 1;
	err = mroce_ep_open(&o.cfg, &mroced.ep);
	if (err < 0) {
		pr_err("cannot open the %s backend on %s%s%s: %s",
		       mroced.backend == MRV_BACKEND_AFXDP ? "afxdp" : "udp",
		       o.local, o.ifname ? " dev " : "",
		       o.ifname ? o.ifname : "", strerror(-err));
		detach_xdp();
		return 1;
	}
	if (open_loop() < 0) {
		close_loop();
		mroce_ep_close(mroced.ep);
		detach_xdp();
		return 1;
	}
	mroced.start_ns = now_ns();
	link = mroce_ep_link_bps(mroced.ep, &link_src);
	pr_info("serving %s on %s (%s%s, %d queue%s, mtu %u, link %g Gbit/s "
		"%s) at %s",
		"metaroce+rocev2", o.local,
		mroced.backend == MRV_BACKEND_AFXDP ? "afxdp " : "udp",
		o.ifname ? o.ifname : "", mroce_ep_nqueues(mroced.ep),
		mroce_ep_nqueues(mroced.ep) == 1 ? "" : "s",
		mroce_ep_mtu(mroced.ep), (double)link / 1e9, link_src,
		mroced.sock_path);
	mroced_notify("READY=1");
	err = mroced_run();
	log_queue_stats();
	close_loop();
	mroce_ep_close(mroced.ep);
	detach_xdp();
	return err ? 1 : 0;
}
