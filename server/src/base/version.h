/* SPDX-License-Identifier: Apache-2.0 */
/*
 * version.h — app versions ordered as versions (version.c): 4.10 after 4.9,
 * wherever the server compares or lists them (the regressions' version
 * pairs, the method page's per-version rows, the signatures' counts).
 * Pure functions of their arguments, safe on any thread.
 */
#ifndef RVS_VERSION_H
#define RVS_VERSION_H

/* Compares version strings as versions: runs of digits numerically (4.10
 * after 4.9, leading zeros ignored), other characters bytewise.  <0, 0,
 * >0. */
int rvs_version_cmp(const char *a, const char *b);

/* Sorts the objects of array arr by their string member key in
 * rvs_version_cmp order, stably, within each run of consecutive objects
 * whose members named in group (NULL-terminated, may be empty) are equal:
 * the order the database gave the runs is kept.  A member that is not a
 * string sorts as "".  The caller owns arr; nothing is allocated. */
struct json_t;
void rvs_version_sort(struct json_t *arr, const char *key, const char *const *group);

#endif
