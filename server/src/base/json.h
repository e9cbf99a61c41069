/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.h — a device's string as a JSON value (json.c), for every document
 * the server builds with jansson.  Any thread.
 */
#ifndef RVS_JSON_H
#define RVS_JSON_H

#include <jansson.h>

/* s as a JSON string (a new reference), its bytes of invalid UTF-8
 * replaced by '?' (method and thread names are whatever the device sent);
 * JSON null for NULL.  NULL when memory runs out, so the document built
 * with it fails whole (json_pack, json_object_set_new refuse NULL). */
json_t *rvs_json_str(const char *s);

#endif
