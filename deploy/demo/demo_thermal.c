/* SPDX-License-Identifier: Apache-2.0 */
/*
 * demo_thermal.c — rearview-demo-thermal: a fake sysfs thermal tree for the
 * demo, shaped like the part of /sys/class/thermal that rearviewd's
 * thermal poller reads (device/src/detect.c):
 *
 *   ROOT/thermal_zone0/{type,temp,trip_point_0_type,trip_point_0_temp,
 *                       trip_point_1_type,trip_point_1_temp}
 *   ROOT/cooling_device0/{type,cur_state,max_state}
 *
 * The zone starts cool and heats by --step millidegrees every --interval
 * ms.  At the passive trip point the cooling device engages
 * (cur_state 1) — rearviewd sees "entered throttling" — and the zone then
 * cools back to the start temperature, releases the cooling device and
 * heats again, so throttling recurs about once per cycle.  Every value is
 * written to a temporary file and renamed, so a reader never sees a
 * partial number.  Runs until SIGINT/SIGTERM, or --cycles N complete.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static int put(const char *root, const char *rel, const char *text)
{
	char path[512], tmp[520];
	FILE *f;

	if (snprintf(path, sizeof(path), "%s/%s", root, rel) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fputs(text, f);
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		return -errno;
	return 0;
}

static int put_long(const char *root, const char *rel, long v)
{
	char text[32];

	snprintf(text, sizeof(text), "%ld\n", v);
	return put(root, rel, text);
}

static int mkdir_in(const char *root, const char *rel)
{
	char path[512];

	if (snprintf(path, sizeof(path), "%s/%s", root, rel) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int parse_long(const char *s, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return (errno || end == s || *end) ? -1 : 0;
}

static void usage(FILE *f)
{
	fputs("usage: rearview-demo-thermal --root DIR [--start MC] [--trip MC] [--step MC]\n"
	      "                             [--interval MS] [--hold N] [--cycles N]\n"
	      "  --root DIR      where thermal_zone0/ and cooling_device0/ are created\n"
	      "  --start MC      starting temperature, millidegrees C (45000)\n"
	      "  --trip MC       passive trip point (70000)\n"
	      "  --step MC       heating per interval (1000)\n"
	      "  --interval MS   update period (500)\n"
	      "  --hold N        intervals spent throttled before cooling (10)\n"
	      "  --cycles N      stop after N throttling episodes, 0 = never (0)\n",
	      f);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"root", required_argument, NULL, 'r'},
		{"start", required_argument, NULL, 's'},
		{"trip", required_argument, NULL, 't'},
		{"step", required_argument, NULL, 'p'},
		{"interval", required_argument, NULL, 'i'},
		{"hold", required_argument, NULL, 'H'},
		{"cycles", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *root = NULL;
	long start = 45000, trip = 70000, step = 1000, interval = 500, hold = 10, cycles = 0;
	long temp, held = 0, episodes = 0;
	struct sigaction sa = {.sa_handler = on_signal};
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		long *dst = NULL;

		switch (c) {
		case 'r':
			root = optarg;
			continue;
		case 's':
			dst = &start;
			break;
		case 't':
			dst = &trip;
			break;
		case 'p':
			dst = &step;
			break;
		case 'i':
			dst = &interval;
			break;
		case 'H':
			dst = &hold;
			break;
		case 'c':
			dst = &cycles;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (parse_long(optarg, dst) < 0 || *dst < 0) {
			usage(stderr);
			return 2;
		}
	}
	if (!root || optind != argc || step <= 0 || interval <= 0 || trip <= start) {
		usage(stderr);
		return 2;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	if ((rc = mkdir_in(root, "")) < 0 || (rc = mkdir_in(root, "thermal_zone0")) < 0 ||
	    (rc = mkdir_in(root, "cooling_device0")) < 0)
		goto fail;
	temp = start;
	/* Trip points and cooling limits first, so no poll sees a hot zone
	 * without them. */
	if ((rc = put(root, "thermal_zone0/type", "demo-soc\n")) < 0 ||
	    (rc = put(root, "thermal_zone0/trip_point_0_type", "passive\n")) < 0 ||
	    (rc = put_long(root, "thermal_zone0/trip_point_0_temp", trip)) < 0 ||
	    (rc = put(root, "thermal_zone0/trip_point_1_type", "critical\n")) < 0 ||
	    (rc = put_long(root, "thermal_zone0/trip_point_1_temp", trip + 25000)) < 0 ||
	    (rc = put(root, "cooling_device0/type", "demo-cpufreq\n")) < 0 ||
	    (rc = put_long(root, "cooling_device0/max_state", 3)) < 0 ||
	    (rc = put_long(root, "cooling_device0/cur_state", 0)) < 0 ||
	    (rc = put_long(root, "thermal_zone0/temp", temp)) < 0)
		goto fail;
	printf("demo-thermal: %s/thermal_zone0 at %ld mC, passive trip %ld mC\n", root, temp, trip);
	fflush(stdout);

	while (!stop_requested) {
		struct timespec ts = {interval / 1000, (interval % 1000) * 1000000L};

		nanosleep(&ts, NULL);
		if (held > 0) {
			/* Throttled: hold, then cool down and release. */
			if (--held == 0) {
				temp = start;
				if ((rc = put_long(root, "thermal_zone0/temp", temp)) < 0 ||
				    (rc = put_long(root, "cooling_device0/cur_state", 0)) < 0)
					goto fail;
				printf("demo-thermal: cooled to %ld mC, cooling released\n", temp);
				fflush(stdout);
				if (cycles && episodes >= cycles)
					break;
			}
		} else {
			temp += step;
			if (temp >= trip) {
				held = hold > 0 ? hold : 1;
				episodes++;
				if ((rc = put_long(root, "cooling_device0/cur_state", 1)) < 0)
					goto fail;
				printf("demo-thermal: %ld mC >= trip %ld mC: throttling (episode "
				       "%ld)\n",
				       temp, trip, episodes);
				fflush(stdout);
			}
		}
		if ((rc = put_long(root, "thermal_zone0/temp", temp)) < 0)
			goto fail;
	}
	return 0;
fail:
	fprintf(stderr, "demo-thermal: %s: %s\n", root, strerror(-rc));
	return 1;
}
