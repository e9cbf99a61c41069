/* SPDX-License-Identifier: Apache-2.0 */
/*
 * curl_uv.h — libcurl's multi socket interface driven by a libuv loop (the
 * shape of curl's docs/examples/multi-uv.c): curl says which sockets to
 * watch (CURLMOPT_SOCKETFUNCTION → one uv_poll_t each) and when to call it
 * back (CURLMOPT_TIMERFUNCTION → one uv_timer_t), and
 * curl_multi_socket_action runs only from those callbacks — never a
 * perform loop, so the loop thread never blocks on the network.
 *
 * Generic: it knows nothing of what the transfers are.  Loop thread only.
 */
#ifndef RVD_CURL_UV_H
#define RVD_CURL_UV_H

#include <stdbool.h>
#include <curl/curl.h>
#include <uv.h>

struct rvd_curl_sock;

/* Caller-owned; fields are read-only outside curl_uv.c except `multi`,
 * to which the owner adds and from which it removes its easy handles. */
struct rvd_curl_uv {
	CURLM *multi; /* NULL once released */
	uv_loop_t *loop;
	uv_timer_t timer;
	struct rvd_curl_sock *socks; /* one per socket curl watches */
	bool stopping;
	/* Called after every curl_multi_socket_action: read the finished
	 * transfers with curl_multi_info_read. */
	void (*progress)(void *ctx);
	void *ctx;
};

/*
 * Creates the multi handle and the timer on `loop`; `progress` is called
 * with `ctx` whenever curl made progress.  Returns 0, or -ENOMEM (nothing
 * to undo).
 */
int rvd_curl_uv_init(struct rvd_curl_uv *cu, uv_loop_t *loop, void (*progress)(void *ctx),
		     void *ctx);

/* Closes the timer: curl is not called back any more.  The owner then
 * removes its easy handles and calls rvd_curl_uv_release.  Once. */
void rvd_curl_uv_stop(struct rvd_curl_uv *cu);

/* Frees the multi handle and closes the socket watchers (their memory is
 * freed from uv_close callbacks).  Idempotent. */
void rvd_curl_uv_release(struct rvd_curl_uv *cu);

#endif
