# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# user/common: internal helpers shared by the library and the tools
# (util.c: random bytes, addresses, number parsing, --version; json.c:
# the tools' JSON output through json-c), and the
# internal headers ipc.h (daemon protocol) and rng.h (the one PRNG).
LIB_SRCS += user/common/util.c user/common/json.c
