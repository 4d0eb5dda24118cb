# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# user/sim: the deterministic network simulator (library: net model and
# engine-driving simulation) and the mroce_sim tool.
LIB_SRCS += user/sim/net.c user/sim/sim.c
TOOLS += mroce_sim
mroce_sim_SRCS := user/sim/main.c user/sim/bench.c
mroce_sim_LDLIBS :=
