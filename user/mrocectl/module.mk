# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# mrocectl: attach/detach the XDP fast path, status, counters, bench. The
# loader and the map access it shares with mroced are the internal
# library libmroce-xdp.a (user/xdp/module.mk).
TOOLS += mrocectl
mrocectl_SRCS := user/mrocectl/mrocectl.c user/mrocectl/bench.c \
	user/mrocectl/daemon_cmd.c
mrocectl_ILIBS := xdp tool
mrocectl_LDLIBS :=

# Test helper: sends raw frames (valid, malformed, ARP) from an in-memory
# list through an AF_PACKET socket, for tests/net/xdp_ns.sh.
TEST_BINS += mroce_xdp_send
mroce_xdp_send_SRCS := tests/net/xdp_send.c
