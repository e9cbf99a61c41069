/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook_receiver.c — the tests' webhook receiver (webhook_receiver.h):
 * one thread, one connection at a time, each request read whole (headers,
 * then Content-Length bytes) and answered with Connection: close.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <mbedtls/md.h>

#include "model/webhook.h"
#include "webhook_receiver.h"

/* Reads one request: headers, then Content-Length bytes of body. */
static int read_request(int c, char *buf, size_t cap, char **body, size_t *blen)
{
	size_t n = 0;
	char *end = NULL;
	long want = -1;

	while (n + 1 < cap) {
		ssize_t r = read(c, buf + n, cap - 1 - n);
		if (r <= 0)
			return -1;
		n += (size_t)r;
		buf[n] = '\0';
		if (!end && (end = strstr(buf, "\r\n\r\n"))) {
			char *cl = strcasestr(buf, "\r\nContent-Length:");
			want = cl ? strtol(cl + 17, NULL, 10) : 0;
		}
		if (end && (long)(n - (size_t)(end + 4 - buf)) >= want) {
			*body = end + 4;
			*blen = (size_t)want;
			return 0;
		}
	}
	return -1;
}

static void *serve(void *arg)
{
	struct rvt_receiver *rv = arg;
	static char buf[65536];

	for (;;) {
		int c = accept(rv->fd, NULL, NULL);
		char *body, *sig, *ev, hex[65], event[64] = "";
		size_t blen;
		uint8_t mac[32];
		int good = 0, fail;
		if (c < 0)
			return NULL;
		if (read_request(c, buf, sizeof buf, &body, &blen)) {
			close(c);
			continue;
		}
		sig = strcasestr(buf, "\r\n" RVS_WEBHOOK_SIG_HEADER ": sha256=");
		if (sig && mbedtls_md_hmac(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256),
					   (const uint8_t *)rv->secret, strlen(rv->secret),
					   (const uint8_t *)body, blen, mac) == 0) {
			for (int i = 0; i < 32; i++)
				snprintf(hex + 2 * i, 3, "%02x", mac[i]);
			good = strncmp(sig + strlen("\r\n" RVS_WEBHOOK_SIG_HEADER ": sha256="), hex,
				       64) == 0;
		}
		if ((ev = strcasestr(buf, "\r\nX-Rearview-Event: ")))
			sscanf(ev + 20, "%63[^\r\n]", event);
		pthread_mutex_lock(&rv->mu);
		fail = rv->requests < rv->fail_first;
		rv->requests++;
		rv->good_sigs += good;
		if (!fail) {
			snprintf(rv->body, sizeof rv->body, "%.*s", (int)blen, body);
			if (rv->accepted < RVT_RECEIVER_BODIES) {
				rv->bodies[rv->accepted] = strndup(body, blen);
				snprintf(rv->events[rv->accepted], sizeof rv->events[0], "%s",
					 event);
				rv->good[rv->accepted] = good;
			}
			rv->accepted++;
		}
		pthread_cond_broadcast(&rv->cv);
		pthread_mutex_unlock(&rv->mu);
		dprintf(c, "HTTP/1.1 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
			fail ? "500 Internal Server Error" : "200 OK");
		close(c);
	}
}

void rvt_receiver_start(struct rvt_receiver *rv, const char *secret, int fail_first)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof sa;

	memset(rv, 0, sizeof *rv);
	rv->fail_first = fail_first;
	rv->secret = secret;
	pthread_mutex_init(&rv->mu, NULL);
	pthread_cond_init(&rv->cv, NULL);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rv->fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(rv->fd >= 0);
	assert_int_equal(bind(rv->fd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(rv->fd, 16), 0);
	assert_int_equal(getsockname(rv->fd, (struct sockaddr *)&sa, &sl), 0);
	rv->port = ntohs(sa.sin_port);
	assert_int_equal(pthread_create(&rv->th, NULL, serve, rv), 0);
}

void rvt_receiver_stop(struct rvt_receiver *rv)
{
	shutdown(rv->fd, SHUT_RDWR);
	close(rv->fd);
	pthread_join(rv->th, NULL);
	for (int i = 0; i < RVT_RECEIVER_BODIES; i++) {
		free(rv->bodies[i]);
		rv->bodies[i] = NULL;
	}
}

int rvt_receiver_wait_delivered(struct rvt_receiver *rv)
{
	struct timespec until;
	int ok;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 60;
	pthread_mutex_lock(&rv->mu);
	while (!(rv->requests > rv->fail_first && rv->body[0]) &&
	       pthread_cond_timedwait(&rv->cv, &rv->mu, &until) == 0)
		;
	ok = rv->requests > rv->fail_first && rv->body[0];
	pthread_mutex_unlock(&rv->mu);
	return ok;
}

void rvt_receiver_write_secret(const char *dir, const char *secret)
{
	char path[256];
	FILE *f;
	snprintf(path, sizeof path, "%s/webhook.secret", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", secret);
	fclose(f);
	assert_int_equal(chmod(path, 0600), 0);
}
