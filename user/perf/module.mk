# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# user/perf: mroce_perf, perftest-compatible benchmarks over libmroce.
TOOLS += mroce_perf
mroce_perf_SRCS := user/perf/perf.c user/perf/options.c user/perf/run.c \
	user/perf/output.c
mroce_perf_LDLIBS :=
mroce_perf_ILIBS := tool
