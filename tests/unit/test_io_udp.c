// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of the I/O dispatcher (user/io/io.c) and the UDP backend
 * (user/io/udp.c) over loopback. Each test uses its own 127.a.b.c
 * addresses (a, b from the pid) so parallel runs never share a port.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../harness.h"
#include "mroce/engine.h"
#include "mroce/io.h"
#include "mroce/wire.h"

static void test_addr(uint8_t host, uint8_t out[16])
{
	pid_t p = getpid();

	memset(out, 0, 16);
	out[0] = 127;
	out[1] = (uint8_t)(1 + p % 250);
	out[2] = (uint8_t)(p / 250);
	out[3] = host;
}

static void cfg_for(struct mroce_io_cfg *c, uint8_t host)
{
	memset(c, 0, sizeof(*c));
	c->kind = MROCE_IO_UDP;
	c->family = AF_INET;
	test_addr(host, c->local_addr);
}

static struct mroce_io *open_at(uint8_t host)
{
	struct mroce_io_cfg c;
	struct mroce_io *io = NULL;

	cfg_for(&c, host);
	ck_assert_int_eq(mroce_io_open(&c, &io), 0);
	ck_assert_ptr_nonnull(io);
	return io;
}

/* Receive up to n packets, waiting up to 1 s for the first. */
static int rx_wait(struct mroce_io *io, struct mroce_io_rx *r, int n)
{
	for (int i = 0; i < 1000; i++) {
		struct pollfd p = {.fd = mroce_io_fd(io), .events = POLLIN};
		int got = mroce_io_rx(io, r, n);

		if (got)
			return got;
		(void)poll(&p, 1, 1);
	}
	return 0;
}

START_TEST(mroce_io_open__rejects_bad_kind_and_null)
{
	struct mroce_io_cfg c;
	struct mroce_io *io = (void *)1;

	cfg_for(&c, 1);
	c.kind = 9;
	ck_assert_int_eq(mroce_io_open(&c, &io), -EINVAL);
	ck_assert_ptr_null(io);
	ck_assert_int_eq(mroce_io_open(NULL, &io), -EINVAL);
	ck_assert_int_eq(mroce_io_open(&c, NULL), -EINVAL);
}
END_TEST

START_TEST(mroce_io_open__afxdp_without_backend_or_iface_fails_cleanly)
{
	struct mroce_io_cfg c;
	struct mroce_io *io = NULL;
	int err;

	cfg_for(&c, 1);
	c.kind = MROCE_IO_AFXDP;
	c.ifname = "mroce-no-such-if";
	err = mroce_io_open(&c, &io);
	/* -ENOTSUP when afxdp.c is not linked in, another negative errno
	 * (no such interface) when it is: never success, never a crash. */
	ck_assert_int_lt(err, 0);
	ck_assert_ptr_null(io);
}
END_TEST

START_TEST(udp_open__second_open_same_address_is_eaddrinuse)
{
	struct mroce_io_cfg c;
	struct mroce_io *a = open_at(2), *b = NULL;

	cfg_for(&c, 2);
	ck_assert_int_eq(mroce_io_open(&c, &b), -EADDRINUSE);
	ck_assert_ptr_null(b);
	mroce_io_close(a);
	/* Closing releases the ports. */
	ck_assert_int_eq(mroce_io_open(&c, &b), 0);
	mroce_io_close(b);
}
END_TEST

START_TEST(udp_open__rejects_unknown_family)
{
	struct mroce_io_cfg c;
	struct mroce_io *io = NULL;

	cfg_for(&c, 3);
	c.family = 77;
	ck_assert_int_eq(mroce_io_open(&c, &io), -EAFNOSUPPORT);
}
END_TEST

START_TEST(udp_tx__delivers_payload_ports_and_source)
{
	struct mroce_io *a = open_at(4), *b = open_at(5);
	struct mroce_peer_addr dst = {.family = AF_INET};
	uint8_t payload[300];
	struct mroce_io_tx t;
	struct mroce_io_rx r[4];
	struct mroce_io_stats st;

	test_addr(5, dst.addr);
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);
	t = (struct mroce_io_tx){.data = payload,
				 .len = sizeof(payload),
				 .dst = &dst,
				 .sport = 0xC123,
				 .dport = MROCE_UDP_PORT};
	ck_assert_int_eq(mroce_io_tx(a, &t, 1), 1);
	ck_assert_int_eq(rx_wait(b, r, 4), 1);
	ck_assert_uint_eq(r[0].len, sizeof(payload));
	ck_assert_mem_eq(r[0].data, payload, sizeof(payload));
	ck_assert_uint_eq(r[0].sport, 0xC123);
	ck_assert_uint_eq(r[0].dport, MROCE_UDP_PORT);
	ck_assert_uint_eq(r[0].family, AF_INET);
	test_addr(4, dst.addr);
	ck_assert_mem_eq(r[0].src, dst.addr, 4);
	ck_assert(!r[0].ce);
	mroce_io_rx_release(b, r, 1);
	mroce_io_get_stats(a, &st);
	ck_assert_uint_eq(st.tx_pkts, 1);
	ck_assert_uint_eq(st.tx_bytes, sizeof(payload));
	mroce_io_get_stats(b, &st);
	ck_assert_uint_eq(st.rx_pkts, 1);
	mroce_io_close(a);
	mroce_io_close(b);
}
END_TEST

START_TEST(udp_tx__rocev2_port_reaches_rocev2_socket)
{
	struct mroce_io *a = open_at(6), *b = open_at(7);
	struct mroce_peer_addr dst = {.family = AF_INET};
	uint8_t payload[40] = {0x04};
	struct mroce_io_tx t;
	struct mroce_io_rx r[2];

	test_addr(7, dst.addr);
	t = (struct mroce_io_tx){.data = payload,
				 .len = sizeof(payload),
				 .dst = &dst,
				 .sport = 0xD000,
				 .dport = ROCEV2_UDP_PORT};
	ck_assert_int_eq(mroce_io_tx(a, &t, 1), 1);
	ck_assert_int_eq(rx_wait(b, r, 2), 1);
	ck_assert_uint_eq(r[0].dport, ROCEV2_UDP_PORT);
	ck_assert_uint_eq(r[0].sport, 0xD000);
	mroce_io_rx_release(b, r, 1);
	mroce_io_close(a);
	mroce_io_close(b);
}
END_TEST

START_TEST(udp_tx__batch_of_many_source_ports_keeps_order_per_port)
{
	enum { N = 200 };
	struct mroce_io *a = open_at(8), *b = open_at(9);
	struct mroce_peer_addr dst = {.family = AF_INET};
	static uint8_t pl[N][8];
	struct mroce_io_tx t[N];
	struct mroce_io_rx r[64];
	int last[100], sent = 0, got = 0;

	test_addr(9, dst.addr);
	/* 100 distinct source ports: more than the socket cap (64), so the
	 * LRU eviction runs and packets must still go out. */
	for (int i = 0; i < N; i++) {
		pl[i][0] = (uint8_t)(i % 100);
		pl[i][1] = (uint8_t)(i / 100);
		t[i] = (struct mroce_io_tx){
			.data = pl[i],
			.len = 8,
			.dst = &dst,
			.sport = (uint16_t)(0xC000 + i % 100),
			.dport = MROCE_UDP_PORT};
	}
	while (sent < N) {
		int k = mroce_io_tx(a, t + sent, N - sent);

		ck_assert_int_ge(k, 0);
		sent += k;
	}
	for (int i = 0; i < 100; i++)
		last[i] = -1;
	while (got < N) {
		int k = rx_wait(b, r, 64);

		ck_assert_int_gt(k, 0);
		for (int i = 0; i < k; i++) {
			int port = r[i].sport - 0xC000;

			ck_assert_uint_eq(r[i].len, 8);
			ck_assert_int_eq(r[i].data[0], port);
			ck_assert_int_gt(r[i].data[1], last[port]);
			last[port] = r[i].data[1];
		}
		mroce_io_rx_release(b, r, k);
		got += k;
	}
	mroce_io_close(a);
	mroce_io_close(b);
}
END_TEST

START_TEST(udp_rx__reports_ce_only_for_ce_codepoint)
{
	struct mroce_io *b = open_at(11);
	struct sockaddr_in to = {.sin_family = AF_INET,
				 .sin_port = htons(MROCE_UDP_PORT)};
	struct mroce_io_rx r[2];
	int fd = socket(AF_INET, SOCK_DGRAM, 0), tos = 0x03;
	uint8_t addr[16];

	test_addr(11, addr);
	memcpy(&to.sin_addr, addr, 4);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)),
			 0);
	ck_assert_int_eq(
		sendto(fd, "ce", 2, 0, (struct sockaddr *)&to, sizeof(to)), 2);
	ck_assert_int_eq(rx_wait(b, r, 2), 1);
	ck_assert(r[0].ce);
	mroce_io_rx_release(b, r, 1);
	tos = 0x02; /* ECT(0) is not CE */
	ck_assert_int_eq(setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)),
			 0);
	ck_assert_int_eq(
		sendto(fd, "e", 1, 0, (struct sockaddr *)&to, sizeof(to)), 1);
	ck_assert_int_eq(rx_wait(b, r, 2), 1);
	ck_assert(!r[0].ce);
	mroce_io_rx_release(b, r, 1);
	close(fd);
	mroce_io_close(b);
}
END_TEST

START_TEST(udp_tx__ect_flag_sets_ect0_on_the_wire)
{
	struct mroce_io *a = open_at(18);
	struct mroce_peer_addr dst = {.family = AF_INET};
	struct sockaddr_in me = {.sin_family = AF_INET,
				 .sin_port = htons(MROCE_UDP_PORT)};
	int fd = socket(AF_INET, SOCK_DGRAM, 0), one = 1, tos = -1;
	char buf[8], ctl[64];
	struct iovec iov = {buf, sizeof(buf)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = ctl,
			    .msg_controllen = sizeof(ctl)};
	struct pollfd p = {.fd = fd, .events = POLLIN};
	struct mroce_io_tx t = {.data = (const uint8_t *)"e",
				.len = 1,
				.dst = &dst,
				.sport = 0xC004,
				.dport = MROCE_UDP_PORT,
				.ect = true};

	test_addr(19, dst.addr);
	memcpy(&me.sin_addr, dst.addr, 4);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(
		setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)), 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0);
	ck_assert_int_eq(mroce_io_tx(a, &t, 1), 1);
	ck_assert_int_eq(poll(&p, 1, 1000), 1);
	ck_assert_int_eq(recvmsg(fd, &mh, 0), 1);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS)
			tos = *(uint8_t *)CMSG_DATA(c);
	ck_assert_int_eq(tos & 3, 2);
	close(fd);
	mroce_io_close(a);
}
END_TEST

START_TEST(udp_rx__empty_returns_zero_and_release_ignores_foreign)
{
	struct mroce_io *b = open_at(12);
	struct mroce_io_rx r[4];
	struct mroce_io_rx bogus = {.cookie = 1u << 30};

	ck_assert_int_eq(mroce_io_rx(b, r, 4), 0);
	ck_assert_int_eq(mroce_io_rx(b, r, 0), 0);
	ck_assert_int_eq(mroce_io_rx(b, r, -1), -EINVAL);
	mroce_io_rx_release(b, &bogus, 1);
	ck_assert_int_ge(mroce_io_fd(b), 0);
	mroce_io_close(b);
}
END_TEST

START_TEST(udp_rx__holding_buffers_never_overlaps_data)
{
	enum { N = 300 };
	struct mroce_io *a = open_at(13), *b = open_at(14);
	struct mroce_peer_addr dst = {.family = AF_INET};
	static struct mroce_io_rx held[N];
	uint32_t v[N];
	int nheld = 0;

	test_addr(14, dst.addr);
	/* Hold every buffer without releasing: the backend must stop
	 * handing out buffers (short count), not reuse held ones. */
	for (int i = 0; i < N; i++) {
		struct mroce_io_tx t = {.data = (uint8_t *)&v[i],
					.len = 4,
					.dst = &dst,
					.sport = 0xC001,
					.dport = MROCE_UDP_PORT};

		v[i] = 0xab000000u | (uint32_t)i;
		ck_assert_int_eq(mroce_io_tx(a, &t, 1), 1);
	}
	/* Take buffers until the backend hands out none while a datagram
	 * waits in the socket (readable before and after a refused call):
	 * then the pool, not the socket, ran out. */
	for (int tries = 0;; tries++) {
		struct pollfd p = {.fd = mroce_io_fd(b), .events = POLLIN};
		int k = mroce_io_rx(b, held + nheld, N - nheld);

		ck_assert_int_ge(k, 0);
		nheld += k;
		ck_assert_int_lt(nheld, N); /* the pool is smaller than N */
		if (!k && poll(&p, 1, 0) == 1 &&
		    mroce_io_rx(b, held + nheld, N - nheld) == 0)
			break;
		ck_assert_int_lt(tries, 5000); /* 5 s: the datagrams come */
		if (!k)
			(void)poll(&p, 1, 1);
	}
	ck_assert_int_gt(nheld, 0);
	for (int i = 0; i < nheld; i++) {
		uint32_t x;

		memcpy(&x, held[i].data, 4);
		ck_assert_uint_eq(x, 0xab000000u | (uint32_t)i);
	}
	/* Released, the buffers carry the rest: every datagram arrives, in
	 * order, none lost to the short count. */
	mroce_io_rx_release(b, held, nheld);
	for (int got = nheld, tries = 0; got < N; tries++) {
		struct pollfd p = {.fd = mroce_io_fd(b), .events = POLLIN};
		int k = mroce_io_rx(b, held, 8);

		ck_assert_int_ge(k, 0);
		for (int i = 0; i < k; i++) {
			uint32_t x;

			memcpy(&x, held[i].data, 4);
			ck_assert_uint_eq(x, 0xab000000u | (uint32_t)(got + i));
		}
		mroce_io_rx_release(b, held, k);
		got += k;
		ck_assert_int_lt(tries, 5000);
		if (!k)
			(void)poll(&p, 1, 1);
	}
	mroce_io_close(a);
	mroce_io_close(b);
}
END_TEST

START_TEST(udp_rx_release__twice_does_not_duplicate_a_buffer)
{
	struct mroce_io *a = open_at(20), *b = open_at(21);
	struct mroce_peer_addr dst = {.family = AF_INET};
	struct mroce_io_tx t = {.data = (const uint8_t *)"abcd",
				.len = 4,
				.dst = &dst,
				.sport = 0xC005,
				.dport = MROCE_UDP_PORT};
	struct mroce_io_rx r[2], copy, h[2];
	int got = 0;

	test_addr(21, dst.addr);
	ck_assert_int_eq(mroce_io_tx(a, &t, 1), 1);
	ck_assert_int_eq(rx_wait(b, r, 1), 1);
	copy = r[0];
	mroce_io_rx_release(b, r, 1);
	mroce_io_rx_release(b, r, 1);	  /* data now NULL: ignored */
	ck_assert_ptr_null(r[0].data);
	mroce_io_rx_release(b, &copy, 1); /* a stale copy: must not corrupt */
	ck_assert_int_eq(mroce_io_tx(a, &t, 1), 1);
	ck_assert_int_eq(mroce_io_tx(a, &t, 1), 1);
	while (got < 2) {
		int k = rx_wait(b, h + got, 2 - got);

		ck_assert_int_gt(k, 0);
		got += k;
	}
	ck_assert_ptr_ne(h[0].data, h[1].data);
	mroce_io_rx_release(b, h, 2);
	mroce_io_close(a);
	mroce_io_close(b);
}
END_TEST

START_TEST(udp_tx__configured_ports_replace_well_known_ones)
{
	struct mroce_io_cfg c;
	struct mroce_io *a, *b;
	struct mroce_peer_addr dst = {.family = AF_INET};
	struct mroce_io_tx t;
	struct mroce_io_rx r[2];

	cfg_for(&c, 15);
	c.mroce_port = 24792;
	c.rocev2_port = 24791;
	ck_assert_int_eq(mroce_io_open(&c, &a), 0);
	cfg_for(&c, 16);
	c.mroce_port = 24792;
	c.rocev2_port = 24791;
	ck_assert_int_eq(mroce_io_open(&c, &b), 0);
	test_addr(16, dst.addr);
	t = (struct mroce_io_tx){.data = (const uint8_t *)"x",
				 .len = 1,
				 .dst = &dst,
				 .sport = 0xC002,
				 .dport = MROCE_UDP_PORT};
	ck_assert_int_eq(mroce_io_tx(a, &t, 1), 1);
	ck_assert_int_eq(rx_wait(b, r, 2), 1);
	ck_assert_uint_eq(r[0].dport, 24792);
	mroce_io_rx_release(b, r, 1);
	mroce_io_close(a);
	mroce_io_close(b);
}
END_TEST

START_TEST(udp_tx__null_destination_is_einval)
{
	struct mroce_io *a = open_at(17);
	struct mroce_io_tx t = {.data = (const uint8_t *)"x",
				.len = 1,
				.sport = 0xC003,
				.dport = MROCE_UDP_PORT};

	ck_assert_int_eq(mroce_io_tx(a, &t, 1), -EINVAL);
	ck_assert_int_eq(mroce_io_tx(a, NULL, 1), -EINVAL);
	ck_assert_int_eq(mroce_io_tx(a, &t, 0), 0);
	mroce_io_close(a);
}
END_TEST

Suite *io_udp_suite(void)
{
	Suite *s = suite_create("io_udp");
	TCase *tc = tcase_create("loopback");

	tcase_add_test(tc, mroce_io_open__rejects_bad_kind_and_null);
	tcase_add_test(
		tc,
		mroce_io_open__afxdp_without_backend_or_iface_fails_cleanly);
	tcase_add_test(tc, udp_open__second_open_same_address_is_eaddrinuse);
	tcase_add_test(tc, udp_open__rejects_unknown_family);
	tcase_add_test(tc, udp_tx__delivers_payload_ports_and_source);
	tcase_add_test(tc, udp_tx__rocev2_port_reaches_rocev2_socket);
	tcase_add_test(tc,
		       udp_tx__batch_of_many_source_ports_keeps_order_per_port);
	tcase_add_test(tc, udp_rx__reports_ce_only_for_ce_codepoint);
	tcase_add_test(tc, udp_tx__ect_flag_sets_ect0_on_the_wire);
	tcase_add_test(tc,
		       udp_rx__empty_returns_zero_and_release_ignores_foreign);
	tcase_add_test(tc, udp_rx__holding_buffers_never_overlaps_data);
	tcase_add_test(tc, udp_rx_release__twice_does_not_duplicate_a_buffer);
	tcase_add_test(tc, udp_tx__configured_ports_replace_well_known_ones);
	tcase_add_test(tc, udp_tx__null_destination_is_einval);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}
MROCE_SUITE(io_udp_suite)
