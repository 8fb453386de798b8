// SPDX-License-Identifier: GPL-2.0
/*
 * PID 1 of the rust-mm test guest: mount /proc, /sys, debugfs (gup_test)
 * and a tmpfs on /tmp, run every test program in /tests (ours print
 * "RUSTMM-TEST <name> PASS|FAIL|SKIP ..." lines, kselftests print TAP),
 * report each program's exit status, print one summary line "RUSTMM-DONE"
 * and reboot, which ends QEMU (-no-reboot; ACPI power-off is not
 * available in this guest). The host harness (scripts/run-userspace.sh)
 * reads the serial console.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
	char *names[64];
	int n = 0, i;
	struct dirent *d;
	DIR *dir;

	setvbuf(stdout, NULL, _IONBF, 0);
	mkdir("/proc", 0755);
	mkdir("/sys", 0755);
	mkdir("/tmp", 01777);
	if (mount("proc", "/proc", "proc", 0, NULL) ||
	    mount("sysfs", "/sys", "sysfs", 0, NULL) ||
	    mount("tmpfs", "/tmp", "tmpfs", 0, NULL))
		printf("RUSTMM-TEST init FAIL mount: %s\n", strerror(errno));
	/* Optional: gup_test lives in debugfs. */
	mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);

	dir = opendir("/tests");
	while (dir && (d = readdir(dir)) && n < 64)
		if (d->d_name[0] != '.')
			names[n++] = strdup(d->d_name);
	if (dir)
		closedir(dir);
	qsort(names, n, sizeof(names[0]), cmp);

	for (i = 0; i < n; i++) {
		char path[300];
		int status;
		pid_t pid;

		snprintf(path, sizeof(path), "/tests/%s", names[i]);
		printf("RUSTMM-PROGRAM %s start\n", names[i]);
		pid = fork();
		if (pid == 0) {
			execl(path, path, (char *)NULL);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			status = -1;
		if (status == 0)
			printf("RUSTMM-PROGRAM %s exit 0\n", names[i]);
		else if (status != -1 && WIFSIGNALED(status))
			printf("RUSTMM-PROGRAM %s killed by signal %d\n", names[i],
			       WTERMSIG(status));
		else
			printf("RUSTMM-PROGRAM %s exit %d\n", names[i],
			       status == -1 ? -1 : WEXITSTATUS(status));
	}
	printf("RUSTMM-DONE %d programs\n", n);
	sync();
	reboot(RB_AUTOBOOT);
	return 0;
}
