# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# mroced: the daemon that serves libmroce's daemon mode (one endpoint with
# both transports, control over a UNIX socket, data over shared rings; the
# protocol is user/ipc/ipc.h). --attach uses the XDP loader of the
# internal library libmroce-xdp.a, as mrocectl does.
MROCED_SRCS := $(addprefix user/mroced/,main.c ctl.c session.c rings.c \
	loop.c status.c)
TOOLS += mroced
mroced_SRCS := $(MROCED_SRCS)
mroced_ILIBS := xdp
mroced_LDLIBS :=

# The same daemon under ASan/UBSan for the Check suites (tests/unit/
# test_daemon.c and test_mroced.c start this one when it exists): memory
# errors in the daemon fail the tests instead of passing unseen.
TEST_BINS += mroced_san
mroced_san_SRCS := $(MROCED_SRCS)
mroced_san_ILIBS := xdp
