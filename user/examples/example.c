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

#include <mroce/mroce.h>

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
	       "    -V, --version      libmroce's version\n"
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

/* What one run holds: the options, then the verbs objects. */
struct example {
	struct mrv_dev_attr da;
	const char *host; /* NULL: server */
	uint16_t port;
	struct mrv_device *dev;
	struct mrv_pd *pd;
	struct mrv_cq *cq;
	struct mrv_qp *qp;
	struct mrv_mr *mr;
};

static int parse_transport(const char *s, uint8_t *t)
{
	if (!strcmp(s, "metaroce"))
		*t = MRV_TRANSPORT_METAROCE;
	else if (!strcmp(s, "rocev2"))
		*t = MRV_TRANSPORT_ROCEV2;
	else
		return -1;
	return 0;
}

/* Options into ex: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct example *ex)
{
	static const struct option lo[] = {
		{"local", required_argument, NULL, 'l'},
		{"port", required_argument, NULL, 'p'},
		{"transport", required_argument, NULL, 't'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "p:Vh", lo, NULL)) != -1) {
		switch (c) {
		case 'l':
			ex->da.local_addr = optarg;
			break;
		case 'p': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (!*optarg || *end || v == 0 || v > 65535) {
				fprintf(stderr,
					"mroce_example: --port: '%s' is not "
					"a port (1-65535)\n",
					optarg);
				return 2;
			}
			ex->port = (uint16_t)v;
			break;
		}
		case 't':
			if (parse_transport(optarg, &ex->da.transport) < 0) {
				fprintf(stderr,
					"mroce_example: unknown "
					"transport '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'V':
			printf("mroce_example (libmroce %s)\n",
			       mroce_version());
			return 0;
		case 'h':
			help();
			return 0;
		default:
			fprintf(stderr, "Try 'mroce_example --help'.\n");
			return 2;
		}
	}
	if (optind < argc)
		ex->host = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "mroce_example: too many arguments\n");
		return 2;
	}
	if (!ex->da.local_addr)
		ex->da.local_addr = ex->host ? "127.0.0.2" : "127.0.0.1";
	return -1;
}

/* Device, PD, CQ, QP and a buffer, as with ibverbs. */
static int open_objects(struct example *ex)
{
	struct mrv_qp_init_attr qa = {0};
	int err;

	err = mrv_open_device(&ex->da, &ex->dev);
	if (err)
		return fail("open device", err);
	if ((err = mrv_alloc_pd(ex->dev, &ex->pd)) ||
	    (err = mrv_create_cq(ex->dev, 16, &ex->cq)))
		return fail("setup", err);
	qa.send_cq = qa.recv_cq = ex->cq;
	if ((err = mrv_create_qp(ex->pd, &qa, &ex->qp)) ||
	    (err = mrv_alloc_mr(ex->pd, BUF_SIZE,
				MRV_ACCESS_LOCAL_WRITE |
					MRV_ACCESS_REMOTE_WRITE,
				&ex->mr)))
		return fail("setup", err);
	return 0;
}

/* In reverse order of creation: each object still in use by a later
 * one would make its destroy fail with -EBUSY. */
static void close_objects(struct example *ex)
{
	mrv_destroy_qp(ex->qp);
	mrv_dereg_mr(ex->mr);
	mrv_destroy_cq(ex->cq);
	mrv_dealloc_pd(ex->pd);
	mrv_close_device(ex->dev);
}

/* The buffer offered to the peer over the rendezvous: all of ours. */
static struct mrv_conn_param offer(const struct example *ex)
{
	return (struct mrv_conn_param){
		.buf_addr = (uintptr_t)ex->mr->addr,
		.buf_len = ex->mr->length,
		.buf_rkey = ex->mr->rkey,
	};
}

/* Server: the client WRITEs into the first half of the buffer, and its
 * SEND lands in the second half. */
static int run_server(struct example *ex)
{
	char *msg = ex->mr->addr;
	struct mrv_conn_param cp = offer(ex);
	struct mrv_sge sge = {.addr = (uintptr_t)msg + 2048,
			      .length = 2048,
			      .lkey = ex->mr->lkey};
	struct mrv_recv_wr rwr = {.sg_list = &sge, .num_sge = 1};
	struct mrv_recv_wr *bad;
	struct mrv_listener *l;
	struct mrv_conn_info peer;
	struct mrv_wc wc;
	int err;

	if ((err = mrv_listen(ex->dev, NULL, ex->port, &l)))
		return fail("listen", err);
	cp.timeout_ms = 600000;
	if ((err = mrv_accept(l, ex->qp, &cp, &peer)))
		return fail("accept", err);
	mrv_listener_close(l);
	/* Post the receive before telling the client to go. */
	if ((err = mrv_post_recv(ex->qp, &rwr, &bad)))
		return fail("post_recv", err);
	if (write(peer.sock, "g", 1) != 1)
		return fail("rendezvous", -EIO);
	if (wait_one(ex->cq, &wc))
		return 1;
	printf("WRITE placed: \"%s\"\n", msg);
	printf("SEND received: \"%.*s\" (imm %u)\n", (int)wc.byte_len,
	       msg + 2048, wc.imm_data);
	linger(ex->dev, peer.sock);
	close(peer.sock);
	return 0;
}

/* Posts one signaled send request and waits for its completion. */
static int send_one(struct example *ex, struct mrv_send_wr *wr)
{
	struct mrv_send_wr *bad;
	struct mrv_wc wc;
	int err = mrv_post_send(ex->qp, wr, &bad);

	if (err)
		return fail("post_send", err);
	return wait_one(ex->cq, &wc);
}

/* Client: WRITE a greeting into the server's buffer, then SEND a message
 * with an immediate (which consumes the server's receive). */
static int run_client(struct example *ex)
{
	char *msg = ex->mr->addr;
	struct mrv_conn_param cp = offer(ex);
	struct mrv_sge sge = {.addr = (uintptr_t)msg, .lkey = ex->mr->lkey};
	struct mrv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .send_flags = MRV_SEND_SIGNALED};
	struct mrv_conn_info peer;
	char go;
	int err;

	if ((err = mrv_connect(ex->qp, ex->host, ex->port, &cp, &peer)))
		return fail("connect", err);
	sge.length = (uint32_t)snprintf(msg, 64, "hello from %s",
					ex->da.local_addr) +
		     1;
	wr.opcode = MRV_WR_RDMA_WRITE;
	wr.remote_addr = peer.buf_addr;
	wr.rkey = peer.buf_rkey;
	if (read(peer.sock, &go, 1) != 1) /* the server's receive is up */
		return fail("rendezvous", -EIO);
	if (send_one(ex, &wr))
		return 1;
	sge.addr += 64;
	sge.length = (uint32_t)snprintf(msg + 64, 64, "a message");
	wr.opcode = MRV_WR_SEND_WITH_IMM;
	wr.imm_data = 42;
	if (send_one(ex, &wr))
		return 1;
	printf("sent WRITE and SEND to %s (QP 0x%06x)\n", peer.addr,
	       peer.qp_num);
	close(peer.sock);
	return 0;
}

int main(int argc, char **argv)
{
	struct example ex = {
		.da = {.mode = MRV_MODE_EMBEDDED, .backend = MRV_BACKEND_UDP},
		.port = 18600,
	};
	int rc = parse_args(argc, argv, &ex);

	if (rc >= 0)
		return rc;
	if (open_objects(&ex))
		return 1;
	rc = ex.host ? run_client(&ex) : run_server(&ex);
	if (!rc)
		close_objects(&ex);
	return rc;
}
