// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Tests of user/codec/codec_frame.c: Ethernet/802.1Q/IPv4/IPv6/UDP. */
#include "test_codec_util.h"

#define L4_LEN 37	/* odd on purpose: checksums of odd lengths */

static uint8_t frame[2048];

/* Build a frame with a recognisable UDP payload; returns its length. */
static int build(enum tc_encap e, struct mroce_frame_spec *s)
{
	size_t h;

	tc_spec(s, e, MROCE_UDP_PORT);
	h = mroce_frame_hdr_len(s);
	for (size_t i = 0; i < L4_LEN; i++)
		frame[h + i] = (uint8_t)(0x30 + i);
	return mroce_frame_build(s, L4_LEN, frame, sizeof(frame));
}

static size_t l3_off(enum tc_encap e)
{
	return (e == TC_VLAN_IPV4 || e == TC_VLAN_IPV6) ? 18 : 14;
}

static bool is_v4(enum tc_encap e)
{
	return e == TC_IPV4 || e == TC_VLAN_IPV4;
}

START_TEST(mroce_frame_hdr_len__each_encapsulation)
{
	struct mroce_frame_spec s;
	static const size_t want[TC_N_ENCAP] = { 42, 62, 46, 66 };

	for (int e = 0; e < TC_N_ENCAP; e++) {
		tc_spec(&s, e, 1);
		ck_assert_uint_eq(mroce_frame_hdr_len(&s), want[e]);
	}
	s.l3.family = 12345;
	ck_assert_uint_eq(mroce_frame_hdr_len(&s), 0);
	ck_assert_uint_eq(mroce_frame_hdr_len(NULL), 0);
}
END_TEST

START_TEST(mroce_frame_build__round_trip_every_field)
{
	enum tc_encap e = _i;
	struct mroce_frame_spec s;
	struct mroce_frame f;
	int n = build(e, &s);

	ck_assert_int_eq(n, (int)(mroce_frame_hdr_len(&s) + L4_LEN));
	ck_assert_int_eq(mroce_frame_parse(frame, n, &f), 0);
	ck_assert_mem_eq(f.dmac, s.dmac, 6);
	ck_assert_mem_eq(f.smac, s.smac, 6);
	ck_assert_int_eq(f.has_vlan, s.vlan >= 0);
	if (s.vlan >= 0)
		ck_assert_uint_eq(f.vlan_tci, s.vlan);
	ck_assert_int_eq(f.l3.family, s.l3.family);
	ck_assert_mem_eq(f.l3.src, s.l3.src, is_v4(e) ? 4 : 16);
	ck_assert_mem_eq(f.l3.dst, s.l3.dst, is_v4(e) ? 4 : 16);
	ck_assert_uint_eq(f.l3.tos, s.l3.tos);
	ck_assert_uint_eq(f.l3.ttl, s.l3.ttl);
	ck_assert_uint_eq(f.l3.flow_label, is_v4(e) ? 0 : s.l3.flow_label);
	ck_assert_uint_eq(f.sport, s.sport);
	ck_assert_uint_eq(f.dport, s.dport);
	ck_assert_ptr_eq(f.l3_hdr, frame + l3_off(e));
	ck_assert_uint_eq(f.l3_hdr_len, is_v4(e) ? 20 : 40);
	ck_assert_ptr_eq(f.udp, f.l3_hdr + f.l3_hdr_len);
	ck_assert_ptr_eq(f.l4, f.udp + 8);
	ck_assert_uint_eq(f.l4_len, L4_LEN);
	ck_assert_uint_eq(f.l4[0], 0x30);
	ck_assert_uint_eq(f.l4[L4_LEN - 1], 0x30 + L4_LEN - 1);
	if (is_v4(e)) {
		const uint8_t *ip = f.l3_hdr;

		ck_assert_uint_eq(tc_be16(ip + 4), 0x4242);	/* id */
		ck_assert_uint_eq(tc_be16(ip + 6), 0x4000);	/* DF */
		ck_assert_uint_eq(tc_sum(0, ip, 20), 0xffff);
		ck_assert_uint_eq(tc_be16(f.udp + 6), 0);	/* no csum */
	} else {
		ck_assert(tc_udp6_csum_ok(&f));
	}
}
END_TEST

START_TEST(mroce_frame_build__errors)
{
	struct mroce_frame_spec s;

	tc_spec(&s, TC_IPV4, 1);
	ck_assert_int_eq(mroce_frame_build(&s, 10, frame, 42 + 9),
			 -MROCE_E_NOSPACE);
	ck_assert_int_eq(mroce_frame_build(&s, 10, frame, 41),
			 -MROCE_E_NOSPACE);
	ck_assert_int_eq(mroce_frame_build(&s, 10, frame, 52), 52);
	ck_assert_int_eq(mroce_frame_build(&s, 65536, frame, sizeof(frame)),
			 -MROCE_E_INVAL);
	/* IPv4 total length would be 65536 */
	ck_assert_int_eq(mroce_frame_build(&s, 65536 - 28, frame, 1 << 17),
			 -MROCE_E_INVAL);
	ck_assert_int_eq(mroce_frame_build(NULL, 10, frame, 100),
			 -MROCE_E_INVAL);
	ck_assert_int_eq(mroce_frame_build(&s, 10, NULL, 100), -MROCE_E_INVAL);
	s.vlan = 0x10000;
	ck_assert_int_eq(mroce_frame_build(&s, 10, frame, 100),
			 -MROCE_E_INVAL);
	s.vlan = -2;
	ck_assert_int_eq(mroce_frame_build(&s, 10, frame, 100),
			 -MROCE_E_INVAL);
	tc_spec(&s, TC_IPV6, 1);
	s.l3.flow_label = 0x100000;
	ck_assert_int_eq(mroce_frame_build(&s, 10, frame, 100),
			 -MROCE_E_INVAL);
	s.l3.family = 0;
	ck_assert_int_eq(mroce_frame_build(&s, 10, frame, 100),
			 -MROCE_E_INVAL);
}
END_TEST

/* Truncating a frame anywhere names the header it cut into; cutting the
 * datagram after its headers contradicts the IP length. */
START_TEST(mroce_frame_parse__truncated_at_every_byte)
{
	enum tc_encap e = _i;
	struct mroce_frame_spec s;
	struct mroce_frame f;
	int n = build(e, &s);
	size_t l3 = l3_off(e), iph = is_v4(e) ? 20 : 40;

	for (int len = 0; len < n; len++) {
		int want;

		if (len < 14)
			want = -MROCE_E_TRUNC_ETH;
		else if (len < (int)l3)
			want = -MROCE_E_TRUNC_VLAN;
		else if (len < (int)(l3 + iph))
			want = -MROCE_E_TRUNC_IP;
		else
			want = -MROCE_E_BAD_IP_LEN;
		ck_assert_msg(mroce_frame_parse(frame, len, &f) == want,
			      "%s len %d: got %s want %s", tc_encap_name[e],
			      len, mroce_err_name(mroce_frame_parse(frame, len,
								    &f)),
			      mroce_err_name(want));
	}
}
END_TEST

START_TEST(mroce_frame_parse__ethernet_padding_ignored)
{
	struct mroce_frame_spec s;
	struct mroce_frame f;
	int n = build(TC_IPV4, &s);

	memset(frame + n, 0xee, 20);
	ck_assert_int_eq(mroce_frame_parse(frame, n + 20, &f), 0);
	ck_assert_uint_eq(f.l4_len, L4_LEN);
}
END_TEST

START_TEST(mroce_frame_parse__bad_ethertype)
{
	struct mroce_frame_spec s;
	struct mroce_frame f;
	int n = build(TC_IPV4, &s);

	tc_put_be16(frame + 12, 0x0806);	/* ARP */
	ck_assert_int_eq(mroce_frame_parse(frame, n, &f),
			 -MROCE_E_BAD_ETHERTYPE);
	n = build(TC_VLAN_IPV4, &s);
	tc_put_be16(frame + 16, 0x8100);	/* a second tag: unsupported */
	ck_assert_int_eq(mroce_frame_parse(frame, n, &f),
			 -MROCE_E_BAD_ETHERTYPE);
	tc_put_be16(frame + 16, 0x88a8);
	ck_assert_int_eq(mroce_frame_parse(frame, n, &f),
			 -MROCE_E_BAD_ETHERTYPE);
}
END_TEST

START_TEST(mroce_frame_parse__ip_version_must_match_ethertype)
{
	struct mroce_frame_spec s;
	struct mroce_frame f;
	int n = build(TC_IPV4, &s);

	tc_put_be16(frame + 12, 0x86dd);
	ck_assert_int_eq(mroce_frame_parse(frame, n, &f),
			 -MROCE_E_BAD_IP_VERSION);
	n = build(TC_IPV6, &s);
	tc_put_be16(frame + 12, 0x0800);
	ck_assert_int_eq(mroce_frame_parse(frame, n, &f),
			 -MROCE_E_BAD_IP_VERSION);
	n = build(TC_IPV4, &s);
	frame[14] = 0x55;
	ck_assert_int_eq(mroce_frame_parse(frame, n, &f),
			 -MROCE_E_BAD_IP_VERSION);
}
END_TEST

START_TEST(mroce_frame_parse__ipv4_header_checksum_verified)
{
	struct mroce_frame_spec s;
	struct mroce_frame f;
	int n = build(TC_IPV4, &s);

	/* every header byte matters, including the checksum itself */
	for (int i = 0; i < 20; i++) {
		if (i == 0 || i == 2 || i == 3)
			continue;	/* caught earlier as version/len */
		frame[14 + i] ^= 0x01;
		ck_assert_msg(mroce_frame_parse(frame, n, &f) ==
				      -MROCE_E_BAD_IP_CSUM,
			      "byte %d", i);
		frame[14 + i] ^= 0x01;
	}
	ck_assert_int_eq(mroce_frame_parse(frame, n, &f), 0);
}
END_TEST

START_TEST(mroce_frame_parse__ipv4_header_length_below_20)
{
	struct mroce_frame_spec s;
	struct mroce_frame f;
	int n = build(TC_IPV4, &s);

	for (int ihl = 0; ihl < 5; ihl++) {
		frame[14] = (uint8_t)(0x40 | ihl);
		ck_assert_int_eq(mroce_frame_parse(frame, n, &f),
				 -MROCE_E_BAD_IP_HDR_LEN);
	}
}
END_TEST

/* IPv4 options (IHL 6..15): skipped, and the UDP header found after them. */
START_TEST(mroce_frame_parse__ipv4_options_skipped)
{
	int words = _i;	/* option words: 1..10 */
	size_t optlen = (size_t)words * 4, ihl = 20 + optlen;
	struct mroce_frame_spec s;
	struct mroce_frame f;
	uint8_t *ip = frame + 14;
	int n = build(TC_IPV4, &s);

	/* shift UDP header + payload up and fill the options with NOPs,
	 * ending with End-of-Options */
	memmove(ip + ihl, ip + 20, n - 34);
	memset(ip + 20, 0x01, optlen);
	ip[ihl - 1] = 0x00;
	ip[0] = (uint8_t)(0x40 | (ihl / 4));
	tc_put_be16(ip + 2, (uint16_t)(tc_be16(ip + 2) + optlen));
	tc_fix_ip4_csum(ip);
	n += (int)optlen;

	ck_assert_int_eq(mroce_frame_parse(frame, n, &f), 0);
	ck_assert_uint_eq(f.l3_hdr_len, ihl);
	ck_assert_ptr_eq(f.udp, ip + ihl);
	ck_assert_uint_eq(f.sport, s.sport);
	ck_assert_uint_eq(f.dport, s.dport);
	ck_assert_uint_eq(f.l4_len, L4_LEN);
	ck_assert_uint_eq(f.l4[0], 0x30);
	/* truncated inside the options: still "inside the IP header" */
	ck_assert_int_eq(mroce_frame_parse(frame, 14 + ihl - 1, &f),
			 -MROCE_E_TRUNC_IP);
}
END_TEST

START_TEST(mroce_frame_parse__ip_length_disagrees)
{
	struct mroce_frame_spec s;
	struct mroce_frame f;
	uint8_t *ip = frame + 14;
	int n = build(TC_IPV4, &s);

	tc_put_be16(ip + 2, (uint16_t)(n - 14 + 1)); /* beyond the frame */
	tc_fix_ip4_csum(ip);
	ck_assert_int_eq(mroce_frame_parse(frame, n, &f), -MROCE_E_BAD_IP_LEN);
	tc_put_be16(ip + 2, 19);	/* shorter than its own header */
	tc_fix_ip4_csum(ip);
	ck_assert_int_eq(mroce_frame_parse(frame, n, &f), -MROCE_E_BAD_IP_LEN);

	n = build(TC_IPV6, &s);
	ip = frame + 14;
	tc_put_be16(ip + 4, (uint16_t)(n - 54 + 1));
	ck_assert_int_eq(mroce_frame_parse(frame, n, &f), -MROCE_E_BAD_IP_LEN);
}
END_TEST

START_TEST(mroce_frame_parse__fragments_rejected)
{
	static const uint16_t frag[] = { 0x2000, 0x0001, 0x6001, 0x1fff };
	struct mroce_frame_spec s;
	struct mroce_frame f;
	uint8_t *ip = frame + 14;
	int n = build(TC_IPV4, &s);

	for (size_t i = 0; i < sizeof(frag) / sizeof(frag[0]); i++) {
		tc_put_be16(ip + 6, frag[i]);
		tc_fix_ip4_csum(ip);
		ck_assert_int_eq(mroce_frame_parse(frame, n, &f),
				 -MROCE_E_IP_FRAGMENT);
	}
	tc_put_be16(ip + 6, 0x0000);	/* DF clear, not a fragment: fine */
	tc_fix_ip4_csum(ip);
	ck_assert_int_eq(mroce_frame_parse(frame, n, &f), 0);
}
END_TEST

START_TEST(mroce_frame_parse__not_udp)
{
	struct mroce_frame_spec s;
	struct mroce_frame f;
	uint8_t *ip = frame + 14;
	int n = build(TC_IPV4, &s);

	ip[9] = 6;	/* TCP */
	tc_fix_ip4_csum(ip);
	ck_assert_int_eq(mroce_frame_parse(frame, n, &f), -MROCE_E_NOT_UDP);
	/* IPv6: any extension header (hop-by-hop 0, routing 43, fragment
	 * 44) or other protocol in the fixed header is NOT_UDP */
	n = build(TC_IPV6, &s);
	for (int nh = 0; nh < 256; nh++) {
		if (nh == 17)
			continue;
		ip[6] = (uint8_t)nh;
		ck_assert_int_eq(mroce_frame_parse(frame, n, &f),
				 -MROCE_E_NOT_UDP);
	}
}
END_TEST

START_TEST(mroce_frame_parse__udp_length_checks)
{
	struct mroce_frame_spec s;
	struct mroce_frame f;
	uint8_t *ip = frame + 14, *udp = frame + 34;
	int n = build(TC_IPV4, &s);
	uint16_t ulen = tc_be16(udp + 4);

	tc_put_be16(udp + 4, ulen + 1);
	ck_assert_int_eq(mroce_frame_parse(frame, n, &f),
			 -MROCE_E_BAD_UDP_LEN);
	tc_put_be16(udp + 4, ulen - 1);
	ck_assert_int_eq(mroce_frame_parse(frame, n, &f),
			 -MROCE_E_BAD_UDP_LEN);
	tc_put_be16(udp + 4, 7);
	ck_assert_int_eq(mroce_frame_parse(frame, n, &f),
			 -MROCE_E_BAD_UDP_LEN);
	tc_put_be16(udp + 4, ulen);
	/* IP datagram too short to hold a UDP header */
	tc_put_be16(ip + 2, 20 + 7);
	tc_fix_ip4_csum(ip);
	ck_assert_int_eq(mroce_frame_parse(frame, n, &f), -MROCE_E_TRUNC_UDP);
	n = build(TC_IPV6, &s);
	tc_put_be16(frame + 14 + 4, 4);
	ck_assert_int_eq(mroce_frame_parse(frame, n, &f), -MROCE_E_TRUNC_UDP);
}
END_TEST

START_TEST(mroce_frame_parse__null_arguments)
{
	struct mroce_frame f;

	ck_assert_int_eq(mroce_frame_parse(NULL, 100, &f), -MROCE_E_INVAL);
	ck_assert_int_eq(mroce_frame_parse(frame, 100, NULL), -MROCE_E_INVAL);
}
END_TEST

MROCE_SUITE(codec_frame_suite)
Suite *codec_frame_suite(void)
{
	Suite *s = suite_create("codec_frame");
	TCase *tc = tcase_create("frame");

	tcase_add_test(tc, mroce_frame_hdr_len__each_encapsulation);
	tcase_add_loop_test(tc, mroce_frame_build__round_trip_every_field, 0,
			    TC_N_ENCAP);
	tcase_add_test(tc, mroce_frame_build__errors);
	tcase_add_loop_test(tc, mroce_frame_parse__truncated_at_every_byte, 0,
			    TC_N_ENCAP);
	tcase_add_test(tc, mroce_frame_parse__ethernet_padding_ignored);
	tcase_add_test(tc, mroce_frame_parse__bad_ethertype);
	tcase_add_test(tc, mroce_frame_parse__ip_version_must_match_ethertype);
	tcase_add_test(tc, mroce_frame_parse__ipv4_header_checksum_verified);
	tcase_add_test(tc, mroce_frame_parse__ipv4_header_length_below_20);
	tcase_add_loop_test(tc, mroce_frame_parse__ipv4_options_skipped, 1, 11);
	tcase_add_test(tc, mroce_frame_parse__ip_length_disagrees);
	tcase_add_test(tc, mroce_frame_parse__fragments_rejected);
	tcase_add_test(tc, mroce_frame_parse__not_udp);
	tcase_add_test(tc, mroce_frame_parse__udp_length_checks);
	tcase_add_test(tc, mroce_frame_parse__null_arguments);
	suite_add_tcase(s, tc);
	return s;
}
