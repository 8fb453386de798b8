/*
 * A one-off probe of 2026-11-30 (docs/test-guests.md, khugepaged's
 * collapse_max_ptes_swap): gcc -static, booted as /tests/ksft_mm_probe in a
 * copy of build/initramfs-racy whose tests/order names only it, with
 * run-userspace.sh's QEMU command line, on build/kunit-x86_64 and kunit-base.
 */
/* Probe: MADV_PAGEOUT after the pages were swapped in on another CPU. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <fcntl.h>
#include <unistd.h>
#include <sched.h>
#include <sys/mman.h>
#define PAGE 4096UL
#define PMD (2UL << 20)
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
static void pin(int cpu)
{
	cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); sched_setaffinity(0, sizeof(s), &s);
}
static void run(int other)
{
	char *r = mmap(NULL, 2 * PMD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *p = (char *)(((uintptr_t)r + PMD - 1) & ~(PMD - 1));
	pin(0);
	madvise(p, PMD, MADV_NOHUGEPAGE);
	for (unsigned long i = 0; i < PMD; i += PAGE) memset(p + i, i / PAGE + 1, PAGE);
	madvise(p, 65 * PAGE, MADV_PAGEOUT);
	int s0 = nswapped(p, 65);
	for (unsigned long i = 0; i < PMD; i += PAGE) (void)*(volatile char *)(p + i);	/* swap in on CPU 0 */
	for (unsigned long i = 0; i < PMD; i += PAGE) memset(p + i, i / PAGE + 2, PAGE);
	pin(other ? 1 : 0);
	madvise(p, 64 * PAGE, MADV_PAGEOUT);
	int s = nswapped(p, 64);
	printf("%s pageout on cpu %d after swap-in on cpu 0: first %d of 65, then %d of 64\n",
	       s == 64 ? "ok" : "not ok", other ? 1 : 0, s0, s);
	munmap(r, 2 * PMD);
}
int main(void)
{
	for (int i = 0; i < 3; i++) { run(0); run(1); }
	return 0;
}
