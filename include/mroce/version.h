/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The one version of mroce. The Makefile reads MROCE_VERSION from here for
 * the shared library's file name (libmroce.so.<MAJOR>.<MINOR>.<PATCH>), its
 * soname (libmroce.so.<MAJOR>) and mroce.pc; every tool prints it for
 * --version; mroce_version() returns the library's at run time.
 * MAJOR changes when the ABI breaks (include/mroce/abi.h).
 */
#ifndef MROCE_VERSION_H
#define MROCE_VERSION_H

#define MROCE_VERSION_MAJOR 0
#define MROCE_VERSION_MINOR 9
#define MROCE_VERSION_PATCH 0
#define MROCE_VERSION "0.9.0"

#endif
