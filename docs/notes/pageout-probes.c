/*
 * Two one-off probes of 2026-11-30 (docs/test-guests.md, khugepaged's
 * collapse_max_ptes_swap): gcc -static, booted as /tests/ksft_mm_probe in a
 * copy of build/initramfs-racy whose tests/order names only it, with
 * run-userspace.sh's QEMU command line, on build/kunit-x86_64 and kunit-base.
 *   collapsed  MADV_PAGEOUT of part of an exclusive THP: PMD-mapped at
 *              fault, MADV_COLLAPSEd, and collapsed after the selftest's
 *              swap sequence
 *   lru-batch  MADV_PAGEOUT of 64 pages after 65 were swapped in on CPU 0,
 *              from CPU 0 and from CPU 1
 * Without an argument, both. One line per run: "ok"/"not ok" and counts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096UL
#define PMD (2UL << 20)
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

static uint64_t pm(void *a)
{
	uint64_t e = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	pread(fd, &e, 8, (uintptr_t)a / PAGE * 8);
	close(fd);
	return e;
}

static int nswapped(char *p, unsigned long n)
{
	int c = 0;

	for (unsigned long i = 0; i < n; i++) {
		uint64_t e = pm(p + i * PAGE);

		c += (e >> 62 & 1) && !(e >> 63 & 1);
	}
	return c;
}

static int thp(char *p)
{
	uint64_t e = pm(p), f = 0;
	int fd = open("/proc/kpageflags", O_RDONLY);

	if (e >> 63 & 1)
		pread(fd, &f, 8, (e & ((1ULL << 55) - 1)) * 8);
	close(fd);
	return f >> 22 & 1;
}

static char *area(char **raw)
{
	*raw = mmap(NULL, 2 * PMD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return (char *)(((uintptr_t)*raw + PMD - 1) & ~(PMD - 1));
}

static void pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

/* The selftest's swap sequence: 65 pages out, every page read and written. */
static void swap_65_out_and_in(char *p)
{
	madvise(p, 65 * PAGE, MADV_PAGEOUT);
	for (unsigned long i = 0; i < PMD; i += PAGE)
		(void)*(volatile char *)(p + i);
	for (unsigned long i = 0; i < PMD; i += PAGE)
		memset(p + i, i / PAGE + 2, PAGE);
}

/* how: 0 PMD THP at fault, 1 MADV_COLLAPSE, 2 the swap sequence first. */
static void collapsed(const char *name, int how, int k)
{
	char *raw, *p = area(&raw);
	int was, s;

	if (how == 0) {
		madvise(p, PMD, MADV_HUGEPAGE);
		memset(p, 1, PMD);
	} else {
		madvise(p, PMD, MADV_NOHUGEPAGE);
		memset(p, 1, PMD);
		if (how == 2)
			swap_65_out_and_in(p);
		madvise(p, PMD, MADV_HUGEPAGE);
		if (madvise(p, PMD, MADV_COLLAPSE))
			printf("# %s: collapse: %s\n", name, strerror(errno));
	}
	was = thp(p);
	madvise(p, k * PAGE, MADV_PAGEOUT);
	s = nswapped(p, PMD / PAGE);
	printf("%s %s: thp before %d, after %d, swapped %d of %d\n", s == k ? "ok" : "not ok",
	       name, was, thp(p + PMD - PAGE), s, k);
	munmap(raw, 2 * PMD);
}

static void lru_batch(int cpu)
{
	char *raw, *p = area(&raw);
	int s;

	pin(0);
	madvise(p, PMD, MADV_NOHUGEPAGE);
	for (unsigned long i = 0; i < PMD; i += PAGE)
		memset(p + i, i / PAGE + 1, PAGE);
	swap_65_out_and_in(p);
	pin(cpu);
	madvise(p, 64 * PAGE, MADV_PAGEOUT);
	s = nswapped(p, 64);
	printf("%s pageout on cpu %d after swap-in on cpu 0: %d of 64\n", s == 64 ? "ok" : "not ok",
	       cpu, s);
	munmap(raw, 2 * PMD);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";

	for (int r = 0; r < 3; r++) {
		if (strcmp(what, "lru-batch")) {
			collapsed("pmd-thp-pageout-64", 0, 64);
			collapsed("collapsed-pageout-64", 1, 64);
			collapsed("khugepaged-seq-pageout-64", 2, 64);
			collapsed("pmd-thp-pageout-65", 0, 65);
		}
		if (strcmp(what, "collapsed")) {
			lru_batch(0);
			lru_batch(1);
		}
	}
	return 0;
}
