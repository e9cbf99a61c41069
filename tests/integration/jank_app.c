/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jank_app.c — an app that is never traced (it never registers on
 * control.sock) and reports its frames through librvevents, as a toolkit
 * would: each line "N L" on stdin sends N frames of which the last L miss
 * their 16.67 ms deadline (ending at 30 ms; the others at 10 ms), all in
 * the past, then prints "sent N" once librvevents has written them; a line
 * "v VERSION" declares the app's version (rv_app_version) and prints
 * "version RC" (its return value).  Until then it is a client that declares
 * none, as an older librvevents.  EOF exits.  argv[1]: the events.sock path.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "rearview/events.h"

#define FRAME_NS    20000000ull
#define DEADLINE_NS 16666667ull

int main(int argc, char **argv)
{
	unsigned n, late;
	char line[64];

	if (argc != 2 || rv_events_set_path(argv[1]) < 0) {
		fprintf(stderr, "usage: rv_jank_app EVENTS_SOCK\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		char version[40];
		uint64_t base;

		if (sscanf(line, "v %39s", version) == 1) {
			printf("version %d\n", rv_app_version(version));
			continue;
		}
		if (sscanf(line, "%u %u", &n, &late) != 2 || late > n || n > 100000) {
			fprintf(stderr, "rv_jank_app: bad line\n");
			return 2;
		}
		base = rv_events_now() - (uint64_t)n * FRAME_NS - 1000000000ull;
		for (unsigned i = 0; i < n; i++) {
			uint64_t start = base + i * FRAME_NS;
			uint64_t end = start + (i >= n - late ? 30000000ull : 10000000ull);

			if (rv_frame(start, end, start + DEADLINE_NS) < 0) {
				fprintf(stderr, "rv_jank_app: frame %u not sent\n", i);
				return 1;
			}
		}
		printf("sent %u\n", n);
	}
	return 0;
}
