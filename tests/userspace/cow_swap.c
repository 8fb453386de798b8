// SPDX-License-Identifier: GPL-2.0
/*
 * COW of PTE-mapped anonymous THP meets swap (the guest's zram swap): the
 * swap cache holds references the reuse check must count, swap-in brings
 * pages back as order-0 folios, and MADV_PAGEOUT must leave alone folios
 * another process maps. Data is checked byte for byte in every process;
 * where a page is reused or copied is read from pagemap (PFN, PM_SWAP) and
 * kpageflags (THP, SWAPCACHE); /proc/vmstat deltas (pswpout, pswpin,
 * thp_swpout, thp_split_page, ...) show the swap paths really ran.
 *
 * RUSTMM_COW_REUSE=1 says the kernel has CONFIG_MM_RMAP_ID (precise
 * folio_mapped_shared(), COW reuse of large folios). 0 says the base
 * kernel, whose behaviour depends on its release (uname(2), as in
 * cow_reuse.c):
 *  - Linux < 6.15 (6.12): folio_likely_mapped_shared() estimates from the
 *    first page's mapcount, and large folios are always copied.
 *  - Linux >= 6.15: upstream's mm_id (CONFIG_MM_ID, selected by THP): two
 *    mm_id slots per large folio and a "maybe shared" bit, set when a
 *    second mm takes a slot and cleared only when an mm's slot is freed
 *    (its last mapping of the folio gone) and the other slot then holds
 *    every mapping (folio_sub_return_large_mapcount(), include/linux/rmap.h).
 *    folio_maybe_mapped_shared() (include/linux/mm.h) is that bit once the
 *    folio is mapped more than once, and __wp_can_reuse_large_anon_folio()
 *    (mm/memory.c) reuses one PTE per write fault while the bit is clear and
 *    refcount == mapcount. While at most two mms map a folio, as in the
 *    scenarios whose expectations depend on it, that is as precise as
 *    CONFIG_MM_RMAP_ID.
 *
 * The data written is never a page of one repeated byte, so every page
 * really goes to the device (zram stores same-filled pages, and the swap
 * layer skips zero pages, without either being a write). Run as root with
 * a swap device; the scenarios pin themselves to one CPU (MADV_PAGEOUT
 * only drains this CPU's LRU batch) and set vm.page-cluster to 0 (no
 * swap readahead, so pswpin counts the faults). It prints its plan, then
 * "RUSTMM-TEST cow_swap.<name> PASS|FAIL <why>" per scenario
 * (tests/userspace/result.h); no THP is a FAIL.
 */
#include "thp_test.h"

#include <sched.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif

#define NR_PAGES	(SIZE / PAGE)
#define THP_PAGES	(THP / PAGE)
#define KPF_SWAPCACHE	13
#define PM_SWAP		(1ULL << 62)
#define PM_PRESENT	(1ULL << 63)

static int precise;	/* RUSTMM_COW_REUSE=1 */
/* RUSTMM_COW_REUSE=0 on Linux >= 6.15: upstream's mm_id (CONFIG_MM_ID). */
static int mm_id_base;

static void rich_fill(char *mem, unsigned long from, unsigned long to, int seed)
{
	for (unsigned long off = from; off < to; off++)
		mem[off] = (char)rich(off, seed);
}

static int rich_check(const char *mem, unsigned long from, unsigned long to, int seed)
{
	for (unsigned long off = from; off < to; off++)
		if ((unsigned char)mem[off] != rich(off, seed)) {
			snprintf(why, sizeof(why), "byte %#lx is %#x, want %#x (seed %d)", off,
				 (unsigned char)mem[off], rich(off, seed), seed);
			return -1;
		}
	return 0;
}

/* The raw pagemap entry of @addr (0 if unreadable). */
static uint64_t pagemap(void *addr)
{
	uint64_t ent = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd >= 0) {
		if (pread(fd, &ent, 8, (uintptr_t)addr / PAGE * 8) != 8)
			ent = 0;
		close(fd);
	}
	return ent;
}

static uint64_t kflags(void *addr)
{
	return kpageflags_of(pfn_of(addr));
}

/* A fresh thp_area() with rich data (seed 0) instead of same-filled pages. */
static char *rich_area(char *mem)
{
	rich_fill(mem, 0, SIZE, 0);
	for (unsigned long t = 0; t < SIZE; t += THP)
		if (!is_thp(mem + t))
			return NULL;
	return mem;
}

static int swapped(char *addr)
{
	return (pagemap(addr) & (PM_SWAP | PM_PRESENT)) == PM_SWAP;
}

/* Wait for a child that checks seed 0 over the first THP, then exits. */
static pid_t fork_waiting_checker(char *mem, struct chan *go, struct chan *msg)
{
	pid_t pid;

	chan_init(go);
	chan_init(msg);
	pid = fork();
	if (pid == 0) {
		await(go);
		child_done(msg->fd[1], rich_check(mem, 0, THP, 0));
	}
	return pid;
}

/*
 * A THP both processes map is left alone by MADV_PAGEOUT from either of
 * them, whole or in part: nothing is split, nothing goes to swap, PFNs stay.
 */
static int pageout_leaves_a_shared_thp_alone(char *mem)
{
	struct chan go, msg;
	unsigned long long out0 = vmstat("pswpout") + vmstat("swpout_zero");
	unsigned long long split0 = vmstat("thp_split_page");
	uint64_t pfn0 = pfn_of(mem), pfn9 = pfn_of(mem + 9 * PAGE);
	pid_t pid;

	if (!rich_area(mem))
		return fail("no THP after the rich fill");
	chan_init(&go);
	chan_init(&msg);
	pid = fork();
	if (pid == 0) {
		await(&go);
		madvise(mem, THP, MADV_PAGEOUT);
		madvise(mem, THP / 2, MADV_PAGEOUT);
		child_done(msg.fd[1], rich_check(mem, 0, SIZE, 0));
	}
	madvise(mem, THP, MADV_PAGEOUT);
	madvise(mem + PAGE, THP / 2, MADV_PAGEOUT);
	post(&go);
	if (reap(pid, msg.fd[0]) == FAIL)
		return FAIL;
	if (vmstat("pswpout") + vmstat("swpout_zero") != out0)
		return fail("%llu pages of a shared THP were paged out",
			    vmstat("pswpout") + vmstat("swpout_zero") - out0);
	if (vmstat("thp_split_page") != split0)
		return fail("a shared THP was split by MADV_PAGEOUT");
	if (pfn_of(mem) != pfn0 || pfn_of(mem + 9 * PAGE) != pfn9 || !is_thp(mem + 9 * PAGE))
		return fail("the shared THP moved or is no longer a THP");
	return rich_check(mem, 0, SIZE, 0) ? FAIL : PASS;
}

/*
 * The parent maps the first half of a THP, the child the second half. The
 * parent's MADV_PAGEOUT of its first 512 KiB must leave the folio alone:
 * the child still maps it. Precise tracking sees that; 6.12's estimate
 * only reads the first page's mapcount (1: ours) and splits the folio and
 * pages our part out -- harmless for data, wrong for the hint. Data must be
 * intact either way.
 *
 * Linux >= 6.15 (mm_id) leaves it alone too: the fork gave the child slot
 * 1 and set the "maybe shared" bit; each half-unmap lowers a slot that
 * keeps mappings, so the bit stays (folio_sub_return_large_mapcount()
 * clears it only when a slot is freed), and MADV_PAGEOUT of part of a
 * large folio skips it when folio_maybe_mapped_shared() (mapcount 512 > 1,
 * the bit) says so, before any split (madvise_cold_or_pageout_pte_range(),
 * mm/madvise.c).
 */
static int pageout_leaves_a_folio_the_child_still_maps(char *mem)
{
	struct chan halved, go, msg;
	unsigned long long out0, split0;
	pid_t pid;

	if (!rich_area(mem))
		return fail("no THP after the rich fill");
	chan_init(&halved);
	chan_init(&go);
	chan_init(&msg);
	pid = fork();
	if (pid == 0) {
		madvise(mem, THP / 2, MADV_DONTNEED);
		post(&halved);
		await(&go);
		child_done(msg.fd[1], rich_check(mem, THP / 2, THP, 0));
	}
	await(&halved);
	madvise(mem + THP / 2, THP / 2, MADV_DONTNEED);
	out0 = vmstat("pswpout") + vmstat("swpout_zero");
	split0 = vmstat("thp_split_page");
	madvise(mem, THP / 4, MADV_PAGEOUT);
	out0 = vmstat("pswpout") + vmstat("swpout_zero") - out0;
	split0 = vmstat("thp_split_page") - split0;
	post(&go);
	if (reap(pid, msg.fd[0]) == FAIL)
		return FAIL;
	if (rich_check(mem, 0, THP / 2, 0))
		return FAIL;
	if ((precise || mm_id_base) && (out0 || split0))
		return fail("MADV_PAGEOUT split the folio (%llu) and paged out %llu pages the child's folio holds",
			    split0, out0);
	if (!precise && !mm_id_base && (split0 != 1 || out0 != THP_PAGES / 4))
		return fail("6.12's estimate should split the folio and page out %lu pages: split %llu, out %llu",
			    THP_PAGES / 4, split0, out0);
	return PASS;
}

/*
 * The parent's COW copies inside a THP the child still maps go to swap and
 * come back (order 0); the THP stays whole and shared. Once the child is
 * gone, the rest of the THP is reused with precise tracking (copied on
 * 6.12).
 *
 * Linux >= 6.15 (mm_id) reuses it too, one PTE per fault: each of our k
 * copies only lowered slot 0 (the bit stays set while the child maps all
 * of it, so each of them was a copy); the child's exit frees slot 1, and
 * slot 0 then holds all THP_PAGES - k (504) mappings left, which clears the
 * bit. Each later write fault finds mapcount 504 > 1, the bit clear, no swap
 * cache and refcount == mapcount: __wp_can_reuse_large_anon_folio() says
 * reuse. (Should the deferred split queue, which our copies put it on,
 * split the folio first, its pages are order-0 folios with one reference
 * each: reused as well.)
 */
static int cow_copies_go_to_swap_and_back(char *mem)
{
	static uint64_t before[MAX_THP_PAGES];
	const unsigned long k = 8;
	struct chan go, msg;
	unsigned long long out0, in0, thpout0, split0;
	pid_t pid;

	if (!rich_area(mem))
		return fail("no THP after the rich fill");
	pid = fork_waiting_checker(mem, &go, &msg);
	rich_fill(mem, 0, k * PAGE, 1);			/* k COW copies */
	for (unsigned long i = 0; i < THP_PAGES; i++)
		before[i] = pfn_of(mem + i * PAGE);
	out0 = vmstat("pswpout");
	thpout0 = vmstat("thp_swpout");
	split0 = vmstat("thp_split_page");
	madvise(mem, THP, MADV_PAGEOUT);
	if (vmstat("pswpout") - out0 != k || vmstat("thp_swpout") != thpout0 ||
	    vmstat("thp_split_page") != split0) {
		post(&go);
		reap(pid, msg.fd[0]);
		return fail("MADV_PAGEOUT: %llu pages out (want our %lu copies), thp_swpout +%llu, splits +%llu",
			    vmstat("pswpout") - out0, k, vmstat("thp_swpout") - thpout0,
			    vmstat("thp_split_page") - split0);
	}
	for (unsigned long i = 0; i < THP_PAGES; i++)
		if (i < k ? !swapped(mem + i * PAGE) : pfn_of(mem + i * PAGE) != before[i]) {
			post(&go);
			reap(pid, msg.fd[0]);
			return fail("page %lu: %s", i, i < k ? "not in swap" : "moved");
		}
	in0 = vmstat("pswpin");
	if (rich_check(mem, 0, k * PAGE, 1) || vmstat("pswpin") - in0 != k) {
		post(&go);
		reap(pid, msg.fd[0]);
		return why[0] ? FAIL : fail("%llu pages swapped in, want %lu", vmstat("pswpin") - in0, k);
	}
	post(&go);		/* the child checks seed 0 over the whole THP */
	if (reap(pid, msg.fd[0]) == FAIL)
		return FAIL;
	/* The child is gone: the THP's other pages are ours alone. */
	for (unsigned long i = k; i < THP_PAGES; i++)
		before[i] = pfn_of(mem + i * PAGE);
	rich_fill(mem, k * PAGE, THP, 2);
	for (unsigned long i = k; i < THP_PAGES; i++) {
		uint64_t now = pfn_of(mem + i * PAGE);

		if ((precise || mm_id_base) && now != before[i])
			return fail("page %lu was copied after the child exited, want reuse", i);
		if (!precise && !mm_id_base && now == before[i])
			return fail("page %lu was reused: 6.12 copies pages of large folios", i);
	}
	if (rich_check(mem, 0, k * PAGE, 1) || rich_check(mem, k * PAGE, THP, 2))
		return FAIL;
	return rich_check(mem, THP, SIZE, 0) ? FAIL : PASS;
}

/*
 * A whole THP is swapped out before fork: both processes hold its swap
 * entries. Writes by either come back as private copies; the other keeps
 * the data as of fork; a page both read is reused by the last one to write
 * it once the other is gone.
 */
static int swapped_thp_is_written_by_both_after_fork(char *mem)
{
	struct chan step1, step2, step3, msg;
	unsigned long long thpout0, out0, in0;
	const unsigned long a = 3 * PAGE, b = 9 * PAGE, c = 20 * PAGE;
	uint64_t pfn_c;
	pid_t pid;

	if (!rich_area(mem))
		return fail("no THP after the rich fill");
	thpout0 = vmstat("thp_swpout") + vmstat("thp_swpout_fallback");
	out0 = vmstat("pswpout");
	madvise(mem, THP, MADV_PAGEOUT);
	if (vmstat("pswpout") - out0 != THP_PAGES ||
	    vmstat("thp_swpout") + vmstat("thp_swpout_fallback") - thpout0 != 1)
		return fail("paging out the THP wrote %llu pages (want %lu)",
			    vmstat("pswpout") - out0, THP_PAGES);
	for (unsigned long off = 0; off < THP; off += PAGE)
		if (!swapped(mem + off))
			return fail("page %lu not in swap", off / PAGE);
	in0 = vmstat("pswpin");
	chan_init(&step1);
	chan_init(&step2);
	chan_init(&step3);
	chan_init(&msg);
	pid = fork();
	if (pid == 0) {
		int bad;

		await(&step1);			/* the parent wrote a */
		bad = rich_check(mem, a, a + PAGE, 0);
		if (!bad)
			rich_fill(mem, b, b + PAGE, 3);	/* the child writes b */
		if (!bad)
			bad = rich_check(mem, c, c + PAGE, 0);	/* and reads c */
		post(&step2);
		await(&step3);
		if (!bad)
			bad = rich_check(mem, b, b + PAGE, 3) ||
			      rich_check(mem, 0, a, 0) || rich_check(mem, a + PAGE, b, 0) ||
			      rich_check(mem, b + PAGE, THP, 0);
		child_done(msg.fd[1], bad);
	}
	rich_fill(mem, a, a + PAGE, 1);		/* the parent writes a */
	post(&step1);
	await(&step2);
	if (rich_check(mem, b, b + PAGE, 0) || rich_check(mem, c, c + PAGE, 0)) {
		post(&step3);
		reap(pid, msg.fd[0]);
		return FAIL;
	}
	pfn_c = pfn_of(mem + c);		/* both mapped it from the swap cache */
	post(&step3);
	if (reap(pid, msg.fd[0]) == FAIL)
		return FAIL;
	rich_fill(mem, c, c + PAGE, 4);		/* the child is gone: reuse */
	if (pfn_of(mem + c) != pfn_c)
		return fail("page c was copied after the child exited, want order-0 reuse");
	if (vmstat("pswpin") == in0)
		return fail("nothing was swapped in");
	if (rich_check(mem, a, a + PAGE, 1) || rich_check(mem, c, c + PAGE, 4) ||
	    rich_check(mem, 0, a, 0) || rich_check(mem, a + PAGE, c, 0) ||
	    rich_check(mem, c + PAGE, SIZE, 0))
		return FAIL;
	return PASS;
}

/*
 * "Whole again": a THP that went to swap comes back as order-0 pages
 * (checked); a MADV_COLLAPSE makes it one THP again. PTE-mapped, shared by fork, then
 * ours alone: precise tracking reuses it, 6.12 copies.
 *
 * Linux >= 6.15 (mm_id) reuses it too: the collapsed folio's first
 * mapping puts us in slot 0, the PTE-remap keeps the slot, fork gives the
 * child slot 1 and the bit, the child's exit frees slot 1 and clears the
 * bit; every write fault then finds mapcount 512 > 1, the bit clear and
 * refcount == mapcount (a large folio does not stay in an LRU batch).
 */
static int collapsed_after_swap_thp_is_reused(char *mem)
{
	static uint64_t before[MAX_THP_PAGES];
	unsigned long long out0;

	if (!rich_area(mem))
		return fail("no THP after the rich fill");
	out0 = vmstat("pswpout");
	madvise(mem, THP, MADV_PAGEOUT);
	if (vmstat("pswpout") - out0 != THP_PAGES || !swapped(mem + PAGE))
		return fail("the THP did not go to swap");
	/*
	 * Swap it back in (order-0 pages), then collapse: MADV_COLLAPSE
	 * refuses a range without a writable PTE (SCAN_PAGE_RO, EINVAL), and
	 * one that is all swap entries has none.
	 */
	if (rich_check(mem, 0, THP, 0))
		return FAIL;
	if (is_thp(mem + PAGE))
		return fail("swapped in as a THP: want order-0 pages in 6.12");
	if (madvise(mem, THP, MADV_COLLAPSE))
		return fail("MADV_COLLAPSE: %s", strerror(errno));
	if (!is_thp(mem) || !is_thp(mem + THP - PAGE) || rich_check(mem, 0, THP, 0))
		return why[0] ? FAIL : fail("MADV_COLLAPSE gave no THP");
	mprotect(mem + REMAP_PAGE * PAGE, PAGE, PROT_READ);	/* PTE-map it again */
	mprotect(mem + REMAP_PAGE * PAGE, PAGE, PROT_READ | PROT_WRITE);
	for (unsigned long i = 0; i < THP_PAGES; i++)
		before[i] = pfn_of(mem + i * PAGE);
	{
		pid_t pid = fork();
		int status;

		if (pid == 0)
			_exit(0);
		waitpid(pid, &status, 0);
	}
	if (rmap_verify(mem, THP) == FAIL)
		return FAIL;
	rich_fill(mem, 0, THP, 5);
	for (unsigned long i = 0; i < THP_PAGES; i++) {
		uint64_t now = pfn_of(mem + i * PAGE);

		if ((precise || mm_id_base) && now != before[i])
			return fail("page %lu of the collapsed THP was copied, want reuse", i);
		if (!precise && !mm_id_base && now == before[i])
			return fail("page %lu was reused: 6.12 copies pages of large folios", i);
	}
	return rich_check(mem, 0, THP, 5) || rich_check(mem, THP, SIZE, 0) ? FAIL : PASS;
}

/*
 * A large folio in the swap cache is not reused: the swap cache holds one
 * reference per page, so refcount > mapcount. The state comes from a swap
 * write that fails (zram with a one-page memory limit): the folio stays in
 * the swap cache, unmapped, whole (swap_write_end() redirties it,
 * shrink_folio_list() keeps a dirty folio). A child, the holder, forks now
 * and keeps our swap entries untouched until the end; our read fault then
 * maps all of the folio back from the swap cache (read-only: the fork made
 * the entries shared) and leaves it there. Then a second child forks and
 * exits, so that we alone map the folio, and our write must copy the page
 * (on every kernel), with everybody's data intact -- the holder reads its
 * entries back last, so a reuse would show it our write.
 *
 * Why the holder: the swap cache of a folio nobody holds a swap entry of
 * does not outlive the next fault on 7.3. do_swap_page() drops the
 * faulting mm's entries (folio_put_swap()) and then frees the swap cache
 * of a folio it mapped from a SWP_SYNCHRONOUS_IO device such as zram
 * whatever the fault (should_try_to_free_swap()), and a write fault on a
 * large folio tries to free it before comparing mapcount with refcount
 * (__wp_can_reuse_large_anon_folio(), with and without CONFIG_MM_RMAP_ID).
 * folio_free_swap() only fails while some swap entry of the folio still
 * has a count (folio_maybe_swapped(), mm/swapfile.c): the holder's. 6.12
 * frees it neither on a read fault nor on a large folio's write fault, and
 * keeps it with the holder too. Without the swap cache, the state after
 * the second child's exit is one every kernel but 6.12 base reuses (the
 * mm_id bit clear again, every mapping ours): the copy is the swap
 * cache's doing.
 */
static int swapcache_folio_is_not_reused(char *mem)
{
	const char *limit = "/sys/block/zram0/mem_limit";
	const unsigned long pg = 17 * PAGE;	/* the page we write */
	static char prime[4 * 4096];
	struct chan go, msg;
	pid_t holder, pid;
	uint64_t pfn, f;
	int status, r = PASS;
	char *p;

	if (!rich_area(mem))
		return fail("no THP after the rich fill");
	/* Prime zram with stored data, so that a one-page limit is exceeded. */
	p = mmap(NULL, sizeof(prime), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return fail("mmap: %s", strerror(errno));
	madvise(p, sizeof(prime), MADV_NOHUGEPAGE);
	rich_fill(p, 0, sizeof(prime), 7);
	madvise(p, sizeof(prime), MADV_PAGEOUT);
	if (write_sys(limit, "4096")) {
		munmap(p, sizeof(prime));
		return fail("cannot set %s: %s", limit, strerror(errno));
	}
	madvise(mem, THP, MADV_PAGEOUT);	/* the write fails */
	write_sys(limit, "0");
	if (!swapped(mem) || !swapped(mem + pg) || !swapped(mem + THP - PAGE)) {
		munmap(p, sizeof(prime));
		return fail("MADV_PAGEOUT left the THP mapped");
	}
	chan_init(&go);
	chan_init(&msg);
	holder = fork();
	if (holder < 0) {
		munmap(p, sizeof(prime));
		return fail("fork: %s", strerror(errno));
	}
	if (holder == 0) {
		await(&go);
		child_done(msg.fd[1], rich_check(mem, 0, SIZE, 0));
	}
	(void)*(volatile char *)(mem + 5);	/* read fault: all of it back */
	f = kflags(mem + pg);
	if (!((f >> KPF_THP) & 1) || !((f >> KPF_SWAPCACHE) & 1) || swapped(mem + pg)) {
		r = fail("could not get a mapped THP in the swap cache (kpageflags %#llx)",
			 (unsigned long long)f);
		goto out;
	}
	if (swapped(mem + THP - PAGE)) {
		r = fail("the read fault mapped only part of the folio in the swap cache");
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		r = fail("fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		_exit(0);
	waitpid(pid, &status, 0);
	pfn = pfn_of(mem + pg);
	f = kpageflags_of(pfn);
	if (!((f >> KPF_SWAPCACHE) & 1)) {
		r = fail("the folio left the swap cache before our write (kpageflags %#llx)",
			 (unsigned long long)f);
		goto out;
	}
	rich_fill(mem + pg, 0, PAGE, 6);
	if (pfn_of(mem + pg) == pfn)
		r = fail("a page of a THP in the swap cache was reused (refcount includes the swap cache)");
out:
	post(&go);		/* the holder reads its swap entries back */
	if (r == FAIL) {
		static char own[sizeof(why)];

		memcpy(own, why, sizeof(why));
		if (reap(holder, msg.fd[0]) == FAIL)
			strncat(own, "; the holder's check failed too",
				sizeof(own) - strlen(own) - 1);
		memcpy(why, own, sizeof(why));
		munmap(p, sizeof(prime));
		return FAIL;
	}
	if (reap(holder, msg.fd[0]) == FAIL || rich_check(p, 0, sizeof(prime), 7)) {
		munmap(p, sizeof(prime));
		return FAIL;
	}
	munmap(p, sizeof(prime));
	if (rich_check(mem + pg, 0, PAGE, 6))
		return FAIL;
	return rich_check(mem, 0, pg, 0) || rich_check(mem, pg + PAGE, SIZE, 0) ? FAIL : PASS;
}

static const struct scenario scenarios[] = {
	CASE(pageout_leaves_a_shared_thp_alone),
	CASE(pageout_leaves_a_folio_the_child_still_maps),
	CASE(cow_copies_go_to_swap_and_back),
	CASE(swapped_thp_is_written_by_both_after_fork),
	CASE(collapsed_after_swap_thp_is_reused),
	CASE(swapcache_folio_is_not_reused),
};

int main(void)
{
	const char *env = getenv("RUSTMM_COW_REUSE");
	cpu_set_t set;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!env || (strcmp(env, "0") && strcmp(env, "1"))) {
		printf("RUSTMM-TEST cow_swap.setup FAIL RUSTMM_COW_REUSE must be 0 or 1\n");
		return 1;
	}
	mm_id_base = thp_kernel_has_mm_id("cow_swap");
	if (mm_id_base < 0)
		return 1;
	precise = env[0] == '1';
	mm_id_base = !precise && mm_id_base;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set) ||
	    write_sys("/proc/sys/vm/page-cluster", "0") || thp_quiet_numa()) {
		printf("RUSTMM-TEST cow_swap.setup FAIL cannot pin to CPU 0, set page-cluster or turn NUMA balancing off\n");
		return 1;
	}
	return run_scenarios("cow_swap", scenarios, sizeof(scenarios) / sizeof(scenarios[0]),
			     precise ? "[precise] " :
			     mm_id_base ? "[base: mm_id, Linux >= 6.15] " : "[base] ") ? 1 : 0;
}
