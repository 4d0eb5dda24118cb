# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# user/common: internal helpers. util.c (random bytes, addresses, number
# parsing, --version) is part of libmroce; json.c (the tools' JSON output
# through json-c) is the internal "tool" library that only tools link.
# Internal header: rng.h (the one PRNG). The daemon protocol (ipc.h) and
# the device counters mapping (devstats.h) live in user/ipc/.
LIB_SRCS += user/common/util.c
ILIBS += tool
tool_ILIB_SRCS := user/common/json.c
