/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unit_sandbox.c — rv_unit_sandbox: runs a program under the credential
 * and system-call settings of a systemd service unit, as systemd would,
 * where no systemd manager runs (a container, a test):
 *
 *   rv_unit_sandbox UNIT USER PROGRAM [ARG]...
 *
 * From UNIT it applies CapabilityBoundingSet= (every other capability
 * dropped from the bounding set), AmbientCapabilities= (the only
 * capabilities left, raised as ambient so they survive the exec),
 * NoNewPrivileges=, and SystemCallFilter= (allow lists, several lines
 * joined; @groups expanded by `systemd-analyze syscall-filter`, which
 * holds systemd's own tables) with SystemCallErrorNumber= as the refusal,
 * as a seccomp filter through libseccomp.  It runs as USER (its uid, gid
 * and no supplementary groups) instead of the unit's User=, which need not
 * exist here.  Not reproduced: the mount, namespace and address-family
 * settings (ProtectSystem=, PrivateTmp=, RestrictAddressFamilies=,
 * MemoryDenyWriteExecute=, …).
 *
 * Exit status: the program's, or 2 for a unit setting it cannot apply
 * (a deny list "~…", an unknown capability or group), 1 for a failure.
 * Must start as root.
 */
#include <errno.h>
#include <linux/capability.h>
#include <pwd.h>
#include <grp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <seccomp.h>

#define MAX_CAP 64

static void die(int status, const char *what, const char *detail)
{
	fprintf(stderr, "rv_unit_sandbox: %s%s%s\n", what, detail ? ": " : "",
		detail ? detail : "");
	exit(status);
}

/* The number of capability `name` ("CAP_PERFMON"), from
 * `systemd-analyze capability`; exits 2 when it is unknown. */
static int cap_number(const char *name)
{
	char line[256], lower[64], n[64];
	FILE *p = popen("systemd-analyze capability", "r");
	int num, found = -1;
	size_t i;

	for (i = 0; name[i] && i < sizeof(lower) - 1; i++)
		lower[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
	lower[i] = '\0';
	if (!p)
		die(1, "systemd-analyze capability", strerror(errno));
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "%63s %d", n, &num) == 2 && !strcmp(n, lower))
			found = num;
	pclose(p);
	if (found < 0 || found >= MAX_CAP)
		die(2, "unknown capability", name);
	return found;
}

/* Adds an allow rule for every system call of `item` (a name or an
 * @group, expanded recursively, depth-bounded). */
static void allow(scmp_filter_ctx ctx, const char *item, int depth)
{
	char cmd[128], line[256], name[128];
	FILE *p;
	int nr;

	if (item[0] != '@') {
		nr = seccomp_syscall_resolve_name(item);
		if (nr != __NR_SCMP_ERROR && seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0) < 0)
			die(1, "seccomp_rule_add", item);
		return; /* a name this architecture lacks: nothing to allow */
	}
	if (depth > 8)
		die(2, "group nesting too deep", item);
	snprintf(cmd, sizeof(cmd), "systemd-analyze syscall-filter '%s'", item);
	if (!(p = popen(cmd, "r")))
		die(1, "systemd-analyze syscall-filter", strerror(errno));
	int lines = 0;
	while (fgets(line, sizeof(line), p)) {
		/* "@group" heads the list; members are indented; "# …" is prose. */
		if (line[0] != ' ' || sscanf(line, " %127s", name) != 1 || name[0] == '#')
			continue;
		allow(ctx, name, depth + 1);
		lines++;
	}
	if (pclose(p) != 0 || lines == 0)
		die(2, "unknown system call group", item);
}

/* Splits the value of a unit line into whitespace-separated words. */
static char *words(char *v, char **save)
{
	return strtok_r(v, " \t\n", save);
}

int main(int argc, char **argv)
{
	uint64_t bounding = ~0ull, ambient = 0;
	bool has_bounding = false, nnp = false;
	char *filters[16], line[1024];
	size_t nfilters = 0;
	int err = EPERM;
	struct passwd *pw;
	FILE *unit;

	if (argc < 4)
		die(2, "usage: rv_unit_sandbox UNIT USER PROGRAM [ARG]...", NULL);
	if (!(unit = fopen(argv[1], "r")))
		die(1, argv[1], strerror(errno));
	while (fgets(line, sizeof(line), unit)) {
		char *eq = strchr(line, '='), *save, *w;

		if (line[0] == '#' || line[0] == ';' || !eq)
			continue;
		*eq = '\0';
		if (!strcmp(line, "SystemCallFilter")) {
			if (eq[1] == '~')
				die(2, "a SystemCallFilter= deny list is not supported", eq + 1);
			if (nfilters < 16)
				filters[nfilters++] = strdup(eq + 1);
		} else if (!strcmp(line, "SystemCallErrorNumber")) {
			char *name = words(eq + 1, &save);

			if (!name || strcmp(name, "EPERM"))
				die(2, "SystemCallErrorNumber other than EPERM", name);
		} else if (!strcmp(line, "CapabilityBoundingSet")) {
			if (!has_bounding)
				bounding = 0;
			has_bounding = true;
			for (w = words(eq + 1, &save); w; w = words(NULL, &save))
				bounding |= 1ull << cap_number(w);
		} else if (!strcmp(line, "AmbientCapabilities")) {
			for (w = words(eq + 1, &save); w; w = words(NULL, &save))
				ambient |= 1ull << cap_number(w);
		} else if (!strcmp(line, "NoNewPrivileges")) {
			nnp = !strncmp(eq + 1, "yes", 3) || !strncmp(eq + 1, "true", 4);
		}
	}
	fclose(unit);
	ambient &= bounding;

	/* Credentials: keep the permitted set across setuid, then cut it down. */
	if (!(pw = getpwnam(argv[2])))
		die(1, "no such user", argv[2]);
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		die(1, "PR_SET_KEEPCAPS", strerror(errno));
	for (int c = 0; c < MAX_CAP; c++)
		if (!(bounding & (1ull << c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 &&
		    errno != EINVAL)
			die(1, "PR_CAPBSET_DROP", strerror(errno));
	if (setgroups(0, NULL) < 0 || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) < 0 ||
	    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) < 0)
		die(1, "switching user", strerror(errno));
	{
		struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct d[2] = {
			{(uint32_t)ambient, (uint32_t)ambient, (uint32_t)ambient},
			{(uint32_t)(ambient >> 32), (uint32_t)(ambient >> 32),
			 (uint32_t)(ambient >> 32)},
		};

		if (syscall(SYS_capset, &h, d) < 0)
			die(1, "capset", strerror(errno));
	}
	for (int c = 0; c < MAX_CAP; c++)
		if ((ambient & (1ull << c)) &&
		    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0) < 0)
			die(1, "PR_CAP_AMBIENT_RAISE", strerror(errno));
	if (nnp && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die(1, "PR_SET_NO_NEW_PRIVS", strerror(errno));

	/* The system-call allow list, last: everything above needed calls it
	 * may not hold. */
	if (nfilters) {
		scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO((uint32_t)err));

		if (!ctx)
			die(1, "seccomp_init", NULL);
		for (size_t i = 0; i < nfilters; i++) {
			char *save, *w;

			for (w = words(filters[i], &save); w; w = words(NULL, &save))
				allow(ctx, w, 0);
		}
		if (seccomp_load(ctx) < 0)
			die(1, "seccomp_load", NULL);
		seccomp_release(ctx);
	}
	execvp(argv[3], argv + 3);
	die(1, argv[3], strerror(errno));
	return 1;
}
