/* SPDX-License-Identifier: Apache-2.0 */
/*
 * role.c — the accounts' role names (store.h's enum rvs_role): how a role
 * is stored and shown.  Pure; the backends store roles by these names.
 */
#include "store/store.h"

#include <string.h>

static const char *const ROLE_NAMES[] = {NULL, "viewer", "author", "admin"};

const char *rvs_role_name(int role)
{
	return role >= RVS_ROLE_VIEWER && role <= RVS_ROLE_ADMIN ? ROLE_NAMES[role] : NULL;
}

int rvs_role_parse(const char *s)
{
	for (int r = RVS_ROLE_VIEWER; s && r <= RVS_ROLE_ADMIN; r++)
		if (strcmp(s, ROLE_NAMES[r]) == 0)
			return r;
	return 0;
}
