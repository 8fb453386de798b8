/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the userspace COW tests: PTE-mapped THP areas, their
 * PFNs and THP flags (root: pagemap and kpageflags), data patterns, and
 * pipes for synchronising with children. Header-only: each test is one
 * static binary.
 *
 * The THP size is the PMD size (2M with 4K pages) unless a program that
 * calls thp_test_init() is given --thp-kb=N: then its areas are mTHP of
 * N KiB (e.g. 64, one arm64 contpte block), the only anon THP size enabled
 * while it runs, and its results are named <program>_<N>k.
 */
#ifndef RUSTMM_THP_TEST_H
#define RUSTMM_THP_TEST_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "result.h"

#define PAGE		4096UL
#define PMD_THP		(2UL << 20)
#define NR_THP		2
/* Bounds of static per-page arrays (the largest THP is the PMD's). */
#define MAX_AREA_PAGES	(NR_THP * PMD_THP / PAGE)
#define MAX_THP_PAGES	(PMD_THP / PAGE)
#define KPF_COMPOUND_HEAD 15
#define KPF_COMPOUND_TAIL 16
#define KPF_THP		22

/* The THP size of this run: PMD_THP, or --thp-kb's (thp_test_init()). */
static unsigned long thp_size = PMD_THP;
#define THP		thp_size
#define SIZE		(NR_THP * THP)

static char *raw_area;	/* the mapping thp_area() carved the THPs from */

static inline int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return FAIL;
}

static inline uint64_t pfn_of(void *addr)
{
	uint64_t ent = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return 0;
	if (pread(fd, &ent, 8, (uintptr_t)addr / PAGE * 8) != 8)
		ent = 0;
	close(fd);
	return (ent >> 63) & 1 ? ent & ((1ULL << 55) - 1) : 0;
}

static inline int is_thp(void *addr)
{
	uint64_t flags = 0, pfn = pfn_of(addr);
	int fd = open("/proc/kpageflags", O_RDONLY);

	if (fd < 0 || !pfn)
		return 0;
	if (pread(fd, &flags, 8, pfn * 8) != 8)
		flags = 0;
	close(fd);
	return (flags >> KPF_THP) & 1;
}

static inline uint64_t kpageflags_of(uint64_t pfn)
{
	uint64_t flags = 0;
	int fd = open("/proc/kpageflags", O_RDONLY);

	if (fd < 0 || !pfn) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	if (pread(fd, &flags, 8, pfn * 8) != 8)
		flags = 0;
	close(fd);
	return flags;
}

/* The mapcount /proc/kpagecount gives a page (0 if unreadable). */
static inline uint64_t kpagecount_of(uint64_t pfn)
{
	uint64_t count = 0;
	int fd = open("/proc/kpagecount", O_RDONLY);

	if (fd >= 0 && pread(fd, &count, 8, pfn * 8) != 8)
		count = 0;
	if (fd >= 0)
		close(fd);
	return count;
}

/*
 * 1 if @addr starts one THP of exactly THP bytes: a compound head at a
 * PFN aligned to its size, followed by THP / PAGE - 1 tails at the next
 * PFNs, all flagged THP.
 */
static inline int is_thp_of_size(char *addr)
{
	unsigned long n = THP / PAGE;
	uint64_t head = pfn_of(addr);

	if (!head || head % n)
		return 0;
	for (unsigned long i = 0; i < n; i++) {
		uint64_t pfn = pfn_of(addr + i * PAGE);
		uint64_t f = kpageflags_of(pfn);

		if (pfn != head + i || !((f >> KPF_THP) & 1) ||
		    !((f >> (i ? KPF_COMPOUND_TAIL : KPF_COMPOUND_HEAD)) & 1))
			return 0;
	}
	return 1;
}

static inline unsigned char pattern(unsigned long page, int seed)
{
	return (unsigned char)(page * 7 + seed * 31 + 1);
}

/*
 * Bytes that differ inside each page, never same-filled and never zero:
 * zram stores same-filled pages and the swap layer skips zero pages
 * without either being a write, so data meant for the swap device uses
 * these.
 */
static inline unsigned char rich(unsigned long off, int seed)
{
	return (unsigned char)(pattern(off / PAGE, seed) ^ ((off % PAGE) * 13 % 251) ^ 0x80) | 1;
}

static inline void fill(char *mem, unsigned long from, unsigned long to, int seed)
{
	for (unsigned long off = from; off < to; off += PAGE)
		memset(mem + off, pattern(off / PAGE, seed), PAGE);
}

/* 0 if [from, to) holds @seed's pattern (seed < 0: zeroes). */
static inline int check(const char *mem, unsigned long from, unsigned long to, int seed)
{
	for (unsigned long off = from; off < to; off++) {
		unsigned char want = seed < 0 ? 0 : pattern(off / PAGE, seed);

		if ((unsigned char)mem[off] != want) {
			snprintf(why, sizeof(why), "byte %#lx is %#x, want %#x (seed %d)",
				 off, (unsigned char)mem[off], want, seed);
			return -1;
		}
	}
	return 0;
}

/*
 * The page whose protection thp_area() toggles to PTE-map a PMD THP: the
 * last page of the first 64 KiB, one arm64 contiguous-PTE block (CONT_PTES
 * = 16 with 4K pages). Splitting the PMD maps every block of the folio
 * contiguous; changing one PTE unfolds its block, and restoring it folds
 * the block again only when it is the block's last entry (arm64's
 * contpte_try_fold()). With another page the first block stays unfolded,
 * and 6.12's folio_pte_batch() compares PTE_CONT too: MADV_PAGEOUT then sees
 * a batch of 16 and splits the folio instead of swapping it out whole. Any
 * page does on x86_64.
 */
#define REMAP_PAGE	(16 - 1)

/*
 * SIZE bytes of THP-backed memory filled with seed 0, PTE-mapped: a PMD
 * THP is first mapped by a PMD, then mprotect() on one subpage (REMAP_PAGE)
 * remaps it with PTEs while the folio stays large (an mTHP is PTE-mapped
 * anyway). NULL if no THP of the run's size could be had.
 */
static inline char *thp_area(void)
{
#ifdef SELFCHECK_SHARED
	const int share = MAP_SHARED;
#else
	const int share = MAP_PRIVATE;
#endif
	char *raw = mmap(NULL, SIZE + THP, PROT_READ | PROT_WRITE,
			 share | MAP_ANONYMOUS, -1, 0);
	char *mem;

	if (raw == MAP_FAILED)
		return NULL;
	raw_area = raw;
	mem = (char *)(((uintptr_t)raw + THP - 1) & ~(THP - 1));
	madvise(mem, SIZE, MADV_HUGEPAGE);
	fill(mem, 0, SIZE, 0);
	if (share == MAP_SHARED)
		return mem;
	for (unsigned long t = 0; t < SIZE; t += THP) {
		if (!is_thp_of_size(mem + t)) {
			snprintf(why, sizeof(why), "no %lu KiB THP at offset %#lx",
				 THP >> 10, t);
			return NULL;
		}
		if (THP != PMD_THP)
			continue;	/* an mTHP is PTE-mapped from the start */
		mprotect(mem + t + REMAP_PAGE * PAGE, PAGE, PROT_READ);
		mprotect(mem + t + REMAP_PAGE * PAGE, PAGE, PROT_READ | PROT_WRITE);
		if (!is_thp(mem + t + 3 * PAGE)) {
			snprintf(why, sizeof(why), "THP split by PTE-remapping");
			return NULL;
		}
	}
	return mem;
}

/* A counter of /proc/vmstat (0 if absent). */
static inline unsigned long long vmstat(const char *name)
{
	char key[64];
	unsigned long long v, found = 0;
	FILE *f = fopen("/proc/vmstat", "r");

	while (f && fscanf(f, "%63s %llu", key, &v) == 2)
		if (!strcmp(key, name))
			found = v;
	if (f)
		fclose(f);
	return found;
}

/*
 * Field @field ("Swap", "AnonHugePages") of the smaps entry of the vma
 * that holds @mem, in kB; -1 if there is none.
 */
static inline long smaps_kb(const char *mem, const char *field)
{
	char line[256];
	unsigned long start, end;
	size_t len = strlen(field);
	long kb = -1;
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			in = start <= (uintptr_t)mem && (uintptr_t)mem < end;
			continue;
		}
		if (in && !strncmp(line, field, len) && line[len] == ':' &&
		    sscanf(line + len + 1, "%ld kB", &kb) == 1)
			break;
	}
	if (f)
		fclose(f);
	return kb;
}

/* Write @val to a sysctl or sysfs file: 0, or -1. */
static inline int write_sys(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	ssize_t n = -1;

	if (fd >= 0) {
		n = write(fd, val, strlen(val));
		close(fd);
	}
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

/* A one-byte message over a pipe: the processes' only synchronisation. */
struct chan {
	int fd[2];
};

static inline void chan_init(struct chan *c)
{
	if (pipe(c->fd))
		abort();
}

static inline void post(struct chan *c)
{
	if (write(c->fd[1], "x", 1) != 1)
		abort();
}

static inline void await(struct chan *c)
{
	char b;

	if (read(c->fd[0], &b, 1) != 1)
		abort();
}

/* Wait for a child; FAIL with its message if it reported one. */
static inline int reap(pid_t pid, int msgfd)
{
	int status = 0;
	ssize_t n;

	waitpid(pid, &status, 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return PASS;
	n = read(msgfd, why, sizeof(why) - 1);
	why[n > 0 ? n : 0] = 0;
	if (!why[0])
		snprintf(why, sizeof(why), "child status %#x", status);
	return FAIL;
}

/* In a child: report @why to the parent and exit 1 if @bad. */
static inline void child_done(int msgfd, int bad)
{
	if (bad) {
		if (write(msgfd, why, strlen(why)) < 0)
			_exit(2);
		_exit(1);
	}
	_exit(0);
}

/*
 * CONFIG_DEBUG_MM_RMAP_ID's recount: for each THP of [mem, mem + len),
 * ask the kernel to walk the rmap of the folio there and compare mapcount
 * and rmap values with a recount (<debugfs>/rmap_id/verify; it WARNs and
 * fails with EUCLEAN on a mismatch). RUSTMM_RMAP_VERIFY=1 in the
 * environment says the kernel has it; otherwise this checks nothing.
 * Returns FAIL (with why) or PASS.
 */
static inline int rmap_verify(const char *mem, unsigned long len)
{
	const char *env = getenv("RUSTMM_RMAP_VERIFY");
	int fd, r = PASS;

	if (!env || strcmp(env, "1"))
		return PASS;
	fd = open("/sys/kernel/debug/rmap_id/verify", O_WRONLY);
	if (fd < 0)
		return fail("rmap_id/verify: %s", strerror(errno));
	for (unsigned long off = 0; off < len && r == PASS; off += THP) {
		char addr[32];
		int n = snprintf(addr, sizeof(addr), "%#lx", (unsigned long)(uintptr_t)(mem + off));

		if (write(fd, addr, n) != n)
			r = fail("rmap recount of the folio at %#lx: %s", off,
				 strerror(errno));
	}
	close(fd);
	return r;
}

static char thp_sysfs_pmd[96], thp_sysfs_m[96];
static char thp_old_pmd[64], thp_old_m[64];
/* The program's name in its results: "<program>" or "<program>_<N>k". */
static char thp_program[64];

static inline int read_sys(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	/* "always [madvise] never" -> "madvise" */
	if (strchr(buf, '[')) {
		char *b = strchr(buf, '[') + 1, *e = strchr(b, ']');

		if (!e)
			return -1;
		memmove(buf, b, e - b);
		buf[e - b] = 0;
	}
	return 0;
}

static void thp_restore(void)
{
	write_sys(thp_sysfs_m, thp_old_m);
	write_sys(thp_sysfs_pmd, thp_old_pmd);
}

static char thp_numa_old[16];

static void thp_numa_restore(void)
{
	write_sys("/proc/sys/kernel/numa_balancing", thp_numa_old);
}

/*
 * NUMA balancing (on by default in a two-node guest) migrates a THP whose
 * PROT_NONE hinting fault lands on the other node: a copy the tests would
 * take for a COW, a fold or unfold they did not cause. It is off while a
 * THP test runs and restored at exit; numa_migrate turns it on for the
 * one scenario that tests it. 0, or -1 if it cannot be turned off.
 */
/*
 * The running kernel's release from uname(2): 0, or -1 after a setup FAIL
 * line naming @program when it gives none.
 */
static inline int thp_kernel_release(const char *program, unsigned int *major,
				     unsigned int *minor)
{
	struct utsname u;

	if (uname(&u) || sscanf(u.release, "%u.%u", major, minor) != 2) {
		printf("RUSTMM-TEST %s.setup FAIL cannot read the kernel release from uname()\n",
		       program);
		return -1;
	}
	return 0;
}

/*
 * Does the running kernel have upstream's MM owner tracking (CONFIG_MM_ID,
 * Linux 6.15 and later: folio_maybe_mapped_shared() precise while at most
 * two mms hold slots, COW reuse of PTE-mapped anon THP one PTE per fault)?
 * The base kernel's expectations depend on it. 1 or 0; -1 (after a setup
 * FAIL line naming @program) when uname(2) gives no release.
 */
static inline int thp_kernel_has_mm_id(const char *program)
{
	unsigned int major = 0, minor = 0;

	if (thp_kernel_release(program, &major, &minor))
		return -1;
	return major > 6 || (major == 6 && minor >= 15);
}

static inline int thp_quiet_numa(void)
{
	if (read_sys("/proc/sys/kernel/numa_balancing", thp_numa_old, sizeof(thp_numa_old)))
		return 0;	/* no NUMA balancing in this kernel */
	thp_numa_old[strcspn(thp_numa_old, "\n")] = 0;
	atexit(thp_numa_restore);
	return write_sys("/proc/sys/kernel/numa_balancing", "0");
}

/*
 * The THP knobs a PMD-size run needs, set up rather than hoped for: anon
 * THP enabled at least for MADV_HUGEPAGE areas (the top-level "enabled"
 * and, where the kernel has per-size knobs, the PMD size's own), and
 * direct compaction allowed for them ("defrag"), so that a guest whose
 * memory is fragmented still gives the THPs the scenarios need. A knob
 * already in an accepted state is left alone; one that is changed is
 * restored at exit. 0, or -1 with why[] set.
 */
#define THP_SYS "/sys/kernel/mm/transparent_hugepage/"
#define MAX_KNOBS 4

static struct {
	const char *path;
	char old[128];
} thp_knobs[MAX_KNOBS];
static int thp_nknobs;

static void thp_knobs_restore(void)
{
	while (thp_nknobs > 0) {
		thp_nknobs--;
		write_sys(thp_knobs[thp_nknobs].path, thp_knobs[thp_nknobs].old);
	}
}

/* Set @path to @want unless it reads one of @ok ("|"-separated). */
static inline int thp_knob(const char *path, const char *ok, const char *want, int optional)
{
	char cur[128], oks[64], pat[136];

	if (read_sys(path, cur, sizeof(cur))) {
		if (optional)
			return 0;
		snprintf(why, sizeof(why), "cannot read %s", path);
		return -1;
	}
	cur[strcspn(cur, "\n")] = 0;
	snprintf(oks, sizeof(oks), "|%s|", ok);
	snprintf(pat, sizeof(pat), "|%s|", cur);
	if (strstr(oks, pat))
		return 0;
	if (thp_nknobs == MAX_KNOBS || write_sys(path, want)) {
		snprintf(why, sizeof(why), "cannot set %s to %s (it is %s)", path, want, cur);
		return -1;
	}
	if (!thp_nknobs)
		atexit(thp_knobs_restore);
	thp_knobs[thp_nknobs].path = path;
	snprintf(thp_knobs[thp_nknobs].old, sizeof(thp_knobs[0].old), "%s", cur);
	thp_nknobs++;
	return 0;
}

static inline int thp_setup_pmd(void)
{
	static char pmd_knob[96];

	snprintf(pmd_knob, sizeof(pmd_knob), THP_SYS "hugepages-%lukB/enabled", PMD_THP >> 10);
	if (thp_knob(THP_SYS "enabled", "always|madvise", "madvise", 0) ||
	    thp_knob(pmd_knob, "always|inherit|madvise", "inherit", 1) ||
	    thp_knob(THP_SYS "defrag", "always|madvise|defer+madvise", "madvise", 0))
		return -1;
	return 0;
}

/*
 * Parse --thp-kb=N (the only argument the programs take): make N KiB the
 * only anon THP size (hugepages-NkB "always", the PMD size "never"; both
 * restored at exit) and name the results <program>_<N>k. Without it, the
 * PMD size as before. NUMA balancing is off in every case (thp_quiet_numa()).
 * Returns 0, or -1 after printing a setup FAIL line.
 */
static inline int thp_test_init(int argc, char **argv, const char *program)
{
	unsigned long kb = 0;
	char *end;

	snprintf(thp_program, sizeof(thp_program), "%s", program);
	if (sysconf(_SC_PAGESIZE) != (long)PAGE) {
		printf("RUSTMM-TEST %s.setup FAIL page size %ld, the tests assume %lu\n",
		       program, sysconf(_SC_PAGESIZE), PAGE);
		return -1;
	}
	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--thp-kb=", 9) ||
		    (kb = strtoul(argv[i] + 9, &end, 10), *end) || !kb ||
		    (kb & (kb - 1)) || kb * 1024 < 4 * PAGE || kb * 1024 >= PMD_THP) {
			printf("RUSTMM-TEST %s.setup FAIL bad argument '%s' (--thp-kb=N: a power of two, 16 <= N < %lu)\n",
			       program, argv[i], PMD_THP >> 10);
			return -1;
		}
	}
	if (thp_quiet_numa()) {
		printf("RUSTMM-TEST %s.setup FAIL cannot turn NUMA balancing off: %s\n",
		       program, strerror(errno));
		return -1;
	}
	if (!kb) {
#ifndef SELFCHECK_SHARED
		if (thp_setup_pmd()) {
			printf("RUSTMM-TEST %s.setup FAIL THP not set up: %s\n", program, why);
			return -1;
		}
#endif
		return 0;
	}
	thp_size = kb << 10;
	snprintf(thp_program, sizeof(thp_program), "%s_%luk", program, kb);
	snprintf(thp_sysfs_m, sizeof(thp_sysfs_m),
		 "/sys/kernel/mm/transparent_hugepage/hugepages-%lukB/enabled", kb);
	snprintf(thp_sysfs_pmd, sizeof(thp_sysfs_pmd),
		 "/sys/kernel/mm/transparent_hugepage/hugepages-%lukB/enabled", PMD_THP >> 10);
	if (read_sys(thp_sysfs_m, thp_old_m, sizeof(thp_old_m)) ||
	    read_sys(thp_sysfs_pmd, thp_old_pmd, sizeof(thp_old_pmd))) {
		printf("RUSTMM-TEST %s.setup FAIL no %s or %s (mTHP sizes of this kernel?)\n",
		       thp_program, thp_sysfs_m, thp_sysfs_pmd);
		return -1;
	}
	atexit(thp_restore);
	if (write_sys(thp_sysfs_m, "always") || write_sys(thp_sysfs_pmd, "never")) {
		printf("RUSTMM-TEST %s.setup FAIL cannot enable only %lu KiB THP: %s\n",
		       thp_program, kb, strerror(errno));
		return -1;
	}
	if (thp_knob(THP_SYS "defrag", "always|madvise|defer+madvise", "madvise", 0)) {
		printf("RUSTMM-TEST %s.setup FAIL THP not set up: %s\n", thp_program, why);
		return -1;
	}
	return 0;
}

/*
 * A named scenario: gets a fresh thp_area(), returns PASS, FAIL or SKIP;
 * may_skip says why it may skip here (MAY_SKIP_ON_ARM64()), NULL if it
 * never may.
 */
struct scenario {
	const char *name;
	int (*fn)(char *mem);
	const char *may_skip;
};

/*
 * Background work that can take a folio reference or remap a THP under a
 * scenario; on a failure the counters that moved are appended to why[], so
 * a flake names its cause.
 */
static const char *const background_counters[] = {
	"thp_collapse_alloc", "thp_split_page", "thp_deferred_split_page",
	"thp_migration_split", "numa_hint_faults", "pgmigrate_success",
	"pgmigrate_fail", "compact_isolated", "pgscan_kswapd", "pgscan_direct",
};
#define NR_BACKGROUND	(sizeof(background_counters) / sizeof(background_counters[0]))

/* The counters, in one read of /proc/vmstat (0 if absent). */
static inline void background(unsigned long long v[NR_BACKGROUND])
{
	char key[64];
	unsigned long long val;
	FILE *f = fopen("/proc/vmstat", "r");

	memset(v, 0, NR_BACKGROUND * sizeof(v[0]));
	while (f && fscanf(f, "%63s %llu", key, &val) == 2)
		for (size_t i = 0; i < NR_BACKGROUND; i++)
			if (!strcmp(key, background_counters[i]))
				v[i] = val;
	if (f)
		fclose(f);
}

static inline void background_moved(const unsigned long long v0[NR_BACKGROUND])
{
	unsigned long long v[NR_BACKGROUND];

	background(v);
	for (size_t i = 0; i < NR_BACKGROUND; i++) {
		size_t len = strlen(why);

		if (v[i] != v0[i])
			snprintf(why + len, sizeof(why) - len, " (%s +%llu)",
				 background_counters[i], v[i] - v0[i]);
	}
}

/*
 * Print the plan (result.h), then run every scenario on a fresh area and
 * print "RUSTMM-TEST <program>.<name> PASS|FAIL|SKIP <note><why>". An area
 * without THP of the run's size is a FAIL: thp_test_init() set up what
 * the kernel needs to give one. Returns the number of failures.
 */
static inline int run_scenarios(const char *program, const struct scenario *s,
				size_t n, const char *note)
{
	const char *name = thp_program[0] ? thp_program : program;
	int failed = 0;

	plan_begin(name, n);
	for (size_t i = 0; i < n; i++)
		plan_case(name, s[i].name, s[i].may_skip);
	plan_end();
	for (size_t i = 0; i < n; i++) {
		unsigned long long bg[NR_BACKGROUND];
		char *mem;
		int r;

		why[0] = 0;
		background(bg);
		mem = thp_area();
		r = mem ? s[i].fn(mem) : FAIL;
		munmap(raw_area, SIZE + THP);
		failed += r == FAIL;
		if (r == FAIL)
			background_moved(bg);
		report(name, s[i].name, r, note);
	}
	return failed;
}

/*
 * The double fork of the grandchild_* scenarios (cow_reuse.c: G writes the
 * folios; cow_swap.c, numa_migrate.c: G pages them out, has khugepaged
 * collapse them, mbind()s them): THPs that one process alone maps, which
 * Linux >= 6.15's mm_id cannot tell from shared ones.
 *
 * The test process T maps none of the folios under test (it unmaps its
 * own area first). P, a child of T, maps fresh PTE-mapped THPs (thp_area(),
 * then @prepare), forks C, and C forks G; C (@in_c, or else @intact), then
 * P (@intact), check the data and exit (C reaped by P, P by T). G --
 * orphaned when C exits, reparented to T, the child subreaper while this
 * runs -- is then the folios' only mapper:
 *  - Linux >= 6.15 (mm_id, 7.3's include/linux/rmap.h): P took slot 0 at
 *    the first mapping, C slot 1 at fork, which set the "maybe shared" bit,
 *    and no slot was free when C forked G (folio_add_return_large_mapcount(),
 *    rmap.h:177-224): G's mappings are in the total only. C's and P's
 *    exits free their slots, but the bit is cleared only when a slot then
 *    holds every mapping (folio_sub_return_large_mapcount(), rmap.h:259-267),
 *    and neither holds G's: folio_maybe_mapped_shared() (include/linux/mm.h:
 *    2994-3018, mapcount 512 > 1, the bit) says "maybe shared" for as long
 *    as G maps the folio.
 *  - 6.12: folio_likely_mapped_shared() (include/linux/mm.h:2185-2203)
 *    reads the first page's mapcount: 1 (G's), so "exclusive".
 *  - CONFIG_MM_RMAP_ID: the rmap values count G's mappings: exclusive.
 * G first checks that it is so: the PFNs P set up, whole THPs, every page
 * mapped once (/proc/kpagecount: P's and C's mappings went with their
 * mms), the data as P set it (@intact), the rmap recount (rmap_verify()).
 * Then T runs @arm (NULL: nothing; the sysctls the scenario needs), G runs
 * @work and sends T its verdict (PASS, FAIL or SKIP) and why[], and T runs
 * @disarm (after @arm, whatever happened) and reaps G. Returns G's
 * verdict, or FAIL with why[] for a failed set-up.
 */
struct grandchild_ops {
	char *(*prepare)(char *mem);	/* in P: the area to use, or NULL (why[]) */
	int (*intact)(const char *mem);	/* data as prepared: 0, or -1 (why[]) */
	int (*in_c)(char *mem);		/* in C after forking G, instead of @intact
					   (NULL: @intact): 0, or -1 (why[]) */
	int (*arm)(void);		/* in T before @work: PASS, or FAIL (why[]) */
	void (*disarm)(void);		/* in T after @work, if @arm ran */
	int (*work)(char *mem);		/* in G: its verdict, and why[] */
};

/* The PFNs of P's area as set up, before any fork: G inherits them. */
static uint64_t grandchild_pfns[MAX_AREA_PAGES];

struct grandchild_verdict {
	int r;
	char msg[sizeof(why)];
};

/* In G before @work: is it the only mapper of the folios P set up? */
static inline int grandchild_alone(char *mem, const struct grandchild_ops *ops)
{
	const unsigned long n = SIZE / PAGE;
	uint64_t count = 0;
	unsigned long i;

	for (i = 0; i < n; i++) {
		uint64_t pfn = pfn_of(mem + i * PAGE);

		if (!pfn || pfn != grandchild_pfns[i])
			return fail("page %lu moved before the grandchild's turn (pfn %#llx -> %#llx)",
				    i, (unsigned long long)grandchild_pfns[i],
				    (unsigned long long)pfn);
	}
	for (unsigned long t = 0; t < SIZE; t += THP)
		if (!is_thp_of_size(mem + t))
			return fail("the folio at %#lx is no longer one THP before the grandchild's turn",
				    t);
	/* A stray mm reference (mmget()) may delay P's or C's exit_mmap(). */
	for (int tries = 0; tries < 200; tries++) {
		for (i = 0; i < n; i++)
			if ((count = kpagecount_of(grandchild_pfns[i])) != 1)
				break;
		if (i == n)
			break;
		usleep(10 * 1000);
	}
	if (i != n)
		return fail("page %lu is mapped %llu times after P and C exited, want 1",
			    i, (unsigned long long)count);
	if (ops->intact(mem))
		return FAIL;
	return rmap_verify(mem, SIZE);
}

/* In G: wait for T, check, report ready, wait for T, work, send the verdict. */
static inline void grandchild(char *mem, const struct grandchild_ops *ops, struct chan *go,
			      struct chan *ready, struct chan *work, struct chan *out)
{
	struct grandchild_verdict v = { .r = FAIL };
	const char *p = (const char *)&v;
	ssize_t left = sizeof(v), n;
	char b;

	if (read(go->fd[0], &b, 1) != 1)
		_exit(1);	/* the set-up failed: T says why */
	why[0] = 0;
	if (grandchild_alone(mem, ops) == PASS) {
		post(ready);
		if (read(work->fd[0], &b, 1) != 1)
			_exit(1);	/* T could not arm: it says why */
		why[0] = 0;
		v.r = ops->work(mem);
	}
	memcpy(v.msg, why, sizeof(why));
	while (left > 0 && (n = write(out->fd[1], p, left)) > 0) {
		p += n;
		left -= n;
	}
	_exit(left ? 1 : 0);
}

/* P: set up, fork C (which forks G), reap C, check, exit. */
static inline void grandchild_parent(const struct grandchild_ops *ops, struct chan *go,
				     struct chan *ready, struct chan *work, struct chan *msg,
				     struct chan *out)
{
	char *mem;
	pid_t c, g;

	close(go->fd[1]);
	close(ready->fd[0]);
	close(work->fd[1]);
	close(out->fd[0]);
	why[0] = 0;
	mem = thp_area();
	if (mem && ops->prepare)
		mem = ops->prepare(mem);
	if (!mem) {
		if (!why[0])
			fail("P: mmap: %s", strerror(errno));
		child_done(msg->fd[1], 1);
	}
	for (unsigned long i = 0; i < SIZE / PAGE; i++)
		grandchild_pfns[i] = pfn_of(mem + i * PAGE);
	c = fork();
	if (c < 0) {
		fail("P: fork: %s", strerror(errno));
		child_done(msg->fd[1], 1);
	}
	if (c == 0) {
		g = fork();
		if (g == 0) {
			close(msg->fd[0]);
			close(msg->fd[1]);
			grandchild(mem, ops, go, ready, work, out);
		}
		if (g < 0) {
			fail("C: fork: %s", strerror(errno));
			child_done(msg->fd[1], 1);
		}
		/* C maps it all, unless @in_c unmaps some. */
		child_done(msg->fd[1], ops->in_c ? ops->in_c(mem) : ops->intact(mem));
	}
	child_done(msg->fd[1], reap(c, msg->fd[0]) == FAIL || ops->intact(mem));
}

static inline int grandchild_run(const struct grandchild_ops *ops)
{
	struct grandchild_verdict v;
	struct chan go, ready, work, msg, out;
	int res, st, status = 0, armed = 0;
	ssize_t got = 0, n;
	char b;
	pid_t p;

	munmap(raw_area, SIZE + THP);	/* T maps none of the folios */
	chan_init(&go);
	chan_init(&ready);
	chan_init(&work);
	chan_init(&msg);
	chan_init(&out);
	/* reap() reads a failed child's message: never block on it. */
	fcntl(msg.fd[0], F_SETFL, O_NONBLOCK);
	p = prctl(PR_SET_CHILD_SUBREAPER, 1) ? -1 : fork();
	if (p == 0)
		grandchild_parent(ops, &go, &ready, &work, &msg, &out);
	close(go.fd[0]);
	close(ready.fd[1]);
	close(work.fd[0]);
	close(msg.fd[1]);
	close(out.fd[1]);
	res = p < 0 ? fail("fork or PR_SET_CHILD_SUBREAPER: %s", strerror(errno)) :
		      reap(p, msg.fd[0]);
	if (res == PASS)
		post(&go);
	close(go.fd[1]);	/* G exits at once if not posted */
	/* Only G holds the write end now: EOF if its checks failed. */
	if (res == PASS && read(ready.fd[0], &b, 1) == 1) {
		armed = 1;
		if (ops->arm)
			res = ops->arm();
		if (res == PASS)
			post(&work);
	}
	close(work.fd[1]);	/* G exits at once if not posted */
	while (res == PASS && got < (ssize_t)sizeof(v) &&
	       (n = read(out.fd[0], (char *)&v + got, sizeof(v) - got)) > 0)
		got += n;
	if (armed && ops->disarm)
		ops->disarm();
	close(ready.fd[0]);
	close(out.fd[0]);
	close(msg.fd[0]);
	/* G (reparented here) and nobody else: the test process has no other child. */
	while (waitpid(-1, &st, 0) > 0)
		status = st;
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	if (res != PASS)
		return res;
	if (got != (ssize_t)sizeof(v))
		return fail("the grandchild's verdict has %zd of %zu bytes (its status %#x)",
			    got, sizeof(v), status);
	memcpy(why, v.msg, sizeof(why));
	why[sizeof(why) - 1] = 0;
	return v.r;
}

#endif /* RUSTMM_THP_TEST_H */
