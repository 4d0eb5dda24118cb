# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# user/lib: libmroce's public API (include/mroce/mroce.h) in embedded mode
# (engine + one I/O backend in the application), daemon mode (daemon.c:
# the same API served by mroced) and the TCP rendezvous connection helper.
LIB_SRCS += user/lib/lib.c user/lib/conn.c user/lib/daemon.c
