# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# user/endpoint: the endpoint pump, the layer between the transport engines
# (user/engine) and the packet I/O backends (user/io): receive -> engine of
# the destination port -> timers -> transmit, plus the XDP connection table
# on AF_XDP. Internal header endpoint.h; used by libmroce's embedded mode
# and by mroced.
LIB_SRCS += user/endpoint/endpoint.c
