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
 * keeps its data, and the slot named on /dev/zram0 holds that data. The
 * controls: the same reader without the opt-in sees the unpatched answer (a
 * swapped shared page reads as never touched), and a private anon page's
 * swap entry reads the same either way.
 *
 * RUSTMM_PAGEMAP_SWAP=1 says the kernel has CONFIG_PAGEMAP_SHARED_SWAP;
 * with 0 the ioctl must be refused and every read must be the unpatched kernel's. Each
 * scenario prints "RUSTMM-TEST pagemap_swap.<name> PASS|FAIL <why>".
 */
#include "thp_test.h"

#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/swap.h>

#define PM_SOFT_DIRTY	(1ULL << 55)
#define PM_FILE		(1ULL << 61)
#define PM_SWAP		(1ULL << 62)
#define PM_PRESENT	(1ULL << 63)
#define PM_FRAME	((1ULL << 55) - 1)

#ifndef PAGEMAP_SET_OPTS
#define PAGEMAP_SET_OPTS	_IOW('f', 18, uint64_t)
#define PAGEMAP_OPT_SHARED_SWAP	(1 << 0)
#endif

/* PAGEMAP_SCAN (Linux 6.7; the build host's headers may predate it). */
#ifndef PAGEMAP_SCAN
#define PAGE_IS_FILE		(1 << 2)
#define PAGE_IS_PRESENT		(1 << 3)
#define PAGE_IS_SWAPPED		(1 << 4)

struct page_region {
	uint64_t start;
	uint64_t end;
	uint64_t categories;
};

struct pm_scan_arg {
	uint64_t size;
	uint64_t flags;
	uint64_t start;
	uint64_t end;
	uint64_t walk_end;
	uint64_t vec;
	uint64_t vec_len;
	uint64_t max_pages;
	uint64_t category_inverted;
	uint64_t category_mask;
	uint64_t category_anyof_mask;
	uint64_t return_mask;
};

#define PAGEMAP_SCAN	_IOWR('f', 16, struct pm_scan_arg)
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

/* Which pages of the area are private memory (the vma-kinds scenario). */
static unsigned char private_page[NR];

/*
 * Set in a forked reader: fork() does not copy the PTEs of a shared file
 * mapping, so the parent's present pages are, for the child, pages of the
 * file it does not map (file page only, with the opt-in; none without).
 */
static int child_view;

/* Every page as the plan says, for a reader that opted in (@located: it
 * may see the swap location) or did not. A private page (anon, or a
 * private mapping's copy) reads as the unpatched kernel reads it either way. */
static int check_entries(const uint64_t *e, int opted, int located)
{
	uint64_t seen[NR];
	unsigned long nseen = 0;

	for (unsigned long i = 0; i < NR; i++) {
		uint64_t v = e[i] & ~PM_SOFT_DIRTY, frame = v & PM_FRAME;

		if (private_page[i]) {
			uint64_t want = plan(i) == HOLE ? 0 : plan(i) == PRESENT ? PM_PRESENT : PM_SWAP;

			if ((v & ~PM_FRAME & ~(1ULL << 56)) != want)
				return fail("private page %lu reads %#llx", i,
					    (unsigned long long)e[i]);
			continue;
		}
		switch (plan(i)) {
		case HOLE:
			if (v)
				return fail("untouched page %lu reads %#llx", i,
					    (unsigned long long)e[i]);
			break;
		case PRESENT:
			if (child_view) {
				if (v != (opted ? PM_FILE : 0))
					return fail("page %lu, present in the parent, reads %#llx in the child",
						    i, (unsigned long long)e[i]);
				break;
			}
			if ((v & (PM_PRESENT | PM_SWAP | PM_FILE)) != (PM_PRESENT | PM_FILE))
				return fail("present page %lu reads %#llx", i,
					    (unsigned long long)e[i]);
			break;
		case SWAPPED:
			if (!opted) {
				if (v)
					return fail("without the opt-in, swapped page %lu reads %#llx, the unpatched kernel reads 0",
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
 * opt-in (and on a kernel without the option) the unpatched entries.
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
	/* The control first: without the opt-in, the unpatched entries. */
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
		if (smaps_kb(mem, "Swap") != (long)(n * PAGE / 1024))
			r = fail("%lu pages read swapped, smaps says Swap: %ld kB", n,
				 smaps_kb(mem, "Swap"));
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
 * swapped pages as swapped, with frame 0, as the kernel shows it a swap PTE.
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
			child_view = 1;
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

/*
 * One read across four vmas of different kinds, 64 pages each: private
 * anon, a shared memfd, a private mapping of a memfd (written pages are
 * its own anonymous copies), shared anon. Each page reads by its kind:
 * the shared ones as swapped file pages (opted in), the private ones as
 * the unpatched kernel reads them.
 */
static int a_read_across_vmas_reports_each_page_by_its_kind(void)
{
	static uint64_t e[NR];
	unsigned long q = NR / 4 * PAGE;
	int fd = memfd_create("pagemap_swap_kinds", 0), fd2 = memfd_create("pagemap_swap_priv", 0);
	char *mem = mmap(NULL, NR * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int r = PASS;

	if (fd < 0 || fd2 < 0 || ftruncate(fd, q) || ftruncate(fd2, q) || mem == MAP_FAILED)
		return fail("memfd/mmap: %s", strerror(errno));
	if (mmap(mem, q, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED ||
	    mmap(mem + q, q, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED ||
	    mmap(mem + 2 * q, q, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd2, 0) == MAP_FAILED ||
	    mmap(mem + 3 * q, q, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		r = fail("mmap MAP_FIXED: %s", strerror(errno));
	close(fd);
	close(fd2);
	madvise(mem, q, MADV_NOHUGEPAGE);
	for (unsigned long i = 0; i < NR; i++)
		private_page[i] = i < NR / 4 || (i >= NR / 2 && i < 3 * NR / 4);
	if (r == PASS)
		r = populate(mem, 6);
	fd = r == PASS ? open_pagemap(supported) : -1;
	if (r == PASS && fd < 0)
		r = FAIL;
	if (r == PASS)
		r = read_entries(fd, mem, e, NR);
	if (fd >= 0)
		close(fd);
	if (r == PASS)
		r = check_entries(e, supported, 1);
	if (r == PASS)
		r = check_data(mem, 6);
	memset(private_page, 0, sizeof(private_page));
	munmap(mem, NR * PAGE);
	return r;
}

/* The frames an opted-in reader saw for the swapped pages (0: none). */
static uint64_t frames[NR];

/*
 * While @stop is 0, read the area's entries (opted in, 512-entry batches)
 * and check each against what it may be while the parent changes the
 * file: unchanged, a hole (@hole_ok), a page in the page cache
 * (@resident_ok), present -- never a swap location other than the one
 * the page had. Returns the number of reads, or -1 with why.
 */
static long race_reader(const char *mem, volatile int *stop, int hole_ok, int resident_ok)
{
	static uint64_t e[NR];
	long reads = 0;
	int fd = open_pagemap(supported);

	if (fd < 0)
		return -1;
	while (!*stop) {
		if (read_entries(fd, mem, e, 512) != PASS) {
			close(fd);
			return -1;
		}
		for (unsigned long i = 0; i < NR; i++) {
			uint64_t v = e[i] & ~PM_SOFT_DIRTY;

			/* Without the opt-in, a child maps none of the file's pages. */
			if (!v && (hole_ok || plan(i) == HOLE || !supported))
				continue;
			/* Present in the parent: a file page the child does not map. */
			if (v == PM_FILE && (plan(i) == PRESENT || (resident_ok && plan(i) == SWAPPED)))
				continue;
			if ((v & (PM_PRESENT | PM_FILE)) == (PM_PRESENT | PM_FILE) && plan(i) != HOLE)
				continue;
			if ((v & ~PM_FRAME) == (PM_SWAP | PM_FILE) && plan(i) == SWAPPED &&
			    (v & PM_FRAME) == frames[i])
				continue;
			fail("read %ld: page %lu reads %#llx (its swap frame was %#llx)", reads, i,
			     (unsigned long long)e[i], (unsigned long long)frames[i]);
			close(fd);
			return -1;
		}
		reads++;
	}
	close(fd);
	return reads;
}

/* A child running race_reader() over @mem; *stop ends it. */
static pid_t start_reader(const char *mem, volatile int *stop, int hole_ok, int resident_ok,
			  struct chan *msg)
{
	pid_t pid;

	chan_init(msg);
	pid = fork();
	if (pid == 0) {
		long n = race_reader(mem, stop, hole_ok, resident_ok);

		if (n >= 0 && n < 2)
			fail("only %ld reads during the change", n);
		child_done(msg->fd[1], n < 2);
	}
	return pid;
}

/* Record the swap frames an opted-in reader sees now. */
static int record_frames(const char *mem)
{
	static uint64_t e[NR];
	int fd = open_pagemap(supported), r;

	if (fd < 0)
		return FAIL;
	r = read_entries(fd, mem, e, NR);
	close(fd);
	for (unsigned long i = 0; i < NR; i++)
		frames[i] = supported && plan(i) == SWAPPED ? e[i] & PM_FRAME : 0;
	return r == PASS ? check_entries(e, supported, 1) : r;
}

/*
 * A memfd truncated (to half, a quarter, then nothing) while another
 * process reads its mapping's entries: every entry is what it was or a
 * hole, never a swap location the page did not have; afterwards every
 * page past the end reads as a hole.
 */
static int truncation_during_reads_never_shows_a_foreign_location(void)
{
	static uint64_t e[NR];
	volatile int *stop = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int fd = memfd_create("pagemap_swap_trunc", 0), r;
	struct chan msg;
	char *mem;
	pid_t pid;

	if (fd < 0 || ftruncate(fd, NR * PAGE) || stop == MAP_FAILED)
		return fail("memfd: %s", strerror(errno));
	mem = mmap(NULL, NR * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED)
		return fail("mmap: %s", strerror(errno));
	r = populate(mem, 7);
	if (r == PASS)
		r = record_frames(mem);
	if (r != PASS)
		goto out;
	*stop = 0;
	pid = start_reader(mem, stop, 1, 0, &msg);
	usleep(20000);
	for (unsigned long len = NR / 2; ; len /= 2) {
		if (ftruncate(fd, len * PAGE))
			r = fail("ftruncate: %s", strerror(errno));
		usleep(20000);
		if (!len)
			break;
	}
	*stop = 1;
	if (reap(pid, msg.fd[0]) == FAIL)
		r = FAIL;
	if (r == PASS) {
		int pfd = open_pagemap(supported);

		r = pfd < 0 ? FAIL : read_entries(pfd, mem, e, NR);
		for (unsigned long i = 0; r == PASS && i < NR; i++)
			if (e[i] & ~PM_SOFT_DIRTY)
				r = fail("page %lu past the end reads %#llx", i,
					 (unsigned long long)e[i]);
		if (pfd >= 0)
			close(pfd);
	}
out:
	close(fd);
	munmap(mem, NR * PAGE);
	munmap((void *)stop, PAGE);
	return r;
}

/*
 * swapoff of the guest's swap device while another process reads: every
 * entry is what it was or the page is back in the page cache (file page,
 * not mapped here); afterwards no page reads as swapped, every page has
 * its data, and the device is back on.
 */
static int swapoff_during_reads_leaves_pages_in_the_cache(void)
{
	static uint64_t e[NR];
	volatile int *stop = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct chan msg;
	char *mem = map_shared("memfd");
	pid_t pid;
	int r, fd;

	if (!mem || stop == MAP_FAILED)
		return FAIL;
	r = populate(mem, 8);
	if (r == PASS)
		r = record_frames(mem);
	if (r != PASS)
		goto out;
	*stop = 0;
	pid = start_reader(mem, stop, 0, 1, &msg);
	usleep(20000);
	if (swapoff("/dev/zram0"))
		r = fail("swapoff: %s", strerror(errno));
	usleep(20000);
	*stop = 1;
	if (reap(pid, msg.fd[0]) == FAIL)
		r = FAIL;
	fd = open_pagemap(supported);
	if (fd < 0 || read_entries(fd, mem, e, NR) != PASS)
		r = FAIL;
	if (fd >= 0)
		close(fd);
	for (unsigned long i = 0; r == PASS && i < NR; i++) {
		uint64_t v = e[i] & ~PM_SOFT_DIRTY;
		uint64_t want = plan(i) == SWAPPED && supported ? PM_FILE : v;

		if (v & PM_SWAP || v != want || (plan(i) == HOLE && v))
			r = fail("after swapoff, page %lu reads %#llx", i, (unsigned long long)e[i]);
	}
	if (swapon("/dev/zram0", 0) && r == PASS)
		r = fail("swapon again: %s", strerror(errno));
	if (r == PASS)
		r = check_data(mem, 8);
out:
	munmap(mem, NR * PAGE);
	munmap((void *)stop, PAGE);
	return r;
}

#define MTHP_DIR	"/sys/kernel/mm/transparent_hugepage/hugepages-64kB/"
#define MTHP_PAGES	16

/* An mTHP counter of the 64 KiB size (-1 if absent). */
static long long mthp_stat(const char *name)
{
	char path[128], buf[32];

	snprintf(path, sizeof(path), MTHP_DIR "stats/%s", name);
	return read_sys(path, buf, sizeof(buf)) ? -1 : atoll(buf);
}

/*
 * Shared anon memory in 64 KiB folios (64 KiB the only anonymous-shmem
 * mTHP size while it runs), paged out: shmem swaps such a folio out whole
 * and leaves one order-4 swap entry for its 16 pages in the XArray. With
 * the opt-in every page reads swapped at its own offset -- the entry's
 * plus the page's index in it: 16 consecutive offsets per folio, no two
 * pages alike. Checked only where the kernel swapped folios out whole
 * (the 64 KiB swpout counter); data intact afterwards.
 */
/* Every byte of [mem, mem + NR pages) is back (swapped in) as written. */
static int all_bytes_back(const char *mem, int seed)
{
	for (unsigned long off = 0; off < NR * PAGE; off++)
		if ((unsigned char)mem[off] != rich(off, seed))
			return fail("byte %#lx is %#x after swap-in, want %#x", off,
				    (unsigned char)mem[off], rich(off, seed));
	return PASS;
}

static int a_large_swap_entry_gives_each_page_its_own_offset(void)
{
	static uint64_t e[NR];
	char old[128];
	long long alloc0 = mthp_stat("shmem_alloc"), out0 = mthp_stat("swpout");
	long long fb0 = mthp_stat("swpout_fallback");
	char *mem;
	int fd, r = PASS;

	if (alloc0 < 0 || read_sys(MTHP_DIR "shmem_enabled", old, sizeof(old)))
		return fail("no 64 KiB shmem mTHP in this kernel (%s)", MTHP_DIR);
	if (write_sys(MTHP_DIR "shmem_enabled", "always"))
		return fail("cannot enable 64 KiB shmem mTHP: %s", strerror(errno));
	mem = mmap(NULL, NR * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		write_sys(MTHP_DIR "shmem_enabled", old);
		return fail("mmap: %s", strerror(errno));
	}
	for (unsigned long off = 0; off < NR * PAGE; off++)
		mem[off] = (char)rich(off, 9);
	write_sys(MTHP_DIR "shmem_enabled", old);
	if (mthp_stat("shmem_alloc") - alloc0 != NR / MTHP_PAGES)
		r = fail("%lld 64 KiB shmem folios allocated, want %lu",
			 mthp_stat("shmem_alloc") - alloc0, NR / MTHP_PAGES);
	if (r == PASS && madvise(mem, NR * PAGE, MADV_PAGEOUT))
		r = fail("MADV_PAGEOUT: %s", strerror(errno));
	if (r == PASS && (mthp_stat("swpout") - out0 != NR / MTHP_PAGES ||
			  mthp_stat("swpout_fallback") != fb0))
		r = fail("%lld folios swapped out whole (want %lu), %lld split first",
			 mthp_stat("swpout") - out0, NR / MTHP_PAGES,
			 mthp_stat("swpout_fallback") - fb0);
	fd = r == PASS ? open_pagemap(supported) : -1;
	if (r == PASS && (fd < 0 || read_entries(fd, mem, e, 512) != PASS))
		r = FAIL;
	if (fd >= 0)
		close(fd);
	for (unsigned long i = 0; r == PASS && i < NR; i++) {
		uint64_t v = e[i] & ~PM_SOFT_DIRTY, first = e[i - i % MTHP_PAGES] & PM_FRAME;

		if (!supported) {
			if (v)
				r = fail("page %lu reads %#llx, the unpatched kernel reads 0", i, (unsigned long long)e[i]);
			continue;
		}
		if ((v & ~PM_FRAME) != (PM_SWAP | PM_FILE) ||
		    (v & PM_FRAME) != first + ((i % MTHP_PAGES) << 5))
			r = fail("page %lu of a swapped 64 KiB folio reads %#llx (its first page %#llx)",
				 i, (unsigned long long)e[i], (unsigned long long)first);
		for (unsigned long j = 0; r == PASS && j < i; j++)
			if (e[j] == e[i])
				r = fail("pages %lu and %lu read the same location", j, i);
	}
	if (r == PASS)
		r = all_bytes_back(mem, 9);
	munmap(mem, NR * PAGE);
	return r;
}

/*
 * The location is the page's own: the slot pagemap names on /dev/zram0
 * (the guest's one swap device) holds the page's data. The first half is
 * paged out in one call and takes consecutive slots (the walk hands those
 * to Rust as runs), the second half one page at a time from the last
 * (each slot below its left neighbour's: single entries); 8-byte and
 * 512-entry reads agree. Without the kernel's option every entry reads 0.
 */
static int each_swapped_page_holds_its_data_at_the_reported_location(void)
{
	static uint64_t e[NR], batched[NR];
	static unsigned char buf[PAGE] __attribute__((aligned(PAGE)));
	unsigned long consecutive = 0;
	char *mem = map_shared("memfd");
	int fd, zfd = -1, r = PASS;

	if (!mem)
		return FAIL;
	for (unsigned long off = 0; off < NR * PAGE; off++)
		mem[off] = (char)rich(off, 11);
	if (madvise(mem, NR / 2 * PAGE, MADV_PAGEOUT))
		r = fail("MADV_PAGEOUT of the first half: %s", strerror(errno));
	for (unsigned long i = NR; r == PASS && i-- > NR / 2;)
		if (madvise(mem + i * PAGE, PAGE, MADV_PAGEOUT))
			r = fail("MADV_PAGEOUT of page %lu: %s", i, strerror(errno));
	fd = r == PASS ? open_pagemap(supported) : -1;
	if (r == PASS && (fd < 0 || read_entries(fd, mem, e, 1) != PASS ||
			  read_entries(fd, mem, batched, 512) != PASS))
		r = FAIL;
	if (fd >= 0)
		close(fd);
	if (r == PASS && memcmp(e, batched, sizeof(e)))
		r = fail("8-byte and 512-entry reads differ");
	if (r == PASS && supported) {
		zfd = open("/dev/zram0", O_RDONLY | O_DIRECT);
		if (zfd < 0)
			r = fail("open /dev/zram0 O_DIRECT: %s", strerror(errno));
	}
	for (unsigned long i = 0; r == PASS && i < NR; i++) {
		uint64_t v = e[i] & ~PM_SOFT_DIRTY, frame = v & PM_FRAME;

		if (!supported) {
			if (v)
				r = fail("page %lu reads %#llx, the unpatched kernel reads 0", i, (unsigned long long)e[i]);
			continue;
		}
		if ((v & ~PM_FRAME) != (PM_SWAP | PM_FILE) || !(frame >> 5) ||
		    (frame & 31) != (e[0] & 31))
			r = fail("page %lu reads %#llx (page 0: %#llx)", i,
				 (unsigned long long)e[i], (unsigned long long)e[0]);
		else if (pread(zfd, buf, PAGE, (off_t)(frame >> 5) * PAGE) != PAGE)
			r = fail("pread of slot %#llx: %s", (unsigned long long)(frame >> 5),
				 strerror(errno));
		for (unsigned long o = 0; r == PASS && o < PAGE; o++)
			if (buf[o] != rich(i * PAGE + o, 11))
				r = fail("slot %#llx, named for page %lu, holds %#x at byte %lu, want %#x",
					 (unsigned long long)(frame >> 5), i, buf[o], o,
					 rich(i * PAGE + o, 11));
		if (r == PASS && i && i < NR / 2 && (frame >> 5) == ((e[i - 1] & PM_FRAME) >> 5) + 1)
			consecutive++;
	}
	/* Else this scenario does not exercise the runs it is meant to. */
	if (r == PASS && supported && !consecutive)
		r = fail("no two neighbours of the first half on consecutive slots");
	if (zfd >= 0)
		close(zfd);
	if (r == PASS)
		r = all_bytes_back(mem, 11);
	munmap(mem, NR * PAGE);
	return r;
}

/*
 * PAGEMAP_SCAN over [mem, mem + NR pages), the pages whose categories
 * include @want, each page's returned categories (PAGE_IS_SWAPPED,
 * PAGE_IS_FILE, PAGE_IS_PRESENT) into @cats (0: not reported).
 */
static int scan_pages(int fd, const char *mem, uint64_t want, uint64_t *cats)
{
	static struct page_region regions[NR];
	struct pm_scan_arg arg = {
		.size = sizeof(arg),
		.start = (uintptr_t)mem,
		.end = (uintptr_t)mem + NR * PAGE,
		.vec = (uintptr_t)regions,
		.vec_len = NR,
		.category_mask = want,
		.return_mask = PAGE_IS_SWAPPED | PAGE_IS_FILE | PAGE_IS_PRESENT,
	};
	long n = ioctl(fd, PAGEMAP_SCAN, &arg);

	memset(cats, 0, NR * sizeof(*cats));
	if (n < 0)
		return fail("PAGEMAP_SCAN: %s", strerror(errno));
	for (long i = 0; i < n; i++)
		for (uint64_t a = regions[i].start; a < regions[i].end; a += PAGE) {
			if (a < arg.start || a >= arg.end)
				return fail("PAGEMAP_SCAN returned %#llx, outside the range",
					    (unsigned long long)a);
			cats[(a - arg.start) / PAGE] = regions[i].categories;
		}
	return PASS;
}

/*
 * What a scan must return for page @i: @want the category it asked for,
 * @mapped whether this mapping's PTEs map the present pages.
 */
static uint64_t scan_expects(unsigned long i, uint64_t want, int opted, int mapped)
{
	uint64_t c = 0;

	switch (plan(i)) {
	case HOLE:
		break;
	case PRESENT:
		c = mapped ? PAGE_IS_PRESENT | PAGE_IS_FILE : opted ? PAGE_IS_FILE : 0;
		break;
	case SWAPPED:
		c = opted ? PAGE_IS_SWAPPED | PAGE_IS_FILE : 0;
		break;
	}
	return (c & want) == want ? c : 0;
}

/*
 * PAGEMAP_SCAN for swapped (and for file) pages of a memfd, through the
 * PTEs of the mapping that wrote it (their PTEs of the swapped-out pages
 * are none) and through a second mapping that never touched it (no page
 * table at all: the scan's hole path): an opted-in scan finds exactly the
 * swapped-out pages, as swapped and file, and the file's other pages as
 * file, agreeing page by page with an opted-in read; without the opt-in
 * (the control, and 7.3's answer) it finds no swapped page. Nothing is
 * swapped in, and the data stays.
 */
static int a_scan_for_swapped_pages_finds_shared_memory_only_when_opted_in(void)
{
	static uint64_t cats[NR], e[NR];
	static const uint64_t wants[] = { PAGE_IS_SWAPPED, PAGE_IS_FILE };
	unsigned long long in0;
	int memfd = memfd_create("pagemap_swap_scan", 0), r = PASS;
	char *mem = MAP_FAILED, *area = MAP_FAILED, *view = MAP_FAILED;

	if (memfd < 0 || ftruncate(memfd, NR * PAGE))
		return fail("memfd: %s", strerror(errno));
	mem = mmap(NULL, NR * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	/* The view: alone in a page table's span, so it has no page table. */
	area = mmap(NULL, 4UL << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED || area == MAP_FAILED)
		r = fail("mmap: %s", strerror(errno));
	if (r == PASS) {
		char *at = (char *)(((uintptr_t)area + (2UL << 20) - 1) & ~((2UL << 20) - 1));

		view = mmap(at, NR * PAGE, PROT_READ, MAP_SHARED | MAP_FIXED, memfd, 0);
		if (view == MAP_FAILED)
			r = fail("mmap the view: %s", strerror(errno));
	}
	if (r == PASS)
		r = populate(mem, 7);
	in0 = vmstat("pswpin");
	for (int opted = 0; r == PASS && opted <= supported; opted++) {
		int fd = open_pagemap(opted);

		if (fd < 0) {
			r = FAIL;
			break;
		}
		for (int v = 0; r == PASS && v < 2; v++) {
			const char *at = v ? view : mem;

			for (size_t w = 0; r == PASS && w < 2; w++) {
				r = scan_pages(fd, at, wants[w], cats);
				for (unsigned long i = 0; r == PASS && i < NR; i++) {
					uint64_t want = scan_expects(i, wants[w], opted, !v);

					if (cats[i] != want)
						r = fail("%s scan of the %s for %s: page %lu (%s) returned %#llx, want %#llx",
							 opted ? "opted-in" : "plain", v ? "view" : "writer",
							 w ? "file pages" : "swapped pages", i,
							 plan(i) == HOLE ? "hole" : plan(i) == PRESENT ?
							 "present" : "swapped out",
							 (unsigned long long)cats[i],
							 (unsigned long long)want);
				}
			}
			/* The scan and a read of the same file agree. */
			if (r == PASS && opted)
				r = read_entries(fd, at, e, 64);
			if (r == PASS && opted)
				r = scan_pages(fd, at, PAGE_IS_SWAPPED, cats);
			for (unsigned long i = 0; r == PASS && opted && i < NR; i++)
				if (!(e[i] & PM_SWAP) != !(cats[i] & PAGE_IS_SWAPPED))
					r = fail("page %lu of the %s: read %#llx, scan %#llx", i,
						 v ? "view" : "writer", (unsigned long long)e[i],
						 (unsigned long long)cats[i]);
		}
		close(fd);
	}
	if (r == PASS && vmstat("pswpin") != in0)
		r = fail("scanning swapped %llu pages in", vmstat("pswpin") - in0);
	if (r == PASS)
		r = check_data(mem, 7);
	if (area != MAP_FAILED)
		munmap(area, 4UL << 20);
	if (mem != MAP_FAILED)
		munmap(mem, NR * PAGE);
	close(memfd);
	return r;
}

/*
 * Bad input, on an opted-in file and a plain one: unknown option bits and
 * unreadable option pointers are refused (EINVAL, EFAULT) and change
 * nothing; options set back to 0 give the unpatched entries again;
 * misaligned reads are refused (EINVAL) and a read or a scan into memory
 * the reader cannot write fails with EFAULT, many times over, after which
 * the same file reads and scans as before. On a kernel without the option
 * every PAGEMAP_SET_OPTS is EINVAL.
 */
static int bad_options_pointers_and_reads_are_refused_and_change_nothing(void)
{
	static uint64_t e[NR], e2[NR], cats[NR];
	static const uint64_t bad_opts[] = { 1ULL << 1, 1ULL << 63, ~0ULL };
	uint64_t opts = PAGEMAP_OPT_SHARED_SWAP;
	char *mem = map_shared("memfd"), *hole;
	int fd = -1, r;

	if (!mem)
		return FAIL;
	hole = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	r = hole == MAP_FAILED ? fail("mmap: %s", strerror(errno)) : populate(mem, 11);
	if (r == PASS) {
		fd = open_pagemap(0);
		r = fd < 0 ? FAIL : PASS;
	}
	for (size_t i = 0; r == PASS && i < sizeof(bad_opts) / sizeof(bad_opts[0]); i++) {
		uint64_t o = bad_opts[i] | (supported ? PAGEMAP_OPT_SHARED_SWAP : 0);

		if (!ioctl(fd, PAGEMAP_SET_OPTS, &o) || errno != EINVAL)
			r = fail("PAGEMAP_SET_OPTS %#llx: %s, want EINVAL", (unsigned long long)o,
				 strerror(errno));
	}
	if (r == PASS && supported && (!ioctl(fd, PAGEMAP_SET_OPTS, NULL) || errno != EFAULT))
		r = fail("PAGEMAP_SET_OPTS from NULL: %s, want EFAULT", strerror(errno));
	if (r == PASS && supported && (!ioctl(fd, PAGEMAP_SET_OPTS, hole) || errno != EFAULT))
		r = fail("PAGEMAP_SET_OPTS from PROT_NONE memory: %s, want EFAULT",
			 strerror(errno));
	/* Refused options changed nothing: the plain entries. */
	if (r == PASS)
		r = read_entries(fd, mem, e, 64);
	if (r == PASS)
		r = check_entries(e, 0, 1);
	if (r == PASS && !supported) {
		if (!ioctl(fd, PAGEMAP_SET_OPTS, &opts) || errno != EINVAL)
			r = fail("a kernel without the option accepted PAGEMAP_SET_OPTS (%s)",
				 strerror(errno));
		goto out;
	}
	/* Opted in, then back out with 0: the plain entries again. */
	if (r == PASS && ioctl(fd, PAGEMAP_SET_OPTS, &opts))
		r = fail("PAGEMAP_SET_OPTS: %s", strerror(errno));
	if (r == PASS)
		r = read_entries(fd, mem, e2, 64);
	if (r == PASS)
		r = check_entries(e2, 1, 1);
	opts = 0;
	if (r == PASS && ioctl(fd, PAGEMAP_SET_OPTS, &opts))
		r = fail("PAGEMAP_SET_OPTS 0: %s", strerror(errno));
	if (r == PASS)
		r = read_entries(fd, mem, e2, 64);
	if (r == PASS && memcmp(e, e2, sizeof(e)))
		r = fail("after PAGEMAP_SET_OPTS 0 the entries are not the plain ones");
	opts = PAGEMAP_OPT_SHARED_SWAP;
	if (r == PASS && ioctl(fd, PAGEMAP_SET_OPTS, &opts))
		r = fail("PAGEMAP_SET_OPTS: %s", strerror(errno));
	for (int i = 0; r == PASS && i < 1000; i++) {
		off_t at = (off_t)((uintptr_t)mem / PAGE) * 8;
		struct pm_scan_arg arg = {
			.size = sizeof(arg), .start = (uintptr_t)mem,
			.end = (uintptr_t)mem + NR * PAGE, .vec = (uintptr_t)hole, .vec_len = NR,
			.category_mask = PAGE_IS_SWAPPED, .return_mask = PAGE_IS_SWAPPED,
		};
		uint64_t v;

		if (pread(fd, &v, 8, at + 4) != -1 || errno != EINVAL)
			r = fail("a read at a misaligned offset: %s, want EINVAL", strerror(errno));
		else if (pread(fd, e2, 12, at) != -1 || errno != EINVAL)
			r = fail("a read of 12 bytes: %s, want EINVAL", strerror(errno));
		else if (pread(fd, hole, 8 * 64, at) != -1 || errno != EFAULT)
			r = fail("a read into PROT_NONE memory: %s, want EFAULT", strerror(errno));
		else if (ioctl(fd, PAGEMAP_SCAN, &arg) != -1 || errno != EFAULT)
			r = fail("a scan into PROT_NONE memory: %s, want EFAULT", strerror(errno));
	}
	/* The file reads and scans as before. */
	if (r == PASS)
		r = read_entries(fd, mem, e2, 512);
	if (r == PASS)
		r = check_entries(e2, 1, 1);
	if (r == PASS)
		r = scan_pages(fd, mem, PAGE_IS_SWAPPED, cats);
	for (unsigned long i = 0; r == PASS && i < NR; i++)
		if (!(e2[i] & PM_SWAP) != !(cats[i] & PAGE_IS_SWAPPED))
			r = fail("page %lu: read %#llx, scan %#llx after the refusals", i,
				 (unsigned long long)e2[i], (unsigned long long)cats[i]);
out:
	if (r == PASS)
		r = check_data(mem, 11);
	if (fd >= 0)
		close(fd);
	if (hole != MAP_FAILED)
		munmap(hole, PAGE);
	munmap(mem, NR * PAGE);
	return r;
}

static const struct test_case scenarios[] = {
	CASE(memfd_swapped_pages_are_found_without_faulting_them_in),
	CASE(tmpfs_swapped_pages_are_found_without_faulting_them_in),
	CASE(shared_anon_swapped_pages_are_found_without_faulting_them_in),
	CASE(unprivileged_reader_sees_swapped_without_location),
	CASE(private_anon_swap_entries_are_unchanged_by_the_opt_in),
	CASE(a_read_across_vmas_reports_each_page_by_its_kind),
	CASE(truncation_during_reads_never_shows_a_foreign_location),
	CASE(swapoff_during_reads_leaves_pages_in_the_cache),
	CASE(a_large_swap_entry_gives_each_page_its_own_offset),
	CASE(each_swapped_page_holds_its_data_at_the_reported_location),
	CASE(a_scan_for_swapped_pages_finds_shared_memory_only_when_opted_in),
	CASE(bad_options_pointers_and_reads_are_refused_and_change_nothing),
};

int main(void)
{
	const char *env = getenv("RUSTMM_PAGEMAP_SWAP");
	cpu_set_t set;

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
	return run_cases("pagemap_swap", scenarios, sizeof(scenarios) / sizeof(scenarios[0]),
			 supported ? "[opt-in] " : "[unpatched] ") ? 1 : 0;
}
