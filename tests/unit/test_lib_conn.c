// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of the TCP rendezvous helper (user/lib/conn.c): a forked child
 * plays the server, the test process the client; loopback addresses from
 * the pid keep parallel runs apart.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"
#include "mroce/mroce.h"

static void addr_str(uint8_t host, char *out, size_t len)
{
	pid_t p = getpid();

	snprintf(out, len, "127.%u.%u.%u", 1 + p % 250, (p / 250) % 256, host);
}

struct end {
	char addr[46];
	struct mrv_device *dev;
	struct mrv_pd *pd;
	struct mrv_cq *cq;
	struct mrv_qp *qp;
	struct mrv_mr *mr;
};

static int end_open(struct end *e, const char *addr, uint8_t transport)
{
	struct mrv_dev_attr a = {.transport = transport, .local_addr = addr};
	struct mrv_qp_init_attr qa = {0};
	int err;

	memset(e, 0, sizeof(*e));
	snprintf(e->addr, sizeof(e->addr), "%s", addr);
	err = mrv_open_device(&a, &e->dev);
	if (!err)
		err = mrv_alloc_pd(e->dev, &e->pd);
	if (!err)
		err = mrv_create_cq(e->dev, 64, &e->cq);
	qa.send_cq = qa.recv_cq = e->cq;
	if (!err)
		err = mrv_create_qp(e->pd, &qa, &e->qp);
	if (!err)
		err = mrv_alloc_mr(e->pd, 8192,
				   MRV_ACCESS_LOCAL_WRITE |
					   MRV_ACCESS_REMOTE_WRITE |
					   MRV_ACCESS_REMOTE_READ,
				   &e->mr);
	return err;
}

static void end_close(struct end *e)
{
	ck_assert_int_eq(mrv_destroy_qp(e->qp), 0);
	ck_assert_int_eq(mrv_dereg_mr(e->mr), 0);
	ck_assert_int_eq(mrv_destroy_cq(e->cq), 0);
	ck_assert_int_eq(mrv_dealloc_pd(e->pd), 0);
	ck_assert_int_eq(mrv_close_device(e->dev), 0);
}

/* Child: accept one QP, wait until the client says done (TCP close),
 * exit with 0 if the buffer holds the expected bytes. */
static void serve(const char *addr, uint16_t port, uint8_t transport,
		  int ready_fd)
{
	struct end e;
	struct mrv_listener *l;
	struct mrv_conn_param p = {0};
	struct mrv_conn_info ri;
	char c;
	int rc = 0;

	if (end_open(&e, addr, transport) || mrv_listen(e.dev, NULL, port, &l))
		_exit(10);
	if (write(ready_fd, "r", 1) != 1)
		_exit(11);
	p.buf_addr = (uintptr_t)e.mr->addr;
	p.buf_len = e.mr->length;
	p.buf_rkey = e.mr->rkey;
	if (mrv_accept(l, e.qp, &p, &ri))
		_exit(12);
	/* Serve the peer's WRITE until it closes the rendezvous socket. */
	for (;;) {
		struct timeval tv = {0, 1000};
		ssize_t r;

		setsockopt(ri.sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		r = recv(ri.sock, &c, 1, 0);
		if (r == 0)
			break;
		mrv_progress(e.dev);
	}
	for (int i = 0; i < 1000; i++)
		if (((uint8_t *)e.mr->addr)[i] != (uint8_t)(i ^ 0x5c))
			rc = 13;
	_exit(rc);
}

static void connect_and_write(uint8_t transport, uint8_t hs, uint8_t hc)
{
	char saddr[46], caddr[46];
	uint16_t port = (uint16_t)(20000 + getpid() % 20000);
	int pfd[2], status;
	struct end e;
	struct mrv_conn_info ri;
	struct mrv_conn_param p = {.timeout_ms = 5000};
	struct mrv_sge sg;
	struct mrv_send_wr wr, *bad;
	struct mrv_wc wc;
	char c;
	pid_t child;
	int err;

	addr_str(hs, saddr, sizeof(saddr));
	addr_str(hc, caddr, sizeof(caddr));
	ck_assert_int_eq(pipe(pfd), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (!child) {
		close(pfd[0]);
		serve(saddr, port, transport, pfd[1]);
	}
	close(pfd[1]);
	ck_assert_int_eq(read(pfd[0], &c, 1), 1);
	ck_assert_int_eq(end_open(&e, caddr, transport), 0);
	ck_assert_int_eq(mrv_connect(e.qp, saddr, port, &p, &ri), 0);
	ck_assert_str_eq(ri.addr, saddr);
	ck_assert_uint_ne(ri.qp_num, 0);
	ck_assert_uint_ne(ri.buf_rkey, 0);
	ck_assert_uint_ge(ri.buf_len, 1000);
	for (int i = 0; i < 1000; i++)
		((uint8_t *)e.mr->addr)[i] = (uint8_t)(i ^ 0x5c);
	sg = (struct mrv_sge){.addr = (uintptr_t)e.mr->addr,
			      .length = 1000,
			      .lkey = e.mr->lkey};
	wr = (struct mrv_send_wr){.sg_list = &sg,
				  .num_sge = 1,
				  .opcode = MRV_WR_RDMA_WRITE,
				  .send_flags = MRV_SEND_SIGNALED,
				  .remote_addr = ri.buf_addr,
				  .rkey = ri.buf_rkey};
	ck_assert_int_eq(mrv_post_send(e.qp, &wr, &bad), 0);
	err = mrv_wait_cq(e.cq, 5000);
	if (err != 1) {
		struct mrv_dev_stats st;
		struct mrv_qp_attr qa;

		/* Say where it stuck: the numbers name the culprit. */
		mrv_query_stats(e.dev, &st);
		mrv_query_qp(e.qp, &qa);
		ck_abort_msg("WRITE not complete: %d; QP %s, tx %" PRIu64
			     " (data %" PRIu64 ", retx %" PRIu64
			     ", rto %" PRIu64 "), rx %" PRIu64,
			     err, mrv_qp_state_str(qa.qp_state), st.tx_pkts,
			     st.tx_data_pkts, st.retransmits, st.rto_fires,
			     st.rx_pkts);
	}
	ck_assert_int_eq(mrv_poll_cq(e.cq, 1, &wc), 1);
	ck_assert_int_eq(wc.status, MRV_WC_SUCCESS);
	close(ri.sock);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	end_close(&e);
}

START_TEST(mrv_connect__write_to_accepted_peer_metaroce)
{
	connect_and_write(MRV_TRANSPORT_METAROCE, 30, 31);
}
END_TEST

START_TEST(mrv_connect__write_to_accepted_peer_rocev2)
{
	connect_and_write(MRV_TRANSPORT_ROCEV2, 32, 33);
}
END_TEST

START_TEST(mrv_connect__nobody_listening_is_econnrefused)
{
	char caddr[46];
	struct end e;
	struct mrv_conn_info ri;
	struct mrv_conn_param p = {.timeout_ms = 2000};
	struct mrv_qp_attr a;

	addr_str(34, caddr, sizeof(caddr));
	ck_assert_int_eq(end_open(&e, caddr, MRV_TRANSPORT_METAROCE), 0);
	/* Port 1 on a fresh loopback address: nobody listens. */
	ck_assert_int_eq(mrv_connect(e.qp, caddr, 1, &p, &ri), -ECONNREFUSED);
	ck_assert_int_eq(mrv_query_qp(e.qp, &a), 0);
	ck_assert_int_eq(a.qp_state, MRV_QPS_RESET);
	end_close(&e);
}
END_TEST

START_TEST(mrv_connect__qp_not_in_reset_is_eperm)
{
	char caddr[46];
	struct end e;
	struct mrv_conn_info ri;
	struct mrv_qp_attr a = {.qp_state = MRV_QPS_INIT};

	addr_str(35, caddr, sizeof(caddr));
	ck_assert_int_eq(end_open(&e, caddr, MRV_TRANSPORT_METAROCE), 0);
	ck_assert_int_eq(mrv_modify_qp(e.qp, &a, MRV_QP_STATE), 0);
	ck_assert_int_eq(mrv_connect(e.qp, caddr, 1, NULL, &ri), -EPERM);
	end_close(&e);
}
END_TEST

START_TEST(mrv_accept__times_out_without_client)
{
	char addr[46];
	struct end e;
	struct mrv_listener *l;
	struct mrv_conn_info ri;
	struct mrv_conn_param p = {.timeout_ms = 50};

	addr_str(36, addr, sizeof(addr));
	ck_assert_int_eq(end_open(&e, addr, MRV_TRANSPORT_METAROCE), 0);
	ck_assert_int_eq(mrv_listen(e.dev, addr, 0, &l), 0);
	ck_assert_int_gt(mrv_listener_port(l), 0);
	ck_assert_int_eq(mrv_accept(l, e.qp, &p, &ri), -ETIMEDOUT);
	mrv_listener_close(l);
	end_close(&e);
}
END_TEST

START_TEST(mrv_connect__garbage_peer_is_eproto)
{
	char addr[46];
	struct end e;
	struct mrv_listener *l;
	struct mrv_conn_info ri;
	struct mrv_conn_param p = {.timeout_ms = 3000};
	pid_t child;
	int port, status;

	addr_str(37, addr, sizeof(addr));
	ck_assert_int_eq(end_open(&e, addr, MRV_TRANSPORT_METAROCE), 0);
	ck_assert_int_eq(mrv_listen(e.dev, addr, 0, &l), 0);
	port = mrv_listener_port(l);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (!child) {
		/* A client speaking another protocol. */
		char cmd[128];

		snprintf(cmd, sizeof(cmd),
			 "exec 3<>/dev/tcp/%s/%d; printf '%%056d' 0 >&3; "
			 "sleep 1",
			 addr, port);
		execl("/bin/bash", "bash", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_eq(mrv_accept(l, e.qp, &p, &ri), -EPROTO);
	waitpid(child, &status, 0);
	mrv_listener_close(l);
	end_close(&e);
}
END_TEST

/* Both sides speak the rendezvous but run different transports: each
 * gets -EPROTONOSUPPORT (the server's accept fails: exit 12), never a
 * connection and never the generic -EPROTO. */
START_TEST(mrv_connect__other_transport_is_eprotonosupport)
{
	char saddr[46], caddr[46];
	uint16_t port = (uint16_t)(20000 + (getpid() + 7) % 20000);
	struct mrv_conn_param p = {.timeout_ms = 5000};
	struct mrv_conn_info ri;
	int pfd[2], status;
	struct end e;
	pid_t child;
	char c;

	addr_str(38, saddr, sizeof(saddr));
	addr_str(39, caddr, sizeof(caddr));
	ck_assert_int_eq(pipe(pfd), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (!child) {
		close(pfd[0]);
		serve(saddr, port, MRV_TRANSPORT_METAROCE, pfd[1]);
	}
	close(pfd[1]);
	ck_assert_int_eq(read(pfd[0], &c, 1), 1);
	ck_assert_int_eq(end_open(&e, caddr, MRV_TRANSPORT_ROCEV2), 0);
	ck_assert_int_eq(mrv_connect(e.qp, saddr, port, &p, &ri),
			 -EPROTONOSUPPORT);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 12);
	close(pfd[0]);
	end_close(&e);
}
END_TEST

Suite *lib_conn_suite(void)
{
	Suite *s = suite_create("lib_conn");
	TCase *tc = tcase_create("rendezvous");

	tcase_add_test(tc, mrv_connect__write_to_accepted_peer_metaroce);
	tcase_add_test(tc, mrv_connect__write_to_accepted_peer_rocev2);
	tcase_add_test(tc, mrv_connect__nobody_listening_is_econnrefused);
	tcase_add_test(tc, mrv_connect__qp_not_in_reset_is_eperm);
	tcase_add_test(tc, mrv_accept__times_out_without_client);
	tcase_add_test(tc, mrv_connect__garbage_peer_is_eproto);
	tcase_add_test(tc, mrv_connect__other_transport_is_eprotonosupport);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}
MROCE_SUITE(lib_conn_suite)
