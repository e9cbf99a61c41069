/* SPDX-License-Identifier: Apache-2.0 */
/*
 * text.h — untrusted text (text.c): the one check of a device's or a
 * request's string field, and the one parser of a decimal integer.  Pure functions of their
 * arguments, safe on any thread.
 */
#ifndef RVS_TEXT_H
#define RVS_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Checks an untrusted string field: bounded length, UTF-8, no control
 * chars.  1 when s is NULL or passes, else 0. */
int rvs_field_ok(const char *s, size_t max);

/* s, all of it, as a decimal integer (strtoll's form: leading blanks and a
 * sign allowed) into *out: 0, or -EINVAL (nothing written) when s is empty,
 * holds anything else, or is out of range. */
int rvs_parse_i64(const char *s, int64_t *out);

#endif
