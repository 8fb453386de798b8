// SPDX-License-Identifier: GPL-2.0
/*
 * COW reuse of PTE-mapped anonymous THP after fork, seen from userspace:
 * whether a write fault keeps the page where it is (same PFN, no copy) or
 * copies it, read from /proc/self/pagemap (root), with the data checked in
 * every process.
 *
 * RUSTMM_COW_REUSE=1 in the environment (the guest's kernel command line)
 * says the kernel has CONFIG_MM_RMAP_ID: a folio every mapping of which is
 * ours must then be reused. RUSTMM_COW_REUSE=0 says it is the base
 * behaviour, which depends on the running kernel (uname(2)'s release):
 *  - Linux < 6.15 (6.12) never reuses a large folio: every written page
 *    must have moved.
 *  - Linux >= 6.15 has upstream's "MM owner tracking" (CONFIG_MM_ID,
 *    selected by THP): two mm_id slots per large folio and a sticky "maybe
 *    shared" bit. It reuses a PTE-mapped THP (one PTE per fault) where the
 *    slots can prove the folio is ours: after fork, once the child exited or
 *    unmapped it. It cannot after a double fork: the grandchild holds no
 *    slot and the bit stays set when the parent and the child exit, so it
 *    copies every page the grandchild writes -- where CONFIG_MM_RMAP_ID,
 *    which counts every mapper, reuses. (Which scenario reuses where, and
 *    why: expect_reuse_after_child below.)
 * Folios another process still maps, or that a GUP reference holds, must
 * be copied on every kernel -- reusing them is a data leak.
 *
 * Once a write fault has proven a folio exclusive, the reuse kernel also
 * makes the folio's other read-only PTEs in that page table and vma
 * writable in the same fault: one write fault per folio, counted with
 * getrusage() minor faults. The *_not_upgraded scenarios check every PTE
 * that must stay read-only (a read-only vma part, uffd-wp, soft-dirty
 * tracking, a page of another folio, a swap entry): each still takes its
 * write fault (or SIGSEGV) on every kernel.
 *
 * It prints its plan, then "RUSTMM-TEST cow_reuse.<name> PASS|FAIL|SKIP
 * <why>" per scenario (tests/userspace/result.h); no THP is a FAIL. Only
 * the soft-dirty scenario may skip, and only where the architecture has
 * no soft-dirty tracking (arm64): it declares so in its plan.
 */
#include "thp_test.h"

#include <linux/userfaultfd.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC	(1 << 15)	/* 6.7; newer than the libc headers */
#endif
#define PM_SOFT_DIRTY	(1ULL << 55)
#define PM_UFFD_WP	(1ULL << 57)
#define PM_SWAP		(1ULL << 62)
#define TOUCH_BYTE	11

#define NR_PAGES	(SIZE / PAGE)

/* RUSTMM_COW_REUSE=1: CONFIG_MM_RMAP_ID, reuse and one write fault per folio. */
static int expect_reuse;

/* The running kernel is Linux >= 6.15: upstream's mm_id (CONFIG_MM_ID). */
static int mm_id_kernel;

/*
 * Whether the pages of a PTE-mapped THP must stay put when we write them
 * after a fork whose child has stopped mapping them (exited, or unmapped
 * the whole area), nobody else mapping them and no extra reference: the
 * reuse kernel's (RUSTMM_COW_REUSE=1), or a base kernel >= 6.15's.
 *
 * Upstream 7.3 (the same since 6.15), read in mm/memory.c and
 * include/linux/rmap.h: __wp_can_reuse_large_anon_folio() refuses when
 * folio_large_mapcount() <= 1 (it rather frees the large folio), when
 * FOLIO_MM_IDS_SHARED_BIT is set, and when mapcount != refcount (checked,
 * then rechecked under the mapcount bit-lock); otherwise the faulting PTE
 * alone is reused (wp_page_reuse(): a write fault per page). The slots:
 *  - The first mapping sets slot 0 to our mm_id (folio_add_new_anon_rmap()
 *    -> folio_set_large_mapcount(); for a PMD THP the PTE-remap of
 *    thp_area() then adds its PTEs and drops the PMD in the same slot; an
 *    mTHP is PTE-mapped from the start). The bit is clear.
 *  - fork() adds the child's mappings (folio_try_dup_anon_rmap_ptes() ->
 *    folio_add_large_mapcount(dst_vma)): slot 1 is the child's, and taking
 *    a second slot sets the bit.
 *  - The child's exit (exit_mmap()) or munmap() of its whole range removes
 *    its mappings: slot 1 drops to -1 and is freed, and
 *    folio_sub_return_large_mapcount() clears the bit because slot 0's
 *    count now equals the folio's total.
 * So after fork and the child's exit or full unmap, our first write to each
 * page finds mapcount = nr_pages > 1, the bit clear and mapcount ==
 * refcount: reused. Per scenario on upstream >= 6.15:
 *  - child_exited_memset_reuses, child_exited_byte_writes_reuse,
 *    child_exited_one_write_fault_per_folio, read_only_vma_part_is_not_upgraded,
 *    threads_racing_on_one_folio_keep_every_write (the racing faults take
 *    the same PTE lock, no folio reference before it):
 *    reuse, one write fault per page.
 *  - child_alive_but_unmapped_reuses: the child's munmap() of the whole
 *    area frees its slot the same way: reuse.
 *  - gup_reference_forces_copy: the first THP has the pipe's 16 page
 *    references beyond its mappings (mapcount != refcount; each copy drops
 *    one mapping and its reference): every page copied; the second THP
 *    reused.
 *  - child_keeps_one_page_forces_copy: the child's one page keeps slot 1
 *    and the bit: every page copied (the bit clears only once our slot
 *    would equal the total, i.e. when we map nothing).
 *  - other_folio_and_swap_entry_are_not_upgraded: the big folio's 510
 *    pages (3 and 5 are other folios) are reused. Should the deferred
 *    split (it is partially mapped) split it first, its pages are small
 *    folios with one reference each and are reused too.
 *  - forced_write_*, uffd_wp_*, soft_dirty_*, ksm_*: no PFN expectation.
 * The double-fork scenarios (grandchild_*) copy on every base kernel.
 */
static int expect_reuse_after_child;

/* PFNs of every page of the area. */
static void pfns(char *mem, uint64_t *out)
{
	for (unsigned long i = 0; i < NR_PAGES; i++)
		out[i] = pfn_of(mem + i * PAGE);
}

/*
 * Compare the PFNs of pages [from, to) after the writes with @before:
 * @reused says whether they must have stayed put (reuse) or all moved
 * (copy). Also check the pages are still THP when reused.
 */
static int pfns_say(char *mem, const uint64_t *before, unsigned long from,
		    unsigned long to, int reused)
{
	static uint64_t after[MAX_AREA_PAGES];

	pfns(mem, after);
	for (unsigned long i = from; i < to; i++) {
		if (!before[i] || !after[i])
			return fail("page %lu has no PFN (not root?)", i);
		if (reused && after[i] != before[i])
			return fail("page %lu was copied (pfn %#llx -> %#llx), want reuse",
				    i, (unsigned long long)before[i],
				    (unsigned long long)after[i]);
		if (!reused && after[i] == before[i])
			return fail("page %lu was reused (pfn %#llx), want a copy", i,
				    (unsigned long long)before[i]);
		if (reused && !is_thp(mem + i * PAGE))
			return fail("page %lu is no longer part of a THP", i);
	}
	return PASS;
}

/* Fork a child that exits at once; wait for it. */
static int fork_and_reap_child(void)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return fail("fork: %s", strerror(errno));
	if (pid == 0)
		_exit(0);
	waitpid(pid, &status, 0);
	return PASS;
}

/* The child is gone: every page of ours is reused on a full write. */
static int child_exited_memset_reuses(char *mem)
{
	static uint64_t before[MAX_AREA_PAGES];

	pfns(mem, before);
	if (fork_and_reap_child() == FAIL || rmap_verify(mem, SIZE) == FAIL)
		return FAIL;
	fill(mem, 0, SIZE, 1);
	if (check(mem, 0, SIZE, 1) || rmap_verify(mem, SIZE) == FAIL)
		return FAIL;
	return pfns_say(mem, before, 0, NR_PAGES, expect_reuse_after_child);
}

/* Same with one byte per page: each fault decides on its own. */
static int child_exited_byte_writes_reuse(char *mem)
{
	static uint64_t before[MAX_AREA_PAGES];

	pfns(mem, before);
	if (fork_and_reap_child() == FAIL)
		return FAIL;
	for (unsigned long off = 0; off < SIZE; off += PAGE)
		mem[off + 7] ^= 0x3c;
	for (unsigned long off = 0; off < SIZE; off += PAGE)
		if ((unsigned char)mem[off + 7] != (pattern(off / PAGE, 0) ^ 0x3c))
			return fail("lost the byte written at %#lx", off);
	return pfns_say(mem, before, 0, NR_PAGES, expect_reuse_after_child);
}

/*
 * The child is alive but has unmapped the whole area: only we map the
 * folios, so precise tracking reuses them (6.12's estimate cannot; the
 * child's munmap() frees its mm_id slot, so >= 6.15 reuses too).
 */
static int child_alive_but_unmapped_reuses(char *mem)
{
	static uint64_t before[MAX_AREA_PAGES];
	struct chan unmapped, done, msg;
	pid_t pid;

	pfns(mem, before);
	chan_init(&unmapped);
	chan_init(&done);
	chan_init(&msg);
	pid = fork();
	if (pid == 0) {
		munmap(raw_area, SIZE + THP);
		post(&unmapped);
		await(&done);
		child_done(msg.fd[1], 0);
	}
	await(&unmapped);
	if (rmap_verify(mem, SIZE) == FAIL) {
		post(&done);
		reap(pid, msg.fd[0]);
		return FAIL;
	}
	fill(mem, 0, SIZE, 1);
	post(&done);
	if (reap(pid, msg.fd[0]) == FAIL || check(mem, 0, SIZE, 1))
		return FAIL;
	return pfns_say(mem, before, 0, NR_PAGES, expect_reuse_after_child);
}

/*
 * The child keeps one page of each THP mapped: every page of those folios
 * must be copied on every kernel, and the child must still read the data
 * as of fork in its page.
 */
static int child_keeps_one_page_forces_copy(char *mem)
{
	static uint64_t before[MAX_AREA_PAGES];
	struct chan unmapped, written, msg;
	const unsigned long keep = 5 * PAGE;
	pid_t pid;

	pfns(mem, before);
	chan_init(&unmapped);
	chan_init(&written);
	chan_init(&msg);
	pid = fork();
	if (pid == 0) {
		int bad = 0;

		for (unsigned long t = 0; t < SIZE; t += THP) {
			munmap(mem + t, keep);
			munmap(mem + t + keep + PAGE, THP - keep - PAGE);
		}
		post(&unmapped);
		await(&written);
		for (unsigned long t = 0; t < SIZE && !bad; t += THP)
			bad = check(mem, t + keep, t + keep + PAGE, 0);
		child_done(msg.fd[1], bad);
	}
	await(&unmapped);
	/* The recount walks the child's mm too: 512 + 1 mappings. */
	if (rmap_verify(mem, SIZE) == FAIL) {
		post(&written);
		reap(pid, msg.fd[0]);
		return FAIL;
	}
	fill(mem, 0, SIZE, 1);
	post(&written);
	if (reap(pid, msg.fd[0]) == FAIL || check(mem, 0, SIZE, 1))
		return FAIL;
	return pfns_say(mem, before, 0, NR_PAGES, 0);
}

/*
 * A GUP reference (vmsplice() into a pipe, taken before fork) on the first
 * THP: refcount > mapcount, so its pages must be copied even though only we
 * map them, and the pipe must deliver the data as of the splice. The second
 * THP has no extra reference and is reused.
 */
static int gup_reference_forces_copy(char *mem)
{
	static uint64_t before[MAX_AREA_PAGES];
	static char buf[16 * PAGE];
	/* Inside the first THP (16 pages: all of a 64K mTHP). */
	const unsigned long len = sizeof(buf) < THP ? sizeof(buf) : THP;
	struct iovec iov = { .iov_base = mem, .iov_len = len };
	ssize_t got = 0, n;
	int p[2], r;

	if (pipe(p))
		return fail("pipe: %s", strerror(errno));
	fcntl(p[1], F_SETPIPE_SZ, (int)len);
	if (vmsplice(p[1], &iov, 1, 0) != (ssize_t)len)
		return fail("vmsplice: %s", strerror(errno));
	pfns(mem, before);
	if (fork_and_reap_child() == FAIL)
		return FAIL;
	fill(mem, 0, SIZE, 1);
	r = pfns_say(mem, before, 0, THP / PAGE, 0);
	if (r == PASS)
		r = pfns_say(mem, before, THP / PAGE, NR_PAGES, expect_reuse_after_child);
	while (got < (ssize_t)len && (n = read(p[0], buf + got, len - got)) > 0)
		got += n;
	close(p[0]);
	close(p[1]);
	if (r != PASS)
		return r;
	if (got != (ssize_t)len)
		return fail("read %zd of %lu bytes from the pipe", got, len);
	if (check(buf, 0, len, 0))
		return FAIL;
	return check(mem, 0, SIZE, 1) ? FAIL : PASS;
}

/* This process's minor faults so far. */
static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/*
 * Flip byte TOUCH_BYTE of each page in [from, to) (page indexes) whose bit
 * is not set in @skip (NULL: none); the minor faults that took.
 */
static long touch(char *mem, unsigned long from, unsigned long to, const char *skip)
{
	long f0 = minflt();

	for (unsigned long i = from; i < to; i++)
		if (!skip || !skip[i])
			mem[i * PAGE + TOUCH_BYTE] ^= 0x5a;
	return minflt() - f0;
}

/* 0 if page i of [from, to) holds seed 0's pattern, byte TOUCH_BYTE flipped. */
static int check_touched(const char *mem, unsigned long from, unsigned long to)
{
	for (unsigned long i = from; i < to; i++)
		for (unsigned long b = 0; b < PAGE; b++) {
			unsigned char want = pattern(i, 0) ^ (b == TOUCH_BYTE ? 0x5a : 0);

			if ((unsigned char)mem[i * PAGE + b] != want)
				return fail("page %lu byte %lu is %#x, want %#x", i, b,
					    (unsigned char)mem[i * PAGE + b], want);
		}
	return PASS;
}

/* The /proc/self/pagemap entry of @addr (0 if unreadable). */
static uint64_t pagemap_of(void *addr)
{
	uint64_t ent = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd >= 0 && pread(fd, &ent, 8, (uintptr_t)addr / PAGE * 8) != 8)
		ent = 0;
	if (fd >= 0)
		close(fd);
	return ent;
}

static sigjmp_buf segv_jmp;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(segv_jmp, 1);
}

/* Whether a write of one byte at @p is refused with SIGSEGV. */
static int write_segfaults(volatile char *p)
{
	struct sigaction sa = { .sa_handler = on_segv }, old;
	int refused = 1;

	sigaction(SIGSEGV, &sa, &old);
	if (!sigsetjmp(segv_jmp, 1)) {
		*p = (char)(*p ^ 0x5a);
		refused = 0;
	}
	sigaction(SIGSEGV, &old, NULL);
	return refused;
}

/*
 * The write faults @got of a step (this process's minor faults: a stray one
 * elsewhere counts too). Where a page must keep its read-only PTE (and on
 * every kernel that copies) each page must fault at least once: a PTE made
 * writable takes none. More is allowed there: arm64 may take an
 * access-flag fault too after a contpte block was unfolded. Where the
 * reuse kernel must have upgraded the folio, the count is the folio's
 * faults plus at most STRAY_FAULTS (a loaded 64K run once counted one
 * more than its one fault), and it must stay below one per page.
 */
#define STRAY_FAULTS	2

static int faults_at_least(const char *step, long got, long want)
{
	if (got < want)
		return fail("%s: %ld write faults, want at least %ld (one per page)",
			    step, got, want);
	return PASS;
}

/* Pages that are writable already: no fault of theirs, stray ones only. */
static int faults_none(const char *step, long got)
{
	if (got > STRAY_FAULTS)
		return fail("%s: %ld write faults, want none", step, got);
	return PASS;
}

/*
 * On the reuse kernel @reuse_want (the folio's own faults, + stray ones,
 * fewer than @copy_want); on a base kernel at least @copy_want (6.12 copies
 * each page, >= 6.15 reuses one PTE per fault where it reuses).
 */
static int faults_expect(const char *step, long got, long reuse_want, long copy_want)
{
	if (!expect_reuse)
		return faults_at_least(step, got, copy_want);
	if (got < reuse_want || got > reuse_want + STRAY_FAULTS || got >= copy_want)
		return fail("%s: %ld write faults, want %ld (one per folio; one per page would be %ld)",
			    step, got, reuse_want, copy_want);
	return PASS;
}

/*
 * The child is gone: the first write to each folio proves it exclusive and
 * makes all its PTEs writable, so the whole area takes one write fault per
 * folio (6.12: one per page, each a copy; >= 6.15: one per page, each a
 * reuse). Same PFNs (not on 6.12), data intact.
 */
static int child_exited_one_write_fault_per_folio(char *mem)
{
	static uint64_t before[MAX_AREA_PAGES];
	long f;

	pfns(mem, before);
	if (fork_and_reap_child() == FAIL)
		return FAIL;
	f = touch(mem, 0, NR_PAGES, NULL);
	if (faults_expect("every page", f, NR_THP, NR_PAGES) == FAIL ||
	    check_touched(mem, 0, NR_PAGES) == FAIL)
		return FAIL;
	if (faults_none("again", touch(mem, 0, NR_PAGES, NULL)) == FAIL)
		return FAIL;
	return pfns_say(mem, before, 0, NR_PAGES, expect_reuse_after_child);
}

/*
 * mprotect(PROT_READ) of the second half of the first folio after fork: a
 * write fault in the first half upgrades only the first half. Writing the
 * read-only half must still raise SIGSEGV (a writable PTE there would let
 * the write through); after PROT_READ|PROT_WRITE again, the first write
 * there proves the folio again and upgrades the rest.
 */
static int read_only_vma_part_is_not_upgraded(char *mem)
{
	static uint64_t before[MAX_AREA_PAGES];
	const unsigned long n = THP / PAGE, half = n / 2;
	unsigned long wrote = 0;

	pfns(mem, before);
	if (fork_and_reap_child() == FAIL)
		return FAIL;
	if (mprotect(mem + half * PAGE, (n - half) * PAGE, PROT_READ))
		return fail("mprotect(PROT_READ): %s", strerror(errno));
	if (faults_expect("writable half", touch(mem, 0, half, NULL), 1, (long)half) == FAIL)
		return FAIL;
	for (unsigned long i = half; i < n; i++)
		wrote += !write_segfaults(mem + i * PAGE + TOUCH_BYTE);
	if (wrote)
		return fail("%lu writes to the PROT_READ half went through", wrote);
	if (mprotect(mem + half * PAGE, (n - half) * PAGE, PROT_READ | PROT_WRITE))
		return fail("mprotect(PROT_READ|PROT_WRITE): %s", strerror(errno));
	if (faults_expect("half made writable again", touch(mem, half, n, NULL), 1,
			  (long)(n - half)) == FAIL)
		return FAIL;
	if (check_touched(mem, 0, n) == FAIL || check(mem, THP, SIZE, 0))
		return FAIL;
	return pfns_say(mem, before, 0, n, expect_reuse_after_child);
}

/*
 * A write through /proc/self/mem (FOLL_FORCE) into a PROT_READ mapping
 * after fork: the fault may reuse the page it writes, but the vma has no
 * VM_WRITE, so no PTE may become writable; every direct write still gets
 * SIGSEGV.
 */
static int forced_write_into_read_only_mapping_upgrades_nothing(char *mem)
{
	const unsigned long n = THP / PAGE;
	unsigned long wrote = 0;
	char b = (char)(pattern(0, 0) ^ 0x5a);
	int fd;

	if (fork_and_reap_child() == FAIL)
		return FAIL;
	if (mprotect(mem, THP, PROT_READ))
		return fail("mprotect(PROT_READ): %s", strerror(errno));
	fd = open("/proc/self/mem", O_RDWR);
	if (fd < 0 || pwrite(fd, &b, 1, (off_t)(uintptr_t)(mem + TOUCH_BYTE)) != 1) {
		if (fd >= 0)
			close(fd);
		return fail("write to /proc/self/mem: %s", strerror(errno));
	}
	close(fd);
	for (unsigned long i = 0; i < n; i++)
		wrote += !write_segfaults(mem + i * PAGE + TOUCH_BYTE);
	if (wrote)
		return fail("%lu writes to the PROT_READ mapping went through", wrote);
	if (check_touched(mem, 0, 1) == FAIL || check(mem, PAGE, SIZE, 0))
		return FAIL;
	return PASS;
}

/*
 * uffd-wp (asynchronous mode) on the second half of the first folio: a
 * write fault in the first half must not make the protected PTEs writable,
 * so each write there still faults (and the kernel resolves it, clearing
 * the page's uffd-wp bit: a write that skipped the fault would leave the
 * bit set and be lost to the tracker).
 */
static int uffd_wp_range_is_not_upgraded(char *mem)
{
	const unsigned long n = THP / PAGE, half = n / 2;
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_WP_ASYNC };
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)mem, .len = THP },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	struct uffdio_writeprotect wp = {
		.range = { .start = (uintptr_t)mem + half * PAGE, .len = (n - half) * PAGE },
		.mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};
	int uffd = (int)syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	int r = FAIL;

	if (uffd < 0)
		return fail("userfaultfd: %s", strerror(errno));
	if (ioctl(uffd, UFFDIO_API, &api)) {
		/* x86_64 and arm64 have uffd-wp in 6.12; the test kernels, USERFAULTFD. */
		close(uffd);
		return fail("UFFDIO_API with UFFD_FEATURE_WP_ASYNC: %s", strerror(errno));
	}
	if (ioctl(uffd, UFFDIO_REGISTER, &reg) || ioctl(uffd, UFFDIO_WRITEPROTECT, &wp)) {
		fail("UFFDIO_REGISTER/WRITEPROTECT: %s", strerror(errno));
		goto out;
	}
	if (fork_and_reap_child() == FAIL)
		goto out;
	for (unsigned long i = half; i < n; i++)
		if (!(pagemap_of(mem + i * PAGE) & PM_UFFD_WP)) {
			fail("page %lu lost its uffd-wp bit at fork", i);
			goto out;
		}
	if (faults_expect("unprotected half", touch(mem, 0, half, NULL), 1, (long)half) == FAIL)
		goto out;
	for (unsigned long i = half; i < n; i++)
		if (!(pagemap_of(mem + i * PAGE) & PM_UFFD_WP)) {
			fail("page %lu lost its uffd-wp bit without a write", i);
			goto out;
		}
	if (faults_at_least("uffd-wp half", touch(mem, half, n, NULL), (long)(n - half)) == FAIL)
		goto out;
	for (unsigned long i = half; i < n; i++)
		if (pagemap_of(mem + i * PAGE) & PM_UFFD_WP) {
			fail("page %lu was written but keeps its uffd-wp bit", i);
			goto out;
		}
	r = check_touched(mem, 0, n);
out:
	close(uffd);
	return r;
}

/*
 * Soft-dirty tracking: after "4" > /proc/self/clear_refs every write must
 * fault so that the kernel sets the page's soft-dirty bit. A write fault
 * that proves the folio exclusive must leave the other PTEs read-only:
 * each written page is soft-dirty afterwards, an unwritten one is not.
 */
static int soft_dirty_pages_are_not_upgraded(char *mem)
{
	const unsigned long n = THP / PAGE;
	long f;
	int fd;

	if (fork_and_reap_child() == FAIL)
		return FAIL;
	fd = open("/proc/self/clear_refs", O_WRONLY);
	if (fd < 0 || write(fd, "4", 1) != 1) {
		if (fd >= 0)
			close(fd);
		return fail("clear_refs: %s", strerror(errno));
	}
	close(fd);
	if (pagemap_of(mem) & PM_SOFT_DIRTY)
		return fail("page 0 still soft-dirty after clear_refs");
	/*
	 * clear_refs write-protected every page of the process, our stack
	 * too: a write there may add a fault to a count, never remove one.
	 */
	f = touch(mem, 0, 1, NULL);
	if (f < 1)
		return fail("first page: %ld write faults, want at least 1", f);
	if (!(pagemap_of(mem) & PM_SOFT_DIRTY)) {
#ifdef __x86_64__
		return fail("page 0 written but not soft-dirty");
#else
		snprintf(why, sizeof(why), "no soft-dirty tracking on this architecture");
		return SKIP;
#endif
	}
	f = touch(mem, 1, n - 1, NULL);
	if (f < (long)(n - 2))
		return fail("other pages: %ld write faults, want at least %lu (one per page)",
			    f, n - 2);
	for (unsigned long i = 0; i < n - 1; i++)
		if (!(pagemap_of(mem + i * PAGE) & PM_SOFT_DIRTY))
			return fail("page %lu written but not soft-dirty", i);
	if (pagemap_of(mem + (n - 1) * PAGE) & PM_SOFT_DIRTY)
		return fail("page %lu soft-dirty but not written", n - 1);
	return check_touched(mem, 0, n - 1) == FAIL || check(mem, (n - 1) * PAGE, SIZE, 0) ?
	       FAIL : PASS;
}

/*
 * Inside the first folio's span, page 3 is replaced by a small folio that is
 * then swapped out, and page 5 by a small folio that is read-only after
 * fork: a write fault that proves the big folio exclusive upgrades its own
 * pages only. Page 3 stays a swap entry (and comes back with its data),
 * page 5 still takes its own write fault.
 */
static int other_folio_and_swap_entry_are_not_upgraded(char *mem)
{
	static uint64_t before[MAX_AREA_PAGES];
	static char skip[MAX_AREA_PAGES];
	const unsigned long n = THP / PAGE;
	uint64_t pfn0 = pfn_of(mem);

	for (unsigned long i = 3; i <= 5; i += 2) {
		madvise(mem + i * PAGE, PAGE, MADV_DONTNEED);
		memset(mem + i * PAGE, 0xa0 + (int)i, PAGE);
		if (pfn_of(mem + i * PAGE) - pfn0 < n)
			return fail("page %lu came back from the big folio", i);
	}
	pfns(mem, before);
	if (fork_and_reap_child() == FAIL)
		return FAIL;
	if (madvise(mem + 3 * PAGE, PAGE, MADV_PAGEOUT))
		return fail("MADV_PAGEOUT: %s", strerror(errno));
	if (!(pagemap_of(mem + 3 * PAGE) & PM_SWAP))
		return fail("page 3 was not swapped out (pagemap %#llx)",
			    (unsigned long long)pagemap_of(mem + 3 * PAGE));
	memset(skip, 0, sizeof(skip));
	skip[3] = skip[5] = 1;
	if (faults_at_least("first page", touch(mem, 0, 1, NULL), 1) == FAIL)
		return FAIL;
	if (!(pagemap_of(mem + 3 * PAGE) & PM_SWAP))
		return fail("page 3 is no longer a swap entry after the fault");
	if (faults_expect("big folio's other pages", touch(mem, 1, n, skip), 0, (long)(n - 3)) == FAIL)
		return FAIL;
	if (faults_at_least("page 5 (another folio)", touch(mem, 5, 6, NULL), 1) == FAIL)
		return FAIL;
	for (unsigned long b = 0; b < PAGE; b++) {
		if ((unsigned char)mem[3 * PAGE + b] != 0xa3)
			return fail("swapped-in page 3 byte %lu is %#x", b,
				    (unsigned char)mem[3 * PAGE + b]);
		if ((unsigned char)mem[5 * PAGE + b] != (0xa5 ^ (b == TOUCH_BYTE ? 0x5a : 0)))
			return fail("page 5 byte %lu is %#x", b, (unsigned char)mem[5 * PAGE + b]);
	}
	for (unsigned long i = 0; i < n; i++)
		if (!skip[i] && check_touched(mem, i, i + 1) == FAIL)
			return FAIL;
	/* 6.12 copies (not checked); the reuse kernel and >= 6.15 reuse. */
	if (!expect_reuse_after_child)
		return PASS;
	for (unsigned long i = 0; i < n; i++)
		if (!skip[i] && pfn_of(mem + i * PAGE) != before[i])
			return fail("page %lu was copied, want reuse", i);
	return PASS;
}

#define KPF_KSM		21
#define KSM_SYS		"/sys/kernel/mm/ksm/"

/* KSM knobs this scenario sets, with the values it found (restored after). */
static const char *const ksm_knobs[] = { "pages_to_scan", "sleep_millisecs", "run" };
static char ksm_old[3][32];

static void ksm_restore(void)
{
	char path[96];

	/* Unmerge what is left (run=2), then the old settings, run last. */
	write_sys(KSM_SYS "run", "2");
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), KSM_SYS "%s", ksm_knobs[i]);
		if (ksm_old[i][0])
			write_sys(path, ksm_old[i]);
	}
}

/*
 * A KSM page inside the folio's span, in the same vma: page 5 is replaced
 * by a small folio whose content another mapping (@dup) also has, and
 * ksmd merges the two into one KSM page before fork. A write fault that
 * proves the big folio exclusive must leave page 5's PTE read-only: a
 * write there takes its own fault and gets a copy, and @dup still reads
 * what it had (a writable KSM page would change it).
 */
static int ksm_page_in_the_folio_span_is_not_upgraded(char *mem)
{
	const unsigned long n = THP / PAGE < 16 ? THP / PAGE : 16;
	static char skip[MAX_AREA_PAGES];
	char *dup, path[96];
	int r = FAIL, merged = 0;

	if (access(KSM_SYS "run", W_OK)) {
		snprintf(why, sizeof(why), "no KSM in this kernel");
		return SKIP;
	}
	dup = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (dup == MAP_FAILED)
		return fail("mmap: %s", strerror(errno));
	memset(dup, 0xa5, PAGE);
	madvise(mem + 5 * PAGE, PAGE, MADV_DONTNEED);
	memset(mem + 5 * PAGE, 0xa5, PAGE);
	/* Only the first 16 pages (distinct contents) and @dup are mergeable. */
	if (madvise(mem, n * PAGE, MADV_MERGEABLE) || madvise(dup, PAGE, MADV_MERGEABLE)) {
		fail("MADV_MERGEABLE: %s", strerror(errno));
		goto out_unmap;
	}
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), KSM_SYS "%s", ksm_knobs[i]);
		if (read_sys(path, ksm_old[i], sizeof(ksm_old[i])))
			ksm_old[i][0] = 0;
	}
	if (write_sys(KSM_SYS "pages_to_scan", "5000") ||
	    write_sys(KSM_SYS "sleep_millisecs", "10") || write_sys(KSM_SYS "run", "1")) {
		fail("cannot start ksmd: %s", strerror(errno));
		goto out_ksm;
	}
	for (int t = 0; t < 400 && !merged; t++) {
		merged = (kpageflags_of(pfn_of(mem + 5 * PAGE)) >> KPF_KSM) & 1;
		if (!merged)
			usleep(50 * 1000);
	}
	write_sys(KSM_SYS "run", "0");	/* stop scanning, keep the merge */
	if (!merged) {
		fail("ksmd did not merge page 5 in 20 s");
		goto out_ksm;
	}
	if (!is_thp(mem))
		fail("the big folio was split while ksmd scanned");
	else if (fork_and_reap_child() == PASS) {
		memset(skip, 0, sizeof(skip));
		skip[5] = 1;
		if (faults_at_least("first page", touch(mem, 0, 1, NULL), 1) == FAIL ||
		    faults_expect("big folio's other pages", touch(mem, 1, n, skip),
				  0, (long)(n - 2)) == FAIL ||
		    faults_at_least("page 5 (KSM)", touch(mem, 5, 6, NULL), 1) == FAIL)
			goto out_ksm;
		for (unsigned long b = 0; b < PAGE; b++) {
			if ((unsigned char)dup[b] != 0xa5) {
				fail("the KSM twin's byte %lu is %#x: a write leaked into it", b,
				     (unsigned char)dup[b]);
				goto out_ksm;
			}
			if ((unsigned char)mem[5 * PAGE + b] != (0xa5 ^ (b == TOUCH_BYTE ? 0x5a : 0))) {
				fail("page 5 byte %lu is %#x", b, (unsigned char)mem[5 * PAGE + b]);
				goto out_ksm;
			}
		}
		r = PASS;
		for (unsigned long i = 0; i < n && r == PASS; i++)
			if (!skip[i])
				r = check_touched(mem, i, i + 1);
	}
out_ksm:
	ksm_restore();
out_unmap:
	munmap(dup, PAGE);
	return r;
}

struct racer {
	char *mem;
	unsigned long first, stride;
	pthread_barrier_t *go;
};

static void *racer_fn(void *arg)
{
	struct racer *r = arg;

	pthread_barrier_wait(r->go);
	for (unsigned long i = r->first; i < NR_PAGES; i += r->stride)
		r->mem[i * PAGE + TOUCH_BYTE] ^= 0x5a;
	return NULL;
}

/*
 * Four threads write interleaved pages of both folios at once after fork:
 * their faults race on the same folios and page tables (each proof and
 * upgrade under the PTL). Every write must land exactly once, the pages
 * stay where they are (reuse; >= 6.15 too) or all move (6.12).
 */
static int threads_racing_on_one_folio_keep_every_write(char *mem)
{
	static uint64_t before[MAX_AREA_PAGES];
	enum { NR_RACERS = 4 };
	struct racer r[NR_RACERS];
	pthread_t t[NR_RACERS];
	pthread_barrier_t go;
	int started = 0;

	pfns(mem, before);
	if (fork_and_reap_child() == FAIL)
		return FAIL;
	pthread_barrier_init(&go, NULL, NR_RACERS);
	for (int i = 0; i < NR_RACERS; i++) {
		r[i] = (struct racer){ .mem = mem, .first = (unsigned long)i,
				       .stride = NR_RACERS, .go = &go };
		if (pthread_create(&t[i], NULL, racer_fn, &r[i]))
			break;
		started++;
	}
	if (started != NR_RACERS) {
		/* The started ones wait at the barrier for ever: do not return. */
		fail("pthread_create failed after %d threads", started);
		report(thp_program, "threads_racing_on_one_folio_keep_every_write", FAIL, "");
		exit(1);
	}
	for (int i = 0; i < NR_RACERS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	if (check_touched(mem, 0, NR_PAGES) == FAIL)
		return FAIL;
	return pfns_say(mem, before, 0, NR_PAGES, expect_reuse_after_child);
}

/*
 * In G, the grandchild of grandchild_run() (thp_test.h; its checks before
 * this one: the PFNs P set up, whole THPs, every page mapped once, seed 0,
 * the rmap recount): G writes one byte of each page of the first folio; the
 * second folio, never written, is the control. G reads its own writes and
 * the rest of the data as of fork. Then the first folio's pages (all
 * written) must have kept the PFNs P recorded before any fork
 * (grandchild_pfns[]) and stayed in a THP if expect_reuse, or must all have
 * moved; the second folio's must not have moved on any kernel. PASS with
 * the counts in why[], or FAIL (with why).
 */
static int gc_write(char *mem)
{
	const unsigned long n = THP / PAGE;
	const int want_reuse = expect_reuse;
	static uint64_t after[MAX_AREA_PAGES];
	static unsigned char thp[MAX_AREA_PAGES];
	const uint64_t *before = grandchild_pfns;
	unsigned long copied = 0;
	long faults;

	faults = touch(mem, 0, n, NULL);
	if (check_touched(mem, 0, n) == FAIL || check(mem, THP, SIZE, 0))
		return FAIL;
	pfns(mem, after);
	for (unsigned long i = 0; i < NR_PAGES; i++)
		thp[i] = (unsigned char)is_thp(mem + i * PAGE);
	if (rmap_verify(mem, SIZE) == FAIL)
		return FAIL;
	for (unsigned long i = 0; i < NR_PAGES; i++) {
		uint64_t b = before[i], a = after[i];

		if (!b || !a)
			return fail("page %lu has no PFN (not root?)", i);
		if (i >= n && a != b)
			return fail("page %lu was never written but moved (pfn %#llx -> %#llx)",
				    i, (unsigned long long)b, (unsigned long long)a);
		copied += i < n && a != b;
	}
	for (unsigned long i = 0; i < n; i++) {
		uint64_t b = before[i], a = after[i];

		if (want_reuse && a != b)
			return fail("page %lu was copied (pfn %#llx -> %#llx), want reuse (%lu/%lu written pages copied)",
				    i, (unsigned long long)b, (unsigned long long)a, copied, n);
		if (want_reuse && !thp[i])
			return fail("page %lu is no longer part of a THP", i);
		if (!want_reuse && a == b)
			return fail("page %lu was reused (pfn %#llx), want a copy (%lu/%lu written pages copied)",
				    i, (unsigned long long)b, copied, n);
	}
	snprintf(why, sizeof(why), "(grandchild: %lu/%lu written pages copied, %ld write faults)",
		 copied, n, faults);
	return PASS;
}

/* In P, C (without @in_c) and G (grandchild_run()): the data as of fork. */
static int gc_intact(const char *mem)
{
	return check(mem, 0, SIZE, 0);
}

/*
 * In C, after forking G and before it exits: unmap the second half of the
 * first folio, recount, and check that what C still maps holds the data as
 * of fork. 0, or -1 (why[]).
 */
static int gc_half_unmap(char *mem)
{
	if (munmap(mem + THP / 2, THP / 2)) {
		fail("C: munmap: %s", strerror(errno));
		return -1;
	}
	if (rmap_verify(mem, SIZE) == FAIL)
		return -1;
	return check(mem, 0, THP / 2, 0) || check(mem, THP, SIZE, 0) ? -1 : 0;
}

/*
 * The double fork (grandchild_run(), thp_test.h): P (a child of the test
 * process) maps the area's two PTE-mapped THPs, forks C, C forks G; P and
 * C exit (reaped) and G -- the folios' only mapper now -- writes a byte to
 * every page of the first folio (the second, never written, is the
 * control). The test process maps none of it. For the first folio:
 *  - RUSTMM_COW_REUSE=1 (CONFIG_MM_RMAP_ID): G is the only mapper, so its
 *    write faults reuse the folio: every page keeps its PFN.
 *  - Linux 6.12: no large folio is ever reused: every written page moves.
 *  - Linux >= 6.15 (mm_id): P had slot 0, C slot 1 (and the "maybe shared"
 *    bit), G none: no slot was free when C forked it. P's and C's exits free
 *    their slots, but the bit clears only when one slot's count equals the
 *    folio's total, and G's mappings are in no slot: the bit stays set and
 *    every written page is copied (the last one also because mapcount <= 1).
 * On every kernel G reads its own writes and the rest of the data as of
 * fork, P and C read the data as of fork, and the second folio (never
 * written) keeps its PFNs.
 */
static int grandchild_after_parent_and_child_exit_reuses(char *mem)
{
	static const struct grandchild_ops ops = {
		.intact = gc_intact, .work = gc_write,
	};

	(void)mem;	/* the test process's area: not used */
	return grandchild_run(&ops);
}

/*
 * The same, but C unmaps the second half of the first folio after forking G
 * and before P and C exit: the folio is partially mapped by C in between (P and
 * G still map all of it, so no page is unmapped by all). Same expectations:
 * reuse with RUSTMM_COW_REUSE=1; on Linux >= 6.15 C's partial unmap only
 * lowers slot 1, its exit frees it, and the bit stays set (G has no slot):
 * every written page copied, as on 6.12.
 */
static int grandchild_after_half_unmap_reuses(char *mem)
{
	static const struct grandchild_ops ops = {
		.intact = gc_intact, .in_c = gc_half_unmap, .work = gc_write,
	};

	(void)mem;	/* the test process's area: not used */
	return grandchild_run(&ops);
}

static const struct scenario scenarios[] = {
	CASE(child_exited_memset_reuses),
	CASE(child_exited_byte_writes_reuse),
	CASE(child_alive_but_unmapped_reuses),
	CASE(child_keeps_one_page_forces_copy),
	CASE(gup_reference_forces_copy),
	CASE(child_exited_one_write_fault_per_folio),
	CASE(read_only_vma_part_is_not_upgraded),
	CASE(forced_write_into_read_only_mapping_upgrades_nothing),
	CASE(uffd_wp_range_is_not_upgraded),
	CASE_MAY_SKIP(soft_dirty_pages_are_not_upgraded,
		      MAY_SKIP_ON_ARM64("no soft-dirty tracking on arm64")),
	CASE(other_folio_and_swap_entry_are_not_upgraded),
	CASE(ksm_page_in_the_folio_span_is_not_upgraded),
	CASE(threads_racing_on_one_folio_keep_every_write),
	CASE(grandchild_after_parent_and_child_exit_reuses),
	CASE(grandchild_after_half_unmap_reuses),
};

int main(int argc, char **argv)
{
	const char *env = getenv("RUSTMM_COW_REUSE");

	setvbuf(stdout, NULL, _IONBF, 0);
	if (thp_test_init(argc, argv, "cow_reuse"))
		return 1;
	if (!env || (strcmp(env, "0") && strcmp(env, "1"))) {
		printf("RUSTMM-TEST %s.setup FAIL RUSTMM_COW_REUSE must be 0 or 1\n", thp_program);
		return 1;
	}
	mm_id_kernel = thp_kernel_has_mm_id(thp_program);
	if (mm_id_kernel < 0)
		return 1;
	expect_reuse = env[0] == '1';
	expect_reuse_after_child = expect_reuse || mm_id_kernel;
	return run_scenarios("cow_reuse", scenarios,
			     sizeof(scenarios) / sizeof(scenarios[0]),
			     expect_reuse ? "[reuse expected] " :
			     mm_id_kernel ? "[base: mm_id, Linux >= 6.15] " :
					    "[base: copies, Linux < 6.15] ") ? 1 : 0;
}
