/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.c — a device's string as a JSON value (json.h).
 *
 * Invariant: jansson refuses a string that is not UTF-8, so such a string
 * is copied with every byte from 0x80 up as '?' first; nothing else is
 * changed.
 */
#include "base/json.h"

#include <stdlib.h>
#include <string.h>

json_t *rvs_json_str(const char *s)
{
	json_t *v;
	char *c;
	if (!s)
		return json_null();
	if ((v = json_string(s)))
		return v;
	if (!(c = strdup(s)))
		return NULL;
	for (char *p = c; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	v = json_string(c);
	free(c);
	return v;
}
