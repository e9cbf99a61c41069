/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sqlite.c — sqlite3 result codes to negative errno (rearview/common.h).
 * Its own object so only the stores that call it see sqlite3.h; it uses
 * sqlite's constants only, never a libsqlite3 function.
 *
 * Invariant: extended codes map as their primary code (low byte), so a new
 * extended code sqlite adds later maps like its family.
 */
#include "rearview/common.h"

#include <errno.h>
#include <sqlite3.h>

int rvc_sqlite_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_ROW:
	case SQLITE_DONE:
		return 0;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	case SQLITE_READONLY:
	case SQLITE_PERM:
		return -EACCES;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_CONSTRAINT:
		return -EEXIST;
	default:
		return -EIO;
	}
}
