/* SPDX-License-Identifier: Apache-2.0 */
/*
 * text.h — untrusted text (text.c): the one check of a device's or a
 * request's string field.  Pure functions of their arguments, safe on any
 * thread.
 */
#ifndef RVS_TEXT_H
#define RVS_TEXT_H

#include <stddef.h>

/* Checks an untrusted string field: bounded length, UTF-8, no control
 * chars.  1 when s is NULL or passes, else 0. */
int rvs_field_ok(const char *s, size_t max);

#endif
