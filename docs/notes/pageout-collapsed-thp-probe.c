/*
 * A one-off probe of 2026-11-30 (docs/test-guests.md, khugepaged's
 * collapse_max_ptes_swap): gcc -static, booted as /tests/ksft_mm_probe in a
 * copy of build/initramfs-racy whose tests/order names only it, with
 * run-userspace.sh's QEMU command line, on build/kunit-x86_64 and kunit-base.
 */
/* Probe: partial MADV_PAGEOUT of an exclusive THP (PMD-mapped, collapsed). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <fcntl.h>
#include <unistd.h>
#include <errno.h>
#include <sys/mman.h>
#define PAGE 4096UL
#define PMD (2UL << 20)
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
static uint64_t pm(void *a)
{
	uint64_t e = 0; int fd = open("/proc/self/pagemap", O_RDONLY);
	pread(fd, &e, 8, (uintptr_t)a / PAGE * 8); close(fd); return e;
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
	uint64_t e = pm(p), f = 0; int fd = open("/proc/kpageflags", O_RDONLY);
	if (!(e >> 63 & 1)) { close(fd); return 0; }
	pread(fd, &f, 8, (e & ((1ULL << 55) - 1)) * 8); close(fd);
	return f >> 22 & 1;
}
static char *area(void)
{
	char *r = mmap(NULL, 2 * PMD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return (char *)(((uintptr_t)r + PMD - 1) & ~(PMD - 1));
}
static void run(const char *name, int how, int k)
{
	char *p = area();
	if (how == 0) {			/* PMD THP at fault */
		madvise(p, PMD, MADV_HUGEPAGE);
		memset(p, 1, PMD);
	} else {			/* small pages, then MADV_COLLAPSE */
		madvise(p, PMD, MADV_NOHUGEPAGE);
		memset(p, 1, PMD);
		if (how == 2) {		/* khugepaged test: 65 out, back in */
			madvise(p, 65 * PAGE, MADV_PAGEOUT);
			for (unsigned long i = 0; i < PMD; i += PAGE) (void)*(volatile char *)(p + i);
			memset(p, 2, PMD);
		}
		madvise(p, PMD, MADV_HUGEPAGE);
		if (madvise(p, PMD, MADV_COLLAPSE)) printf("# %s: collapse: %s\n", name, strerror(errno));
	}
	int was = thp(p);
	madvise(p, k * PAGE, MADV_PAGEOUT);
	int s = nswapped(p, PMD / PAGE);
	printf("%s %s: thp before %d, after %d, swapped %d of %d\n", s == k ? "ok" : "not ok", name, was, thp(p + PMD - PAGE), s, k);
	munmap(p, PMD);
}
int main(void)
{
	for (int r = 0; r < 3; r++) {
		run("pmd-thp-pageout-64", 0, 64);
		run("collapsed-pageout-64", 1, 64);
		run("khugepaged-seq-pageout-64", 2, 64);
		run("pmd-thp-pageout-65", 0, 65);
	}
	return 0;
}
