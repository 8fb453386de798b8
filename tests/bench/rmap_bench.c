// SPDX-License-Identifier: GPL-2.0
/*
 * The micro benchmarks of the rmap-ID series (seed 000, "7.2 Micro
 * benchmark"), scaled to a QEMU guest, plus two vm-scalability-style
 * anon-cow cases. Every case times only its action, with CLOCK_MONOTONIC
 * (the micro cases pinned to CPU 0, see pin()); under QEMU -icount
 * shift=0 guest time is a count of executed instructions, so the numbers
 * compare two kernels run the same way.
 *
 *   remap           PTE-remap every PMD-mapped THP: mprotect() one subpage
 *   munmap          munmap() the PTE-mapped area
 *   fork            fork() with the PTE-mapped area (parent's view)
 *   cow             child alive: memset() the whole area
 *   cow-byte        child alive: write one byte per page
 *   cow-reuse       child gone: memset() the whole area
 *   cow-reuse-byte  child gone: write one byte per page
 *   pte-dontneed    MADV_DONTNEED on every subpage
 *
 * each on THP ("thp.", MADV_HUGEPAGE, PTE-mapped first as in the seed) and
 * on order-0 pages ("small.", MADV_NOHUGEPAGE); and
 *
 *   anon-cow-seq    NR_CHILDREN children write every page of a forked
 *   anon-cow-rand   area sequentially / at random (vm-scalability's
 *                   case-anon-cow-seq/-rand), time until all are done
 *
 * Usage: rmap_bench [RUNS [MIB [GROUP]]] (default: $RUSTMM_BENCH_RUNS or 5
 * runs, $RUSTMM_BENCH_MIB or 256 MiB per case, $RUSTMM_BENCH_GROUP or all
 * groups: thp, small, anon-cow). Prints "RUSTMM-BENCH <case> <run> <ns>"
 * per measurement, "RUSTMM-BENCH-ERROR <case> <why>" if a case could not
 * run as defined (e.g. no THP), and "RUSTMM-BENCH-DONE" at the end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE		4096UL
#define THP		(2UL << 20)
#define NR_CHILDREN	2

static unsigned long size;	/* bytes per case */
static int errors;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * scripts/profile.sh: around the action of the case named by
 * RUSTMM_BENCH_PROFILE, two marker instructions (nopl with a displacement
 * of "RMB1"/"RMB0") tell tests/bench/insn_profile.c, a QEMU plugin, when a
 * measured window opens and closes. Outside a profile they are not run.
 */
static int profiling;

static uint64_t start(void)
{
	uint64_t t = now_ns();

	if (profiling)
		asm volatile(".byte 0x0f, 0x1f, 0x84, 0x00, 0x31, 0x42, 0x4d, 0x52" ::: "memory");
	return t;
}

static uint64_t stop(void)
{
	if (profiling)
		asm volatile(".byte 0x0f, 0x1f, 0x84, 0x00, 0x30, 0x42, 0x4d, 0x52" ::: "memory");
	return now_ns();
}

static void error(const char *name, const char *why)
{
	printf("RUSTMM-BENCH-ERROR %s %s\n", name, why);
	errors++;
}

/* THP-aligned memory, populated; PTE-mapped when @thp. NULL on failure. */
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
		mprotect(mem + t, PAGE, PROT_READ);
		mprotect(mem + t, PAGE, PROT_READ | PROT_WRITE);
	}
}

/* Whether the kernel gave THP: AnonHugePages of our mapping in smaps. */
static int has_thp(char *mem)
{
	char line[256], want[64];
	unsigned long kb = 0;
	int inside = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return 0;
	snprintf(want, sizeof(want), "%lx-", (unsigned long)(uintptr_t)mem);
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;

		if (sscanf(line, "%lx-%lx ", &start, &end) == 2)
			inside = start <= (uintptr_t)mem && (uintptr_t)mem < end;
		else if (inside && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb * 1024 >= size / 2;
}

enum action { REMAP, MUNMAP, FORK, COW, COW_BYTE, COW_REUSE, COW_REUSE_BYTE,
	      PTE_DONTNEED };

static const char *const action_name[] = {
	"remap", "munmap", "fork", "cow", "cow-byte", "cow-reuse",
	"cow-reuse-byte", "pte-dontneed",
};

static void write_pages(char *mem, int whole)
{
	if (whole) {
		memset(mem, 2, size);
		return;
	}
	for (unsigned long off = 0; off < size; off += PAGE)
		mem[off] = 3;
}

/* Fork a child that waits for release() (or for @go to close), then exits. */
static pid_t fork_waiting(int go[2])
{
	pid_t child = fork();

	if (child == 0) {
		char b;

		(void)!read(go[0], &b, 1);
		_exit(0);
	}
	return child;
}

static void release(int go[2], pid_t child)
{
	int status;

	(void)!write(go[1], "x", 1);
	waitpid(child, &status, 0);
}

/* One measurement of @a on THP or small pages; the time in ns, 0 if not run. */
static uint64_t micro(enum action a, int thp, char *name)
{
	int go[2];
	uint64_t t0 = 0, t1 = 0;
	pid_t child = 0;
	char *raw, *mem;

	if (pipe(go))
		return error(name, "pipe failed"), 0;
	mem = area(thp, &raw);
	if (!mem) {
		error(name, "mmap failed");
		goto out_pipe;
	}
	if (thp && !has_thp(mem)) {
		error(name, "no THP");
		goto out_mem;
	}
	if (thp && a != REMAP)
		pte_map(mem);
	if (a >= COW && a <= COW_REUSE_BYTE) {
		child = fork_waiting(go);
		/* cow-reuse: the child is gone before the measurement. */
		if (a == COW_REUSE || a == COW_REUSE_BYTE)
			release(go, child);
	}

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
		 * The child waits until the parent has its time: under -icount
		 * the guest clock counts both vCPUs' instructions, so a child
		 * exiting at once would add (part of) its exit_mmap() to the
		 * parent's fork, depending on scheduling.
		 */
		t0 = start();
		child = fork_waiting(go);
		t1 = stop();
		release(go, child);
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
	}
	if (a == COW || a == COW_BYTE)
		release(go, child);
out_mem:
	munmap(raw, size + THP);
out_pipe:
	close(go[0]);
	close(go[1]);
	return t1 - t0;
}

/*
 * vm-scalability's anon-cow: the parent populates the area (THP as the
 * kernel gives it), forks NR_CHILDREN children which wait, then each
 * writes every page once, in order or at random (a fixed permutation).
 * Time from the start signal until the last child is done.
 */
static uint64_t anon_cow(int rand, char *name)
{
	unsigned long nr = size / PAGE;
	int go[2], status;
	pid_t pids[NR_CHILDREN];
	uint64_t t0, t1;
	char *raw, *mem = area(1, &raw);
	unsigned long *order;

	if (!mem || pipe(go))
		return error(name, "mmap or pipe failed"), 0;
	order = malloc(nr * sizeof(*order));
	if (!order)
		return error(name, "malloc failed"), 0;
	for (unsigned long i = 0; i < nr; i++)
		order[i] = i;
	for (unsigned long i = nr - 1; rand && i > 0; i--) {
		unsigned long j = (i * 2654435761UL + 12345) % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (int c = 0; c < NR_CHILDREN; c++) {
		pids[c] = fork();
		if (pids[c] == 0) {
			char b;

			close(go[1]);
			if (read(go[0], &b, 1) != 0)
				_exit(1);
			for (unsigned long i = 0; i < nr; i++)
				mem[order[i] * PAGE] = (char)c;
			_exit(0);
		}
	}
	close(go[0]);
	t0 = start();
	close(go[1]);	/* EOF releases every child at once */
	for (int c = 0; c < NR_CHILDREN; c++)
		waitpid(pids[c], &status, 0);
	t1 = stop();
	free(order);
	munmap(raw, size + THP);
	return t1 - t0;
}

/*
 * Run on CPU 0 only (@one) or on every CPU. The micro cases run on CPU 0,
 * their children too (they inherit the mask): under -icount the guest
 * clock counts every vCPU's instructions, so a child running on the other
 * vCPU inside a measured window would add its work to the parent's time,
 * more or less depending on scheduling. The anon-cow cases use every CPU,
 * as vm-scalability does.
 */
static void pin(int one)
{
	cpu_set_t set;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	CPU_ZERO(&set);
	for (long c = 0; c < (one ? 1 : n); c++)
		CPU_SET(c, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		error("affinity", "sched_setaffinity failed");
}

/*
 * Which cases a boot runs: "thp", "small" or "anon-cow" (scripts/bench.sh
 * boots a fresh guest per group so that the order-0 cases never run after
 * THP cases, whose allocations differ between the kernels), or "all".
 */
static int want(const char *group, const char *g)
{
	return !strcmp(group, "all") || !strcmp(group, g);
}

int main(int argc, char **argv)
{
	const char *env_runs = getenv("RUSTMM_BENCH_RUNS");
	const char *env_mib = getenv("RUSTMM_BENCH_MIB");
	const char *env_group = getenv("RUSTMM_BENCH_GROUP");
	const char *profile = getenv("RUSTMM_BENCH_PROFILE");
	int runs = argc > 1 ? atoi(argv[1]) : env_runs ? atoi(env_runs) : 5;
	unsigned long mib = argc > 2 ? strtoul(argv[2], NULL, 0) :
			    env_mib ? strtoul(env_mib, NULL, 0) : 256;
	const char *group = argc > 3 ? argv[3] : env_group ? env_group : "all";

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!want(group, "thp") && !want(group, "small") &&
	    !want(group, "anon-cow")) {
		printf("RUSTMM-BENCH-ERROR unknown group '%s'\n", group);
		printf("RUSTMM-BENCH-DONE errors=1\n");
		return 1;
	}
	size = mib << 20;
	for (int r = 1; r <= runs; r++) {
		char name[64];
		uint64_t ns;

		pin(1);
		for (int thp = 1; thp >= 0; thp--) {
			if (!want(group, thp ? "thp" : "small"))
				continue;
			for (int a = REMAP; a <= PTE_DONTNEED; a++) {
				snprintf(name, sizeof(name), "%s.%s",
					 thp ? "thp" : "small", action_name[a]);
				profiling = profile && !strcmp(profile, name);
				ns = micro(a, thp, name);
				if (ns)
					printf("RUSTMM-BENCH %s %d %llu\n", name, r,
					       (unsigned long long)ns);
			}
		}
		pin(0);
		for (int rand = 0; rand <= 1 && want(group, "anon-cow"); rand++) {
			snprintf(name, sizeof(name), "anon-cow-%s", rand ? "rand" : "seq");
			profiling = profile && !strcmp(profile, name);
			ns = anon_cow(rand, name);
			if (ns)
				printf("RUSTMM-BENCH %s %d %llu\n", name, r,
				       (unsigned long long)ns);
		}
	}
	printf("RUSTMM-BENCH-DONE errors=%d\n", errors);
	return errors ? 1 : 0;
}
