/* SPDX-License-Identifier: Apache-2.0 */
/*
 * openapi_node.h — runs one of tests/server/openapi's node scripts (lint.js,
 * check.js) with the npm modules the build installed for them
 * (build/openapi-tools, server/server.mk), for test_openapi_doc.c and
 * test_openapi.c.  Header-only: each test includes it once.
 */
#ifndef RVS_OPENAPI_NODE_H
#define RVS_OPENAPI_NODE_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* NULL when node and the installed modules are there, else why not (the
 * test skips, saying so). */
static inline const char *openapi_node_missing(void)
{
	struct stat st;
	if (system("command -v node >/dev/null 2>&1") != 0)
		return "node is not installed (deploy/install-deps.sh)";
	if (stat(RVS_OPENAPI_TOOLS "/@apidevtools/swagger-parser", &st) != 0 ||
	    stat(RVS_OPENAPI_TOOLS "/ajv", &st) != 0)
		return "the OpenAPI tools are not installed (npm ci failed: "
		       "build/openapi-tools/npm.log)";
	return NULL;
}

/* Runs `node tests/server/openapi/SCRIPT ARG1 [ARG2]` with NODE_PATH at the
 * installed modules, its output on this test's stdout; its exit status
 * (0 when it passed), or -1 when it could not run. */
static inline int openapi_node(const char *script, const char *arg1, const char *arg2)
{
	char js[512];
	int status;
	pid_t pid;

	snprintf(js, sizeof js, "%s/%s", RVS_OPENAPI_JS, script);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		setenv("NODE_PATH", RVS_OPENAPI_TOOLS, 1);
		execlp("node", "node", js, arg1, arg2, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

#endif
