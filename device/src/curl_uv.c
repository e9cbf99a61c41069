/* SPDX-License-Identifier: Apache-2.0 */
/*
 * curl_uv.c — libcurl multi socket ↔ libuv glue (see curl_uv.h).
 *
 * Invariants:
 *  - every socket curl asked us to watch has exactly one rvd_curl_sock on
 *    cu->socks, assigned to it with curl_multi_assign, until curl says
 *    CURL_POLL_REMOVE (or release closes them all);
 *  - curl_multi_socket_action is called only from poll_cb and
 *    curl_timer_cb, each followed by the owner's progress callback;
 *  - once stopping, curl's timer requests are ignored (the timer is being
 *    closed).
 */
#include "curl_uv.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

struct rvd_curl_sock {
	uv_poll_t poll;
	curl_socket_t fd;
	struct rvd_curl_uv *cu;
	struct rvd_curl_sock *next;
};

static void sock_closed_cb(uv_handle_t *h)
{
	free(h->data);
}

static void sock_close(struct rvd_curl_uv *cu, struct rvd_curl_sock *sc)
{
	for (struct rvd_curl_sock **pp = &cu->socks; *pp; pp = &(*pp)->next) {
		if (*pp == sc) {
			*pp = sc->next;
			break;
		}
	}
	uv_close((uv_handle_t *)&sc->poll, sock_closed_cb);
}

static void poll_cb(uv_poll_t *h, int status, int events)
{
	struct rvd_curl_sock *sc = h->data;
	struct rvd_curl_uv *cu = sc->cu;
	int running, flags = 0;

	if (status < 0)
		flags = CURL_CSELECT_ERR;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(cu->multi, sc->fd, flags, &running);
	cu->progress(cu->ctx);
}

static int socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct rvd_curl_uv *cu = userp;
	struct rvd_curl_sock *sc = socketp;
	int events = 0;

	(void)easy;
	assert(!sc || sc->fd == s);
	if (what == CURL_POLL_REMOVE) {
		if (sc) {
			uv_poll_stop(&sc->poll);
			curl_multi_assign(cu->multi, s, NULL);
			sock_close(cu, sc);
		}
		return 0;
	}
	if (!sc) {
		sc = calloc(1, sizeof(*sc));
		if (!sc)
			return -1;
		sc->fd = s;
		sc->cu = cu;
		if (uv_poll_init_socket(cu->loop, &sc->poll, s) < 0) {
			free(sc);
			return -1;
		}
		sc->poll.data = sc;
		sc->next = cu->socks;
		cu->socks = sc;
		curl_multi_assign(cu->multi, s, sc);
	}
	if (what & CURL_POLL_IN)
		events |= UV_READABLE;
	if (what & CURL_POLL_OUT)
		events |= UV_WRITABLE;
	uv_poll_start(&sc->poll, events, poll_cb);
	return 0;
}

static void curl_timer_cb(uv_timer_t *t)
{
	struct rvd_curl_uv *cu = t->data;
	int running;

	curl_multi_socket_action(cu->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	cu->progress(cu->ctx);
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	struct rvd_curl_uv *cu = userp;

	(void)multi;
	if (cu->stopping)
		return 0;
	if (timeout_ms < 0)
		uv_timer_stop(&cu->timer);
	else
		uv_timer_start(&cu->timer, curl_timer_cb, (uint64_t)timeout_ms, 0);
	return 0;
}

int rvd_curl_uv_init(struct rvd_curl_uv *cu, uv_loop_t *loop, void (*progress)(void *ctx),
		     void *ctx)
{
	*cu = (struct rvd_curl_uv){.loop = loop, .progress = progress, .ctx = ctx};
	cu->multi = curl_multi_init();
	if (!cu->multi)
		return -ENOMEM;
	curl_multi_setopt(cu->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
	curl_multi_setopt(cu->multi, CURLMOPT_SOCKETDATA, cu);
	curl_multi_setopt(cu->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(cu->multi, CURLMOPT_TIMERDATA, cu);
	uv_timer_init(loop, &cu->timer);
	cu->timer.data = cu;
	return 0;
}

void rvd_curl_uv_stop(struct rvd_curl_uv *cu)
{
	assert(!cu->stopping);
	cu->stopping = true;
	uv_close((uv_handle_t *)&cu->timer, NULL);
}

void rvd_curl_uv_release(struct rvd_curl_uv *cu)
{
	if (!cu->multi)
		return;
	curl_multi_cleanup(cu->multi);
	cu->multi = NULL;
	while (cu->socks)
		sock_close(cu, cu->socks);
}
