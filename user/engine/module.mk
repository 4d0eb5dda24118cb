# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# user/engine: the sans-IO transport engine (verbs objects and state machine
# in engine.c, MetaRoCE in metaroce.c + cc.c, RoCEv2 RC in rocev2*.c).
LIB_SRCS += $(sort $(wildcard user/engine/*.c user/engine/*/*.c))
