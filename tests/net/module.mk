# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# tests/net: helper programs of the namespace tests (the Check suites
# themselves, tests/net/test_*.c, are picked up by tests/module.mk).
#
# mroce_afxdp_peer: one end of tests/net/afxdp_ns.sh, drives the AF_XDP
# backend (user/io/afxdp.c) through include/mroce/io.h.
TEST_BINS += mroce_afxdp_peer
mroce_afxdp_peer_SRCS := tests/net/afxdp_peer.c
