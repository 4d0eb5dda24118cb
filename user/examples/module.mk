# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# user/examples: small programs showing the libmroce API (include/mroce/
# mroce.h). Built as tools so that they keep compiling with the library.
TOOLS += mroce_example
mroce_example_SRCS := user/examples/example.c
mroce_example_LDLIBS :=
