// SPDX-License-Identifier: GPL-2.0
/*
 * The micro benchmarks of the rmap-ID series (seed 000, "7.2 Micro
 * benchmark"), scaled to a QEMU guest, plus two vm-scalability-style
 * anon-cow cases. Every case times only its action with CLOCK_MONOTONIC;
 * under QEMU -icount shift=0,sleep=off guest time is a count of executed
 * instructions (plus skipped idle time up to the next timer), so the
 * numbers compare two kernels run the same way.
 *
 *   remap           PTE-remap every PMD-mapped THP: mprotect() one subpage
 *   munmap          munmap() the PTE-mapped area
 *   fork            fork() with the PTE-mapped area (parent's view)
 *   cow             child alive: memset() the whole area
 *   cow-byte        child alive: write one byte per page
 *   cow-reuse       child gone: memset() the whole area
 *   cow-reuse-byte  child gone: write one byte per page
 *   pte-dontneed    MADV_DONTNEED on every subpage
 *   cow-reuse-grandchild
 *                   the double fork: this process forks a child, which
 *                   forks a grandchild; this process unmaps the area and
 *                   the child exits; the grandchild, the only mm left
 *                   mapping folios three mms mapped, writes one byte per
 *                   page (THP and mTHP only)
 *   mprotect        mprotect(PROT_READ) of the whole PTE-mapped area in
 *                   one call: change_pte_range(), whose contpte blocks
 *                   7.x batches (modify_prot_start/commit_ptes); only
 *                   by name (BENCH_SYSTEM=contpte), not in "all"
 *
 * each on THP ("thp.", MADV_HUGEPAGE, PTE-mapped first as in the seed),
 * on 64 KiB mTHP ("mthp.", PTE-mapped from the start: one arm64
 * contiguous-PTE block; 64 KiB is then the only anon THP size enabled, and
 * there is no mthp.remap) and on order-0 pages ("small.",
 * MADV_NOHUGEPAGE); and
 *
 *   anon-cow-seq    NR_CHILDREN children write every page of a forked
 *   anon-cow-rand   area sequentially / at random (vm-scalability's
 *                   case-anon-cow-seq/-rand), time until all are done
 *
 * and the per-VMA lock's cases (BENCH_SYSTEM=vma-lock, not in "all"):
 *
 *   vma.pft-1t      one thread write-faults every page of the area
 *                   (order-0: MADV_NOHUGEPAGE), pft-style
 *   vma.pft-2t      two threads (CPUs 1 and 0) fault half of it each
 *   vma.mmap-churn  VMA_CHURN rounds of mmap, one fault, an mprotect that
 *                   splits the vma, munmap
 *   vma.fork-vmas   fork() of a process with VMA_FORK_VMAS one-page vmas
 *                   (parent's view)
 *   vma.slab        no timing: 40,000 vmas made, their slab cost read from
 *                   /proc/slabinfo (booted with slab_nomerge), RUSTMM-SLAB
 *
 * and pagemap over swapped-out shared memory (BENCH_SYSTEM=pagemap-swap,
 * seed 002; the guest has zram swap):
 *
 *   pm.d0, pm.d50,  a memfd mapped MAP_SHARED and private anon memory
 *   pm.d100         (order-0), the area each, 0/50/100 % of the pages
 *                   written and half of the written ones paged out
 *                   (MADV_PAGEOUT), prepared once per boot; then per run
 *                   the whole range's pagemap read in batches of 1, 64,
 *                   512 and 1024 entries by three readers, each its own
 *                   window and measurement "pm.dN.bB.<reader>": anon (the
 *                   private range), shared (the memfd range, a reader
 *                   that did not opt in) and shared-optin (the same with
 *                   PAGEMAP_SET_OPTS(PAGEMAP_OPT_SHARED_SWAP); only where
 *                   the kernel has it)
 *   pm.d50rev       pm.d50 with each group's pages paged out one by one
 *                   from the last: no page's swap slot follows its left
 *                   neighbour's (no runs of consecutive slots)
 *
 * and get/pin_user_pages over device-dax (BENCH_SYSTEM=compound-pagemaps,
 * seed 004; x86_64 guests of 6 GiB booted with memmap=2G!4G: legacy pmem):
 *
 *   cp.gup-fast-2m  a /dev/dax0.0 of 2 MiB folios (made by sysfs writes,
 *   cp.pin-fast-2m  tests/bench/devdax_setup.h), the area mapped
 *                   MAP_SHARED and written (PMD-mapped, one fault per
 *                   2 MiB), prepared once per boot; per run one gup_test
 *                   ioctl (mm/gup_test.c, debugfs) over the whole area,
 *                   512 pages per call, FOLL_WRITE: GUP_FAST_BENCHMARK
 *                   (get_user_pages_fast) / PIN_FAST_BENCHMARK
 *                   (pin_user_pages_fast): gup-fast on devmap PMD leaves,
 *                   what the topic changes
 *   cp.gup-fast-4k  the same on a device of 4 KiB folios (PTE-mapped,
 *   cp.pin-fast-4k  order-0): the control, unchanged
 *   cp.gup-slow-2m  GUP_BASIC_TEST (get_user_pages under the mmap lock,
 *                   a page at a time through follow_devmap_pmd()) on
 *                   2 MiB folios: the slow path, unchanged
 *   cp.gup-fast-1g  the fast ones on a device of 1 GiB folios (PUD-mapped,
 *   cp.pin-fast-1g  one fault per GiB; 7.3's gup-fast on PUD leaves): the
 *                   area is RUSTMM_BENCH_MIB rounded up to whole folios,
 *                   1024 MiB of the default 256
 *
 *                   The time of a cp.* run is not this program's window
 *                   but the kernel's: gup_test times its get loop alone
 *                   (get_delta_usec, ktime) and its put loop alone, both
 *                   inside the one ioctl, so no user-space clock can
 *                   bracket the get only. Under -icount shift=0 a
 *                   microsecond of guest time is 1000 instructions: the
 *                   run's <ns> is get_delta_usec * 1000 (resolution 1000
 *                   instructions). The window (vmstat background check,
 *                   faults, profile markers) still brackets the ioctl:
 *                   a profile of a cp.* case counts get, put and
 *                   gup_test's own work. After every run the data
 *                   written before must be intact and
 *                   nr_foll_pin_acquired and nr_foll_pin_released must
 *                   both have moved by the pages pinned (none for a get):
 *                   else the run is an error.
 *
 * What makes a window trustworthy (scripts/bench/bench.sh boots one case per
 * guest, so allocator state never carries over from another case):
 *   - a quiet guest: khugepaged scanning, proactive compaction, vmstat
 *     folding and RT throttling are turned off before the first case;
 *   - the measured process runs SCHED_FIFO (children reset to normal) on
 *     CPU 1, which the guest isolates (isolcpus=1); its children run there
 *     too, so they only run when it blocks, and every child says "ready"
 *     before a window opens, so no child's first time slice is inside;
 *   - /proc/vmstat counters of background work (khugepaged, compaction,
 *     kswapd, reclaim, splits, migration) are read around every window; a
 *     window in which any moved is rejected and the run is repeated (up to
 *     MAX_ATTEMPTS times, then reported as disturbed);
 *   - the folios are verified right before every window with pagemap and
 *     kpageflags: for THP cases every 2 MiB of the area is one THP of 512
 *     contiguous PFNs, PTE-mapped (PMD-mapped for remap and anon-cow) by
 *     smaps' AnonHugePages; for mTHP cases every 64 KiB is one of 16; for
 *     order-0 cases no page is compound.
 *
 * Built for x86_64 and arm64 (4K pages; the profile markers are x86_64's).
 *
 * Usage: rmap_bench [RUNS [MIB [CASE]]] (default: $RUSTMM_BENCH_RUNS or 5
 * runs, $RUSTMM_BENCH_MIB or 256 MiB, $RUSTMM_BENCH_CASE or "all"). Short
 * cases (below 10 ms) run SHORT_FACTOR times as many runs. Each case
 * first runs once unmeasured (warm-up: slab caches, page-table pages and
 * the allocator's per-CPU lists grow on the first run). Prints
 *   RUSTMM-BENCH <case> <run> <ns> expect=<kind> folios=<ok>/<want> mapped=<how> attempts=<n> faults=<n>
 * per measurement (expect=none: a case with no folio layout to verify;
 * faults: this process's minor faults in the window), "RUSTMM-BENCH-REJECT <case> <run> <counter>+<delta>..."
 * per rejected window, "RUSTMM-BENCH-DISTURBED <case> <run> ..." when a run
 * never got a quiet window, "RUSTMM-BENCH-ERROR <case> <why>" when a case
 * could not run as defined, and "RUSTMM-BENCH-DONE errors=<n>" at the end.
 * With RUSTMM_BENCH_MMS=N (see busy_mms()) the cases run in a process
 * forked after N idle ones, which prints "RUSTMM-BENCH-MMS N ..." first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "devdax_setup.h"

#ifndef SCHED_RESET_ON_FORK
#define SCHED_RESET_ON_FORK 0x40000000
#endif

#define PAGE		4096UL
#define THP		(2UL << 20)
#define THP_PAGES	(THP / PAGE)
#define PUD_LEAF	(1UL << 30)	/* a 1 GiB device-dax folio, PUD-mapped */
#define MTHP		(64UL << 10)
#define NR_CHILDREN	2
#define MEASURE_CPU	1
#define MAX_ATTEMPTS	5
#define SHORT_FACTOR	4

#define KPF_COMPOUND_HEAD	15
#define KPF_COMPOUND_TAIL	16
#define KPF_THP			22

/*
 * The subpage pte_map() toggles. On arm64 it is the last page of the first
 * contiguous-PTE block (16 with 4K pages): restoring it folds the block
 * again (contpte_try_fold() runs on a block's last entry), so every block of
 * the THP ends up contiguous, as after a plain PMD split. Any page does on
 * x86_64; page 0 keeps the runs made before arm64 comparable.
 */
#if defined(__aarch64__)
#define REMAP_PAGE	15
#else
#define REMAP_PAGE	0
#endif

/* What a case runs on. */
enum kind { SMALL, PMD_THP, MTHP64 };
static const char *const kind_name[] = { "small", "thp", "mthp" };

static unsigned long size;	/* bytes per case */
static int errors;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * scripts/bench/profile.sh: around the action of the case named by
 * RUSTMM_BENCH_PROFILE, two marker instructions tell
 * tests/bench/insn_profile.c, a QEMU plugin, when a measured window opens
 * and closes. Outside a profile they are not run. Each is an instruction
 * without effect that compilers do not emit: x86_64 "nopl" with a
 * displacement of "RMB1"/"RMB0"; arm64 "movz xzr, #0x4231"/"#0x4230" (a
 * write to the zero register).
 */
#if defined(__x86_64__)
#define WINDOW_BEGIN ".byte 0x0f, 0x1f, 0x84, 0x00, 0x31, 0x42, 0x4d, 0x52"
#define WINDOW_END ".byte 0x0f, 0x1f, 0x84, 0x00, 0x30, 0x42, 0x4d, 0x52"
#elif defined(__aarch64__)
#define WINDOW_BEGIN ".inst 0xd288463f"
#define WINDOW_END ".inst 0xd288461f"
#else
#error "profile window markers: x86_64 and arm64 only"
#endif
#define PROFILE_MARK(insn) asm volatile(insn ::: "memory")
static int profiling;

/*
 * Whether the measured runs of @name are marked: RUSTMM_BENCH_PROFILE
 * names one case or measurement (make profile), or is "*" for every one
 * of the boot (make bench's counted boots, which pair the plugin's
 * windows with the console's lines in order).
 */
static int profiled(const char *profile, const char *name)
{
	return profile && (!strcmp(profile, name) || !strcmp(profile, "*"));
}

/*
 * The minor faults of this process (every thread) in the last window,
 * read outside the timed part: the fault count beside the instructions
 * (children's faults are their own: anon-cow counts the parent's only).
 */
static long win_faults, win_flt0;

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static uint64_t start(void)
{
	uint64_t t;

	win_flt0 = minflt();
	t = now_ns();

	if (profiling)
		PROFILE_MARK(WINDOW_BEGIN);
	return t;
}

static uint64_t stop(void)
{
	uint64_t t;

	if (profiling)
		PROFILE_MARK(WINDOW_END);
	t = now_ns();
	win_faults = minflt() - win_flt0;
	return t;
}

static void error(const char *name, const char *why)
{
	printf("RUSTMM-BENCH-ERROR %s %s\n", name, why);
	errors++;
}

/* ---- a quiet guest ---------------------------------------------------- */

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

/* Background work off for the whole boot; an error if a knob is missing. */
static void quiet(void)
{
	static const char *const knobs[][2] = {
		/* khugepaged: scan once a day (it also never runs for THP=madvise
		 * areas it has no reason to collapse, but its timer would). */
		{ "/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs", "86400000" },
		{ "/sys/kernel/mm/transparent_hugepage/khugepaged/alloc_sleep_millisecs", "86400000" },
		/* No proactive compaction by kcompactd. */
		{ "/proc/sys/vm/compaction_proactiveness", "0" },
		/* Per-CPU vmstat deltas folded once an hour, not every second. */
		{ "/proc/sys/vm/stat_interval", "3600" },
		/* A SCHED_FIFO window is never cut by RT throttling. */
		{ "/proc/sys/kernel/sched_rt_runtime_us", "-1" },
	};

	for (unsigned int i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		if (write_file(knobs[i][0], knobs[i][1])) {
			char why[200];

			snprintf(why, sizeof(why), "cannot set %s=%s: %s", knobs[i][0],
				 knobs[i][1], strerror(errno));
			error("quiet", why);
		} else {
			printf("RUSTMM-BENCH-QUIET %s=%s\n", knobs[i][0], knobs[i][1]);
		}
	}
}

/* Counters of work that is not the case's own; any change rejects a window. */
static const char *const background[] = {
	"thp_collapse_alloc", "thp_collapse_alloc_failed", "thp_split_page",
	"thp_split_page_failed", "compact_stall", "compact_fail",
	"compact_success", "compact_daemon_wake", "compact_migrate_scanned",
	"compact_free_scanned", "compact_isolated", "pgscan_kswapd",
	"pgscan_direct", "pgsteal_kswapd", "pgsteal_direct", "pageoutrun",
	"allocstall_dma32", "allocstall_normal", "allocstall_movable",
	"kswapd_low_wmark_hit_quickly", "kswapd_high_wmark_hit_quickly",
	"pgmigrate_success", "pgmigrate_fail", "numa_pte_updates",
	"numa_hint_faults", "drop_slab", "drop_pagecache", "pswpin", "pswpout",
};
#define NR_BACKGROUND (sizeof(background) / sizeof(background[0]))

static void vmstat(unsigned long long v[NR_BACKGROUND])
{
	char name[64];
	unsigned long long val;
	FILE *f = fopen("/proc/vmstat", "r");

	memset(v, 0, NR_BACKGROUND * sizeof(v[0]));
	if (!f)
		return;
	while (fscanf(f, "%63s %llu", name, &val) == 2)
		for (unsigned int i = 0; i < NR_BACKGROUND; i++)
			if (!strcmp(name, background[i]))
				v[i] = val;
	fclose(f);
}

/* Which background counters moved, as "name+delta,..."; "" if none. */
static void moved(const unsigned long long a[NR_BACKGROUND],
		  const unsigned long long b[NR_BACKGROUND], char *out, size_t len)
{
	size_t at = 0;

	out[0] = '\0';
	for (unsigned int i = 0; i < NR_BACKGROUND; i++)
		if (b[i] != a[i] && at < len)
			at += snprintf(out + at, len - at, "%s%s+%llu", at ? "," : "",
				       background[i], b[i] - a[i]);
}

/* ---- folio verification ------------------------------------------------ */

enum expect { EXPECT_THP_PTE, EXPECT_THP_PMD, EXPECT_SMALL, EXPECT_MTHP_PTE, EXPECT_NONE,
	      EXPECT_SWAP, EXPECT_DEVDAX_PUD, EXPECT_DEVDAX_PMD, EXPECT_DEVDAX_PTE };
static const char *const expect_name[] = { "thp-pte", "thp-pmd", "small", "mthp-pte", "none",
					   "swap", "devdax-pud", "devdax-pmd",
					   "devdax-pte" };

struct check {
	unsigned long ok, want;	/* (m)THP: 2 MiB (64 KiB) blocks; small: pages;
				 * devdax: the device's folios */
	const char *mapped;	/* "pte", "pmd" or "mixed" (smaps AnonHugePages) */
};

/* AnonHugePages (bytes) of the mappings overlapping [mem, mem + len). */
static unsigned long anon_huge(char *mem, unsigned long len)
{
	char line[256];
	unsigned long lo = (uintptr_t)mem, hi = lo + len, kb, sum = 0;
	int inside = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return ~0UL;
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx ", &s, &e) == 2)
			inside = s < hi && e > lo;
		else if (inside && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			sum += kb * 1024;
	}
	fclose(f);
	return sum;
}

static int read_at(int fd, void *buf, size_t len, off_t off)
{
	return pread(fd, buf, len, off) == (ssize_t)len ? 0 : -1;
}

/* What the area holds right now, by pagemap and kpageflags. */
static struct check verify(char *mem, enum expect e)
{
	struct check c = { 0, 0, "mixed" };
	unsigned long npages = size / PAGE, huge;
	unsigned long blk = (e == EXPECT_MTHP_PTE ? MTHP : THP) / PAGE;
	uint64_t *pm = malloc(npages * sizeof(*pm));
	uint64_t *flags = malloc((THP_PAGES + 1) * sizeof(*flags));
	int pfd = open("/proc/self/pagemap", O_RDONLY);
	int kfd = open("/proc/kpageflags", O_RDONLY);

	c.want = e == EXPECT_SMALL ? npages : npages / blk;
	if (!pm || !flags || pfd < 0 || kfd < 0 ||
	    read_at(pfd, pm, npages * sizeof(*pm), (uintptr_t)mem / PAGE * sizeof(*pm)))
		goto out;
	for (unsigned long i = 0; i < npages; i++)
		pm[i] = (pm[i] >> 63) ? (pm[i] & ((1ULL << 55) - 1)) : 0;

	if (e == EXPECT_SMALL) {
		/* Runs of consecutive PFNs are read at once. */
		for (unsigned long i = 0, n; i < npages; i += n) {
			n = 1;
			while (i + n < npages && n < THP_PAGES && pm[i] &&
			       pm[i + n] == pm[i] + n)
				n++;
			if (!pm[i] || read_at(kfd, flags, n * sizeof(*flags), pm[i] * sizeof(*flags)))
				continue;
			for (unsigned long k = 0; k < n; k++)
				if (!(flags[k] & ((1ULL << KPF_COMPOUND_HEAD) |
						  (1ULL << KPF_COMPOUND_TAIL) | (1ULL << KPF_THP))))
					c.ok++;
		}
	} else {
		/*
		 * Each block one folio of exactly blk pages: its head first,
		 * blk - 1 tails, and the next block's first page not a tail.
		 */
		for (unsigned long b = 0; b < npages / blk; b++) {
			uint64_t *p = pm + b * blk, head = p[0];
			int good = head && head % blk == 0;

			for (unsigned long k = 1; good && k < blk; k++)
				good = p[k] == head + k;
			if (!good || read_at(kfd, flags, blk * sizeof(*flags), head * sizeof(*flags)))
				continue;
			/* The PFN after the block: none (end of memory) is no tail. */
			if (read_at(kfd, &flags[blk], sizeof(*flags), (head + blk) * sizeof(*flags)))
				flags[blk] = 0;
			good = (flags[0] & (1ULL << KPF_COMPOUND_HEAD)) && (flags[0] & (1ULL << KPF_THP));
			for (unsigned long k = 1; good && k < blk; k++)
				good = (flags[k] & (1ULL << KPF_COMPOUND_TAIL)) && (flags[k] & (1ULL << KPF_THP));
			c.ok += good && !(flags[blk] & (1ULL << KPF_COMPOUND_TAIL));
		}
	}
	huge = anon_huge(mem, size);
	c.mapped = huge == 0 ? "pte" : huge == size ? "pmd" : "mixed";
out:
	if (pfd >= 0)
		close(pfd);
	if (kfd >= 0)
		close(kfd);
	free(pm);
	free(flags);
	return c;
}

/* ---- the cases ----------------------------------------------------------- */

/* Write @val to a sysfs file; an error of case @name if that fails. */
static void knob(const char *name, const char *path, const char *val)
{
	if (write_file(path, val)) {
		char why[300];

		snprintf(why, sizeof(why), "cannot set %s=%s", path, val);
		error(name, why);
	}
}

/*
 * The anon THP sizes a case of @k may get: the PMD size (inherit: the
 * global "always") for thp and anon-cow, only 64 KiB for mthp. Set before
 * the case's warm-up; small pages come from MADV_NOHUGEPAGE.
 */
static void thp_sizes(const char *name, enum kind k)
{
	knob(name, "/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled",
	     k == MTHP64 ? "never" : "inherit");
	/* An x86_64 or arm64 kernel without 64K mTHP has no such file. */
	if (k == MTHP64 || !access("/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled", F_OK))
		knob(name, "/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled",
		     k == MTHP64 ? "always" : "never");
}

/* THP-aligned memory, populated; NULL on failure. */
static char *area(int thp, char **raw)
{
	char *mem;

	*raw = mmap(NULL, size + THP, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (*raw == MAP_FAILED)
		return NULL;
	mem = (char *)(((uintptr_t)*raw + THP - 1) & ~(THP - 1));
	madvise(mem, size, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	memset(mem, 1, size);
	return mem;
}

/* PTE-map every THP of the area: mprotect() one subpage and back. */
static void pte_map(char *mem)
{
	for (unsigned long t = 0; t < size; t += THP) {
		mprotect(mem + t + REMAP_PAGE * PAGE, PAGE, PROT_READ);
		mprotect(mem + t + REMAP_PAGE * PAGE, PAGE, PROT_READ | PROT_WRITE);
	}
}

enum action { REMAP, MUNMAP, FORK, COW, COW_BYTE, COW_REUSE, COW_REUSE_BYTE,
	      PTE_DONTNEED, COW_REUSE_GRANDCHILD, MPROTECT };

static const char *const action_name[] = {
	"remap", "munmap", "fork", "cow", "cow-byte", "cow-reuse",
	"cow-reuse-byte", "pte-dontneed", "cow-reuse-grandchild", "mprotect",
};
_Static_assert(sizeof(action_name) / sizeof(action_name[0]) == MPROTECT + 1,
	       "one name per action");

/* Below 10 ms per window (base 6.12): they get SHORT_FACTOR x the runs. */
static int is_short(enum kind k, enum action a)
{
	return a == REMAP || a == FORK || (k != SMALL && a == MUNMAP);
}

static void write_pages(char *mem, int whole)
{
	if (whole) {
		memset(mem, 2, size);
		return;
	}
	for (unsigned long off = 0; off < size; off += PAGE)
		mem[off] = 3;
}

struct child {
	pid_t pid;
	int go[2], ready[2];
};

/* The child's two pipes, made before any window. */
static int child_pipes(struct child *c)
{
	if (pipe(c->go))
		return -1;
	if (pipe(c->ready)) {
		close(c->go[0]);
		close(c->go[1]);
		return -1;
	}
	return 0;
}

/*
 * Fork a child that says "ready" on @c->ready once it runs, then waits for
 * release() (or for the go pipe to close), then exits. With @cpu >= 0 the
 * child moves to that CPU first. Pipes from child_pipes().
 */
static int fork_child(struct child *c, int cpu)
{
	c->pid = fork();
	if (c->pid == 0) {
		char b = 'r';

		if (cpu >= 0) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			sched_setaffinity(0, sizeof(set), &set);
		}
		close(c->go[1]);
		(void)!write(c->ready[1], &b, 1);
		(void)!read(c->go[0], &b, 1);
		_exit(0);
	}
	return c->pid < 0 ? -1 : 0;
}

/* Close the ends the parent does not use; all of them if the fork failed. */
static void child_forked(struct child *c)
{
	close(c->go[0]);
	close(c->ready[1]);
	if (c->pid < 0) {
		close(c->go[1]);
		close(c->ready[0]);
	}
}

/* Wait until the child has run and said so. */
static void child_ready(struct child *c)
{
	char b;

	(void)!read(c->ready[0], &b, 1);
	close(c->ready[0]);
}

static void release(struct child *c)
{
	int status;

	close(c->go[1]);	/* EOF releases the child */
	waitpid(c->pid, &status, 0);
}

struct run {
	uint64_t ns;		/* 0: not measured */
	struct check check;
	enum expect expect;
	unsigned long long before[NR_BACKGROUND], after[NR_BACKGROUND];
};

/* What the grandchild of cow-reuse-grandchild sends back. */
struct grandchild_run {
	struct run run;
	long faults;
};

/*
 * One attempt of cow-reuse-grandchild on (m)THP of kind @k: 7.3's mm_id
 * keeps two (mm, mapcount) slots per folio, taken here by this process and
 * its child, so the grandchild holds none and the folio's "maybe shared"
 * bit, set when the grandchild mapped it, is never cleared however many
 * of the others go: every write of the grandchild copies. With rmap
 * values the folio is seen mapped by the grandchild's mm alone. The child
 * says the grandchild's pid and exits; this process, its subreaper, unmaps
 * the area, then lets the grandchild measure (SCHED_FIFO on this CPU, as
 * here) and reads its run from a pipe.
 */
static void cow_reuse_grandchild(enum kind k, const char *name, struct run *r)
{
	struct sched_param sp = { .sched_priority = 50 };
	struct grandchild_run g = { .run.ns = 0 };
	int res[2], go[2], status;
	pid_t child, gc = -1;
	char *raw, *mem, b = 'g';

	r->ns = 0;
	r->expect = k == MTHP64 ? EXPECT_MTHP_PTE : EXPECT_THP_PTE;
	mem = area(1, &raw);
	if (!mem) {
		error(name, "mmap failed");
		return;
	}
	if (k == PMD_THP)
		pte_map(mem);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) || pipe(res)) {
		error(name, "prctl or pipe failed");
		munmap(raw, size + THP);
		return;
	}
	if (pipe(go)) {
		error(name, "pipe failed");
		goto out_res;
	}
	child = fork();
	if (child == 0) {
		gc = fork();
		if (gc == 0) {
			close(go[1]);
			close(res[0]);
			if (read(go[0], &b, 1) != 1 || sched_setscheduler(0, SCHED_FIFO, &sp))
				_exit(1);
			g.run.expect = r->expect;
			g.run.check = verify(mem, g.run.expect);
			vmstat(g.run.before);
			{
				uint64_t t0 = start(), t1;

				write_pages(mem, 0);
				t1 = stop();
				g.run.ns = t1 - t0;
			}
			vmstat(g.run.after);
			g.faults = win_faults;
			_exit(write(res[1], &g, sizeof(g)) != sizeof(g));
		}
		_exit(write(res[1], &gc, sizeof(gc)) != sizeof(gc) || gc < 0);
	}
	close(go[0]);
	close(res[1]);
	if (child < 0 || read(res[0], &gc, sizeof(gc)) != sizeof(gc) || gc < 0) {
		error(name, "fork of the child or the grandchild failed");
		if (child > 0)
			waitpid(child, &status, 0);
		close(go[1]);
		goto out_res0;
	}
	waitpid(child, &status, 0);	/* the child has exited */
	munmap(raw, size + THP);	/* and this process maps nothing */
	raw = NULL;
	if (write(go[1], &b, 1) != 1 || read(res[0], &g, sizeof(g)) != sizeof(g) || !g.run.ns)
		error(name, "the grandchild did not measure");
	else
		*r = g.run;
	win_faults = g.faults;
	close(go[1]);
	waitpid(gc, &status, 0);	/* reparented here: we are its subreaper */
out_res0:
	close(res[0]);
	if (raw)
		munmap(raw, size + THP);
	return;
out_res:
	close(res[0]);
	close(res[1]);
	munmap(raw, size + THP);
}

/* One attempt of @a on pages of kind @k. */
static void micro(enum action a, enum kind k, const char *name, struct run *r)
{
	static const enum expect pte_mapped[] = {
		[SMALL] = EXPECT_SMALL, [PMD_THP] = EXPECT_THP_PTE, [MTHP64] = EXPECT_MTHP_PTE,
	};
	struct child child = { .pid = 0 };
	int have_child = 0;
	uint64_t t0 = 0, t1 = 0;
	char *raw, *mem;

	r->ns = 0;
	r->expect = k == PMD_THP && a == REMAP ? EXPECT_THP_PMD : pte_mapped[k];
	mem = area(k != SMALL, &raw);
	if (!mem) {
		error(name, "mmap failed");
		return;
	}
	if (k == PMD_THP && a != REMAP)
		pte_map(mem);
	if ((a >= COW && a <= COW_REUSE_BYTE) || a == FORK) {
		if (child_pipes(&child)) {
			error(name, "pipe failed");
			goto out_mem;
		}
	}
	if (a >= COW && a <= COW_REUSE_BYTE) {
		int failed = fork_child(&child, -1);

		child_forked(&child);
		if (failed) {
			error(name, "fork failed");
			goto out_mem;
		}
		have_child = 1;
		child_ready(&child);
		/* cow-reuse: the child is gone before the measurement. */
		if (a == COW_REUSE || a == COW_REUSE_BYTE) {
			release(&child);
			have_child = 0;
		}
	}
	r->check = verify(mem, r->expect);
	vmstat(r->before);

	switch (a) {
	case REMAP:
		t0 = start();
		for (unsigned long t = 0; t < size; t += THP)
			mprotect(mem + t, PAGE, PROT_READ);
		t1 = stop();
		break;
	case MUNMAP:
		t0 = start();
		munmap(mem, size);
		t1 = stop();
		break;
	case FORK:
		/*
		 * The child cannot run before the window closes: it shares
		 * our CPU and we are SCHED_FIFO. Afterwards it says ready and
		 * waits, so its exit is never inside anyone's window.
		 */
		t0 = start();
		have_child = fork_child(&child, -1) == 0;
		t1 = stop();
		child_forked(&child);
		if (!have_child)
			error(name, "fork failed");
		else
			child_ready(&child);
		break;
	case COW:
	case COW_REUSE:
	case COW_BYTE:
	case COW_REUSE_BYTE:
		t0 = start();
		write_pages(mem, a == COW || a == COW_REUSE);
		t1 = stop();
		break;
	case PTE_DONTNEED:
		t0 = start();
		for (unsigned long off = 0; off < size; off += PAGE)
			madvise(mem + off, PAGE, MADV_DONTNEED);
		t1 = stop();
		break;
	case MPROTECT:
		t0 = start();
		mprotect(mem, size, PROT_READ);
		t1 = stop();
		break;
	case COW_REUSE_GRANDCHILD:	/* cow_reuse_grandchild() */
		break;
	}
	vmstat(r->after);
	r->ns = t1 - t0;
	if (have_child)
		release(&child);
out_mem:
	munmap(raw, size + THP);
}

/*
 * vm-scalability's anon-cow: the parent populates the area with THP,
 * forks NR_CHILDREN children (child c on CPU c), which say ready and wait;
 * then each writes every page once, in order or at random (a fixed
 * permutation). Time from the start signal until the last child is done.
 */
static void anon_cow(int rand, const char *name, struct run *r)
{
	unsigned long nr = size / PAGE;
	struct child kids[NR_CHILDREN];
	int go[2], status, n = 0;
	uint64_t t0, t1;
	char *raw, *mem;
	unsigned long *order;

	r->ns = 0;
	r->expect = EXPECT_THP_PMD;
	mem = area(1, &raw);
	if (!mem || pipe(go)) {
		error(name, "mmap or pipe failed");
		if (mem)
			munmap(raw, size + THP);
		return;
	}
	order = malloc(nr * sizeof(*order));
	if (!order) {
		error(name, "malloc failed");
		goto out;
	}
	for (unsigned long i = 0; i < nr; i++)
		order[i] = i;
	for (unsigned long i = nr - 1; rand && i > 0; i--) {
		unsigned long j = (i * 2654435761UL + 12345) % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	r->check = verify(mem, r->expect);
	for (int c = 0; c < NR_CHILDREN; c++) {
		if (pipe(kids[c].ready))
			break;
		kids[c].pid = fork();
		if (kids[c].pid == 0) {
			cpu_set_t set;
			char b = 'r';

			CPU_ZERO(&set);
			CPU_SET(c, &set);
			sched_setaffinity(0, sizeof(set), &set);
			close(go[1]);
			(void)!write(kids[c].ready[1], &b, 1);
			if (read(go[0], &b, 1) != 0)
				_exit(1);
			for (unsigned long i = 0; i < nr; i++)
				mem[order[i] * PAGE] = (char)c;
			_exit(0);
		}
		close(kids[c].ready[1]);
		if (kids[c].pid < 0) {
			close(kids[c].ready[0]);
			break;
		}
		n++;
	}
	close(go[0]);
	for (int c = 0; c < n; c++)
		child_ready(&kids[c]);
	if (n != NR_CHILDREN) {
		error(name, "fork failed");
		close(go[1]);
		for (int c = 0; c < n; c++)
			waitpid(kids[c].pid, &status, 0);
		goto out_order;
	}
	vmstat(r->before);
	t0 = start();
	close(go[1]);	/* EOF releases every child at once */
	for (int c = 0; c < n; c++)
		waitpid(kids[c].pid, &status, 0);
	t1 = stop();
	vmstat(r->after);
	r->ns = t1 - t0;
out_order:
	free(order);
out:
	munmap(raw, size + THP);
}

/* ---- the per-VMA lock's cases (BENCH_SYSTEM=vma-lock) ------------------- */

enum vma_case { VMA_PFT1, VMA_PFT2, VMA_CHURN_CASE, VMA_FORK };
static const char *const vma_case_name[] = {
	"vma.pft-1t", "vma.pft-2t", "vma.mmap-churn", "vma.fork-vmas",
};
#define VMA_CHURN	2000
#define VMA_FORK_VMAS	1000
#define VMA_SLAB_VMAS	40000

struct pft {
	char *mem;
	unsigned long len;
	int go[2];
};

/* The second faulting thread: CPU 0, SCHED_OTHER, waits for the window. */
static void *pft_thread(void *arg)
{
	struct pft *p = arg;
	cpu_set_t set;
	char b;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	if (read(p->go[0], &b, 1) == 1)
		for (unsigned long off = 0; off < p->len; off += PAGE)
			p->mem[off] = 1;
	return NULL;
}

static void vma_pft(int threads, const char *name, struct run *r)
{
	char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct pft p = { .go = { -1, -1 } };
	unsigned long mine = threads == 2 ? size / 2 : size;
	pthread_attr_t attr;
	pthread_t t;
	uint64_t t0;

	r->ns = 0;
	r->expect = EXPECT_SMALL;
	if (mem == MAP_FAILED || madvise(mem, size, MADV_NOHUGEPAGE)) {
		error(name, "mmap or madvise failed");
		if (mem != MAP_FAILED)
			munmap(mem, size);
		return;
	}
	if (threads == 2) {
		struct sched_param sp = { .sched_priority = 0 };

		p.mem = mem + mine;
		p.len = size - mine;
		pthread_attr_init(&attr);
		pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
		pthread_attr_setschedparam(&attr, &sp);
		if (pipe(p.go) || pthread_create(&t, &attr, pft_thread, &p)) {
			error(name, "pipe or pthread_create failed");
			munmap(mem, size);
			return;
		}
		pthread_attr_destroy(&attr);
	}
	vmstat(r->before);
	t0 = start();
	if (threads == 2)
		(void)!write(p.go[1], "g", 1);
	for (unsigned long off = 0; off < mine; off += PAGE)
		mem[off] = 1;
	if (threads == 2)
		pthread_join(t, NULL);
	r->ns = stop() - t0;
	vmstat(r->after);
	if (threads == 2) {
		close(p.go[0]);
		close(p.go[1]);
	}
	r->check = verify(mem, EXPECT_SMALL);
	munmap(mem, size);
}

static void vma_churn(const char *name, struct run *r)
{
	uint64_t t0;

	r->ns = 0;
	r->expect = EXPECT_NONE;
	r->check = (struct check){ 0, 0, "-" };
	vmstat(r->before);
	t0 = start();
	for (int i = 0; i < VMA_CHURN; i++) {
		char *p = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			error(name, "mmap failed");
			return;
		}
		p[0] = 1;
		mprotect(p, 8 * PAGE, PROT_READ);
		munmap(p, 16 * PAGE);
	}
	r->ns = stop() - t0;
	vmstat(r->after);
}

/* @n separate one-page vmas (two pages mapped, the second unmapped). */
static char **many_vmas(const char *name, int n)
{
	char **v = calloc(n, sizeof(*v));

	for (int i = 0; v && i < n; i++) {
		v[i] = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
		if (v[i] == MAP_FAILED) {
			error(name, "mmap failed");
			while (i--)
				munmap(v[i], PAGE);
			free(v);
			return NULL;
		}
		munmap(v[i] + PAGE, PAGE);
		v[i][0] = 1;
	}
	return v;
}

static void free_vmas(char **v, int n)
{
	for (int i = 0; i < n; i++)
		munmap(v[i], PAGE);
	free(v);
}

static void vma_fork(const char *name, struct run *r)
{
	char **v = many_vmas(name, VMA_FORK_VMAS);
	int status;
	uint64_t t0;
	pid_t pid;

	r->ns = 0;
	r->expect = EXPECT_NONE;
	r->check = (struct check){ 0, 0, "-" };
	if (!v)
		return;
	vmstat(r->before);
	t0 = start();
	pid = fork();
	if (pid == 0)
		_exit(0);
	r->ns = stop() - t0;
	vmstat(r->after);
	if (pid < 0) {
		error(name, "fork failed");
		r->ns = 0;
	} else {
		waitpid(pid, &status, 0);
	}
	free_vmas(v, VMA_FORK_VMAS);
}

/* One /proc/slabinfo line: active objects, objects, object size, slabs. */
struct slab {
	unsigned long active, objs, objsize, perslab, pages, slabs;
};

static int slabinfo(const char *cache, struct slab *s)
{
	char line[512], name[64];
	FILE *f = fopen("/proc/slabinfo", "r");
	struct slab t;
	int found = 0;

	memset(s, 0, sizeof(*s));
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lu %lu %lu %lu %lu : tunables %*u %*u %*u : slabdata %*u %lu",
			   name, &t.active, &t.objs, &t.objsize, &t.perslab, &t.pages,
			   &t.slabs) == 7 && !strcmp(name, cache)) {
			*s = t;
			found = 1;
		}
	if (f)
		fclose(f);
	return found;
}

/*
 * The seed's measurement: the slab memory 40,000 more vmas cost, per vma,
 * from /proc/slabinfo (the guest boots with slab_nomerge, so the caches are
 * the vmas' own). Prints per cache
 *   RUSTMM-SLAB <cache> objsize=<B> perslab=<n> pages=<n> slabs+=<n> objs+=<n> bytes_per_vma=<B>
 * and RUSTMM-SLAB total bytes_per_vma=<B> pages_per_1000=<n>.
 */
static void vma_slab(void)
{
	static const char *const caches[] = { "vm_area_struct", "vma_lock" };
	struct slab before[2], after[2];
	int have[2];
	double total = 0;
	char **v;

	for (int c = 0; c < 2; c++)
		have[c] = slabinfo(caches[c], &before[c]);
	if (!have[0]) {
		error("vma.slab", "no vm_area_struct line in /proc/slabinfo (merged?)");
		return;
	}
	v = many_vmas("vma.slab", VMA_SLAB_VMAS);
	if (!v)
		return;
	for (int c = 0; c < 2; c++) {
		double bytes;

		if (!have[c]) {
			printf("RUSTMM-SLAB %s absent\n", caches[c]);
			continue;
		}
		slabinfo(caches[c], &after[c]);
		bytes = (double)(after[c].slabs - before[c].slabs) * after[c].pages * PAGE /
			VMA_SLAB_VMAS;
		total += bytes;
		printf("RUSTMM-SLAB %s objsize=%lu perslab=%lu pages=%lu slabs+=%lu objs+=%lu bytes_per_vma=%.1f\n",
		       caches[c], after[c].objsize, after[c].perslab, after[c].pages,
		       after[c].slabs - before[c].slabs, after[c].active - before[c].active, bytes);
	}
	printf("RUSTMM-SLAB total vmas=%d bytes_per_vma=%.1f pages_per_1000=%.1f\n",
	       VMA_SLAB_VMAS, total, total * 1000 / PAGE);
	free_vmas(v, VMA_SLAB_VMAS);
}

/* ---- pagemap of swapped-out shared memory (BENCH_SYSTEM=pagemap-swap) -- */

#ifndef PAGEMAP_SET_OPTS
#define PAGEMAP_SET_OPTS	_IOW('f', 18, uint64_t)
#define PAGEMAP_OPT_SHARED_SWAP	(1 << 0)
#endif
#define PM_GROUP	64	/* pages: the layout repeats every PM_GROUP */

static const unsigned long pm_batch[] = { 1, 64, 512, 1024 };
#define PM_NR_BATCH	(sizeof(pm_batch) / sizeof(pm_batch[0]))
enum pm_reader { PM_ANON, PM_SHARED, PM_SHARED_OPTIN, PM_NR_READER };
static const char *const pm_reader_name[] = { "anon", "shared", "shared-optin" };

/* The boot's prepared state and the attempt measure() runs next. */
static struct {
	char *mem[2];		/* [0] private anon, [1] the memfd, MAP_SHARED */
	int fd[PM_NR_READER];	/* pagemap: plain, plain, opted in (-1: none) */
	uint64_t *buf;
	struct check check;
	enum pm_reader reader;
	unsigned long batch;
} pm = { .fd = { -1, -1, -1 } };

/*
 * Map @size bytes at a 1 GiB-aligned address: with nothing mapped (pm.d0)
 * pagemap's cost is that of the page-table levels the range crosses, which
 * a randomized address changes from boot to boot; aligned, every boot
 * walks the same geometry.
 */
static void *pm_map_aligned(int flags, int fd)
{
	const unsigned long align = 1UL << 30;
	char *r = mmap(NULL, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	char *at;

	if (r == MAP_FAILED)
		return MAP_FAILED;
	at = (char *)(((uintptr_t)r + align - 1) & ~(align - 1));
	if (at > r)
		munmap(r, at - r);
	munmap(at + size, r + size + align - (at + size));
	return mmap(at, size, PROT_READ | PROT_WRITE, flags | MAP_FIXED, fd, 0);
}

/*
 * Page i of a PM_GROUP-page group: written if i < dirty, paged out if
 * i < dirty / 2 -- runs of swap entries, present pages and holes, as a
 * checkpointer meets them. Paged out with one MADV_PAGEOUT per group, the
 * pages of a group take consecutive swap slots in index order; @reverse
 * pages them out one by one from the last, so that no page's slot is the
 * one after its left neighbour's (a busy machine's reclaim, several CPUs
 * and LRU order scatter a file's slots: the opted-in walk then sends
 * every swap entry to Rust on its own, not as a run).
 */
static int pm_prepare(const char *name, int pct, int reverse)
{
	unsigned long dirty = PM_GROUP * pct / 100, out = dirty / 2, want = 0;
	uint64_t opts = PAGEMAP_OPT_SHARED_SWAP;
	int mfd = memfd_create("rustmm-bench", 0);
	long kb = 0;

	pm.mem[0] = pm_map_aligned(MAP_PRIVATE | MAP_ANONYMOUS, -1);
	if (mfd < 0 || ftruncate(mfd, size) || pm.mem[0] == MAP_FAILED) {
		error(name, "memfd_create, ftruncate or mmap failed");
		return -1;
	}
	pm.mem[1] = pm_map_aligned(MAP_SHARED, mfd);
	close(mfd);
	pm.buf = malloc(pm_batch[PM_NR_BATCH - 1] * sizeof(*pm.buf));
	if (pm.mem[1] == MAP_FAILED || !pm.buf || madvise(pm.mem[0], size, MADV_NOHUGEPAGE)) {
		error(name, "mmap, malloc or madvise failed");
		return -1;
	}
	for (int m = 0; m < 2; m++)
		for (unsigned long g = 0; g < size; g += PM_GROUP * PAGE) {
			int failed = 0;

			for (unsigned long i = 0; i < dirty; i++)
				memset(pm.mem[m] + g + i * PAGE, (int)(i + 1), PAGE);
			if (!reverse && out)
				failed = madvise(pm.mem[m] + g, out * PAGE, MADV_PAGEOUT);
			for (unsigned long i = out; reverse && i-- > 0;)
				failed |= madvise(pm.mem[m] + g + i * PAGE, PAGE, MADV_PAGEOUT);
			if (failed) {
				error(name, "MADV_PAGEOUT failed");
				return -1;
			}
			want += out;
		}
	/* The state: as many pages on swap as planned, by smaps' Swap. */
	for (int m = 0; m < 2; m++) {
		char line[256];
		unsigned long s, e, v;
		int in = 0;
		FILE *f = fopen("/proc/self/smaps", "r");

		while (f && fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%lx-%lx ", &s, &e) == 2)
				in = s == (uintptr_t)pm.mem[m];
			else if (in && sscanf(line, "Swap: %lu kB", &v) == 1)
				kb += v;
		}
		if (f)
			fclose(f);
	}
	pm.check = (struct check){ kb * 1024 / PAGE, want, "-" };
	if (pm.check.ok != want) {
		char why[128];

		snprintf(why, sizeof(why), "%lu pages on swap (smaps), want %lu: no swap?",
			 pm.check.ok, want);
		error(name, why);
		return -1;
	}
	for (int r = 0; r < PM_NR_READER; r++)
		pm.fd[r] = open("/proc/self/pagemap", O_RDONLY);
	if (pm.fd[PM_ANON] < 0 || pm.fd[PM_SHARED] < 0 || pm.fd[PM_SHARED_OPTIN] < 0) {
		error(name, "cannot open /proc/self/pagemap");
		return -1;
	}
	/* A kernel without CONFIG_PAGEMAP_SHARED_SWAP refuses the ioctl. */
	if (ioctl(pm.fd[PM_SHARED_OPTIN], PAGEMAP_SET_OPTS, &opts)) {
		printf("RUSTMM-BENCH-NOTE %s PAGEMAP_SET_OPTS refused (%s): no shared-optin reader\n",
		       name, strerror(errno));
		close(pm.fd[PM_SHARED_OPTIN]);
		pm.fd[PM_SHARED_OPTIN] = -1;
	}
	return 0;
}

/* One attempt: the reader's whole range in reads of pm.batch entries. */
static void pm_read(const char *name, struct run *r)
{
	int fd = pm.fd[pm.reader];
	unsigned long first = (uintptr_t)pm.mem[pm.reader != PM_ANON] / PAGE;
	unsigned long nr = size / PAGE, n = pm.batch;
	uint64_t t0;

	r->ns = 0;
	r->expect = EXPECT_SWAP;
	r->check = pm.check;
	vmstat(r->before);
	t0 = start();
	for (unsigned long i = 0; i < nr; i += n)
		if (pread(fd, pm.buf, n * 8, (off_t)((first + i) * 8)) != (ssize_t)(n * 8)) {
			stop();
			error(name, "pread of pagemap failed");
			return;
		}
	r->ns = stop() - t0;
	vmstat(r->after);
}

/* ---- gup over device-dax (BENCH_SYSTEM=compound-pagemaps) --------------- */

/* struct gup_test and its ioctls: devdax_setup.h. */
#define GUP_TEST_FILE		"/sys/kernel/debug/gup_test"

#define CP_PER_CALL	512	/* pages per gup call: one PMD leaf of 2 MiB */
/* Minor faults beyond the mapping's own while it is written (stack, code). */
#define CP_FAULT_SLACK	64
#define CP_PFN_MASK	((1ULL << 55) - 1)

static const struct cp_case {
	const char *name;
	unsigned long cmd;
	const char *cmd_name;
	unsigned long align;	/* of the device: its folio size */
	int is_short;		/* below 10 ms on the base kernel */
} cp_cases[] = {
	{ "cp.gup-fast-2m", GUP_FAST_BENCHMARK, "GUP_FAST_BENCHMARK", THP, 1 },
	{ "cp.pin-fast-2m", PIN_FAST_BENCHMARK, "PIN_FAST_BENCHMARK", THP, 1 },
	{ "cp.gup-fast-4k", GUP_FAST_BENCHMARK, "GUP_FAST_BENCHMARK", PAGE, 1 },
	{ "cp.pin-fast-4k", PIN_FAST_BENCHMARK, "PIN_FAST_BENCHMARK", PAGE, 1 },
	{ "cp.gup-slow-2m", GUP_BASIC_TEST, "GUP_BASIC_TEST", THP, 0 },
	{ "cp.gup-fast-1g", GUP_FAST_BENCHMARK, "GUP_FAST_BENCHMARK", PUD_LEAF, 1 },
	{ "cp.pin-fast-1g", PIN_FAST_BENCHMARK, "PIN_FAST_BENCHMARK", PUD_LEAF, 1 },
};
#define CP_NR_CASES	(sizeof(cp_cases) / sizeof(cp_cases[0]))

/* The boot's device, its mapping and what it was verified to be. */
static struct {
	const struct cp_case *c;
	struct devdax dax;
	int fd, gup_fd;
	char *mem;
	struct check check;
	enum expect expect;
	unsigned int ioctls;	/* made so far, the warm-up's included */
} cp = { .fd = -1, .gup_fd = -1 };

/* The 8 bytes written at offset @off of the area: no two alike. */
static uint64_t cp_word(unsigned long off)
{
	return (off * 0x9e3779b97f4a7c15ULL) ^ 0x5a5a5a5a5a5a5a5aULL;
}

/* The first and the last word of every page: -1 if intact, else the offset. */
static long cp_changed(void)
{
	for (unsigned long off = 0; off < size; off += PAGE) {
		if (*(volatile uint64_t *)(cp.mem + off) != cp_word(off))
			return (long)off;
		if (*(volatile uint64_t *)(cp.mem + off + PAGE - 8) != cp_word(off + PAGE - 8))
			return (long)(off + PAGE - 8);
	}
	return -1;
}

/*
 * The pin counters, folded first: they are per-CPU node counters, of which
 * /proc/vmstat shows only what was folded (vm.stat_refresh folds every
 * CPU's; the guest folds nothing else for an hour, quiet()).
 */
static int cp_pins(unsigned long long *acquired, unsigned long long *released)
{
	if (write_file("/proc/sys/vm/stat_refresh", "1"))
		return -1;
	*acquired = devdax_vmstat("nr_foll_pin_acquired");
	*released = devdax_vmstat("nr_foll_pin_released");
	return 0;
}

/*
 * What the mapping is, after @faults minor faults while writing it:
 * folios ok/want = the device's folios (align blocks) in the area whose
 * pages pagemap shows present, each at its device offset (pfn = the
 * device's start + offset, so a block of 2 MiB is one aligned compound of
 * the device); mapped "pud" for one fault per 1 GiB, "pmd" for one per
 * 2 MiB, "pte" for one per page. The folio order itself is not visible from user space
 * (kpageflags has nothing for ZONE_DEVICE pfns): it is the device's align
 * (vmemmap_shift), read back from sysfs by devdax_create().
 *
 * A device of 1 GiB folios is not read through pagemap: pagemap's walk has
 * no PUD callback, so walk_pud_range() splits every PUD leaf it passes
 * (split_huge_pud(), which for device-dax clears the PUD: the next access
 * faults it in again) and reports the range as not present. There, a
 * folio is good when the mapping took one fault per GiB (a PUD leaf each),
 * the device's align is 1 GiB and its data starts 1 GiB-aligned; the
 * window's faults (0 in every run) show the leaves stayed mapped.
 */
static struct check cp_verify(long faults)
{
	unsigned long npages = size / PAGE, blk = cp.c->align / PAGE;
	unsigned long first = cp.dax.start / PAGE;
	struct check c = { 0, size / cp.c->align, "mixed" };
	uint64_t *pm = malloc(npages * sizeof(*pm));
	int pfd = open("/proc/self/pagemap", O_RDONLY);

	if (faults >= (long)npages && faults - (long)npages < CP_FAULT_SLACK)
		c.mapped = "pte";
	else if (faults >= (long)(size / THP) && faults - (long)(size / THP) < CP_FAULT_SLACK)
		c.mapped = "pmd";
	else if (size >= PUD_LEAF && faults >= (long)(size / PUD_LEAF) &&
		 faults - (long)(size / PUD_LEAF) < CP_FAULT_SLACK)
		c.mapped = "pud";
	if (cp.c->align == PUD_LEAF) {
		if (!strcmp(c.mapped, "pud") && cp.dax.align == PUD_LEAF && first % blk == 0)
			c.ok = c.want;
	} else if (pm && pfd >= 0 && cp.dax.align == cp.c->align && first % blk == 0 &&
		   !read_at(pfd, pm, npages * sizeof(*pm), (uintptr_t)cp.mem / PAGE * sizeof(*pm)))
		for (unsigned long b = 0; b < npages / blk; b++) {
			int good = 1;

			for (unsigned long k = 0; good && k < blk; k++) {
				uint64_t e = pm[b * blk + k];

				good = (e >> 63) && (e & CP_PFN_MASK) == first + b * blk + k;
			}
			c.ok += good;
		}
	if (pfd >= 0)
		close(pfd);
	free(pm);
	return c;
}

/*
 * Once per boot: the device of @c's align, mapped and written (the
 * faults map it), verified. The device is not destroyed after the runs:
 * the guest ends with the case (one case per boot), and an unbind would
 * wait for every dev_pagemap reference (tests/userspace checks that).
 */
static int cp_prepare(const struct cp_case *c)
{
	char why[512];
	long f0;

	cp.c = c;
	cp.expect = c->align == PAGE ? EXPECT_DEVDAX_PTE :
		    c->align == THP ? EXPECT_DEVDAX_PMD : EXPECT_DEVDAX_PUD;
	/*
	 * The area is whole folios of the device: RUSTMM_BENCH_MIB rounded up
	 * to its align (the 1 GiB cases: 1024 MiB, one folio, of 256).
	 */
	if (size % c->align) {
		size = (size / c->align + 1) * c->align;
		printf("RUSTMM-BENCH-NOTE %s: the area is %lu MiB, RUSTMM_BENCH_MIB rounded up to whole folios of the device\n",
		       c->name, size >> 20);
	}
	if (devdax_create(c->align, &cp.dax)) {
		snprintf(why, sizeof(why), "device-dax of align %lu: %s", c->align, cp.dax.why);
		error(c->name, why);
		return -1;
	}
	printf("RUSTMM-BENCH-NOTE %s %s: %lu MiB at %#lx, align %lu (from %s); nr_memmap_pages %+lld (nd_pmem unbound), %+lld (bound)\n",
	       c->name, cp.dax.path, cp.dax.size >> 20, cp.dax.start, cp.dax.align, cp.dax.nd_dax,
	       cp.dax.memmap_unbind_pmem, cp.dax.memmap_bind);
	if (size > cp.dax.size) {
		snprintf(why, sizeof(why), "%lu MiB asked (BENCH_MIB), %s has %lu MiB",
			 size >> 20, cp.dax.path, cp.dax.size >> 20);
		error(c->name, why);
		return -1;
	}
	cp.fd = open(cp.dax.path, O_RDWR);
	cp.gup_fd = open(GUP_TEST_FILE, O_RDWR);
	if (cp.fd < 0 || cp.gup_fd < 0) {
		snprintf(why, sizeof(why), "cannot open %s or " GUP_TEST_FILE
			 " (CONFIG_GUP_TEST, debugfs): %s", cp.dax.path, strerror(errno));
		error(c->name, why);
		return -1;
	}
	/* A device-dax refuses private mappings; it aligns the address. */
	cp.mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, cp.fd, 0);
	if (cp.mem == MAP_FAILED || (uintptr_t)cp.mem % c->align) {
		snprintf(why, sizeof(why), "mmap of %s MAP_SHARED failed or unaligned: %s",
			 cp.dax.path, strerror(errno));
		error(c->name, why);
		return -1;
	}
	f0 = minflt();
	for (unsigned long off = 0; off < size; off += PAGE) {
		*(uint64_t *)(cp.mem + off) = cp_word(off);
		*(uint64_t *)(cp.mem + off + PAGE - 8) = cp_word(off + PAGE - 8);
	}
	cp.check = cp_verify(minflt() - f0);
	return 0;
}

/*
 * One attempt: the case's gup_test ioctl over the whole area. Its time is
 * the kernel's get_delta_usec (see the top of the file); the window
 * around the ioctl gives the background check, the faults and the profile
 * markers.
 */
static void cp_gup(const char *name, struct run *r)
{
	struct gup_test g = {
		.addr = (uintptr_t)cp.mem,
		.size = size,
		.nr_pages_per_call = CP_PER_CALL,
		.gup_flags = FOLL_WRITE,
	};
	unsigned long long a0, r0, a1 = 0, r1 = 0;
	unsigned long want = cp.c->cmd == PIN_FAST_BENCHMARK ? size / PAGE : 0;
	char why[400];
	long bad;
	int rc, e;

	r->ns = 0;
	r->expect = cp.expect;
	r->check = cp.check;
	if (cp_pins(&a0, &r0)) {
		error(name, "cannot write /proc/sys/vm/stat_refresh");
		return;
	}
	vmstat(r->before);
	start();
	rc = ioctl(cp.gup_fd, cp.c->cmd, &g);
	e = errno;
	stop();
	cp.ioctls++;
	vmstat(r->after);
	if (rc) {
		snprintf(why, sizeof(why), "%s: %s", cp.c->cmd_name, strerror(e));
		error(name, why);
		return;
	}
	/*
	 * The area was mapped whole before: a fault in a measured run means
	 * a leaf went away. The boot's first ioctl (the warm-up) takes one
	 * on both kernels, the runs after it none.
	 */
	if (win_faults && cp.ioctls > 1) {
		snprintf(why, sizeof(why), "%s: %ld faults in the window, want 0 (the mapping was not whole)",
			 cp.c->cmd_name, win_faults);
		error(name, why);
		return;
	}
	if (g.size != size) {
		snprintf(why, sizeof(why), "%s took %llu of %lu bytes", cp.c->cmd_name,
			 (unsigned long long)g.size, size);
		error(name, why);
		return;
	}
	if (cp_pins(&a1, &r1)) {
		error(name, "cannot write /proc/sys/vm/stat_refresh");
		return;
	}
	if (a1 - a0 != want || r1 - r0 != want) {
		snprintf(why, sizeof(why), "%s: nr_foll_pin_acquired +%llu, nr_foll_pin_released +%llu, want +%lu each (now %llu, %llu)",
			 cp.c->cmd_name, a1 - a0, r1 - r0, want, a1, r1);
		error(name, why);
		return;
	}
	bad = cp_changed();
	if (bad >= 0) {
		snprintf(why, sizeof(why), "%s: the word at offset %#lx changed", cp.c->cmd_name,
			 (unsigned long)bad);
		error(name, why);
		return;
	}
	if (!g.get_delta_usec) {
		error(name, "the get took under 1 us: too few pages (BENCH_MIB) to time");
		return;
	}
	r->ns = g.get_delta_usec * 1000;
}

/*
 * Run as SCHED_FIFO (children get SCHED_OTHER: reset on fork) on
 * MEASURE_CPU, which the guest isolates: nothing else is scheduled there,
 * and our children, which inherit the CPU, only run when we block.
 */
static void measure_here(void)
{
	struct sched_param sp = { .sched_priority = 50 };
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(MEASURE_CPU, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		error("setup", "sched_setaffinity failed");
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp))
		error("setup", "sched_setscheduler(SCHED_FIFO) failed");
}

/*
 * RUSTMM_BENCH_MMS=N: measure with the rmap ID a busy machine gives. The
 * allocator hands out the lowest free ID, so the few processes of the
 * bench guest get IDs below 64, where an update of an order-9 folio adds
 * one of its four sub-IDs (the others are 0 and skipped). Here N idle
 * processes, each its own mm holding the next free ID, are forked first,
 * and the benchmark goes on in a child forked after them: its ID, and
 * those of the children it forks for COW, are above N. N = 4000 gives a
 * 12-bit ID, two live sub-IDs for orders 6 to 10, as a machine with a few
 * thousand processes has. The base kernel, without rmap IDs, runs the
 * same processes. Returns in the child; the parent waits for it, kills
 * the idle processes and exits with the child's status.
 */
static void busy_mms(long n)
{
	pid_t *idle = calloc(n, sizeof(*idle)), worker;
	int status = 0;
	long i;

	if (!idle) {
		printf("RUSTMM-BENCH-ERROR setup no memory for %ld pids\n", n);
		printf("RUSTMM-BENCH-DONE errors=1\n");
		exit(1);
	}
	for (i = 0; i < n; i++) {
		idle[i] = fork();
		if (idle[i] == 0) {
			for (;;)
				pause();
		}
		if (idle[i] < 0) {
			printf("RUSTMM-BENCH-ERROR setup fork of idle process %ld failed: %s\n",
			       i, strerror(errno));
			break;
		}
	}
	worker = i == n ? fork() : -1;
	if (worker == 0) {
		printf("RUSTMM-BENCH-MMS %ld idle processes forked before this one\n", n);
		return;
	}
	if (worker > 0)
		waitpid(worker, &status, 0);
	else
		printf("RUSTMM-BENCH-DONE errors=1\n");
	while (i-- > 0) {
		kill(idle[i], SIGKILL);
		waitpid(idle[i], NULL, 0);
	}
	exit(worker > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

/* Measure one run of a case until a window is quiet; print the result. */
static void measure(const char *name, int run, enum kind k, int a, int anon_rand)
{
	char why[512];
	struct run r;

	for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
		if (a == -30)
			cp_gup(name, &r);
		else if (a == -20)
			pm_read(name, &r);
		else if (a <= -10)
			switch (-a - 10) {
			case VMA_PFT1:
				vma_pft(1, name, &r);
				break;
			case VMA_PFT2:
				vma_pft(2, name, &r);
				break;
			case VMA_CHURN_CASE:
				vma_churn(name, &r);
				break;
			default:
				vma_fork(name, &r);
				break;
			}
		else if (a < 0)
			anon_cow(anon_rand, name, &r);
		else if (a == COW_REUSE_GRANDCHILD)
			cow_reuse_grandchild(k, name, &r);
		else
			micro(a, k, name, &r);
		if (!r.ns)
			return;
		moved(r.before, r.after, why, sizeof(why));
		if (!why[0]) {
			printf("RUSTMM-BENCH%s %s %d %llu expect=%s folios=%lu/%lu mapped=%s attempts=%d faults=%ld\n",
			       run ? "" : "-WARMUP", name, run, (unsigned long long)r.ns, expect_name[r.expect],
			       r.check.ok, r.check.want, r.check.mapped, attempt, win_faults);
			return;
		}
		printf("RUSTMM-BENCH-REJECT %s %d %s\n", name, run, why);
	}
	/* A warm-up that never got a quiet window does not matter. */
	if (run)
		printf("RUSTMM-BENCH-DISTURBED %s %d %s\n", name, run, why);
}

int main(int argc, char **argv)
{
	const char *env_runs = getenv("RUSTMM_BENCH_RUNS");
	const char *env_mib = getenv("RUSTMM_BENCH_MIB");
	const char *env_case = getenv("RUSTMM_BENCH_CASE");
	const char *profile = getenv("RUSTMM_BENCH_PROFILE");
	int runs = argc > 1 ? atoi(argv[1]) : env_runs ? atoi(env_runs) : 5;
	unsigned long mib = argc > 2 ? strtoul(argv[2], NULL, 0) :
			    env_mib ? strtoul(env_mib, NULL, 0) : 256;
	const char *want = argc > 3 ? argv[3] : env_case ? env_case : "all";
	int found = 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	size = mib << 20;
	if (sysconf(_SC_PAGESIZE) != (long)PAGE) {
		printf("RUSTMM-BENCH-ERROR setup pages of %ld bytes: the benchmark is built for 4K pages\n",
		       sysconf(_SC_PAGESIZE));
		printf("RUSTMM-BENCH-DONE errors=1\n");
		return 1;
	}
	if (runs < 1 || !mib || size % THP) {
		printf("RUSTMM-BENCH-ERROR setup bad RUNS or MIB (a multiple of 2)\n");
		printf("RUSTMM-BENCH-DONE errors=1\n");
		return 1;
	}
	if (getenv("RUSTMM_BENCH_MMS") && atol(getenv("RUSTMM_BENCH_MMS")) > 0)
		busy_mms(atol(getenv("RUSTMM_BENCH_MMS")));
	quiet();
	measure_here();
	/* "all" is thp, small and anon-cow: what every target runs. */
	for (int i = 0; i < 3; i++) {
		static const enum kind order[] = { PMD_THP, SMALL, MTHP64 };
		enum kind k = order[i];

		for (int a = REMAP; a <= MPROTECT; a++) {
			char name[64];
			int n = is_short(k, a) ? runs * SHORT_FACTOR : runs;

			if (k == MTHP64 && a == REMAP)
				continue;	/* an mTHP is PTE-mapped from the start */
			if (k == SMALL && a == COW_REUSE_GRANDCHILD)
				continue;	/* order-0: nothing to track */
			snprintf(name, sizeof(name), "%s.%s", kind_name[k], action_name[a]);
			if (strcmp(want, name) && (strcmp(want, "all") || k == MTHP64 || a == MPROTECT))
				continue;
			found = 1;
			thp_sizes(name, k);
			profiling = 0;
			measure(name, 0, k, a, 0);	/* warm-up */
			profiling = profiled(profile, name);
			for (int r = 1; r <= n; r++)
				measure(name, r, k, a, 0);
		}
	}
	for (int rand = 0; rand <= 1; rand++) {
		const char *name = rand ? "anon-cow-rand" : "anon-cow-seq";

		if (strcmp(want, "all") && strcmp(want, name))
			continue;
		found = 1;
		thp_sizes(name, PMD_THP);
		profiling = 0;
		measure(name, 0, PMD_THP, -1, rand);	/* warm-up */
		profiling = profiled(profile, name);
		for (int r = 1; r <= runs; r++)
			measure(name, r, PMD_THP, -1, rand);
	}
	/* The per-VMA lock's cases run only when named. */
	for (int c = VMA_PFT1; c <= VMA_FORK; c++) {
		const char *name = vma_case_name[c];
		int n = c == VMA_FORK ? runs * SHORT_FACTOR : runs;

		if (strcmp(want, name))
			continue;
		found = 1;
		thp_sizes(name, SMALL);
		profiling = 0;
		measure(name, 0, SMALL, -10 - c, 0);	/* warm-up */
		profiling = profiled(profile, name);
		for (int r = 1; r <= n; r++)
			measure(name, r, SMALL, -10 - c, 0);
	}
	/* pagemap over swapped-out shared memory: only when named. */
	for (int d = 0; d <= 150; d += 50) {
		/* pm.d0, pm.d50, pm.d100; pm.d50rev: d50 paged out in reverse. */
		int pct = d > 100 ? 50 : d, reverse = d > 100;
		char name[32];

		snprintf(name, sizeof(name), "pm.d%d%s", pct, reverse ? "rev" : "");
		if (strcmp(want, name))
			continue;
		found = 1;
		thp_sizes(name, SMALL);
		if (pm_prepare(name, pct, reverse))
			break;
		/* Run 0 is the warm-up; every run reads with every batch and reader. */
		for (int r = 0; r <= runs * SHORT_FACTOR; r++)
			for (unsigned int b = 0; b < PM_NR_BATCH; b++)
				for (int rd = 0; rd < PM_NR_READER; rd++) {
					char sub[64];

					if (pm.fd[rd] < 0)
						continue;
					snprintf(sub, sizeof(sub), "%s.b%lu.%s", name, pm_batch[b],
						 pm_reader_name[rd]);
					pm.reader = rd;
					pm.batch = pm_batch[b];
					profiling = r && profiled(profile, sub);
					measure(sub, r, SMALL, -20, 0);
				}
	}
	/* gup over device-dax: only when named (guests with memmap=nn!ss). */
	for (unsigned int i = 0; i < CP_NR_CASES; i++) {
		const struct cp_case *c = &cp_cases[i];
		int n = c->is_short ? runs * SHORT_FACTOR : runs;

		if (strcmp(want, c->name))
			continue;
		found = 1;
		if (cp_prepare(c))
			break;
		/* Run 0 is the warm-up. */
		for (int r = 0; r <= n; r++) {
			profiling = r && profiled(profile, c->name);
			measure(c->name, r, SMALL, -30, 0);
		}
	}
	if (!strcmp(want, "vma.slab")) {
		found = 1;
		vma_slab();
	}
	if (!found)
		error(want, "no such case");
	printf("RUSTMM-BENCH-DONE errors=%d\n", errors);
	return errors ? 1 : 0;
}
