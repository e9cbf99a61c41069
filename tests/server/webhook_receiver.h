/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook_receiver.h — a real HTTP receiver of the server's webhooks for
 * the tests (webhook_receiver.c): a thread accepting on an ephemeral
 * loopback port, checking each POST's X-Rearview-Signature with the
 * test's secret, answering 500 to the first fail_first requests and 200
 * to the others, keeping the bodies it accepted.  Uses cmocka's
 * assertions (start fails the test when it cannot listen).
 */
#ifndef RVT_WEBHOOK_RECEIVER_H
#define RVT_WEBHOOK_RECEIVER_H

#include <pthread.h>

#define RVT_RECEIVER_BODIES 16 /* accepted bodies kept, the first ones */

struct rvt_receiver {
	int fd, port;
	int fail_first; /* answer 500 to this many requests */
	const char *secret;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int requests, good_sigs; /* under mu */
	char body[8192];	 /* the last accepted body */
	/* Every accepted body (the first RVT_RECEIVER_BODIES), with its
	 * X-Rearview-Event header and whether its signature was good. */
	int accepted;
	char *bodies[RVT_RECEIVER_BODIES];
	char events[RVT_RECEIVER_BODIES][64];
	int good[RVT_RECEIVER_BODIES];
};

/* Starts rv listening on 127.0.0.1 (rv->port) with the HMAC key secret
 * (borrowed; it outlives rv). */
void rvt_receiver_start(struct rvt_receiver *rv, const char *secret, int fail_first);
/* Stops the thread, closes the socket and frees the bodies kept. */
void rvt_receiver_stop(struct rvt_receiver *rv);
/* Waits (a minute at most) until the receiver accepted a request with a
 * body after its refusals; 1 when it did. */
int rvt_receiver_wait_delivered(struct rvt_receiver *rv);
/* dir/webhook.secret holding secret and a newline, mode 0600. */
void rvt_receiver_write_secret(const char *dir, const char *secret);

#endif
