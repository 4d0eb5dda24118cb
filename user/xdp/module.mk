# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# user/xdp: userspace around the XDP fast path (include/mroce/xdp.h).
#   xdp_maps.c   open the pinned maps, add/remove connections, bind AF_XDP
#                sockets, publish receive state, reset a slot: what
#                libmroce's AF_XDP backend calls, so it is part of libmroce
#   xdp_state.c  error names, the program's clock, counters
#   loader.c     attach/detach with libxdp, pins, status (loader.h)
# The last two are the internal library libmroce-xdp.a, linked by the tools
# that drive the program (mrocectl, mroced: <tool>_ILIBS := xdp).
LIB_SRCS += user/xdp/xdp_maps.c
ILIBS += xdp
xdp_ILIB_SRCS := user/xdp/xdp_state.c user/xdp/loader.c
