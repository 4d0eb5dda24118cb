# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# user/engine: the sans-IO transport engine: the core and the verbs objects
# (engine.c, mr.c, cq.c, qp.c, wq.c, events.c), MetaRoCE in metaroce/, RoCEv2
# RC in rocev2/ (see docs/architecture.md).
LIB_SRCS += $(sort $(wildcard user/engine/*.c user/engine/*/*.c))
