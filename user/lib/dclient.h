/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Internal: the one client of mroced's control protocol
 * (user/ipc/ipc.h), used by libmroce's daemon mode (daemon.c) and by
 * `mrocectl daemon`. It owns the SOCK_SEQPACKET socket: connect with a
 * reply timeout, HELLO with the shared-memory geometry checked, and one
 * request/reply exchange with descriptors passed both ways.
 *
 * Errors are negative errnos with one meaning each here:
 *   -ENOENT, -ECONNREFUSED  no daemon listens at the path (connect)
 *   -ENAMETOOLONG           the path does not fit a sockaddr_un
 *   -ETIMEDOUT              the daemon did not answer within the timeout
 *   -ENOTCONN               the daemon closed the connection
 *   -EPROTO                 a reply that does not belong to the request
 *                           (version, op, seq, size, missing descriptors)
 *   others                  the daemon's own answer (mrd_rep.err)
 * After -ETIMEDOUT, -ENOTCONN or a mismatched reply the session is
 * unusable: c->broken is set and every later call returns -ENOTCONN.
 * mrd_client_strerror() names each of them for a tool's message.
 */
#ifndef MROCE_LIB_DCLIENT_H
#define MROCE_LIB_DCLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "../ipc/ipc.h"

struct mrd_client {
	int sock; /* -1 when not connected */
	uint32_t seq;
	bool broken; /* the session cannot be used any more */
};

/* Connects to the daemon at path (NULL: MRD_DEFAULT_SOCK); a reply not
 * there after timeout_s seconds is -ETIMEDOUT. */
int mrd_client_connect(struct mrd_client *c, const char *path, int timeout_s);
void mrd_client_close(struct mrd_client *c);

/* Sends q (version, op and seq filled in here) with sendfd (-1: none),
 * waits for the reply r and takes exactly nrfds descriptors from it into
 * rfds (all of them, or none and -EPROTO). Returns r->err or an error
 * above. */
int mrd_client_call(struct mrd_client *c, uint16_t op, struct mrd_req *q,
		    struct mrd_rep *r, int sendfd, int *rfds, int nrfds);

/* HELLO for transport: r->u.hello and fds[3] (shared memory, submission
 * doorbell, completion doorbell: see ipc.h), with the submission ring's
 * geometry checked (-EPROTO; nothing left open). */
int mrd_client_hello(struct mrd_client *c, uint8_t transport, struct mrd_rep *r,
		     int fds[3]);

/* A short phrase for an error of this client ("mroced is not running"). */
const char *mrd_client_strerror(int err);

#endif
