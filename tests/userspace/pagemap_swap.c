// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/pid/pagemap and swapped-out shared memory (seed 002), booted with
 * the guest's zram swap. Shared pages (a memfd, a tmpfs file, a
 * MAP_SHARED|MAP_ANONYMOUS mapping) are written, some left untouched, and
 * part of the written ones paged out (MADV_PAGEOUT): their PTEs are gone
 * and the swap entries are in the file's page cache. A reader that opted
 * in (ioctl PAGEMAP_SET_OPTS, PAGEMAP_OPT_SHARED_SWAP) must find every
 * swapped-out page -- swapped, with a swap offset no other page has, as
 * many as smaps' Swap counts -- without faulting any back in (pswpin and
 * mincore unchanged), with 8-byte reads and with batches of 64, 512 and
 * 1024 entries alike; untouched pages stay "never touched"; every page
 * keeps its data. The controls: the same reader without the opt-in sees
 * 6.12's answer (a swapped shared page reads as never touched), and a
 * private anon page's swap entry reads the same either way.
 *
 * RUSTMM_PAGEMAP_SWAP=1 says the kernel has CONFIG_PAGEMAP_SHARED_SWAP;
 * with 0 the ioctl must be refused and every read must be 6.12's. Each
 * scenario prints "RUSTMM-TEST pagemap_swap.<name> PASS|FAIL <why>".
 */
#include "thp_test.h"

#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>

#define PM_SOFT_DIRTY	(1ULL << 55)
#define PM_FILE		(1ULL << 61)
#define PM_SWAP		(1ULL << 62)
#define PM_PRESENT	(1ULL << 63)
#define PM_FRAME	((1ULL << 55) - 1)

#ifndef PAGEMAP_SET_OPTS
#define PAGEMAP_SET_OPTS	_IOW('f', 18, uint64_t)
#define PAGEMAP_OPT_SHARED_SWAP	(1 << 0)
#endif

#define NR		256	/* pages per mapping */

static int supported;	/* RUSTMM_PAGEMAP_SWAP=1 */

/* What a page of a scenario's mapping holds. */
enum state { HOLE, PRESENT, SWAPPED };

static enum state plan(unsigned long i)
{
	if (i % 4 == 3)
		return HOLE;
	return i % 2 ? PRESENT : SWAPPED;
}

/* Bytes that differ inside each page (zram and the swap layer store
 * same-filled and zero pages without a write). */
static unsigned char rich(unsigned long off, int seed)
{
	return (unsigned char)(pattern(off / PAGE, seed) ^ ((off % PAGE) * 13 % 251) ^ 0x80) | 1;
}

static int check_data(const char *mem, int seed)
{
	for (unsigned long i = 0; i < NR; i++)
		for (unsigned long o = 0; o < PAGE; o++) {
			unsigned long off = i * PAGE + o;
			unsigned char want = plan(i) == HOLE ? 0 : rich(off, seed);

			if ((unsigned char)mem[off] != want)
				return fail("page %lu byte %lu is %#x, want %#x", i, o,
					    (unsigned char)mem[off], want);
		}
	return PASS;
}

/* Open pagemap, opted in or not: the fd, or -1 with why. */
static int open_pagemap(int opt_in)
{
	uint64_t opts = PAGEMAP_OPT_SHARED_SWAP;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0) {
		fail("open pagemap: %s", strerror(errno));
		return -1;
	}
	if (opt_in && ioctl(fd, PAGEMAP_SET_OPTS, &opts)) {
		fail("PAGEMAP_SET_OPTS: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* The entries of [mem, mem + NR pages) in reads of @batch entries. */
static int read_entries(int fd, const char *mem, uint64_t *e, unsigned long batch)
{
	unsigned long first = (uintptr_t)mem / PAGE;

	for (unsigned long i = 0; i < NR; i += batch) {
		unsigned long n = NR - i < batch ? NR - i : batch;
		ssize_t r = pread(fd, e + i, n * 8, (first + i) * 8);

		if (r != (ssize_t)(n * 8))
			return fail("pread of %lu entries at page %lu: %zd (%s)", n, i, r,
				    strerror(errno));
	}
	return PASS;
}

/* Swap in kB of the smaps entry of the vma at @mem (-1 if not found). */
static long smaps_swap_kb(const char *mem)
{
	char line[256];
	unsigned long start, end;
	long kb = -1;
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			in = start == (uintptr_t)mem;
			continue;
		}
		if (in && sscanf(line, "Swap: %ld kB", &kb) == 1)
			break;
	}
	if (f)
		fclose(f);
	return kb;
}

/* Pages of [mem, mem + NR pages) mincore() calls resident. */
static int resident(const char *mem, unsigned char *vec)
{
	return mincore((void *)mem, NR * PAGE, vec);
}

/*
 * Write the plan's pages with @seed, page the SWAPPED ones out, and check
 * that they left: as many pages out, not resident, no PTE.
 */
static int populate(char *mem, int seed)
{
	unsigned long long out0 = vmstat("pswpout");
	unsigned char vec[NR];
	unsigned long nswap = 0;

	for (unsigned long i = 0; i < NR; i++) {
		if (plan(i) == HOLE)
			continue;
		for (unsigned long o = 0; o < PAGE; o++)
			mem[i * PAGE + o] = (char)rich(i * PAGE + o, seed);
	}
	for (unsigned long i = 0; i < NR; i++)
		if (plan(i) == SWAPPED) {
			nswap++;
			if (madvise(mem + i * PAGE, PAGE, MADV_PAGEOUT))
				return fail("MADV_PAGEOUT of page %lu: %s", i, strerror(errno));
		}
	if (vmstat("pswpout") - out0 != nswap)
		return fail("%llu pages went to swap, want %lu", vmstat("pswpout") - out0, nswap);
	if (resident(mem, vec))
		return fail("mincore: %s", strerror(errno));
	for (unsigned long i = 0; i < NR; i++)
		if (!!(vec[i] & 1) != (plan(i) == PRESENT))
			return fail("page %lu: mincore says %sresident after the page-out", i,
				    vec[i] & 1 ? "" : "not ");
	return PASS;
}

/* Shared memory of one kind: a memfd, a tmpfs file, or shared anon. */
static char *map_shared(const char *kind)
{
	int fd = -1;
	char *mem;

	if (!strcmp(kind, "memfd")) {
		fd = memfd_create("pagemap_swap", 0);
	} else if (!strcmp(kind, "tmpfs")) {
		fd = open("/tmp/pagemap_swap", O_RDWR | O_CREAT | O_TRUNC, 0600);
		unlink("/tmp/pagemap_swap");
	}
	if (strcmp(kind, "anon") && (fd < 0 || ftruncate(fd, NR * PAGE))) {
		fail("%s: %s", kind, strerror(errno));
		return NULL;
	}
	mem = mmap(NULL, NR * PAGE, PROT_READ | PROT_WRITE,
		   MAP_SHARED | (fd < 0 ? MAP_ANONYMOUS : 0), fd, 0);
	if (fd >= 0)
		close(fd);
	if (mem == MAP_FAILED) {
		fail("mmap %s: %s", kind, strerror(errno));
		return NULL;
	}
	return mem;
}

/* Every page as the plan says, for a reader that opted in (@located: it
 * may see the swap location) or did not. */
static int check_entries(const uint64_t *e, int opted, int located)
{
	uint64_t seen[NR];
	unsigned long nseen = 0;

	for (unsigned long i = 0; i < NR; i++) {
		uint64_t v = e[i] & ~PM_SOFT_DIRTY, frame = v & PM_FRAME;

		switch (plan(i)) {
		case HOLE:
			if (v)
				return fail("untouched page %lu reads %#llx", i,
					    (unsigned long long)e[i]);
			break;
		case PRESENT:
			if ((v & (PM_PRESENT | PM_SWAP | PM_FILE)) != (PM_PRESENT | PM_FILE))
				return fail("present page %lu reads %#llx", i,
					    (unsigned long long)e[i]);
			break;
		case SWAPPED:
			if (!opted) {
				if (v)
					return fail("without the opt-in, swapped page %lu reads %#llx, 6.12 reads 0",
						    i, (unsigned long long)e[i]);
				break;
			}
			if ((v & ~PM_FRAME) != (PM_SWAP | PM_FILE))
				return fail("swapped page %lu reads %#llx", i,
					    (unsigned long long)e[i]);
			if (!located) {
				if (frame)
					return fail("page %lu shows swap frame %#llx to a reader without CAP_SYS_ADMIN",
						    i, (unsigned long long)frame);
				break;
			}
			if ((frame & 31) >= 29 || !(frame >> 5))
				return fail("page %lu: swap type %llu offset %#llx", i,
					    (unsigned long long)(frame & 31),
					    (unsigned long long)(frame >> 5));
			for (unsigned long j = 0; j < nseen; j++)
				if (seen[j] == frame)
					return fail("page %lu has the swap location of another page (%#llx)",
						    i, (unsigned long long)frame);
			seen[nseen++] = frame;
			break;
		}
	}
	return PASS;
}

/*
 * The scenario for one kind of shared memory: found without faulting in,
 * the same over every batch size, as many as smaps counts; without the
 * opt-in (and on a kernel without the option) 6.12's entries.
 */
static int swapped_shared_pages_are_found(const char *kind)
{
	static uint64_t e[NR], e2[NR];
	static const unsigned long batches[] = { 1, 64, 512, 1024 };
	unsigned long long in0;
	unsigned char vec[NR];
	int fd, r;
	char *mem = map_shared(kind);

	if (!mem)
		return FAIL;
	r = populate(mem, 3);
	in0 = vmstat("pswpin");
	/* The control first: without the opt-in, 6.12's entries. */
	fd = open_pagemap(0);
	if (r == PASS && fd >= 0) {
		r = read_entries(fd, mem, e, 64);
		if (r == PASS)
			r = check_entries(e, 0, 1);
	} else if (fd < 0) {
		r = FAIL;
	}
	if (fd >= 0)
		close(fd);
	if (r == PASS && !supported) {
		uint64_t opts = PAGEMAP_OPT_SHARED_SWAP;

		fd = open_pagemap(0);
		if (fd >= 0 && (!ioctl(fd, PAGEMAP_SET_OPTS, &opts) || errno != EINVAL))
			r = fail("a kernel without the option accepted PAGEMAP_SET_OPTS (%s)",
				 strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	for (size_t b = 0; supported && r == PASS && b < sizeof(batches) / sizeof(batches[0]); b++) {
		fd = open_pagemap(1);
		if (fd < 0) {
			r = FAIL;
			break;
		}
		r = read_entries(fd, mem, b ? e2 : e, batches[b]);
		close(fd);
		if (r == PASS && !b)
			r = check_entries(e, 1, 1);
		if (r == PASS && b && memcmp(e, e2, sizeof(e)))
			for (unsigned long i = 0; i < NR; i++)
				if (e[i] != e2[i]) {
					r = fail("page %lu: %#llx in 8-byte reads, %#llx in batches of %lu",
						 i, (unsigned long long)e[i],
						 (unsigned long long)e2[i], batches[b]);
					break;
				}
	}
	if (r == PASS && supported) {
		unsigned long n = 0;

		for (unsigned long i = 0; i < NR; i++)
			n += !!(e[i] & PM_SWAP);
		if (smaps_swap_kb(mem) != (long)(n * PAGE / 1024))
			r = fail("%lu pages read swapped, smaps says Swap: %ld kB", n,
				 smaps_swap_kb(mem));
	}
	/* Nothing was faulted back in by the reads. */
	if (r == PASS && vmstat("pswpin") != in0)
		r = fail("reading pagemap swapped %llu pages in", vmstat("pswpin") - in0);
	if (r == PASS && resident(mem, vec))
		r = fail("mincore: %s", strerror(errno));
	for (unsigned long i = 0; r == PASS && i < NR; i++)
		if (plan(i) == SWAPPED && (vec[i] & 1))
			r = fail("page %lu is resident again after the reads", i);
	if (r == PASS)
		r = check_data(mem, 3);
	munmap(mem, NR * PAGE);
	return r;
}

static int memfd_swapped_pages_are_found_without_faulting_them_in(void)
{
	return swapped_shared_pages_are_found("memfd");
}

static int tmpfs_swapped_pages_are_found_without_faulting_them_in(void)
{
	return swapped_shared_pages_are_found("tmpfs");
}

static int shared_anon_swapped_pages_are_found_without_faulting_them_in(void)
{
	return swapped_shared_pages_are_found("anon");
}

/*
 * A reader without CAP_SYS_ADMIN (a child that dropped to nobody) sees the
 * swapped pages as swapped, with frame 0, as 6.12 shows it a swap PTE.
 */
static int unprivileged_reader_sees_swapped_without_location(void)
{
	struct chan msg;
	pid_t pid;
	int r;
	char *mem = map_shared("memfd");

	if (!mem)
		return FAIL;
	r = populate(mem, 4);
	if (r != PASS || !supported) {
		munmap(mem, NR * PAGE);
		return r;
	}
	chan_init(&msg);
	pid = fork();
	if (pid == 0) {
		static uint64_t e[NR];
		int fd, bad = 1;

		/* A uid change makes the task non-dumpable, and its /proc
		 * files root's: dumpable again, they are nobody's. */
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534) ||
		    prctl(PR_SET_DUMPABLE, 1)) {
			fail("setresuid/PR_SET_DUMPABLE: %s", strerror(errno));
		} else if ((fd = open_pagemap(1)) >= 0) {
			bad = read_entries(fd, mem, e, 512) != PASS || check_entries(e, 1, 0) != PASS;
			close(fd);
		}
		child_done(msg.fd[1], bad);
	}
	r = reap(pid, msg.fd[0]);
	if (r == PASS)
		r = check_data(mem, 4);
	munmap(mem, NR * PAGE);
	return r;
}

/*
 * Private anon memory's swapped pages read the same with and without the
 * opt-in: a swap PTE's entry, swapped and not a file page.
 */
static int private_anon_swap_entries_are_unchanged_by_the_opt_in(void)
{
	static uint64_t e[NR], e2[NR];
	int fd, r;
	char *mem = mmap(NULL, NR * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED)
		return fail("mmap: %s", strerror(errno));
	madvise(mem, NR * PAGE, MADV_NOHUGEPAGE);
	r = populate(mem, 5);
	fd = open_pagemap(0);
	if (r == PASS && fd >= 0)
		r = read_entries(fd, mem, e, 64);
	else
		r = FAIL;
	if (fd >= 0)
		close(fd);
	if (r == PASS && supported) {
		fd = open_pagemap(1);
		r = fd < 0 ? FAIL : read_entries(fd, mem, e2, 64);
		if (fd >= 0)
			close(fd);
		if (r == PASS && memcmp(e, e2, sizeof(e)))
			r = fail("the opt-in changed a private anon entry");
	}
	for (unsigned long i = 0; r == PASS && i < NR; i++) {
		uint64_t v = e[i] & ~PM_SOFT_DIRTY & ~PM_FRAME;

		if (plan(i) == SWAPPED && v != PM_SWAP)
			r = fail("swapped private page %lu reads %#llx", i,
				 (unsigned long long)e[i]);
	}
	if (r == PASS)
		r = check_data(mem, 5);
	munmap(mem, NR * PAGE);
	return r;
}

static const struct {
	const char *name;
	int (*fn)(void);
} scenarios[] = {
	{ "memfd_swapped_pages_are_found_without_faulting_them_in",
	  memfd_swapped_pages_are_found_without_faulting_them_in },
	{ "tmpfs_swapped_pages_are_found_without_faulting_them_in",
	  tmpfs_swapped_pages_are_found_without_faulting_them_in },
	{ "shared_anon_swapped_pages_are_found_without_faulting_them_in",
	  shared_anon_swapped_pages_are_found_without_faulting_them_in },
	{ "unprivileged_reader_sees_swapped_without_location",
	  unprivileged_reader_sees_swapped_without_location },
	{ "private_anon_swap_entries_are_unchanged_by_the_opt_in",
	  private_anon_swap_entries_are_unchanged_by_the_opt_in },
};

int main(void)
{
	static const char *const word[] = { "PASS", "FAIL", "SKIP" };
	const char *env = getenv("RUSTMM_PAGEMAP_SWAP");
	cpu_set_t set;
	int failed = 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!env || (strcmp(env, "0") && strcmp(env, "1"))) {
		printf("RUSTMM-TEST pagemap_swap.setup FAIL RUSTMM_PAGEMAP_SWAP must be 0 or 1\n");
		return 1;
	}
	supported = env[0] == '1';
	/* MADV_PAGEOUT drains only this CPU's LRU batch. */
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set) ||
	    write_sys("/proc/sys/vm/page-cluster", "0")) {
		printf("RUSTMM-TEST pagemap_swap.setup FAIL cannot pin to CPU 0 or set page-cluster\n");
		return 1;
	}
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		int r;

		why[0] = 0;
		r = scenarios[i].fn();
		failed += r == FAIL;
		printf("RUSTMM-TEST pagemap_swap.%s %s %s%s\n", scenarios[i].name, word[r],
		       supported ? "[opt-in] " : "[6.12] ", why);
	}
	return failed ? 1 : 0;
}
