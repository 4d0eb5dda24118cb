# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# mrocectl: attach/detach the XDP fast path, status, counters, bench.
# user/xdp/xdp_maps.c (include/mroce/xdp.h) goes into libmroce: the daemon
# opens the same pinned maps with it. The loader needs the skeleton and
# libxdp, so it stays in the tool.
LIB_SRCS += user/xdp/xdp_maps.c
TOOLS += mrocectl
mrocectl_SRCS := user/mrocectl/mrocectl.c user/mrocectl/loader.c \
	user/mrocectl/bench.c user/mrocectl/daemon_cmd.c
mrocectl_LDLIBS :=
mrocectl_ILIBS := tool

# Test helper: sends raw frames (valid, malformed, ARP) from an in-memory
# list through an AF_PACKET socket, for tests/net/xdp_ns.sh.
TEST_BINS += mroce_xdp_send
mroce_xdp_send_SRCS := tests/net/xdp_send.c
