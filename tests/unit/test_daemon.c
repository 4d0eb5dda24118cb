// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of the mroced daemon and libmroce's daemon mode (user/mroced,
 * user/lib/daemon.c, protocol user/ipc/ipc.h), with real daemons: each
 * test starts two mroced processes (UDP backend on 127.a.b.1 and
 * 127.a.b.2, a, b from the pid so parallel runs never share ports) and
 * talks to them through the public API, or through raw control messages
 * for the protocol's error paths; the protocol client (user/lib/dclient.c)
 * and `mrocectl daemon --json` against them too. Daemons get SIGTERM when the
 * test process dies (PR_SET_PDEATHSIG), so a failed test leaves nothing behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "../../user/ipc/ipc.h"
#include "../../user/lib/daemon_int.h"
#include "../../user/lib/dclient.h"
#include "../harness.h"
#include "lib_fixture.h"
#include "mroce/mroce.h"

struct daemon {
	pid_t pid;
	char addr[46];
	char sock[108];
};

static struct daemon dmn[2];

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int sock_connect(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The sanitizer build of the daemon when it was built (make check does),
 * else the release one. */
static void daemon_bin(char *bin, size_t len)
{
	snprintf(bin, len, "%s/tests/mroced_san", mroce_build_dir());
	if (access(bin, X_OK))
		snprintf(bin, len, "%s/bin/mroced", mroce_build_dir());
}

static void daemon_start(struct daemon *d, int host)
{
	char bin[512];
	pid_t p = getpid(), parent = getpid();

	side_addr((uint8_t)host, d->addr, sizeof(d->addr));
	snprintf(d->sock, sizeof(d->sock), "/tmp/mroced-test-%d-%d.sock",
		 (int)p, host);
	daemon_bin(bin, sizeof(bin));
	d->pid = fork();
	ck_assert_int_ge(d->pid, 0);
	if (!d->pid) {
		int null = open("/dev/null", O_WRONLY);

		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		if (null >= 0 && !getenv("MROCE_TEST_VERBOSE"))
			dup2(null, 2);
		execl(bin, "mroced", "--local", d->addr, "--sock", d->sock,
		      "--rto-min", "20000",
		      getenv("MROCE_TEST_VERBOSE") ? "-v" : (char *)NULL,
		      (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 400; i++) {
		int fd = sock_connect(d->sock);

		if (fd >= 0) {
			close(fd);
			return;
		}
		usleep(10000);
	}
	ck_abort_msg("mroced (%s) did not come up on %s", bin, d->sock);
}

static int daemon_stop(struct daemon *d, int sig)
{
	int st = -1;

	if (d->pid <= 0)
		return -1;
	kill(d->pid, sig);
	waitpid(d->pid, &st, 0);
	d->pid = 0;
	unlink(d->sock);
	return st;
}

static void daemons_up(void)
{
	daemon_start(&dmn[0], 1);
	daemon_start(&dmn[1], 2);
}

static void daemons_down(void)
{
	daemon_stop(&dmn[0], SIGTERM);
	daemon_stop(&dmn[1], SIGTERM);
}

static void open_via(struct side *s, struct daemon *d, uint8_t transport,
		     uint32_t max_send_wr)
{
	struct mrv_dev_attr a = {.mode = MRV_MODE_DAEMON,
				 .transport = transport,
				 .daemon_sock = d->sock};

	side_open(s, &a, d->addr, max_send_wr);
}

static void pair(struct side *a, struct side *b, uint8_t transport)
{
	open_via(a, &dmn[0], transport, 0);
	open_via(b, &dmn[1], transport, 0);
	side_connect(a, b);
}

/* `want` completions from s's CQ within 10 s (the daemons progress). */
static void wait_wc(struct side *s, struct mrv_wc *wc, int want)
{
	int got = 0;
	uint64_t end = now_ms() + 10000;

	while (got < want && now_ms() < end) {
		int k = mrv_wait_cq(s->cq, 100);

		ck_assert_msg(k == 1 || k == -ETIMEDOUT, "wait_cq %d", k);
		k = mrv_poll_cq(s->cq, want - got, wc + got);
		ck_assert_int_ge(k, 0);
		got += k;
	}
	ck_assert_int_eq(got, want);
}

static void post1(struct side *s, struct mrv_send_wr *wr)
{
	struct mrv_send_wr *bad;

	ck_assert_int_eq(mrv_post_send(s->qp, wr, &bad), 0);
	ck_assert_ptr_null(bad);
}

static void recv1(struct side *s, uint64_t id, struct mrv_sge *sg)
{
	struct mrv_recv_wr r = {.wr_id = id, .sg_list = sg, .num_sge = !!sg},
			   *bad;

	ck_assert_int_eq(mrv_post_recv(s->qp, &r, &bad), 0);
}

/* ------------------------------------------------------------------ */

START_TEST(mrv_open_device__daemon_absent_is_enoent)
{
	struct mrv_dev_attr a = {.mode = MRV_MODE_DAEMON,
				 .daemon_sock = "/nonexistent/mroced.sock"};
	struct mrv_device *d = (void *)1;

	ck_assert_int_eq(mrv_open_device(&a, &d), -ENOENT);
	ck_assert_ptr_null(d);
}
END_TEST

/* Every data verb between two daemons, both transports (loop index). */
START_TEST(mrv_post_send__every_verb_through_daemons)
{
	uint8_t tr = _i ? MRV_TRANSPORT_ROCEV2 : MRV_TRANSPORT_METAROCE;
	struct side a, b;
	struct mrv_wc wc[4];
	struct mrv_sge sg, rs;
	struct mrv_send_wr wr;
	struct mrv_qp_attr qa;
	struct mrv_path_info pi;
	struct mrv_dev_stats st;
	uint8_t *pa, *pb;

	daemons_up();
	pair(&a, &b, tr);
	ck_assert_int_eq(mrv_device_mtu(a.dev), 4096);
	pa = a.mr->addr;
	pb = b.mr->addr;
	for (int i = 0; i < 20000; i++)
		pa[i] = (uint8_t)(i * 7 + 1);

	/* RDMA WRITE a -> b (multi-packet), zero copy from the memfd. */
	sg = side_sge(&a, 0, 20000);
	wr = side_rdma_wr(1, MRV_WR_RDMA_WRITE, &sg, &b, 100);
	post1(&a, &wr);
	wait_wc(&a, wc, 1);
	ck_assert_int_eq(wc[0].status, MRV_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, MRV_WC_RDMA_WRITE);
	ck_assert_uint_eq(wc[0].wr_id, 1);
	ck_assert_int_eq(memcmp(pb + 100, pa, 20000), 0);

	/* RDMA READ it back into a's second half. */
	sg = side_sge(&a, 32768, 20000);
	wr = side_rdma_wr(2, MRV_WR_RDMA_READ, &sg, &b, 100);
	post1(&a, &wr);
	wait_wc(&a, wc, 1);
	ck_assert_int_eq(wc[0].status, MRV_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, MRV_WC_RDMA_READ);
	ck_assert_int_eq(memcmp(pa + 32768, pa, 20000), 0);

	/* SEND with immediate a -> b into a posted receive. */
	rs = side_sge(&b, 40000, 5000);
	recv1(&b, 77, &rs);
	sg = side_sge(&a, 0, 3000);
	post1(&a, &(struct mrv_send_wr){.wr_id = 3,
					.sg_list = &sg,
					.num_sge = 1,
					.opcode = MRV_WR_SEND_WITH_IMM,
					.send_flags = MRV_SEND_SIGNALED,
					.imm_data = 0xabcd});
	wait_wc(&b, wc, 1);
	ck_assert_int_eq(wc[0].status, MRV_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, MRV_WC_RECV);
	ck_assert_uint_eq(wc[0].wr_id, 77);
	ck_assert_uint_eq(wc[0].byte_len, 3000);
	ck_assert_uint_eq(wc[0].wc_flags & MRV_WC_WITH_IMM, MRV_WC_WITH_IMM);
	ck_assert_uint_eq(wc[0].imm_data, 0xabcd);
	ck_assert_uint_eq(wc[0].qp_num, mrv_qp_num(b.qp));
	ck_assert_int_eq(memcmp(pb + 40000, pa, 3000), 0);
	wait_wc(&a, wc, 1);
	ck_assert_int_eq(wc[0].opcode, MRV_WC_SEND);

	/* WRITE with immediate consumes a receive on b. */
	recv1(&b, 78, NULL);
	sg = side_sge(&a, 0, 64);
	wr = side_rdma_wr(4, MRV_WR_RDMA_WRITE_WITH_IMM, &sg, &b, 0);
	wr.send_flags = 0;
	wr.imm_data = 5;
	post1(&a, &wr);
	wait_wc(&b, wc, 1);
	ck_assert_int_eq(wc[0].status, MRV_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, MRV_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(wc[0].imm_data, 5);
	ck_assert_int_eq(memcmp(pb, pa, 64), 0);

	/* Queries. */
	ck_assert_int_eq(mrv_query_qp(a.qp, &qa), 0);
	ck_assert_int_eq(qa.qp_state, MRV_QPS_RTS);
	ck_assert_str_eq(qa.dest_addr, b.addr);
	ck_assert_uint_eq(qa.dest_qp_num, mrv_qp_num(b.qp));
	ck_assert_int_eq(mrv_query_path(a.qp, 0, &pi), 0);
	ck_assert_uint_gt(pi.tx_pkts, 0);
	ck_assert_int_eq(mrv_query_path(a.qp, 1000, &pi), -ENOENT);
	ck_assert_int_eq(mrv_query_stats(a.dev, &st), 0);
	ck_assert_uint_ge(st.tx_data_pkts, 5);

	/* A bad lkey is refused at post time, with bad_wr. */
	{
		struct mrv_send_wr w = {.wr_id = 9,
					.sg_list = &sg,
					.num_sge = 1,
					.opcode = MRV_WR_SEND},
				   *bad = NULL;

		sg.lkey ^= 0x55;
		ck_assert_int_eq(mrv_post_send(a.qp, &w, &bad), -EINVAL);
		ck_assert_ptr_eq(bad, &w);
		sg.lkey ^= 0x55;
		w.opcode = 42;
		ck_assert_int_eq(mrv_post_send(a.qp, &w, &bad), -EINVAL);
	}

	/* A bad rkey comes back as a remote access error; nothing written. */
	memset(pb + 60000, 0, 100);
	sg = side_sge(&a, 0, 100);
	wr = side_rdma_wr(10, MRV_WR_RDMA_WRITE, &sg, &b, 60000);
	wr.rkey ^= 0x1000;
	post1(&a, &wr);
	wait_wc(&a, wc, 1);
	ck_assert_int_eq(wc[0].status, MRV_WC_REM_ACCESS_ERR);
	for (int i = 0; i < 100; i++)
		ck_assert_uint_eq(pb[60000 + i], 0);

	side_close(&a);
	side_close(&b);
	daemons_down();
}
END_TEST

/* mrv_reg_mr memory (not shareable) goes through a bounce buffer: local
 * use only. */
START_TEST(mrv_reg_mr__local_memory_through_bounce_buffer)
{
	struct side a, b;
	struct mrv_mr *ma, *mb, *mx;
	struct mrv_sge sg, rs;
	struct mrv_send_wr wr;
	struct mrv_wc wc;
	char *src = malloc(8000), *dst = malloc(8000);

	daemons_up();
	pair(&a, &b, MRV_TRANSPORT_ROCEV2);
	ck_assert_int_eq(mrv_reg_mr(a.pd, src, 8000, 0, &ma), 0);
	ck_assert_int_eq(
		mrv_reg_mr(b.pd, dst, 8000, MRV_ACCESS_LOCAL_WRITE, &mb), 0);
	ck_assert_int_eq(
		mrv_reg_mr(b.pd, dst, 8000,
			   MRV_ACCESS_LOCAL_WRITE | MRV_ACCESS_REMOTE_WRITE,
			   &mx),
		-ENOTSUP);
	for (int i = 0; i < 8000; i++)
		src[i] = (char)(i * 13);
	memset(dst, 0, 8000);
	rs = (struct mrv_sge){(uintptr_t)dst + 10, 7000, mb->lkey};
	recv1(&b, 1, &rs);
	sg = (struct mrv_sge){(uintptr_t)src + 500, 6000, ma->lkey};
	post1(&a, &(struct mrv_send_wr){.wr_id = 2,
					.sg_list = &sg,
					.num_sge = 1,
					.opcode = MRV_WR_SEND,
					.send_flags = MRV_SEND_SIGNALED});
	wait_wc(&b, &wc, 1);
	ck_assert_int_eq(wc.status, MRV_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, 6000);
	ck_assert_int_eq(memcmp(dst + 10, src + 500, 6000), 0);
	wait_wc(&a, &wc, 1);
	/* READ of remote (memfd) memory into a bounce-buffered region. */
	memcpy(b.mr->addr, "remote bytes", 12);
	sg = (struct mrv_sge){(uintptr_t)src + 100, 12, ma->lkey};
	ck_assert_int_eq(mrv_dereg_mr(ma), 0);
	ck_assert_int_eq(
		mrv_reg_mr(a.pd, src, 8000, MRV_ACCESS_LOCAL_WRITE, &ma), 0);
	sg.lkey = ma->lkey;
	wr = side_rdma_wr(3, MRV_WR_RDMA_READ, &sg, &b, 0);
	post1(&a, &wr);
	wait_wc(&a, &wc, 1);
	ck_assert_int_eq(wc.status, MRV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(src + 100, "remote bytes", 12), 0);
	ck_assert_int_eq(mrv_dereg_mr(ma), 0);
	ck_assert_int_eq(mrv_dereg_mr(mb), 0);
	side_close(&a);
	side_close(&b);
	daemons_down();
	free(src);
	free(dst);
}
END_TEST

START_TEST(mrv_post_send__state_queue_and_busy_errors)
{
	struct side a, b;
	struct mrv_sge sg;
	struct mrv_send_wr w[6], *bad;
	struct mrv_recv_wr r = {.wr_id = 1}, *rbad;

	daemons_up();
	open_via(&a, &dmn[0], MRV_TRANSPORT_ROCEV2, 4);
	open_via(&b, &dmn[1], MRV_TRANSPORT_ROCEV2, 4);
	sg = side_sge(&a, 0, 8);
	for (int i = 0; i < 6; i++) {
		w[i] = side_rdma_wr((uint64_t)i, MRV_WR_RDMA_WRITE, &sg, &b, 0);
		w[i].next = i < 5 ? &w[i + 1] : NULL;
	}
	/* RESET: no sends, no receives. */
	ck_assert_int_eq(mrv_post_send(a.qp, w, &bad), -EPERM);
	ck_assert_ptr_eq(bad, &w[0]);
	ck_assert_int_eq(mrv_post_recv(a.qp, &r, &rbad), -EPERM);
	/* Busy objects. */
	ck_assert_int_eq(mrv_close_device(a.dev), -EBUSY);
	ck_assert_int_eq(mrv_dealloc_pd(a.pd), -EBUSY);
	ck_assert_int_eq(mrv_destroy_cq(a.cq), -EBUSY);
	ck_assert_int_eq(mrv_wait_cq(a.cq, 20), -ETIMEDOUT);
	side_connect(&a, &b);
	/* max_send_wr 4: the fifth of a list is refused, the first four
	 * go (completions not polled yet hold their slots). */
	ck_assert_int_eq(mrv_post_send(a.qp, w, &bad), -EAGAIN);
	ck_assert_ptr_eq(bad, &w[4]);
	{
		struct mrv_wc wc[4];

		wait_wc(&a, wc, 4);
		for (int i = 0; i < 4; i++) {
			ck_assert_int_eq(wc[i].status, MRV_WC_SUCCESS);
			ck_assert_uint_eq(wc[i].wr_id, (uint64_t)i);
		}
	}
	w[3].next = NULL;
	ck_assert_int_eq(mrv_post_send(a.qp, w, &bad), 0);
	{
		struct mrv_wc wc[4];

		wait_wc(&a, wc, 4);
	}
	side_close(&a);
	side_close(&b);
	daemons_down();
}
END_TEST

static struct mrd_status status_of(const char *sock);
static struct mrd_app_info app_of(const char *sock, uint32_t i);

/* Polls until cond holds (5 s at most: a liveness bound, not a timing
 * assertion); the state a step waits for is read from counters. */
#define WAIT_UNTIL(cond)                                                      \
	for (uint64_t end_ = now_ms() + 5000; !(cond); usleep(1000))          \
	ck_assert_msg(now_ms() < end_, "never came: %s", #cond)

/* Side a's QP replaced by one with max_send send WRs on a new 16-deep
 * CQ (returned), connected to b's. */
static struct mrv_cq *on_small_cq(struct side *a, struct side *b,
				  uint32_t max_send)
{
	struct mrv_qp_init_attr qa;
	struct mrv_cq *small;

	ck_assert_int_eq(mrv_destroy_qp(a->qp), 0);
	ck_assert_int_eq(mrv_create_cq(a->dev, 16, &small), 0);
	qa = (struct mrv_qp_init_attr){
		.send_cq = small, .recv_cq = small, .max_send_wr = max_send};
	ck_assert_int_eq(mrv_create_qp(a->pd, &qa, &a->qp), 0);
	side_connect(a, b);
	return small;
}

/* A new QP for side s on its own CQ (the old one destroyed); the small
 * CQ, when given, destroyed too. */
static void fresh_qp(struct side *s, struct mrv_cq *small)
{
	ck_assert_int_eq(mrv_destroy_qp(s->qp), 0);
	if (small)
		ck_assert_int_eq(mrv_destroy_cq(small), 0);
	ck_assert_int_eq(
		mrv_create_qp(s->pd,
			      &(struct mrv_qp_init_attr){.send_cq = s->cq,
							 .recv_cq = s->cq},
			      &s->qp),
		0);
}

/* CQ overrun in daemon mode: an application that posts more signaled work
 * than its 16-deep CQ can hold and never polls loses its QP, as ibverbs
 * does: the QP goes to ERR (the daemon's engine moved it there), about a
 * CQ's depth of completions arrive in order and successful, the rest are
 * gone (a real overrun loses them), a later post fails with -EPERM (the
 * wrong QP state, as in embedded mode), and the daemon goes on serving:
 * the same application's new QP on a new CQ transfers. */
START_TEST(mrv_cq__overrun_in_daemon_mode_errors_the_qp_only)
{
	struct side a, b;
	struct mrv_cq *small;
	struct mrv_qp_attr at;
	struct mrv_sge sg;
	struct mrv_send_wr w[16], *bad;
	struct mrv_wc wc[64];
	int got = 0, k;

	daemons_up();
	open_via(&a, &dmn[0], MRV_TRANSPORT_METAROCE, 0);
	open_via(&b, &dmn[1], MRV_TRANSPORT_METAROCE, 0);
	small = on_small_cq(&a, &b, 64);
	sg = side_sge(&a, 0, 64);
	/* 48 signaled WRITEs, 16 at a time, none polled */
	for (int r = 0; r < 3; r++) {
		for (int i = 0; i < 16; i++) {
			w[i] = side_rdma_wr((uint64_t)(16 * r + i),
					    MRV_WR_RDMA_WRITE, &sg, &b, 0);
			w[i].next = i < 15 ? &w[i + 1] : NULL;
		}
		ck_assert_int_eq(mrv_post_send(a.qp, w, &bad), 0);
	}
	WAIT_UNTIL(mrv_query_qp(a.qp, &at) == 0 && at.qp_state == MRV_QPS_ERR);
	for (uint64_t end = now_ms() + 2000; now_ms() < end;) {
		k = mrv_poll_cq(small, 64 - got, wc + got);
		ck_assert_int_ge(k, 0);
		got += k;
		if (!k)
			usleep(1000);
	}
	/* what fitted, successful and in order; then nothing (lost) or
	 * flushes (17 of the 48 in the runs so far) */
	ck_assert_int_ge(got, 16);
	ck_assert_int_le(got, 48);
	for (int i = 0; i < got; i++)
		if (wc[i].status == MRV_WC_SUCCESS)
			ck_assert_uint_eq(wc[i].wr_id, (uint64_t)i);
		else
			ck_assert_int_eq(wc[i].status, MRV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(wc[0].status, MRV_WC_SUCCESS);
	/* a post to the QP in ERR: -EPERM (wrong QP state), as embedded */
	w[0] = side_rdma_wr(999, MRV_WR_RDMA_WRITE, &sg, &b, 0);
	w[0].next = NULL;
	ck_assert_int_eq(mrv_post_send(a.qp, w, &bad), -EPERM);
	ck_assert_ptr_eq(bad, &w[0]);
	/* the daemon serves on: a new QP on a new CQ */
	fresh_qp(&a, small);
	fresh_qp(&b, NULL);
	side_connect(&a, &b);
	w[0] = side_rdma_wr(7, MRV_WR_RDMA_WRITE, &sg, &b, 0);
	w[0].next = NULL;
	post1(&a, &w[0]);
	wait_wc(&a, wc, 1);
	ck_assert_int_eq(wc[0].status, MRV_WC_SUCCESS);
	ck_assert_uint_eq(wc[0].wr_id, 7);
	side_close(&a);
	side_close(&b);
	daemons_down();
}
END_TEST

/* A completion ring that fills up while the app does not poll: the rest
 * waits in the daemon, which must come back for it once the app drains
 * the ring, even if it went to sleep meanwhile. Each step waits for the
 * daemon's counters to show the state it sets up (completions moved into
 * the ring, the ring full, the daemon asleep after that), and the rest
 * must come because the application's drain kicked the sleeping daemon. */
START_TEST(mrv_poll_cq__full_ring_resumes_after_drain)
{
	struct side a, b;
	struct mrv_cq *small;
	struct mrv_sge sg;
	struct mrv_send_wr w[24], *bad;
	struct mrv_wc wc[24];
	struct mrd_app_info ai;
	uint64_t sleeps, kicks;
	int got = 0;

	daemons_up();
	open_via(&a, &dmn[0], MRV_TRANSPORT_ROCEV2, 0);
	open_via(&b, &dmn[1], MRV_TRANSPORT_ROCEV2, 0);
	small = on_small_cq(&a, &b, 32); /* a's QP on a 16-deep CQ */
	sg = side_sge(&a, 0, 64);
	for (int i = 0; i < 24; i++) {
		w[i] = side_rdma_wr((uint64_t)i, MRV_WR_RDMA_WRITE, &sg, &b, 0);
		w[i].next = i < 23 ? &w[i + 1] : NULL;
	}
	/* Three bursts of 8 (the engine's CQ, 16 deep, never holds more
	 * than 8): 16 fill the ring, 8 wait in the daemon, which sleeps. */
	w[7].next = w[15].next = NULL;
	for (int i = 0; i < 16; i += 8) {
		ck_assert_int_eq(mrv_post_send(a.qp, &w[i], &bad), 0);
		WAIT_UNTIL((ai = app_of(dmn[0].sock, 0)).sess[MRD_SESS_cqes] >=
			   (uint64_t)i + 8);
	}
	ck_assert_uint_eq(ai.sess[MRD_SESS_cq_ring_full], 1); /* 16 of 16 */
	ck_assert_int_eq(mrv_post_send(a.qp, &w[16], &bad), 0);
	/* the third burst completes in the engine, with no room in the
	 * ring: the daemon holds it and goes to sleep */
	sleeps = status_of(dmn[0].sock).loop[MRD_LOOP_sleeps];
	WAIT_UNTIL(status_of(dmn[0].sock).loop[MRD_LOOP_sleeps] > sleeps + 1);
	ai = app_of(dmn[0].sock, 0);
	ck_assert_uint_eq(ai.sess[MRD_SESS_cqes], 16);
	ck_assert_uint_eq(ai.app[MRD_APP_cq_kicks], 0);
	kicks = ai.sess[MRD_SESS_kicks]; /* the posts' doorbells so far */
	/* asleep again after that request (the shared header says so; a
	 * request over the control socket would wake it) */
	WAIT_UNTIL(atomic_load(&to_dm_dev(a.dev)->hdr->daemon_sleeping));
	for (uint64_t end = now_ms() + 5000; got < 24 && now_ms() < end;) {
		int k = mrv_wait_cq(small, 100);

		ck_assert(k == 1 || k == -ETIMEDOUT);
		k = mrv_poll_cq(small, 24 - got, wc + got);
		ck_assert_int_ge(k, 0);
		got += k;
	}
	ck_assert_int_eq(got, 24);
	/* the drain of the full ring woke the sleeping daemon (a daemon
	 * left asleep would only come back at its next timer) */
	ai = app_of(dmn[0].sock, 0);
	ck_assert_uint_ge(ai.app[MRD_APP_cq_kicks], 1);
	ck_assert_uint_gt(ai.sess[MRD_SESS_kicks], kicks);
	ck_assert_uint_eq(ai.sess[MRD_SESS_cqes], 24);
	for (int i = 0; i < 24; i++) {
		ck_assert_int_eq(wc[i].status, MRV_WC_SUCCESS);
		ck_assert_uint_eq(wc[i].wr_id, (uint64_t)i);
	}
	fresh_qp(&a, small);
	side_close(&a);
	side_close(&b);
	daemons_down();
}
END_TEST

/* mrv_device_fd() for an application's own poll loop. */
START_TEST(mrv_device_fd__readable_when_completions_arrive)
{
	struct side a, b;
	struct mrv_sge sg, rs;
	struct mrv_wc wc;
	struct pollfd p;
	int fd, k = 0;

	daemons_up();
	pair(&a, &b, MRV_TRANSPORT_ROCEV2);
	fd = mrv_device_fd(b.dev);
	ck_assert_int_ge(fd, 0);
	p = (struct pollfd){.fd = fd, .events = POLLIN};
	ck_assert_int_eq(mrv_poll_cq(b.cq, 1, &wc), 0); /* resets the fd */
	ck_assert_int_eq(poll(&p, 1, 50), 0);		/* nothing yet */
	for (int round = 0; round < 3; round++) {
		rs = side_sge(&b, 0, 100);
		recv1(&b, (uint64_t)round, &rs);
		sg = side_sge(&a, 0, 100);
		post1(&a, &(struct mrv_send_wr){.sg_list = &sg,
						.num_sge = 1,
						.opcode = MRV_WR_SEND});
		/* Sleep in poll() until the daemon signals, then fetch. */
		ck_assert_int_eq(poll(&p, 1, 5000), 1);
		k = mrv_poll_cq(b.cq, 1, &wc);
		ck_assert_int_eq(k, 1);
		ck_assert_uint_eq(wc.wr_id, (uint64_t)round);
		ck_assert_int_eq(mrv_poll_cq(b.cq, 1, &wc), 0);
	}
	side_close(&a);
	side_close(&b);
	daemons_down();
}
END_TEST

/* Posts n receives on b that can only complete by a flush. */
static void post_receives(struct side *b, int n)
{
	for (int i = 0; i < n; i++) {
		struct mrv_sge sg = side_sge(b, (size_t)i * 100, 100);

		recv1(b, 500 + (uint64_t)i, &sg);
	}
}

static void expect_flushed(struct side *b, int n, uint64_t bound_ms)
{
	uint64_t t0 = now_ms();
	struct mrv_wc wc[16];
	int got = 0, k;

	while (got < n && now_ms() - t0 < bound_ms) {
		k = mrv_wait_cq(b->cq, 200);
		if (k == -ENOTCONN)
			break;
		ck_assert_msg(k == 1 || k == -ETIMEDOUT, "wait_cq: %d", k);
		k = mrv_poll_cq(b->cq, 16, wc + got);
		ck_assert_int_ge(k, 0);
		for (int i = 0; i < k; i++)
			ck_assert_int_eq(wc[got + i].status,
					 MRV_WC_WR_FLUSH_ERR);
		got += k;
	}
	ck_assert_int_eq(got, n);
	ck_assert_msg(now_ms() - t0 < bound_ms, "took %llu ms",
		      (unsigned long long)(now_ms() - t0));
	for (int i = 0; i < n; i++) {
		ck_assert_uint_eq(wc[i].wr_id, 500 + (uint64_t)i);
		ck_assert_int_eq(wc[i].opcode, MRV_WC_RECV);
	}
	/* Then the device is dead: -ENOTCONN, never a hang. */
	ck_assert_int_eq(mrv_poll_cq(b->cq, 1, wc), -ENOTCONN);
	ck_assert_int_eq(mrv_wait_cq(b->cq, 1000), -ENOTCONN);
	{
		struct mrv_sge sg = side_sge(b, 0, 10);
		struct mrv_send_wr w = {.sg_list = &sg,
					.num_sge = 1,
					.opcode = MRV_WR_SEND},
				   *bad;

		ck_assert_int_eq(mrv_post_send(b->qp, &w, &bad), -ENOTCONN);
	}
	ck_assert_int_eq(mrv_progress(b->dev), -ENOTCONN);
}

START_TEST(mroced__sigkill_flushes_outstanding_work)
{
	struct side a, b;

	daemons_up();
	pair(&a, &b, MRV_TRANSPORT_METAROCE);
	post_receives(&b, 6);
	daemon_stop(&dmn[1], SIGKILL);
	expect_flushed(&b, 6, 3000);
	/* Releasing the objects of a dead daemon still works. */
	side_close(&b);
	side_close(&a);
	daemons_down();
}
END_TEST

START_TEST(mroced__sigterm_exits_cleanly_with_flush_errors)
{
	struct side a, b;
	struct stat st;
	int status;

	daemons_up();
	pair(&a, &b, MRV_TRANSPORT_ROCEV2);
	post_receives(&b, 5);
	kill(dmn[1].pid, SIGTERM);
	ck_assert_int_eq(waitpid(dmn[1].pid, &status, 0), dmn[1].pid);
	dmn[1].pid = 0;
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_int_eq(stat(dmn[1].sock, &st), -1); /* socket removed */
	expect_flushed(&b, 5, 3000);
	side_close(&b);
	side_close(&a);
	daemons_down();
}
END_TEST

/* ------------------------------------------------------------------ */
/* Raw control protocol                                                 */
/* ------------------------------------------------------------------ */
static int raw_call(int fd, uint16_t op, struct mrd_req *q, int sendfd,
		    struct mrd_rep *r, int *rfds, int nrfds)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = q, .iov_len = sizeof(*q)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	int got = 0;

	q->version = q->version ? q->version : MRD_VERSION;
	q->op = op;
	q->seq++;
	if (sendfd >= 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE(sizeof(int));
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &sendfd, sizeof(int));
	}
	ck_assert_int_eq(sendmsg(fd, &m, 0), sizeof(*q));
	iov = (struct iovec){r, sizeof(*r)};
	m = (struct msghdr){.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	ck_assert_int_eq(recvmsg(fd, &m, 0), sizeof(*r));
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		for (size_t i = 0;
		     i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int x;

			memcpy(&x, CMSG_DATA(c) + i * sizeof(int), sizeof(x));
			if (got < nrfds)
				rfds[got++] = x;
			else
				close(x);
		}
	ck_assert_uint_eq(r->seq, q->seq);
	return r->err;
}

static struct mrd_status status_of(const char *sock)
{
	struct mrd_req q = {0};
	struct mrd_rep r;
	int fd = sock_connect(sock);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(raw_call(fd, MRD_OP_STATUS, &q, -1, &r, NULL, 0), 0);
	close(fd);
	return r.u.status;
}

START_TEST(mroced__bad_control_messages_get_named_errors)
{
	struct mrd_req q = {0};
	struct mrd_rep r;
	struct mrd_status st;
	struct side a;
	int fd, fd2, fds[3], mfd;
	uint32_t cq;
	char shortmsg[5] = "abcd";

	daemons_up();
	open_via(&a, &dmn[0], MRV_TRANSPORT_METAROCE, 0);
	fd = sock_connect(dmn[0].sock);
	ck_assert_int_ge(fd, 0);

	/* Short message. */
	ck_assert_int_eq(send(fd, shortmsg, 4, 0), 4);
	ck_assert_int_eq(recv(fd, &r, sizeof(r), 0), sizeof(r));
	ck_assert_int_eq(r.err, -EBADMSG);
	/* Wrong version. */
	q.version = 99;
	ck_assert_int_eq(raw_call(fd, MRD_OP_STATUS, &q, -1, &r, NULL, 0),
			 -EPROTO);
	q.version = MRD_VERSION;
	/* Unknown op; verbs before HELLO. */
	ck_assert_int_eq(raw_call(fd, 999, &q, -1, &r, NULL, 0), -EOPNOTSUPP);
	ck_assert_int_eq(raw_call(fd, MRD_OP_ALLOC_PD, &q, -1, &r, NULL, 0),
			 -ENOTCONN);
	/* HELLO with a bad transport, then a good one. */
	q.u.hello.transport = 9;
	ck_assert_int_eq(raw_call(fd, MRD_OP_HELLO, &q, -1, &r, NULL, 0),
			 -EINVAL);
	q.u.hello.transport = MRV_TRANSPORT_METAROCE;
	ck_assert_int_eq(raw_call(fd, MRD_OP_HELLO, &q, -1, &r, fds, 3), 0);
	ck_assert_int_eq(raw_call(fd, MRD_OP_HELLO, &q, -1, &r, NULL, 0),
			 -EISCONN);
	/* Another application's QP and CQ are not ours: -ENOENT. */
	memset(&q.u, 0, sizeof(q.u));
	q.u.qp.qpn = mrv_qp_num(a.qp);
	ck_assert_int_eq(raw_call(fd, MRD_OP_DESTROY_QP, &q, -1, &r, NULL, 0),
			 -ENOENT);
	ck_assert_int_eq(raw_call(fd, MRD_OP_QUERY_QP, &q, -1, &r, NULL, 0),
			 -ENOENT);
	q.u.modify_qp.qpn = mrv_qp_num(a.qp);
	q.u.modify_qp.state = MRV_QPS_ERR;
	q.u.modify_qp.mask = MRV_QP_STATE;
	ck_assert_int_eq(raw_call(fd, MRD_OP_MODIFY_QP, &q, -1, &r, NULL, 0),
			 -ENOENT);
	/* a's QP was not touched. */
	{
		struct mrv_qp_attr at;

		ck_assert_int_eq(mrv_query_qp(a.qp, &at), 0);
		ck_assert_int_eq(at.qp_state, MRV_QPS_RESET);
	}
	/* Our own CQ, then someone else's CQ id from a second session. */
	memset(&q.u, 0, sizeof(q.u));
	q.u.create_cq.depth = 64;
	ck_assert_int_eq(raw_call(fd, MRD_OP_CREATE_CQ, &q, -1, &r, NULL, 0),
			 0);
	cq = r.u.cq.cq;
	fd2 = sock_connect(dmn[0].sock);
	ck_assert_int_ge(fd2, 0);
	{
		struct mrd_req q2 = {0};
		struct mrd_rep r2;
		int f2[3];

		q2.u.hello.transport = MRV_TRANSPORT_METAROCE;
		ck_assert_int_eq(
			raw_call(fd2, MRD_OP_HELLO, &q2, -1, &r2, f2, 3), 0);
		for (int i = 0; i < 3; i++)
			close(f2[i]);
		memset(&q2.u, 0, sizeof(q2.u));
		q2.u.cq.cq = cq;
		ck_assert_int_eq(
			raw_call(fd2, MRD_OP_DESTROY_CQ, &q2, -1, &r2, NULL, 0),
			-ENOENT);
	}
	close(fd2);
	/* REG_MR: no PD, no memfd, a memfd not sealed against shrinking. */
	memset(&q.u, 0, sizeof(q.u));
	q.u.reg_mr.pd = 7;
	q.u.reg_mr.len = 4096;
	ck_assert_int_eq(raw_call(fd, MRD_OP_REG_MR, &q, -1, &r, NULL, 0),
			 -ENOENT);
	ck_assert_int_eq(raw_call(fd, MRD_OP_ALLOC_PD, &q, -1, &r, NULL, 0), 0);
	q.u.reg_mr.pd = r.u.pd.handle;
	q.u.reg_mr.len = 4096;
	ck_assert_int_eq(raw_call(fd, MRD_OP_REG_MR, &q, -1, &r, NULL, 0),
			 -EINVAL);
	mfd = memfd_create("t", MFD_CLOEXEC);
	ck_assert_int_eq(ftruncate(mfd, 4096), 0);
	ck_assert_int_eq(raw_call(fd, MRD_OP_REG_MR, &q, mfd, &r, NULL, 0),
			 -EPERM);
	close(mfd);
	/* A submission entry for someone else's QP is dropped and counted
	 * (the ring is drained before the next request). */
	{
		struct mrd_shm *h =
			mmap(NULL, 4096 + MRD_SQ_ENTRIES * 64,
			     PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
		struct mrd_sqe *sq;

		ck_assert_ptr_ne(h, MAP_FAILED);
		sq = (struct mrd_sqe *)((char *)h + 4096);
		sq[0] = (struct mrd_sqe){.kind = MRD_SQE_SEND,
					 .qpn = mrv_qp_num(a.qp)};
		atomic_store(&h->sq.head, 1);
		ck_assert_int_eq(
			raw_call(fd, MRD_OP_QUERY_STATS, &q, -1, &r, NULL, 0),
			0);
		ck_assert_uint_eq(atomic_load(&h->sq.tail), 1);
		munmap(h, 4096 + MRD_SQ_ENTRIES * 64);
	}
	st = status_of(dmn[0].sock);
	ck_assert_uint_ge(st.ctl[1], 1); /* ctl_bad_size */
	ck_assert_uint_ge(st.ctl[2], 1); /* ctl_bad_version */
	ck_assert_uint_ge(st.ctl[3], 1); /* ctl_bad_op */
	ck_assert_uint_ge(st.ctl[4], 5); /* ctl_bad_handle */
	ck_assert_uint_ge(st.ctl[5], 1); /* ctl_no_hello */
	ck_assert_uint_ge(st.ctl[8], 1); /* sq_bad_entries */
	ck_assert_uint_eq(st.apps, 2);
	/* An impossible ring index (the region is the app's to scribble
	 * on): the daemon ends that session, nothing else. */
	{
		struct mrd_shm *h = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					 MAP_SHARED, fds[0], 0);
		struct timeval tv = {.tv_sec = 3};
		char buf[sizeof(r)];

		ck_assert_ptr_ne(h, MAP_FAILED);
		atomic_store(&h->sq.head,
			     atomic_load(&h->sq.tail) + 3 * MRD_SQ_ENTRIES);
		munmap(h, 4096);
		q.version = MRD_VERSION;
		q.op = MRD_OP_ALLOC_PD;
		ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
					    sizeof(tv)),
				 0);
		/* The daemon sees the index in its loop or when this request
		 * drains the ring: a reply, then the end, or the end at once
		 * (reset when our request was still unread). */
		if (send(fd, &q, sizeof(q), MSG_NOSIGNAL) == sizeof(q)) {
			ssize_t n = recv(fd, buf, sizeof(buf), 0);

			if (n == (ssize_t)sizeof(r))
				n = recv(fd, buf, sizeof(buf), 0);
			ck_assert_msg(n == 0 || (n < 0 && errno == ECONNRESET),
				      "session not ended: %zd (%s)", n,
				      strerror(errno));
		}
		st = status_of(dmn[0].sock);
		ck_assert_uint_eq(st.apps, 1);
		ck_assert_int_eq(mrv_progress(a.dev), 0); /* a is fine */
	}
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	close(fd);
	side_close(&a);
	daemons_down();
}
END_TEST

/* A killed application's objects are released by the daemon. */
START_TEST(mroced__dead_application_is_reclaimed)
{
	struct mrd_status st;
	int pfd[2];
	pid_t kid;
	char c;
	uint64_t t0;

	daemons_up();
	ck_assert_int_eq(pipe(pfd), 0);
	kid = fork();
	ck_assert_int_ge(kid, 0);
	if (!kid) {
		struct side s;

		open_via(&s, &dmn[0], MRV_TRANSPORT_ROCEV2, 0);
		(void)!write(pfd[1], "x", 1);
		pause();
		_exit(0);
	}
	ck_assert_int_eq(read(pfd[0], &c, 1), 1);
	st = status_of(dmn[0].sock);
	ck_assert_uint_eq(st.apps, 1);
	ck_assert_uint_eq(st.qps, 1);
	ck_assert_uint_eq(st.mrs, 1);
	ck_assert_uint_eq(st.cqs, 1);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	t0 = now_ms();
	do {
		usleep(10000);
		st = status_of(dmn[0].sock);
	} while (st.apps && now_ms() - t0 < 3000);
	ck_assert_uint_eq(st.apps, 0);
	ck_assert_uint_eq(st.qps, 0);
	ck_assert_uint_eq(st.mrs, 0);
	ck_assert_uint_eq(st.cqs, 0);
	ck_assert_uint_eq(st.pds, 0);
	ck_assert_uint_ge(st.ctl[9], 1); /* sessions_reaped */
	close(pfd[0]);
	close(pfd[1]);
	daemons_down();
}
END_TEST

/* ------------------------------------------------------------------ */
/* The protocol client and mrocectl daemon                              */
/* ------------------------------------------------------------------ */
START_TEST(mrd_client_call__named_errors)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char longpath[200];
	struct mrd_client c;
	struct mrd_req q = {0};
	struct mrd_rep r;
	int fds[3], mute;

	ck_assert_int_eq(mrd_client_connect(&c, "/nonexistent/x.sock", 1),
			 -ENOENT);
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = 0;
	ck_assert_int_eq(mrd_client_connect(&c, longpath, 1), -ENAMETOOLONG);
	ck_assert_str_eq(mrd_client_strerror(-ECONNREFUSED),
			 "mroced is not running");

	/* A socket that accepts but never answers: -ETIMEDOUT, then the
	 * session is given up (-ENOTCONN). */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/mroce-mute-%d.sock",
		 (int)getpid());
	unlink(sa.sun_path);
	mute = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(mute, 0);
	ck_assert_int_eq(bind(mute, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(mute, 4), 0);
	ck_assert_int_eq(mrd_client_connect(&c, sa.sun_path, 1), 0);
	ck_assert_int_eq(
		mrd_client_call(&c, MRD_OP_STATUS, &q, &r, -1, NULL, 0),
		-ETIMEDOUT);
	ck_assert(c.broken);
	ck_assert_int_eq(
		mrd_client_call(&c, MRD_OP_STATUS, &q, &r, -1, NULL, 0),
		-ENOTCONN);
	mrd_client_close(&c);
	close(mute);
	unlink(sa.sun_path);

	/* A real daemon: STATUS before HELLO, HELLO with its descriptors,
	 * then a daemon gone: -ENOTCONN. */
	daemons_up();
	ck_assert_int_eq(mrd_client_connect(&c, dmn[0].sock, 5), 0);
	ck_assert_int_eq(
		mrd_client_call(&c, MRD_OP_STATUS, &q, &r, -1, NULL, 0), 0);
	ck_assert_uint_eq(r.u.status.pid, (uint32_t)dmn[0].pid);
	ck_assert_int_eq(mrd_client_hello(&c, MRV_TRANSPORT_ROCEV2, &r, fds),
			 0);
	ck_assert_uint_eq(r.u.hello.transport, MRV_TRANSPORT_ROCEV2);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_ge(fds[i], 0);
		close(fds[i]);
	}
	daemon_stop(&dmn[0], SIGKILL);
	ck_assert_int_eq(
		mrd_client_call(&c, MRD_OP_STATUS, &q, &r, -1, NULL, 0),
		-ENOTCONN);
	mrd_client_close(&c);
	daemons_down();
}
END_TEST

/* APP_INFO of session number i of the daemon at sock. */
static struct mrd_app_info app_of(const char *sock, uint32_t i)
{
	struct mrd_req q = {0};
	struct mrd_rep r;
	int fd = sock_connect(sock);

	ck_assert_int_ge(fd, 0);
	q.u.status.index = i;
	ck_assert_int_eq(raw_call(fd, MRD_OP_APP_INFO, &q, -1, &r, NULL, 0),
			 0);
	close(fd);
	return r.u.app;
}

/* A hostile client: writes n RECV entries for qpn straight into the
 * shared submission ring, past the library's own limits, for at most
 * ms milliseconds; returns how many the ring took. */
static int flood_ring(struct mrv_device *dev, uint32_t qpn, int n, int ms)
{
	struct dm_dev *d = to_dm_dev(dev);
	uint32_t head = atomic_load(&d->hdr->sq.head);
	uint64_t end = now_ms() + (uint64_t)ms;
	int put = 0;

	while (put < n && now_ms() < end) {
		uint32_t tail = atomic_load(&d->hdr->sq.tail);

		if (head - tail == d->sq_entries) {
			usleep(1000);
			continue;
		}
		d->sq[head & (d->sq_entries - 1)] = (struct mrd_sqe){
			.wr_id = (uint64_t)put,
			.qpn = qpn,
			.kind = MRD_SQE_RECV,
		};
		atomic_store(&d->hdr->sq.head, ++head);
		if (atomic_load(&d->hdr->daemon_sleeping))
			(void)!write(d->kick_fd, &(uint64_t){1}, 8);
		put++;
	}
	return put;
}

/* A client that writes past its QP's limits cannot make the daemon's
 * memory grow: the backlog of a QP whose receive queue is full, and the
 * daemon-made completions of a QP that refuses every request while its
 * CQ ring is full, stop at their bounds; the ring then stays full (the
 * client's back-pressure) and the daemon counts the stalls. Draining the
 * CQ lets the rest through: nothing is lost. */
START_TEST(mroced__flooded_rings_stay_bounded)
{
	struct side a, c;
	struct mrv_qp_attr init = {.qp_state = MRV_QPS_INIT};
	struct mrd_app_info ai;
	struct mrv_wc wc[64];
	int put, drained = 0;

	daemons_up();
	/* Backlog: a QP in INIT (receives allowed) with a 128-deep RQ and
	 * 128 send WRs: 128 go to the engine, 256 into the backlog. */
	open_via(&a, &dmn[0], MRV_TRANSPORT_METAROCE, 128);
	ck_assert_int_eq(mrv_modify_qp(a.qp, &init, MRV_QP_STATE), 0);
	put = flood_ring(a.dev, a.qp->qpn, 100000, 1500);
	ck_assert_int_lt(put, 100000);
	ai = app_of(dmn[0].sock, 0);
	ck_assert_uint_le(ai.backlog, 128 + 128);
	ck_assert_uint_le(ai.sess[MRD_SESS_backlog_max], 128 + 128);
	ck_assert_uint_eq(ai.backlog, 128 + 128);
	ck_assert_uint_gt(ai.sess[MRD_SESS_sq_stalls], 0);
	ck_assert_uint_eq(ai.sq_fill, MRD_SQ_ENTRIES);
	ck_assert_uint_eq((uint64_t)put,
			  ai.sess[MRD_SESS_sq_entries] + ai.sq_fill);

	/* Completions: a QP in RESET refuses every receive; the daemon makes
	 * an error completion for each, and its CQ ring holds 16. */
	open_via(&c, &dmn[0], MRV_TRANSPORT_METAROCE, 0);
	ck_assert_int_eq(mrv_destroy_qp(c.qp), 0);
	ck_assert_int_eq(mrv_destroy_cq(c.cq), 0);
	ck_assert_int_eq(mrv_create_cq(c.dev, 16, &c.cq), 0);
	ck_assert_int_eq(
		mrv_create_qp(c.pd,
			      &(struct mrv_qp_init_attr){.send_cq = c.cq,
							 .recv_cq = c.cq},
			      &c.qp),
		0);
	put = flood_ring(c.dev, c.qp->qpn, 100000, 1500);
	ck_assert_int_eq(put, 16 + 16 + MRD_SQ_ENTRIES);
	ai = app_of(dmn[0].sock, 0); /* newest session first */
	ck_assert_uint_eq(ai.synth, 16);
	ck_assert_uint_eq(ai.sess[MRD_SESS_synth_max], 16);
	ck_assert_uint_gt(ai.sess[MRD_SESS_sq_stalls], 0);
	/* Draining the CQ lets every entry through, each completed once. */
	for (uint64_t end = now_ms() + 10000; drained < put && now_ms() < end;) {
		int k = mrv_poll_cq(c.cq, 64, wc);

		ck_assert_int_ge(k, 0);
		for (int i = 0; i < k; i++) {
			ck_assert_int_eq(wc[i].status, MRV_WC_LOC_QP_OP_ERR);
			ck_assert_uint_eq(wc[i].wr_id, (uint64_t)(drained + i));
		}
		drained += k;
		if (!k)
			usleep(100);
	}
	ck_assert_int_eq(drained, put);
	ai = app_of(dmn[0].sock, 0);
	ck_assert_uint_eq(ai.synth, 0);
	ck_assert_uint_eq(ai.sq_fill, 0);
	side_close(&c);
	side_close(&a);
	daemons_down();
}
END_TEST

/* A daemon with connected but quiet applications sleeps: its sleep
 * counter grows and it wakes up only for its engine's timers, a few
 * times a second at most (counters, not timing). */
START_TEST(mroced__idle_connected_daemon_sleeps)
{
	struct side a, b;
	struct mrv_sge sg;
	struct mrv_send_wr w;
	struct mrv_wc wc;
	struct mrd_status s1, s2;
	struct mrd_app_info i1, i2;
	uint64_t wake;

	daemons_up();
	pair(&a, &b, (uint8_t)_i);
	sg = side_sge(&a, 0, 4096);
	w = side_rdma_wr(1, MRV_WR_RDMA_WRITE, &sg, &b, 0);
	post1(&a, &w);
	wait_wc(&a, &wc, 1);
	ck_assert_int_eq(wc.status, MRV_WC_SUCCESS);
	usleep(300000); /* past the spin window and the connection's tail */
	s1 = status_of(dmn[0].sock);
	i1 = app_of(dmn[0].sock, 0);
	usleep(1000000);
	s2 = status_of(dmn[0].sock);
	i2 = app_of(dmn[0].sock, 0);
	wake = s2.loop[MRD_LOOP_wakeups_event] + s2.loop[MRD_LOOP_wakeups_timer] -
	       s1.loop[MRD_LOOP_wakeups_event] - s1.loop[MRD_LOOP_wakeups_timer];
	ck_assert_uint_gt(s2.loop[MRD_LOOP_sleeps], s1.loop[MRD_LOOP_sleeps]);
	/* (The two STATUS requests themselves wake it: 2 events.) */
	ck_assert_msg(wake <= 20, "%llu wake-ups in 1 s",
		      (unsigned long long)wake);
	ck_assert_msg(s2.loop[MRD_LOOP_rounds] - s1.loop[MRD_LOOP_rounds] < 2000,
		      "%llu rounds in 1 s",
		      (unsigned long long)(s2.loop[MRD_LOOP_rounds] -
					   s1.loop[MRD_LOOP_rounds]));
	ck_assert_uint_ge(s2.loop[MRD_LOOP_sleep_us] - s1.loop[MRD_LOOP_sleep_us],
			  800000);
	/* The application neither posted nor was woken meanwhile. */
	ck_assert_uint_eq(i2.sess[MRD_SESS_cq_doorbells],
			  i1.sess[MRD_SESS_cq_doorbells]);
	ck_assert_uint_eq(i2.app[MRD_APP_posts], i1.app[MRD_APP_posts]);
	ck_assert_uint_ge(i1.app[MRD_APP_posts], 1);
	side_close(&a);
	side_close(&b);
	daemons_down();
}
END_TEST

/* mrocectl daemon --json on the socket path, stdout only, parsed. */
static struct json_object *ctl_json(const char *sock, int *status)
{
	char cmd[1024], out[65536];

	snprintf(cmd, sizeof(cmd),
		 "'%s/bin/mrocectl' daemon --sock '%s' "
		 "--json 2>/dev/null",
		 mroce_build_dir(), sock);
	*status = mroce_run(cmd, out, sizeof(out));
	return json_tokener_parse(out);
}

static const char *json_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "no %s", key);
	return json_object_get_string(v);
}

START_TEST(mrocectl_daemon__json_is_valid_and_escaped)
{
	char quoted[108];
	struct json_object *doc, *v;
	int st;

	/* No daemon at a path with a quote: one document with an error. */
	snprintf(quoted, sizeof(quoted), "/tmp/mroce\"q-%d.sock",
		 (int)getpid());
	doc = ctl_json(quoted, &st);
	ck_assert_int_eq(st, 1);
	ck_assert_ptr_nonnull(doc);
	ck_assert_str_eq(json_str(doc, "sock"), quoted);
	ck_assert(json_object_object_get_ex(doc, "error", &v));
	ck_assert_str_eq(json_str(v, "name"), "ENOENT");
	json_object_put(doc);

	daemons_up();
	doc = ctl_json(dmn[0].sock, &st);
	ck_assert_int_eq(st, 0);
	ck_assert_ptr_nonnull(doc);
	ck_assert_str_eq(json_str(doc, "tool"), "mrocectl");
	ck_assert_str_eq(json_str(doc, "local"), dmn[0].addr);
	ck_assert(json_object_object_get_ex(doc, "schema_version", &v));
	ck_assert(json_object_object_get_ex(doc, "app_list", &v));
	ck_assert(json_object_is_type(v, json_type_array));
	json_object_put(doc);
	daemons_down();
}
END_TEST

Suite *daemon_suite(void)
{
	Suite *s = suite_create("daemon");
	TCase *tc = tcase_create("daemon");
	char bin[512];

	daemon_bin(bin, sizeof(bin));
	if (access(bin, X_OK)) {
		mroce_skip("daemon", "mroced is not built");
		return s;
	}
	tcase_add_test(tc, mrv_open_device__daemon_absent_is_enoent);
	tcase_add_loop_test(tc, mrv_post_send__every_verb_through_daemons, 0,
			    2);
	tcase_add_test(tc, mrv_reg_mr__local_memory_through_bounce_buffer);
	tcase_add_test(tc, mrv_post_send__state_queue_and_busy_errors);
	tcase_add_test(tc, mrv_poll_cq__full_ring_resumes_after_drain);
	tcase_add_test(tc, mrv_cq__overrun_in_daemon_mode_errors_the_qp_only);
	tcase_add_test(tc, mrv_device_fd__readable_when_completions_arrive);
	tcase_add_test(tc, mroced__sigkill_flushes_outstanding_work);
	tcase_add_test(tc, mroced__sigterm_exits_cleanly_with_flush_errors);
	tcase_add_test(tc, mroced__bad_control_messages_get_named_errors);
	tcase_add_test(tc, mroced__dead_application_is_reclaimed);
	tcase_add_test(tc, mrd_client_call__named_errors);
	tcase_add_test(tc, mroced__flooded_rings_stay_bounded);
	tcase_add_loop_test(tc, mroced__idle_connected_daemon_sleeps, 1, 3);
	snprintf(bin, sizeof(bin), "%s/bin/mrocectl", mroce_build_dir());
	if (!access(bin, X_OK))
		tcase_add_test(tc, mrocectl_daemon__json_is_valid_and_escaped);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
MROCE_SUITE(daemon_suite)
