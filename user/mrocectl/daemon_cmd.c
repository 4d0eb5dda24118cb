// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mrocectl daemon: ask a running mroced (its control socket,
 * user/common/ipc.h) for its applications, objects and counters.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "../common/ipc.h"
#include "mroce/engine.h"
#include "mroce/io.h"
#include "mroce/mroce.h"
#include "mrocectl.h"

const char help_daemon[] =
	"NAME\n"
	"    mrocectl daemon - state of the mroced daemon\n"
	"\n"
	"SYNOPSIS\n"
	"    mrocectl daemon [--sock PATH] [--json]\n"
	"\n"
	"DESCRIPTION\n"
	"    Asks mroced over its control socket for the number of\n"
	"    applications (sessions) and of their PDs, MRs, CQs and QPs, the\n"
	"    daemon's refused-input counters, its backend's packet counters "
	"and\n"
	"    the counters of both engines (MetaRoCE, RoCEv2), then one line "
	"per\n"
	"    application (pid, transport, objects). Needs no privileges "
	"beyond\n"
	"    access to the socket.\n"
	"\n"
	"OPTIONS\n"
	"    -s, --sock=PATH   control socket (default " MRD_DEFAULT_SOCK ")\n"
	"    -j, --json        one JSON object\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success; 1 mroced is not running or did not answer; 2 bad "
	"usage.\n"
	"\n"
	"EXAMPLE\n"
	"    mrocectl daemon --sock /tmp/mroced.sock --json\n";

static const char *const io_names[] = {
#define X_NAME(n) #n,
	MROCE_IO_STATS(X_NAME)
#undef X_NAME
};
static const char *const eng_names[] = {
#define X_NAME(n) #n,
	MROCE_ENGINE_STATS(X_NAME)
#undef X_NAME
};
static const char *const ctl_names[] = {
#define X_NAME(n) #n,
	MRD_CTL_COUNTERS(X_NAME)
#undef X_NAME
};
_Static_assert(sizeof(io_names) / sizeof(io_names[0]) == MROCE_IO_NSTATS,
	       "io stats");
_Static_assert(sizeof(eng_names) / sizeof(eng_names[0]) == MROCE_ENGINE_NSTATS,
	       "eng stats");
_Static_assert(sizeof(ctl_names) / sizeof(ctl_names[0]) == MRD_CTL_NCOUNTERS,
	       "ctl counters");

static int ask(int fd, uint16_t op, uint32_t arg, uint8_t transport,
	       struct mrd_rep *r)
{
	static uint32_t seq;
	struct mrd_req q = {.version = MRD_VERSION, .op = op, .seq = ++seq};
	ssize_t n;

	q.u.status.transport = transport;
	q.u.status.index = arg;
	if (send(fd, &q, sizeof(q), MSG_NOSIGNAL) != (ssize_t)sizeof(q))
		return -errno;
	n = recv(fd, r, sizeof(*r), 0);
	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof(*r) || r->seq != q.seq)
		return -EPROTO;
	return r->err;
}

static void print_list(const char *title, const char *const *names,
		       const uint64_t *v, int n, bool json, bool first)
{
	if (json) {
		printf("%s\"%s\":{", first ? "" : ",", title);
		for (int i = 0; i < n; i++)
			printf("%s\"%s\":%llu", i ? "," : "", names[i],
			       (unsigned long long)v[i]);
		printf("}");
		return;
	}
	printf("%s:\n", title);
	for (int i = 0; i < n; i++)
		if (v[i])
			printf("  %-20s %14llu\n", names[i],
			       (unsigned long long)v[i]);
}

int cmd_daemon(int argc, char **argv)
{
	static const struct option lo[] = {
		{"sock", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{0}};
	const char *path = MRD_DEFAULT_SOCK;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = 5};
	struct mrd_rep st, rv2, r;
	char addr[64] = "?";
	bool json = false;
	int c, fd, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "s:j", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			path = optarg;
			break;
		case 'j':
			json = true;
			break;
		default:
			fprintf(stderr, "Try 'mrocectl daemon --help'.\n");
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr,
			"mrocectl daemon: unexpected argument '%s'\n"
			"Try 'mrocectl daemon --help'.\n",
			argv[optind]);
		return 2;
	}
	if (strlen(path) >= sizeof(a.sun_path)) {
		fprintf(stderr, "mrocectl daemon: socket path too long\n");
		return 2;
	}
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		fprintf(stderr,
			"mrocectl daemon: mroced is not running "
			"(socket %s)\n",
			path);
		if (fd >= 0)
			close(fd);
		return 1;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	err = ask(fd, MRD_OP_STATUS, 0, MRV_TRANSPORT_METAROCE, &st);
	if (!err)
		err = ask(fd, MRD_OP_STATUS, 0, MRV_TRANSPORT_ROCEV2, &rv2);
	if (err) {
		fprintf(stderr, "mrocectl daemon: mroced at %s: %s\n", path,
			strerror(-err));
		close(fd);
		return 1;
	}
	inet_ntop(st.u.status.family, st.u.status.local, addr, sizeof(addr));
	if (json) {
		printf("{\"sock\":\"%s\",\"pid\":%u,\"local\":\"%s\","
		       "\"backend\":\"%s\",\"ifname\":\"%.16s\",\"mtu\":%u,"
		       "\"uptime_ms\":%llu,\"apps\":%u,\"pds\":%u,\"mrs\":%u,"
		       "\"cqs\":%u,\"qps\":%u,",
		       path, st.u.status.pid, addr,
		       st.u.status.backend == MRV_BACKEND_AFXDP ? "afxdp"
								: "udp",
		       st.u.status.ifname, st.u.status.mtu,
		       (unsigned long long)st.u.status.uptime_ms,
		       st.u.status.apps, st.u.status.pds, st.u.status.mrs,
		       st.u.status.cqs, st.u.status.qps);
	} else {
		printf("mroced pid %u at %s: %s %s%s%s, mtu %u, up %.1f s\n",
		       st.u.status.pid, path, addr,
		       st.u.status.backend == MRV_BACKEND_AFXDP ? "afxdp"
								: "udp",
		       st.u.status.ifname[0] ? " " : "",
		       st.u.status.ifname[0] ? st.u.status.ifname : "",
		       st.u.status.mtu, (double)st.u.status.uptime_ms / 1000.0);
		printf("apps %u  pds %u  mrs %u  cqs %u  qps %u\n",
		       st.u.status.apps, st.u.status.pds, st.u.status.mrs,
		       st.u.status.cqs, st.u.status.qps);
	}
	print_list("control", ctl_names, st.u.status.ctl, MRD_CTL_NCOUNTERS,
		   json, true);
	print_list("io", io_names, st.u.status.io, MROCE_IO_NSTATS, json, false);
	print_list("metaroce", eng_names, st.u.status.eng,
		   MROCE_ENGINE_NSTATS, json, false);
	print_list("rocev2", eng_names, rv2.u.status.eng,
		   MROCE_ENGINE_NSTATS, json, false);
	if (json)
		printf(",\"app_list\":[");
	else if (st.u.status.apps)
		printf("%-8s %-8s %-9s %5s %5s %5s %5s\n", "PID", "SESSION",
		       "TRANSPORT", "PDS", "MRS", "CQS", "QPS");
	for (uint32_t i = 0; ask(fd, MRD_OP_APP_INFO, i, 0, &r) == 0; i++) {
		const char *t = r.u.app.transport == MRV_TRANSPORT_ROCEV2
					? "rocev2"
					: "metaroce";

		if (json)
			printf("%s{\"pid\":%u,\"session\":%u,\"transport\":"
			       "\"%s\",\"pds\":%u,\"mrs\":%u,\"cqs\":%u,"
			       "\"qps\":%u}",
			       i ? "," : "", r.u.app.pid, r.u.app.session, t,
			       r.u.app.pds, r.u.app.mrs, r.u.app.cqs,
			       r.u.app.qps);
		else
			printf("%-8u %-8u %-9s %5u %5u %5u %5u\n", r.u.app.pid,
			       r.u.app.session, t, r.u.app.pds, r.u.app.mrs,
			       r.u.app.cqs, r.u.app.qps);
	}
	if (json)
		printf("]}\n");
	close(fd);
	return 0;
}

void daemon_status_line(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = 2};
	struct mrd_rep r;
	int fd;

	strcpy(a.sun_path, MRD_DEFAULT_SOCK);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		printf("mroced: not running (socket %s)\n", MRD_DEFAULT_SOCK);
		if (fd >= 0)
			close(fd);
		return;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (ask(fd, MRD_OP_STATUS, 0, MRV_TRANSPORT_METAROCE, &r))
		printf("mroced: not answering (socket %s)\n", MRD_DEFAULT_SOCK);
	else
		printf("mroced: pid %u at %s: apps %u  pds %u  mrs %u  cqs %u  "
		       "qps %u (mrocectl daemon: more)\n",
		       r.u.status.pid, MRD_DEFAULT_SOCK, r.u.status.apps,
		       r.u.status.pds, r.u.status.mrs, r.u.status.cqs,
		       r.u.status.qps);
	close(fd);
}
