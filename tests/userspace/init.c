// SPDX-License-Identifier: GPL-2.0
/*
 * PID 1 of the rust-mm test guest: mount /proc, /sys, /dev (devtmpfs),
 * debugfs (gup_test) and a tmpfs on /tmp; set the machine up as the
 * kernel command line asks (environment of init):
 *
 *   RUSTMM_SWAP_MIB=N     a zram swap device of N MiB (/dev/zram0, swap
 *                         header written here, swapon)
 *   RUSTMM_HUGEPAGES=N    N hugetlb pages of the default size reserved
 *   RUSTMM_HUGEPAGES_MORE=KB:N[,KB:N...]
 *                         N hugetlb pages of KB KiB reserved too (arm64's
 *                         contiguous sizes: selftests/mm/cow tests every
 *                         size the kernel offers, two pages each)
 *   RUSTMM_OVERCOMMIT=N   vm.overcommit_memory
 *
 * and, always, khugepaged's timers set to once a day (before any test
 * process exists): our COW tests PTE-map THPs on purpose and assert, page
 * by page, which are reused and which are copied; a background collapse
 * back to a PMD mapping, or its isolation's transient folio references,
 * changes that answer under them. The kernel's khugepaged selftest sets
 * (and restores) its own timers.
 *
 * then run the test programs named in /tests/order (or every program in
 * /tests, in name order), each in its own
 * process group and its own empty working directory under /tmp, with the
 * arguments listed one per line in /tests/NAME.args (if any), the sysctls
 * in /tests/NAME.sysctl ("vm/overcommit_memory=1" lines; set before, the
 * old values restored after) and killed after the seconds in
 * /tests/NAME.timeout (default 1200). Ours print
 * "RUSTMM-TEST <name> PASS|FAIL|SKIP ..." lines, kselftests print TAP (or
 * their own format); init reports each program's start and end status,
 * prints one summary line "RUSTMM-DONE" and reboots, which ends QEMU
 * (-no-reboot; ACPI power-off is not available in this guest). The host
 * harness (scripts/test/run-userspace.sh) reads the serial console.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROGRAMS	64
#define MAX_ARGS	32
#define DEFAULT_TIMEOUT	1200

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	ssize_t n = -1;

	if (fd >= 0) {
		n = write(fd, val, strlen(val));
		close(fd);
	}
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

static long env_long(const char *name)
{
	const char *v = getenv(name);

	return v ? strtol(v, NULL, 0) : 0;
}

/*
 * A version-1 swap header (include/linux/swap.h, union swap_header) in the
 * first page of @dev of @bytes bytes, as mkswap writes it, then swapon.
 */
static int zram_swap(long mib)
{
	const long page = sysconf(_SC_PAGESIZE);
	char size[32], *hdr;
	uint32_t *info;
	int fd, ret = -1;

	snprintf(size, sizeof(size), "%ldM", mib);
	if (write_file("/sys/block/zram0/disksize", size)) {
		printf("RUSTMM-SETUP swap FAIL cannot size /dev/zram0: %s\n", strerror(errno));
		return -1;
	}
	hdr = calloc(1, page);
	fd = open("/dev/zram0", O_WRONLY);
	if (!hdr || fd < 0) {
		printf("RUSTMM-SETUP swap FAIL cannot open /dev/zram0: %s\n", strerror(errno));
		goto out;
	}
	/* After 1024 bytes of boot block: version, last_page, nr_badpages. */
	info = (uint32_t *)(hdr + 1024);
	info[0] = 1;
	info[1] = (uint32_t)(mib * (1024 * 1024 / page) - 1);
	info[2] = 0;
	memcpy(hdr + page - 10, "SWAPSPACE2", 10);
	if (write(fd, hdr, page) != page || fsync(fd)) {
		printf("RUSTMM-SETUP swap FAIL cannot write the swap header: %s\n", strerror(errno));
		goto out;
	}
	close(fd);
	fd = -1;
	if (swapon("/dev/zram0", 0)) {
		printf("RUSTMM-SETUP swap FAIL swapon /dev/zram0: %s\n", strerror(errno));
		goto out;
	}
	printf("RUSTMM-SETUP swap ok /dev/zram0 %ld MiB\n", mib);
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	free(hdr);
	return ret;
}

/* Reserve N hugetlb pages of KB KiB for each "KB:N" of @list. */
static void hugepages_more(const char *list)
{
	char path[96], val[32], buf[32];
	const char *p = list;

	while (p && *p) {
		char *end;
		long kb = strtol(p, &end, 10), n = -1, got = -1;
		int fd;

		if (*end == ':')
			n = strtol(end + 1, &end, 10);
		if (kb <= 0 || n < 0 || (*end && *end != ',')) {
			printf("RUSTMM-SETUP hugepages-more FAIL cannot parse \"%s\"\n", list);
			return;
		}
		snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-%ldkB/nr_hugepages", kb);
		snprintf(val, sizeof(val), "%ld", n);
		write_file(path, val);
		fd = open(path, O_RDONLY);
		if (fd >= 0) {
			memset(buf, 0, sizeof(buf));
			(void)!read(fd, buf, sizeof(buf) - 1);
			close(fd);
			got = strtol(buf, NULL, 10);
		}
		printf("RUSTMM-SETUP hugepages-%ldkB %s %ld requested, %ld reserved\n",
		       kb, got == n ? "ok" : "FAIL", n, got);
		p = *end ? end + 1 : end;
	}
}

/* khugepaged wakes for one pass when its timer is written, then sleeps. */
static void quiet_khugepaged(void)
{
	static const char *const knobs[] = {
		"/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs",
		"/sys/kernel/mm/transparent_hugepage/khugepaged/alloc_sleep_millisecs",
	};
	int bad = 0;

	for (unsigned int i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
		bad |= write_file(knobs[i], "86400000");
	printf("RUSTMM-SETUP khugepaged %s scan and alloc sleep 86400000 ms\n",
	       bad ? "FAIL" : "ok");
}

static void setup(void)
{
	long n;
	char val[32];

	quiet_khugepaged();

	n = env_long("RUSTMM_SWAP_MIB");
	if (n > 0)
		zram_swap(n);
	n = env_long("RUSTMM_HUGEPAGES");
	if (n > 0) {
		char buf[32] = "";
		int fd;

		snprintf(val, sizeof(val), "%ld", n);
		write_file("/proc/sys/vm/nr_hugepages", val);
		fd = open("/proc/sys/vm/nr_hugepages", O_RDONLY);
		if (fd >= 0) {
			(void)!read(fd, buf, sizeof(buf) - 1);
			close(fd);
		}
		printf("RUSTMM-SETUP hugepages %s %ld requested, %ld reserved\n",
		       strtol(buf, NULL, 10) == n ? "ok" : "FAIL", n, strtol(buf, NULL, 10));
	}
	hugepages_more(getenv("RUSTMM_HUGEPAGES_MORE"));
	if (getenv("RUSTMM_OVERCOMMIT")) {
		snprintf(val, sizeof(val), "%ld", env_long("RUSTMM_OVERCOMMIT"));
		printf("RUSTMM-SETUP overcommit %s %s\n",
		       write_file("/proc/sys/vm/overcommit_memory", val) ? "FAIL" : "ok", val);
	}
}

/* /tests/NAME.args: one argument per line. Returns argc. */
static int read_args(const char *name, char *argv[MAX_ARGS + 2])
{
	char path[300], line[256];
	FILE *f;
	int argc = 1;

	snprintf(path, sizeof(path), "/tests/%s", name);
	argv[0] = strdup(path);
	snprintf(path, sizeof(path), "/tests/%s.args", name);
	f = fopen(path, "r");
	while (f && argc <= MAX_ARGS && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (line[0])
			argv[argc++] = strdup(line);
	}
	if (f)
		fclose(f);
	argv[argc] = NULL;
	return argc;
}

static long read_timeout(const char *name)
{
	char path[300], buf[32] = "";
	long t;
	int fd;

	snprintf(path, sizeof(path), "/tests/%s.timeout", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return DEFAULT_TIMEOUT;
	(void)!read(fd, buf, sizeof(buf) - 1);
	close(fd);
	t = strtol(buf, NULL, 10);
	return t > 0 ? t : DEFAULT_TIMEOUT;
}

#define MAX_SYSCTLS	8

struct sysctl {
	char path[300], old[64];
};

/* Apply /tests/NAME.sysctl; remember the old values. Returns how many. */
static int sysctls_set(const char *name, struct sysctl *s)
{
	char path[300], line[200];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "/tests/%s.sysctl", name);
	f = fopen(path, "r");
	while (f && n < MAX_SYSCTLS && fgets(line, sizeof(line), f)) {
		char *eq = strchr(line, '=');
		int fd;
		ssize_t got;

		line[strcspn(line, "\n")] = 0;
		if (!eq)
			continue;
		*eq = 0;
		snprintf(s[n].path, sizeof(s[n].path), "/proc/sys/%s", line);
		fd = open(s[n].path, O_RDONLY);
		got = fd >= 0 ? read(fd, s[n].old, sizeof(s[n].old) - 1) : -1;
		if (fd >= 0)
			close(fd);
		s[n].old[got > 0 ? got : 0] = 0;
		s[n].old[strcspn(s[n].old, "\n")] = 0;
		printf("RUSTMM-SETUP sysctl %s %s=%s for %s\n",
		       write_file(s[n].path, eq + 1) ? "FAIL" : "ok", line, eq + 1, name);
		n++;
	}
	if (f)
		fclose(f);
	return n;
}

static void sysctls_restore(const struct sysctl *s, int n)
{
	while (n-- > 0)
		if (s[n].old[0])
			write_file(s[n].path, s[n].old);
}

/* How long a program ran (guest time): what make test's budget is made of. */
static void print_time(const char *name, const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("RUSTMM-PROGRAM-TIME %s %ld s\n", name, (long)(t1.tv_sec - t0->tv_sec));
}

static volatile sig_atomic_t alarmed;

static void on_alarm(int sig)
{
	(void)sig;
	alarmed = 1;
}

/*
 * Run one program; print how it ended. The time limit is an alarm, not a
 * polling loop: init must not wake up while a benchmark window is open.
 */
static void run(const char *name)
{
	struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART */
	char *argv[MAX_ARGS + 2], dir[300];
	long timeout = read_timeout(name);
	struct sysctl sysctls[MAX_SYSCTLS];
	int status = 0, nsysctl;
	struct timespec t0;
	pid_t pid, got;

	read_args(name, argv);
	nsysctl = sysctls_set(name, sysctls);
	snprintf(dir, sizeof(dir), "/tmp/run-%s", name);
	mkdir(dir, 0755);
	printf("RUSTMM-PROGRAM %s start\n", name);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		if (chdir(dir))
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid < 0) {
		printf("RUSTMM-PROGRAM %s exit -1\n", name);
		sysctls_restore(sysctls, nsysctl);
		return;
	}
	setpgid(pid, pid);
	sigaction(SIGALRM, &sa, NULL);
	alarmed = 0;
	alarm(timeout);
	do {
		got = waitpid(pid, &status, 0);
	} while (got < 0 && errno == EINTR && !alarmed);
	alarm(0);
	print_time(name, &t0);
	if (alarmed && got != pid) {
		kill(-pid, SIGKILL);
		got = waitpid(pid, &status, 0);
		printf("RUSTMM-PROGRAM %s timeout after %ld s\n", name, timeout);
		sysctls_restore(sysctls, nsysctl);
		return;
	}
	/* Children it left behind (its process group) go too. */
	kill(-pid, SIGKILL);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	sysctls_restore(sysctls, nsysctl);
	if (got != pid)
		printf("RUSTMM-PROGRAM %s exit -1\n", name);
	else if (WIFSIGNALED(status))
		printf("RUSTMM-PROGRAM %s killed by signal %d\n", name, WTERMSIG(status));
	else
		printf("RUSTMM-PROGRAM %s exit %d\n", name, WEXITSTATUS(status));
}

int main(void)
{
	char *names[MAX_PROGRAMS], line[256];
	int n = 0, i;
	struct dirent *d;
	FILE *order;
	DIR *dir;

	setvbuf(stdout, NULL, _IONBF, 0);
	mkdir("/proc", 0755);
	mkdir("/sys", 0755);
	mkdir("/dev", 0755);
	mkdir("/tmp", 01777);
	if (mount("proc", "/proc", "proc", 0, NULL) ||
	    mount("sysfs", "/sys", "sysfs", 0, NULL) ||
	    mount("tmpfs", "/tmp", "tmpfs", 0, NULL))
		printf("RUSTMM-TEST init FAIL mount: %s\n", strerror(errno));
	/* Optional: /dev/zram0 and /dev/userfaultfd; gup_test in debugfs. */
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	setup();

	/* /tests/order, one name per line, or every program by name. */
	order = fopen("/tests/order", "r");
	while (order && n < MAX_PROGRAMS && fgets(line, sizeof(line), order)) {
		line[strcspn(line, "\n")] = 0;
		if (line[0])
			names[n++] = strdup(line);
	}
	if (order) {
		fclose(order);
	} else {
		dir = opendir("/tests");
		while (dir && (d = readdir(dir)) && n < MAX_PROGRAMS)
			if (d->d_name[0] != '.' && !strchr(d->d_name, '.'))
				names[n++] = strdup(d->d_name);
		if (dir)
			closedir(dir);
		qsort(names, n, sizeof(names[0]), cmp);
	}

	for (i = 0; i < n; i++)
		run(names[i]);
	printf("RUSTMM-DONE %d programs\n", n);
	sync();
	reboot(RB_AUTOBOOT);
	return 0;
}
