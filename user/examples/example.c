// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce_example: the smallest useful libmroce program. The server offers a
 * buffer; the client connects, RDMA-WRITEs a greeting into it, then SENDs
 * a message with an immediate; the server prints both.
 *
 *   mroce_example --local 127.0.0.1                 (server)
 *   mroce_example --local 127.0.0.2 127.0.0.1        (client)
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mroce/mroce.h"

#define BUF_SIZE 4096

static void help(void)
{
	printf("NAME\n"
	       "    mroce_example - connect two programs with libmroce, WRITE "
	       "and SEND\n"
	       "\n"
	       "SYNOPSIS\n"
	       "    mroce_example [--local ADDR] [-p PORT] [--transport T]     "
	       "     server\n"
	       "    mroce_example [--local ADDR] [-p PORT] [--transport T] "
	       "HOST     client\n"
	       "\n"
	       "DESCRIPTION\n"
	       "    The server registers a buffer and waits; the client "
	       "connects over TCP\n"
	       "    port PORT (default 18600), writes a greeting into the "
	       "server's buffer\n"
	       "    with RDMA WRITE, then SENDs a message with immediate data "
	       "42. The\n"
	       "    server prints what it received. Both use the UDP backend "
	       "on ADDR\n"
	       "    (server default 127.0.0.1, client default 127.0.0.2).\n"
	       "\n"
	       "OPTIONS\n"
	       "    --local ADDR       local data address\n"
	       "    -p, --port PORT    TCP rendezvous port\n"
	       "    --transport T      metaroce (default) or rocev2\n"
	       "    -h, --help         this text\n"
	       "\n"
	       "EXIT STATUS\n"
	       "    0 success, 1 failure, 2 bad arguments.\n");
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "mroce_example: %s: %s\n", what, strerror(-err));
	return 1;
}

/* Wait for one completion and check it. */
static int wait_one(struct mrv_cq *cq, struct mrv_wc *wc)
{
	int err = mrv_wait_cq(cq, 5000);

	if (err < 0)
		return fail("waiting for a completion", err);
	if (mrv_poll_cq(cq, 1, wc) != 1)
		return fail("poll_cq", -EIO);
	if (wc->status != MRV_WC_SUCCESS) {
		fprintf(stderr, "mroce_example: completion error: %s\n",
			mrv_wc_status_str(wc->status));
		return 1;
	}
	return 0;
}

/* Keep serving (ACKs, retransmissions) until the peer closes the
 * rendezvous socket: exiting at once could strand its last ACK. */
static void linger(struct mrv_device *dev, int sock)
{
	for (int i = 0; i < 5000; i++) {
		struct pollfd p = {.fd = sock, .events = POLLIN};
		char c;

		mrv_progress(dev);
		if (poll(&p, 1, 1) == 1 && read(sock, &c, 1) <= 0)
			return;
	}
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"local", required_argument, NULL, 'l'},
		{"port", required_argument, NULL, 'p'},
		{"transport", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	struct mrv_dev_attr da = {.mode = MRV_MODE_EMBEDDED,
				  .backend = MRV_BACKEND_UDP};
	struct mrv_device *dev;
	struct mrv_pd *pd;
	struct mrv_cq *cq;
	struct mrv_qp *qp;
	struct mrv_mr *mr;
	struct mrv_qp_init_attr qa = {0};
	struct mrv_conn_param cp = {0};
	struct mrv_conn_info peer;
	struct mrv_wc wc;
	const char *host = NULL;
	uint16_t port = 18600;
	char *msg;
	int c, err;

	while ((c = getopt_long(argc, argv, "p:h", lo, NULL)) != -1) {
		switch (c) {
		case 'l':
			da.local_addr = optarg;
			break;
		case 'p':
			port = (uint16_t)atoi(optarg);
			if (!port) {
				fprintf(stderr, "mroce_example: bad port\n");
				return 2;
			}
			break;
		case 't':
			if (!strcmp(optarg, "metaroce")) {
				da.transport = MRV_TRANSPORT_METAROCE;
			} else if (!strcmp(optarg, "rocev2")) {
				da.transport = MRV_TRANSPORT_ROCEV2;
			} else {
				fprintf(stderr,
					"mroce_example: unknown "
					"transport '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			help();
			return 0;
		default:
			fprintf(stderr, "Try 'mroce_example --help'.\n");
			return 2;
		}
	}
	if (optind < argc)
		host = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "mroce_example: too many arguments\n");
		return 2;
	}
	if (!da.local_addr)
		da.local_addr = host ? "127.0.0.2" : "127.0.0.1";

	/* Device, PD, CQ, QP and a buffer, as with ibverbs. */
	err = mrv_open_device(&da, &dev);
	if (err)
		return fail("open device", err);
	if ((err = mrv_alloc_pd(dev, &pd)) ||
	    (err = mrv_create_cq(dev, 16, &cq)))
		return fail("setup", err);
	qa.send_cq = qa.recv_cq = cq;
	if ((err = mrv_create_qp(pd, &qa, &qp)) ||
	    (err = mrv_alloc_mr(
		     pd, BUF_SIZE,
		     MRV_ACCESS_LOCAL_WRITE | MRV_ACCESS_REMOTE_WRITE, &mr)))
		return fail("setup", err);
	msg = mr->addr;

	cp.buf_addr = (uintptr_t)mr->addr;
	cp.buf_len = mr->length;
	cp.buf_rkey = mr->rkey;
	if (!host) {
		struct mrv_listener *l;
		struct mrv_sge sge = {.addr = (uintptr_t)msg + 2048,
				      .length = 2048,
				      .lkey = mr->lkey};
		struct mrv_recv_wr rwr = {.sg_list = &sge, .num_sge = 1};
		struct mrv_recv_wr *bad;

		if ((err = mrv_listen(dev, NULL, port, &l)))
			return fail("listen", err);
		cp.timeout_ms = 600000;
		if ((err = mrv_accept(l, qp, &cp, &peer)))
			return fail("accept", err);
		mrv_listener_close(l);
		/* Post the receive before telling the client to go. */
		if ((err = mrv_post_recv(qp, &rwr, &bad)))
			return fail("post_recv", err);
		if (write(peer.sock, "g", 1) != 1)
			return fail("rendezvous", -EIO);
		if (wait_one(cq, &wc))
			return 1;
		printf("WRITE placed: \"%s\"\n", msg);
		printf("SEND received: \"%.*s\" (imm %u)\n", (int)wc.byte_len,
		       msg + 2048, wc.imm_data);
		linger(dev, peer.sock);
	} else {
		struct mrv_sge sge = {
			.addr = (uintptr_t)msg, .length = 0, .lkey = mr->lkey};
		struct mrv_send_wr wr = {.sg_list = &sge,
					 .num_sge = 1,
					 .send_flags = MRV_SEND_SIGNALED};
		struct mrv_send_wr *bad;
		char go;

		if ((err = mrv_connect(qp, host, port, &cp, &peer)))
			return fail("connect", err);
		/* WRITE a greeting into the server's buffer. */
		sge.length = (uint32_t)snprintf(msg, 64, "hello from %s",
						da.local_addr) +
			     1;
		wr.opcode = MRV_WR_RDMA_WRITE;
		wr.remote_addr = peer.buf_addr;
		wr.rkey = peer.buf_rkey;
		if (read(peer.sock, &go, 1) != 1)
			return fail("rendezvous", -EIO);
		if ((err = mrv_post_send(qp, &wr, &bad)))
			return fail("post_send", err);
		if (wait_one(cq, &wc))
			return 1;
		/* Then a SEND with an immediate (consumes the receive). */
		sge.addr += 64;
		sge.length = (uint32_t)snprintf(msg + 64, 64, "a message");
		wr.opcode = MRV_WR_SEND_WITH_IMM;
		wr.imm_data = 42;
		if ((err = mrv_post_send(qp, &wr, &bad)))
			return fail("post_send", err);
		if (wait_one(cq, &wc))
			return 1;
		printf("sent WRITE and SEND to %s (QP 0x%06x)\n", peer.addr,
		       peer.qp_num);
	}
	close(peer.sock);
	mrv_destroy_qp(qp);
	mrv_dereg_mr(mr);
	mrv_destroy_cq(cq);
	mrv_dealloc_pd(pd);
	mrv_close_device(dev);
	return 0;
}
