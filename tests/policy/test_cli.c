/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cli.c — the rvpolicy command run as a real process in a temporary
 * directory: keygen, sign, verify, and its refusals (rollback, tampering,
 * a foreign key, bad arguments) with their exit codes.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "rearview/policy.h"

#ifndef RVPOLICY_BIN
#define RVPOLICY_BIN "build/bin/rvpolicy"
#endif

static char dir[64];

static void path(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

/* Run rvpolicy with up to 8 arguments (NULL-terminated); its exit code. */
static int run(const char *a1, ...)
{
	const char *argv[12] = {RVPOLICY_BIN, a1};
	va_list ap;
	int n = 2, status;
	pid_t pid;

	va_start(ap, a1);
	while (n < 11 && (argv[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		dup2(null, 2);
		execv(RVPOLICY_BIN, (char *const *)argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void test_cli_keygen_sign_verify_and_refusals(void **state)
{
	char priv[96], pub[96], priv2[96], pub2[96], doc[96], doc2[96];
	struct stat st;

	snprintf(dir, sizeof(dir), "/tmp/rvp-cli-XXXXXX");
	assert_non_null(mkdtemp(dir));
	path(priv, sizeof(priv), "k.pem");
	path(pub, sizeof(pub), "p.pem");
	path(priv2, sizeof(priv2), "k2.pem");
	path(pub2, sizeof(pub2), "p2.pem");
	path(doc, sizeof(doc), "d.bin");
	path(doc2, sizeof(doc2), "d2.bin");

	assert_int_equal(run("keygen", priv, pub, NULL), 0);
	assert_int_equal(stat(priv, &st), 0);
	assert_int_equal(st.st_mode & 0077, 0); /* private key not readable by others */
	assert_int_equal(run("keygen", priv2, pub2, NULL), 0);
	assert_int_equal(run("sign", priv, doc, "version=4", "ttl=3600", "quota=2",
			     "selection=targeted",
			     "campaign=id=j,app=com.*,vmin=4.2,kind=jank,p=0.5,mode=summary", NULL),
			 0);
	assert_int_equal(run("verify", pub, doc, NULL), 0);
	assert_int_equal(run("verify", pub, doc, "3", NULL), 0);
	assert_int_equal(run("verify", pub, doc, "4", NULL), 1); /* rollback */
	assert_int_equal(run("verify", pub2, doc, NULL), 1);	 /* foreign key */
	/* Expired at signing time: signs, but a device refuses it. */
	assert_int_equal(run("sign", priv, doc2, "version=5", "issued=1000", "expires=2000", NULL),
			 0);
	assert_int_equal(run("verify", pub, doc2, NULL), 1);
	/* Tampered: flip the last byte of the signed file. */
	int fd = open(doc, O_RDWR);
	assert_true(fd >= 0);
	off_t end = lseek(fd, -1, SEEK_END);
	uint8_t b;
	assert_int_equal(pread(fd, &b, 1, end), 1);
	b ^= 0x01;
	assert_int_equal(pwrite(fd, &b, 1, end), 1);
	close(fd);
	assert_int_equal(run("verify", pub, doc, NULL), 1);
	/* Usage errors. */
	assert_int_equal(run("sign", priv, doc2, NULL), 2); /* no version */
	assert_int_equal(run("sign", priv, doc2, "version=6", "campaign=app=x", NULL), 2);
	assert_int_equal(run("sign", priv, doc2, "version=x", NULL), 2);
	assert_int_equal(run("frobnicate", NULL), 2);
	/* A body the library refuses to sign (p > 1). */
	assert_int_equal(run("sign", priv, doc2, "version=7", "campaign=id=a,p=2", NULL), 1);

	const char *const names[] = {"k.pem", "p.pem", "k2.pem", "p2.pem", "d.bin", "d2.bin"};
	for (size_t i = 0; i < 6; i++) {
		char p[96];
		path(p, sizeof(p), names[i]);
		unlink(p);
	}
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cli_keygen_sign_verify_and_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
