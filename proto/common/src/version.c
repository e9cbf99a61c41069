/* SPDX-License-Identifier: Apache-2.0 */
/*
 * version.c — every program's `--version` (rearview/common.h).  The version
 * comes from the build's generated rv_version.h (the top Makefile's
 * RV_VERSION), the one source the pkg-config files, the SONAMEs and the
 * Debian package version are also made from.
 */
#include <stdio.h>

#include "rearview/common.h"
#include "rv_version.h"

int rvc_print_version(const char *program)
{
	printf("%s (Rearview) %s\n"
	       "License: Apache-2.0 <https://www.apache.org/licenses/LICENSE-2.0>\n",
	       program, RV_VERSION);
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}
