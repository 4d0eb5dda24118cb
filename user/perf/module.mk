# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# user/perf: mroce_perf, perftest-compatible benchmarks over libmroce.
TOOLS += mroce_perf
mroce_perf_SRCS := user/perf/perf.c
mroce_perf_LDLIBS :=
