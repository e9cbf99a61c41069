/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hotlist.h — `rvtrace hotlist` (hotlist.c), private to the rvtrace tool.
 */
#ifndef RVTRACE_HOTLIST_H
#define RVTRACE_HOTLIST_H

/* The command's manual, printed by `rvtrace hotlist --help`. */
extern const char rvtrace_usage_hotlist[];

/* Runs `rvtrace hotlist` (argv[0] = "hotlist"): prints the never-list to
 * stdout.  Returns the exit status: 0, 1 (an input cannot be read or out of
 * memory), 2 (usage).  Single-threaded; uses getopt. */
int rvtrace_cmd_hotlist(int argc, char **argv);

#endif
