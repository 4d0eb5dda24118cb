# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# user/lib: libmroce's public API (include/mroce/mroce.h). verbs.c is the
# front (argument checks, dispatch through one ops table per device mode,
# lib_int.h); embedded.c is the embedded mode (engine + I/O backend in the
# application); daemon.c + daemon_rings.c the daemon mode (served by
# mroced); dclient.c the one client of mroced's control protocol (also
# used by `mrocectl daemon`); conn.c the TCP rendezvous helper.
LIB_SRCS += user/lib/verbs.c user/lib/embedded.c user/lib/daemon.c \
	user/lib/daemon_rings.c user/lib/dclient.c user/lib/conn.c
