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
 * Two scenarios run on THPs that only the grandchild of a double fork maps
 * (grandchild_run(), thp_test.h), where mm_id answers "maybe shared" for
 * good and CONFIG_MM_RMAP_ID "exclusive": MADV_PAGEOUT of part of such a
 * folio (7.3 skips it, precise splits it and pages the part out) and
 * khugepaged with max_ptes_shared 0 (7.3 refuses to collapse it, precise
 * collapses it). 6.12's first-page estimate calls those folios exclusive,
 * as precise tracking does.
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

/* In P (grandchild_run()): rich data, so that every page goes to swap. */
static char *gc_rich(char *mem)
{
	if (!rich_area(mem)) {
		fail("no THP after the rich fill");
		return NULL;
	}
	return mem;
}

static int gc_rich_intact(const char *mem)
{
	return rich_check(mem, 0, SIZE, 0);
}

/*
 * In the grandchild G of grandchild_run() (thp_test.h: the only mapper of
 * both THPs, which on Linux >= 6.15 read "maybe shared" for good):
 * MADV_PAGEOUT of the first THP whole, then of the first half of the
 * second. What madvise_cold_or_pageout_pte_range() does with a PTE-mapped
 * large folio, a batch of PTEs (madvise_folio_pte_batch()), read in 7.3's
 * and 6.12's mm/madvise.c:
 *  - The whole folio in range (nr == folio_nr_pages()) is never asked
 *    whether it is shared: it goes to reclaim when its mapcount equals its
 *    number of pages (7.3: mm/madvise.c:533-535; 6.12: :518-520), exact
 *    here (512, all G's). Every kernel pages the first THP out: 512 of 512
 *    pages swap entries in G's pagemap (whole, thp_swpout, or split by
 *    the swap allocator, thp_swpout_fallback).
 *  - Part of a folio (nr < folio_nr_pages()) is split, and its pages in
 *    range then go out one by one, only if the folio is not shared (7.3:
 *    folio_maybe_mapped_shared(), mm/madvise.c:499-503; 6.12:
 *    folio_likely_mapped_shared(), :484-488); a shared one is skipped
 *    whole. 7.3 (mm_id): "maybe shared" -- the half is skipped: nothing
 *    split or paged out, the second THP whole at its PFNs. CONFIG_MM_RMAP_ID:
 *    G maps all of it -- split (thp_split_page), the half's 256 pages out,
 *    the other half mapped at its PFNs, order 0. 6.12: the first page's
 *    mapcount is 1 -- "exclusive", as precise. (MADV_COLD takes the same
 *    two paths, deactivating instead of paging out.)
 * Then G reads every byte back (swap-in) and checks it: G alone maps the
 * folios; P and C checked theirs before exiting.
 */
static int gc_pageout(char *mem)
{
	static uint64_t before[MAX_AREA_PAGES];
	const int split = precise || !mm_id_base;	/* the half goes out */
	char *second = mem + THP;
	unsigned long out1 = 0, out2 = 0;
	unsigned long long pswp0, thp0, split0, pswp1, thp1, pswp2, split2;

	for (unsigned long i = 0; i < NR_PAGES; i++)
		before[i] = pfn_of(mem + i * PAGE);
	pswp0 = vmstat("pswpout");
	thp0 = vmstat("thp_swpout") + vmstat("thp_swpout_fallback");
	if (madvise(mem, THP, MADV_PAGEOUT))
		return fail("MADV_PAGEOUT of the first THP: %s", strerror(errno));
	pswp1 = vmstat("pswpout") - pswp0;
	thp1 = vmstat("thp_swpout") + vmstat("thp_swpout_fallback") - thp0;
	for (unsigned long i = 0; i < THP_PAGES; i++)
		out1 += swapped(mem + i * PAGE);
	pswp0 = vmstat("pswpout");
	split0 = vmstat("thp_split_page");
	if (madvise(second, THP / 2, MADV_PAGEOUT))
		return fail("MADV_PAGEOUT of half the second THP: %s", strerror(errno));
	pswp2 = vmstat("pswpout") - pswp0;
	split2 = vmstat("thp_split_page") - split0;
	for (unsigned long i = 0; i < THP_PAGES / 2; i++)
		out2 += swapped(second + i * PAGE);
	if (out1 != THP_PAGES)
		return fail("the first THP, all in range: %lu/%lu pages out (pswpout +%llu, thp_swpout +%llu), want all on every kernel",
			    out1, THP_PAGES, pswp1, thp1);
	/* Out of range: mapped where it was, whatever happened to the rest. */
	for (unsigned long i = THP_PAGES / 2; i < THP_PAGES; i++)
		if (pfn_of(second + i * PAGE) != before[THP_PAGES + i])
			return fail("page %lu of the second THP, out of range, moved or left", i);
	if (split && out2 != THP_PAGES / 2)
		return fail("half the second THP: %lu/%lu pages out (pswpout +%llu, thp_split_page +%llu), want all: only the grandchild maps the folio",
			    out2, THP_PAGES / 2, pswp2, split2);
	if (split && is_thp(second + THP - PAGE))
		return fail("half the second THP went out but the rest is still a THP");
	if (!split && out2)
		return fail("half the second THP: %lu/%lu pages out (thp_split_page +%llu), want none: 7.3's mm_id says maybe shared",
			    out2, THP_PAGES / 2, split2);
	if (!split && !is_thp_of_size(second))
		return fail("the second THP was split (thp_split_page +%llu), want it whole: 7.3's mm_id says maybe shared",
			    split2);
	if (rich_check(mem, 0, SIZE, 0))
		return FAIL;
	snprintf(why, sizeof(why),
		 "(grandchild: whole THP %lu/%lu pages out, thp_swpout +%llu; half THP %lu/%lu out, %s, thp_split_page +%llu)",
		 out1, THP_PAGES, thp1, out2, THP_PAGES / 2, is_thp(second + THP - PAGE) ?
		 "left whole" : "split", split2);
	return PASS;
}

static int pageout_takes_a_thp_only_the_grandchild_maps(char *mem)
{
	static const struct grandchild_ops ops = {
		.prepare = gc_rich, .intact = gc_rich_intact, .work = gc_pageout,
	};

	(void)mem;	/* the test process's area: not used */
	return grandchild_run(&ops);
}

#define KHUGEPAGED_SYS	THP_SYS "khugepaged/"

/*
 * khugepaged woken: max_ptes_shared 0, a short sleep after a failed
 * allocation, a 10 ms scan period -- last, as writing a timer wakes it
 * (init set both timers to a day).
 */
static const char *const khugepaged_knobs[][2] = {
	{ KHUGEPAGED_SYS "max_ptes_shared", "0" },
	{ KHUGEPAGED_SYS "alloc_sleep_millisecs", "100" },
	{ KHUGEPAGED_SYS "scan_sleep_millisecs", "10" },
};
#define NR_KHUGEPAGED_KNOBS	(sizeof(khugepaged_knobs) / sizeof(khugepaged_knobs[0]))
static char khugepaged_old[NR_KHUGEPAGED_KNOBS][32];
static unsigned int khugepaged_saved;

/*
 * In the test process, once G is ready: the knobs' values, for
 * khugepaged_restore(). PASS, or FAIL with why.
 */
static int khugepaged_save(void)
{
	for (khugepaged_saved = 0; khugepaged_saved < NR_KHUGEPAGED_KNOBS; khugepaged_saved++) {
		char *old = khugepaged_old[khugepaged_saved];

		if (read_sys(khugepaged_knobs[khugepaged_saved][0], old, sizeof(khugepaged_old[0])))
			return fail("cannot read %s", khugepaged_knobs[khugepaged_saved][0]);
		old[strcspn(old, "\n")] = 0;
	}
	return PASS;
}

/*
 * In G, once it has taken its "before" picture: wake khugepaged (a
 * collapse that began before the picture would show as pages that did
 * not move). PASS, or FAIL with why.
 */
static int khugepaged_wake(void)
{
	for (unsigned int i = 0; i < NR_KHUGEPAGED_KNOBS; i++)
		if (write_sys(khugepaged_knobs[i][0], khugepaged_knobs[i][1]))
			return fail("cannot set %s to %s: %s", khugepaged_knobs[i][0],
				    khugepaged_knobs[i][1], strerror(errno));
	return PASS;
}

/*
 * The knobs back in the same order: max_ptes_shared before the timer,
 * whose write wakes khugepaged for one more pass.
 */
static void khugepaged_restore(void)
{
	for (unsigned int i = 0; i < khugepaged_saved; i++)
		write_sys(khugepaged_knobs[i][0], khugepaged_old[i]);
	khugepaged_saved = 0;
}

static unsigned long long khugepaged_full_scans(void)
{
	char buf[32];

	return read_sys(KHUGEPAGED_SYS "full_scans", buf, sizeof(buf)) ? 0 :
	       strtoull(buf, NULL, 10);
}

/* The byte G writes in each THP (page 7), and its data. */
#define GC_BYTE	(7 * PAGE + 3)

static int gc_collapse_check(const char *mem)
{
	for (unsigned long t = 0; t < SIZE; t += THP) {
		if (rich_check(mem, t, t + GC_BYTE, 0) ||
		    rich_check(mem, t + GC_BYTE + 1, t + THP, 0))
			return FAIL;
		if ((unsigned char)mem[t + GC_BYTE] != (rich(t + GC_BYTE, 0) ^ 0x5a))
			return fail("lost the grandchild's byte at %#lx", t + GC_BYTE);
	}
	return PASS;
}

/*
 * In the grandchild G of grandchild_run() (thp_test.h: the only mapper of
 * both THPs, which on Linux >= 6.15 read "maybe shared" for good), with
 * khugepaged's max_ptes_shared at 0: a PMD range any PTE of which maps a
 * shared page must not be collapsed.
 *
 * MADV_COLLAPSE cannot show it: it does not apply max_ptes_shared (7.3:
 * collapse_max_ptes_shared() is HPAGE_PMD_NR unless cc->is_khugepaged,
 * mm/khugepaged.c:406-423, and "++shared > HPAGE_PMD_NR" never holds in a
 * range of HPAGE_PMD_NR PTEs; 6.12: "cc->is_khugepaged && shared >
 * khugepaged_max_ptes_shared", mm/khugepaged.c:1358-1359). So G wakes
 * khugepaged itself once it has recorded its PFNs (khugepaged_wake(); a
 * collapse racing with that record would look like pages that did not
 * move), G waits up to 60 s
 * reading its smaps' AnonHugePages and khugepaged/full_scans (complete
 * passes over every registered mm; G's mm was registered at fork,
 * khugepaged_fork(), as P's and C's were), and the test process puts the
 * knobs back.
 *
 * khugepaged's scan counts, per present PTE of the range, whether its
 * folio is shared, and refuses the range past max_ptes_shared
 * (SCAN_EXCEED_SHARED_PTE, vmstat thp_scan_exceed_share_pte):
 *  - 7.3 (mm_id): collapse_scan_pmd(), mm/khugepaged.c:1724-1731 (and
 *    __collapse_huge_page_isolate(), :741-754): folio_maybe_mapped_shared()
 *    is "maybe shared" at the range's first PTE: refused. Neither THP is
 *    ever collapsed -- not at the default max_ptes_shared either
 *    (HPAGE_PMD_NR / 2, :481: the range's 511 PTEs of that folio count
 *    511 shared): both stay PTE-mapped where they were (AnonHugePages 0),
 *    thp_scan_exceed_share_pte rising each pass.
 *  - CONFIG_MM_RMAP_ID: exclusive: the scan succeeds, collapse_huge_page()
 *    copies each THP into a new one mapped by a PMD: AnonHugePages
 *    SIZE / 1024 kB, every PFN new, the data as it was.
 *  - 6.12: hpage_collapse_scan_pmd(), mm/khugepaged.c:1356-1364:
 *    folio_likely_mapped_shared() reads the first page's mapcount, 1:
 *    exclusive, collapsed as precise.
 * 6.12 also collapses no range without a writable PTE (SCAN_PAGE_RO,
 * mm/khugepaged.c:1335-1336 and :1412-1413; 7.3 has no such check), and
 * the fork left every PTE of G's write-protected: so G first writes one
 * byte in each THP (GC_BYTE). 6.12 and 7.3's mm_id copy that page (6.12
 * reuses no large folio; mm_id's bit forbids it, cow_reuse.c), so the
 * range has one PTE of an order-0 folio, 511 of the THP;
 * CONFIG_MM_RMAP_ID reuses it in place. A collapse also needs a young PTE
 * (SCAN_LACK_REFERENCED_PAGE): G has read every page.
 * Data (G's byte included) checked in G, the only process that maps it.
 */
static int gc_khugepaged(char *mem)
{
	static uint64_t before[MAX_AREA_PAGES];
	const int collapse = precise || !mm_id_base;
	unsigned long long scans0, exceed0, alloc0, scans, exceed, alloc;
	long kb = -1;
	int tenths;

	for (unsigned long t = 0; t < SIZE; t += THP)
		mem[t + GC_BYTE] ^= 0x5a;
	for (unsigned long i = 0; i < NR_PAGES; i++)
		before[i] = pfn_of(mem + i * PAGE);
	scans0 = khugepaged_full_scans();
	exceed0 = vmstat("thp_scan_exceed_share_pte");
	alloc0 = vmstat("thp_collapse_alloc");
	if (khugepaged_wake() == FAIL)
		return FAIL;
	for (tenths = 0; tenths < 600; tenths++) {
		kb = smaps_kb(mem, "AnonHugePages");	/* PMD-mapped anon THP */
		if (kb == (long)(SIZE >> 10))
			break;
		/*
		 * Refused: three passes -- the first may have begun before
		 * khugepaged was woken, the next two scanned all of G's mm.
		 */
		if (!collapse && khugepaged_full_scans() >= scans0 + 3)
			break;
		usleep(100 * 1000);
	}
	scans = khugepaged_full_scans() - scans0;
	exceed = vmstat("thp_scan_exceed_share_pte") - exceed0;
	alloc = vmstat("thp_collapse_alloc") - alloc0;
	if (collapse && kb != (long)(SIZE >> 10))
		return fail("AnonHugePages %ld of %lu kB after %d s (%llu full scans, thp_scan_exceed_share_pte +%llu, thp_collapse_alloc +%llu), want all collapsed: only the grandchild maps the THPs",
			    kb, SIZE >> 10, tenths / 10, scans, exceed, alloc);
	if (!collapse && kb != 0)
		return fail("AnonHugePages %ld kB (%llu full scans, thp_collapse_alloc +%llu), want no collapse: 7.3's mm_id says maybe shared",
			    kb, scans, alloc);
	if (!collapse && scans < 3)
		return fail("khugepaged made %llu full scans in 60 s, want 3", scans);
	if (!collapse && exceed < SIZE / THP)
		return fail("thp_scan_exceed_share_pte +%llu in %llu full scans, want each THP refused as shared",
			    exceed, scans);
	for (unsigned long i = 0, same = 0; collapse && i < NR_PAGES; i++) {
		if (pfn_of(mem + i * PAGE) == before[i])
			same++;
		if (i == NR_PAGES - 1 && same)
			return fail("%lu of %lu pages at their old pfns after the collapse (page 0: %#llx, was %#llx; last: %#llx, was %#llx; thp_collapse_alloc +%llu, AnonHugePages %ld kB)",
				    same, NR_PAGES, (unsigned long long)pfn_of(mem),
				    (unsigned long long)before[0],
				    (unsigned long long)pfn_of(mem + (NR_PAGES - 1) * PAGE),
				    (unsigned long long)before[NR_PAGES - 1], alloc, kb);
	}
	for (unsigned long i = 0; i < NR_PAGES; i++) {
		uint64_t now = pfn_of(mem + i * PAGE);

		if (!collapse && now != before[i])
			return fail("page %lu moved (pfn %#llx -> %#llx) without a collapse", i,
				    (unsigned long long)before[i], (unsigned long long)now);
	}
	for (unsigned long t = 0; collapse && t < SIZE; t += THP)
		if (!is_thp_of_size(mem + t))
			return fail("the collapsed range at %#lx is not one THP", t);
	if (gc_collapse_check(mem) == FAIL)
		return FAIL;
	snprintf(why, sizeof(why),
		 "(grandchild: AnonHugePages %ld kB after %llu full scans, thp_scan_exceed_share_pte +%llu, thp_collapse_alloc +%llu)",
		 kb, scans, exceed, alloc);
	return PASS;
}

static int khugepaged_collapses_a_thp_only_the_grandchild_maps(char *mem)
{
	static const struct grandchild_ops ops = {
		.prepare = gc_rich, .intact = gc_rich_intact,
		.arm = khugepaged_save, .disarm = khugepaged_restore,
		.work = gc_khugepaged,
	};

	(void)mem;	/* the test process's area: not used */
	return grandchild_run(&ops);
}

static const struct scenario scenarios[] = {
	CASE(pageout_leaves_a_shared_thp_alone),
	CASE(pageout_leaves_a_folio_the_child_still_maps),
	CASE(cow_copies_go_to_swap_and_back),
	CASE(swapped_thp_is_written_by_both_after_fork),
	CASE(collapsed_after_swap_thp_is_reused),
	CASE(swapcache_folio_is_not_reused),
	CASE(pageout_takes_a_thp_only_the_grandchild_maps),
	/* Last: it wakes khugepaged, which makes one more pass when put back. */
	CASE(khugepaged_collapses_a_thp_only_the_grandchild_maps),
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
