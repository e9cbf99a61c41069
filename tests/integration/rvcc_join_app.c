/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rvcc_join_app.c — an ordinary program that knows nothing of Rearview (no
 * header, no call): test_daemon_rvcc_join builds it through rvcc and checks
 * that it joins the daemon all the same.  It calls join_app_tick() every
 * couple of milliseconds until its stdin is closed.
 */
#include <poll.h>
#include <stdio.h>

static volatile unsigned long ticks;

__attribute__((noinline)) void join_app_tick(void);
__attribute__((noinline)) void join_app_tick(void)
{
	ticks++;
}

int main(void)
{
	struct pollfd in = {0, POLLIN, 0};
	while (poll(&in, 1, 2) == 0)
		join_app_tick();
	printf("%lu ticks\n", ticks);
	return 0;
}
