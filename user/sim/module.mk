# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# user/sim: the deterministic network simulator, its own internal library
# (net model and engine-driving simulation; not part of libmroce), and the
# mroce_sim tool.
ILIBS += sim
sim_ILIB_SRCS := user/sim/net.c user/sim/sim.c user/sim/sim_app.c \
	user/sim/sim_report.c
TOOLS += mroce_sim
mroce_sim_SRCS := user/sim/main.c user/sim/bench.c
mroce_sim_ILIBS := sim tool
