/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Transitional: the endpoint moved to user/endpoint/endpoint.h. Only
 * user/lib/lib_int.h still includes it by this path; remove this file
 * when that include names user/endpoint/endpoint.h.
 */
#include "../endpoint/endpoint.h"
