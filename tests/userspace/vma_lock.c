// SPDX-License-Identifier: GPL-2.0
/*
 * The per-VMA lock under load: threads fault on memory while another thread
 * mmaps, munmaps, mprotects and mremaps around it and through it, with the
 * data checked everywhere. Page faults take the per-VMA read lock
 * (lock_vma_under_rcu()); every mmap-side change write-locks the vmas it
 * touches, splits and merges them, detaches and frees them. Runs on every
 * kernel (patched, unpatched, option off): the data checks and the absence
 * of kernel warnings (the console check) are the test; where the kernel
 * counts (CONFIG_PER_VMA_LOCK_STATS: vma_lock_* in /proc/vmstat), the
 * counter deltas are printed and the faults must have taken the per-VMA
 * lock at least once.
 *
 * Scenarios:
 *   faults_race_split_merge_mmap_mremap_with_data_intact
 *     two threads refault (MADV_DONTNEED, write, verify) their own 8 MiB
 *     while the main thread splits and merges their vmas with mprotect(),
 *     and mmaps, mremaps and munmaps areas beside them;
 *   fault_racing_munmap_sees_no_stale_page
 *     a thread reads an area the main thread keeps replacing (MAP_FIXED)
 *     and unmapping: every value read is 0 (a fresh page) or a generation
 *     no older than the last one published before the read -- a page of a
 *     replaced (detached, freed) vma never shows through;
 *   fork_copies_1000_vmas_privately
 *     1000 separate vmas, fork, the parent rewrites and mprotects them while
 *     the child checks its copies.
 *
 * Built with -DSELFCHECK_SHARED (run-userspace.sh --selfcheck, on the host)
 * each scenario is given memory or an order that breaks what it checks,
 * and must report FAIL: the checks can fail.
 *
 * It prints its plan, then "RUSTMM-TEST vma_lock.<name> PASS|FAIL <why>"
 * per scenario (tests/userspace/result.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "result.h"

#define PAGE		4096UL
#define REGION		(8UL << 20)
#define REGION_PAGES	(REGION / PAGE)

#ifdef SELFCHECK_SHARED
#define PRIV	MAP_SHARED
#else
#define PRIV	MAP_PRIVATE
#endif

static int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return FAIL;
}

static const char *const lock_counters[] = {
	"vma_lock_success", "vma_lock_abort", "vma_lock_retry", "vma_lock_miss",
};
#define NR_COUNTERS	(sizeof(lock_counters) / sizeof(lock_counters[0]))

/* The vma_lock_* counters; false if the kernel has none. */
static int lock_stats(unsigned long long v[NR_COUNTERS])
{
	char key[64];
	unsigned long long val;
	FILE *f = fopen("/proc/vmstat", "r");
	int found = 0;

	memset(v, 0, NR_COUNTERS * sizeof(v[0]));
	while (f && fscanf(f, "%63s %llu", key, &val) == 2)
		for (size_t i = 0; i < NR_COUNTERS; i++)
			if (!strcmp(key, lock_counters[i])) {
				v[i] = val;
				found = 1;
			}
	if (f)
		fclose(f);
	return found;
}

static unsigned long long pattern(int tid, unsigned long page, int pass)
{
	return ((unsigned long long)tid << 56) ^ (page << 16) ^ (pass + 1) ^ 0x5a5a000000000000ULL;
}

/* Scenario 1 ------------------------------------------------------------ */

struct faulter {
	char *mem;
	int tid, passes;
	char bad[160];
};

static void *faulter_fn(void *arg)
{
	struct faulter *f = arg;

	for (int pass = 0; pass < f->passes && !f->bad[0]; pass++) {
		if (madvise(f->mem, REGION, MADV_DONTNEED)) {
			snprintf(f->bad, sizeof(f->bad), "madvise: %s", strerror(errno));
			break;
		}
		for (unsigned long p = 0; p < REGION_PAGES; p++)
			*(volatile unsigned long long *)(f->mem + p * PAGE + (p % 500) * 8) =
				pattern(f->tid, p, pass);
		for (unsigned long p = 0; p < REGION_PAGES; p++) {
			unsigned long long v = *(volatile unsigned long long *)
				(f->mem + p * PAGE + (p % 500) * 8);

			if (v != pattern(f->tid, p, pass)) {
				snprintf(f->bad, sizeof(f->bad),
					 "thread %d pass %d page %lu: %#llx, wrote %#llx",
					 f->tid, pass, p, v, pattern(f->tid, p, pass));
				break;
			}
		}
	}
	return NULL;
}

static int faults_race_split_merge_mmap_mremap_with_data_intact(void)
{
	struct faulter f[2];
	pthread_t t[2];
	unsigned long long s0[NR_COUNTERS], s1[NR_COUNTERS];
	int stats = lock_stats(s0), iters = 0, r = 0;
	char *scratch = NULL;

	for (int i = 0; i < 2; i++) {
		f[i] = (struct faulter){ .tid = i + 1, .passes = 6 };
		f[i].mem = mmap(NULL, REGION, PROT_READ | PROT_WRITE, PRIV | MAP_ANONYMOUS, -1, 0);
		if (f[i].mem == MAP_FAILED)
			return fail("mmap: %s", strerror(errno));
	}
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, faulter_fn, &f[i]))
			return fail("pthread_create");
	/* Until both threads are done: split and merge their vmas, churn nearby. */
	for (int joined[2] = { 0, 0 }; !joined[0] || !joined[1];) {
		for (int i = 0; i < 2; i++)
			if (!joined[i] && pthread_tryjoin_np(t[i], NULL) != EBUSY)
				joined[i] = 1;
		for (int i = 0; i < 2; i++) {
			char *mid = f[i].mem + ((iters * 37) % REGION_PAGES) * PAGE;

			/* RW -> RWX -> RW: a split, then a merge that frees a vma */
			if (mprotect(mid, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC) ||
			    mprotect(mid, PAGE, PROT_READ | PROT_WRITE))
				r = r ? r : fail("mprotect: %s", strerror(errno));
#ifdef SELFCHECK_SHARED
			/* the shared region lets this write reach the faulter */
			mid[(((mid - f[i].mem) / PAGE) % 500) * 8] ^= 1;
#endif
		}
		scratch = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		if (scratch != MAP_FAILED) {
			char *moved;

			memset(scratch, iters, 4 * PAGE);
			moved = mremap(scratch, 4 * PAGE, 8 * PAGE, MREMAP_MAYMOVE);
			if (moved == MAP_FAILED)
				moved = scratch;
			else if (moved[3 * PAGE] != (char)iters)
				r = r ? r : fail("mremap lost data");
			munmap(moved, moved == scratch ? 4 * PAGE : 8 * PAGE);
		}
		iters++;
	}
	for (int i = 0; i < 2; i++) {
		if (f[i].bad[0])
			r = r ? r : fail("%s (after %d churn rounds)", f[i].bad, iters);
		munmap(f[i].mem, REGION);
	}
	if (r)
		return r;
	if (stats && lock_stats(s1)) {
		int n = snprintf(why, sizeof(why), "%d churn rounds; vmstat", iters);

		for (size_t i = 0; i < NR_COUNTERS && n < (int)sizeof(why); i++)
			n += snprintf(why + n, sizeof(why) - n, " %s +%llu", lock_counters[i],
				      s1[i] - s0[i]);
		if (s1[0] == s0[0])
			return fail("no fault took the per-VMA lock (%s)", why);
	} else {
		snprintf(why, sizeof(why), "%d churn rounds (no CONFIG_PER_VMA_LOCK_STATS)", iters);
	}
	return 0;
}

/* Scenario 2 ------------------------------------------------------------ */

#define AREA_PAGES	64
#define ROUNDS		3000

static char *area;
static volatile unsigned long long published;	/* last generation written */
static volatile int reader_stop;
static __thread sigjmp_buf segv_jmp;
static __thread volatile int in_read;

static void on_segv(int sig)
{
	if (in_read)
		siglongjmp(segv_jmp, 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

struct reader {
	unsigned long long reads, holes, zeros;
	char bad[200];
};

static void *reader_fn(void *arg)
{
	struct reader *rd = arg;
	volatile unsigned long p = 0;

	while (!reader_stop && !rd->bad[0]) {
		unsigned long long before, v, after;

		p = (p * 7 + 1) % AREA_PAGES;
		before = __atomic_load_n(&published, __ATOMIC_ACQUIRE);
		if (sigsetjmp(segv_jmp, 1)) {
			in_read = 0;
			rd->holes++;	/* read inside the munmap window */
			continue;
		}
		in_read = 1;
		v = *(volatile unsigned long long *)(area + p * PAGE);
		in_read = 0;
		after = __atomic_load_n(&published, __ATOMIC_ACQUIRE);
		rd->reads++;
		if (!v) {
			rd->zeros++;
		} else if (v < before || v > after + 1) {
			snprintf(rd->bad, sizeof(rd->bad),
				 "page %lu read generation %llu, published %llu before the read and %llu after",
				 p, v, before, after);
		}
	}
	return NULL;
}

static int fault_racing_munmap_sees_no_stale_page(void)
{
	struct sigaction sa = { .sa_handler = on_segv, .sa_flags = SA_NODEFER };
	struct reader rd = { 0 };
	pthread_t t;
	int r = 0;

	area = mmap(NULL, AREA_PAGES * PAGE, PROT_READ | PROT_WRITE, PRIV | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		return fail("mmap: %s", strerror(errno));
	published = 0;
	reader_stop = 0;
	sigaction(SIGSEGV, &sa, NULL);
	if (pthread_create(&t, NULL, reader_fn, &rd))
		return fail("pthread_create");
	for (unsigned long long g = 1; g <= ROUNDS && !rd.bad[0]; g++) {
		char *m;

#ifdef SELFCHECK_SHARED
		/* keep the old pages: only page 0 gets the new generation */
		*(unsigned long long *)area = g;
		if (g == 1)
			for (unsigned long p = 1; p < AREA_PAGES; p++)
				*(unsigned long long *)(area + p * PAGE) = g;
		__atomic_store_n(&published, g, __ATOMIC_RELEASE);
		usleep(100);
		continue;
#endif
		if (g % 8 == 0)
			munmap(area, AREA_PAGES * PAGE);	/* a window of no vma */
		m = mmap(area, AREA_PAGES * PAGE, PROT_READ | PROT_WRITE,
			 PRIV | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (m != area) {
			r = fail("mmap(MAP_FIXED): %s", strerror(errno));
			break;
		}
		for (unsigned long p = 0; p < AREA_PAGES; p++)
			*(volatile unsigned long long *)(area + p * PAGE) = g;
		__atomic_store_n(&published, g, __ATOMIC_RELEASE);
	}
	reader_stop = 1;
	pthread_join(t, NULL);
	signal(SIGSEGV, SIG_DFL);
	munmap(area, AREA_PAGES * PAGE);
	if (r)
		return r;
	if (rd.bad[0])
		return fail("%s", rd.bad);
	if (!rd.reads)
		return fail("the reader read nothing");
	snprintf(why, sizeof(why), "%d replacements, %llu reads (%llu of fresh pages, %llu in munmap windows)",
		 ROUNDS, rd.reads, rd.zeros, rd.holes);
	return 0;
}

/* Scenario 3 ------------------------------------------------------------ */

#define NR_VMAS	1000

static int fork_copies_1000_vmas_privately(void)
{
	static char *v[NR_VMAS];
	int go[2], ack[2], status, bad = 0;
	pid_t pid;
	char c;

	/* Two pages each, the second unmapped: 1000 vmas that cannot merge. */
	for (int i = 0; i < NR_VMAS; i++) {
		v[i] = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, PRIV | MAP_ANONYMOUS, -1, 0);
		if (v[i] == MAP_FAILED)
			return fail("mmap %d: %s", i, strerror(errno));
		munmap(v[i] + PAGE, PAGE);
		memset(v[i], i & 0xff, PAGE);
	}
	if (pipe(go) || pipe(ack))
		return fail("pipe");
	pid = fork();
	if (pid < 0)
		return fail("fork: %s", strerror(errno));
	if (!pid) {
		/* The child: its copies are the parent's old data, always. */
		for (int round = 0; round < 2; round++) {
			for (int i = 0; i < NR_VMAS; i++)
				for (unsigned long o = 0; o < PAGE; o += 512)
					if (v[i][o] != (char)(i & 0xff))
						_exit(10 + round);
			if (write(ack[1], "k", 1) != 1 || (!round && read(go[0], &c, 1) != 1))
				_exit(2);
		}
		_exit(0);
	}
	close(ack[1]);	/* a child that exits early ends our reads */
	close(go[0]);
	if (read(ack[0], &c, 1) != 1)
		bad = fail("the child did not check its copies");
	/* The parent rewrites and mprotects everything while the child reads. */
	for (int i = 0; i < NR_VMAS; i++) {
		memset(v[i], ~i & 0xff, PAGE);
		if (i % 2)
			mprotect(v[i], PAGE, PROT_READ);
	}
	signal(SIGPIPE, SIG_IGN);
	if (write(go[1], "g", 1) != 1)
		bad = bad ? bad : fail("pipe write");
	if (read(ack[0], &c, 1) != 1 && !bad)
		bad = fail("the child did not check its copies after the parent's writes");
	waitpid(pid, &status, 0);
	for (int i = 0; i < NR_VMAS && !bad; i++)
		if (v[i][PAGE - 1] != (char)(~i & 0xff))
			bad = fail("parent vma %d lost its write", i);
	for (int i = 0; i < NR_VMAS; i++)
		munmap(v[i], PAGE);
	close(go[1]);
	close(ack[0]);
	if (bad)
		return bad;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return fail("child: %s %d (10: its copy differed before the parent wrote, 11: after)",
			    WIFEXITED(status) ? "exit" : "signal",
			    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	snprintf(why, sizeof(why), "%d vmas copied and checked twice", NR_VMAS);
	return 0;
}

int main(void)
{
	static const struct test_case cases[] = {
		CASE(faults_race_split_merge_mmap_mremap_with_data_intact),
		CASE(fault_racing_munmap_sees_no_stale_page),
		CASE(fork_copies_1000_vmas_privately),
	};

	setvbuf(stdout, NULL, _IONBF, 0);
	return run_cases("vma_lock", cases, sizeof(cases) / sizeof(cases[0]), "") ? 1 : 0;
}
