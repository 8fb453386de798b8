// SPDX-License-Identifier: GPL-2.0
/*
 * Migration of PTE-mapped anonymous THP between the guest's two NUMA nodes
 * (numa=fake=2), by mbind(MPOL_MF_MOVE), move_pages() and NUMA balancing:
 * the callers the rmap-id-users topic switched to folio_mapped_shared().
 * Where the pages are is read with move_pages(nodes = NULL); that they
 * moved as THP with kpageflags; /proc/vmstat deltas (pgmigrate_success,
 * thp_migration_success, numa_pte_updates, numa_hint_faults) show the
 * paths ran; data is checked in every process.
 *
 * Without MPOL_MF_MOVE_ALL, mbind() and move_pages() migrate only folios
 * the caller does not share. RUSTMM_COW_REUSE=1 (CONFIG_MM_RMAP_ID) means
 * "shared" is precise; 0 means the base kernel, by release (uname(2), as
 * in cow_reuse.c): Linux < 6.15 (6.12) estimates from the first page's
 * mapcount, which moves a folio a child still maps if the child's half
 * does not include the first page and the folio is mapped at most once
 * per page (a THP the child fully unmapped moves on every kernel);
 * Linux >= 6.15 has upstream's mm_id (CONFIG_MM_ID), whose
 * folio_maybe_mapped_shared() is precise while at most two mms map the
 * folio, as here -- but not on a THP that only the grandchild of a double
 * fork maps (grandchild_run(), thp_test.h): mm_id says "maybe shared" for
 * good there and mbind() leaves it, where precise tracking (and 6.12's
 * first-page estimate) moves it.
 *
 * It prints its plan, then "RUSTMM-TEST numa_migrate.<name> PASS|FAIL
 * <why>" per scenario (tests/userspace/result.h); no THP is a FAIL. With
 * fewer than two memory nodes every scenario fails: the guest must have
 * them.
 */
#include "thp_test.h"

#include <sched.h>
#include <sys/syscall.h>

#define NR_PAGES	(SIZE / PAGE)
#define THP_PAGES	(THP / PAGE)
#define MPOL_DEFAULT	0
#define MPOL_BIND	2
#define MPOL_MF_MOVE	(1 << 1)

static int precise;
/* RUSTMM_COW_REUSE=0 on Linux >= 6.15: upstream's mm_id (CONFIG_MM_ID). */
static int mm_id_base;
static int cpu_node0 = -1;	/* a CPU of node 0, for NUMA balancing */

static long sys_mbind(void *addr, unsigned long len, int mode, unsigned long mask,
		      unsigned long flags)
{
	return syscall(SYS_mbind, addr, len, mode, &mask, 8 * sizeof(mask), flags);
}

/* Node of each of @n pages from @mem (negative errno for none). */
static int where(char *mem, unsigned long n, int *status)
{
	void *pages[NR_PAGES];

	for (unsigned long i = 0; i < n; i++)
		pages[i] = mem + i * PAGE;
	return (int)syscall(SYS_move_pages, 0, n, pages, NULL, status, 0);
}

/* How many of the first @n pages are on @node. */
static unsigned long on_node(char *mem, unsigned long n, int node)
{
	static int status[MAX_AREA_PAGES];
	unsigned long count = 0;

	if (where(mem, n, status))
		return 0;
	for (unsigned long i = 0; i < n; i++)
		count += status[i] == node;
	return count;
}

/*
 * The first pages of @mem not on @node, as " page I: node|errno N pfn P
 * flags F" into @out: what a failure leaves behind, to tell a page NUMA
 * balancing never faulted from one it split or could not migrate.
 */
static void not_on_node(char *mem, int node, char *out, size_t len)
{
	static int status[MAX_AREA_PAGES];
	int shown = 0;

	out[0] = 0;
	if (where(mem, NR_PAGES, status))
		return;
	for (unsigned long i = 0; i < NR_PAGES && shown < 4; i++) {
		size_t used = strlen(out);
		uint64_t pfn;

		if (status[i] == node)
			continue;
		pfn = pfn_of(mem + i * PAGE);
		snprintf(out + used, len - used, " page %lu: %d pfn %#llx flags %#llx;", i,
			 status[i], (unsigned long long)pfn,
			 (unsigned long long)kpageflags_of(pfn));
		shown++;
	}
}

/*
 * thp_area() placed on @node: if the allocator put it elsewhere, it is
 * made again with the task's policy bound to @node for its faults, and the
 * policy reset to the default (so NUMA balancing and the scenarios'
 * mbind() calls can move it). Made there, not moved there: in 6.12.117
 * (both kernels; a 6.12.y backport, docs/arm64.md) a migrated PTE-mapped
 * THP comes out queued as partially mapped -- try_to_migrate() unmaps the
 * source PTE by PTE, __folio_remove_rmap() marks it partially mapped,
 * migrate_folio_move() requeues the destination the same way -- and the
 * next migration splits it (migrate_pages_batch()), mapping its
 * zero-filled pages to the shared zero page. A scenario's own migration
 * must be the folio's first.
 */
static char *area_on(char *mem, int node)
{
	unsigned long mask = 1UL << node;

	if (!mem)
		return NULL;
	if (on_node(mem, NR_PAGES, node) != NR_PAGES) {
		munmap(raw_area, SIZE + THP);
		if (syscall(SYS_set_mempolicy, MPOL_BIND, &mask, 8 * sizeof(mask))) {
			fail("set_mempolicy(MPOL_BIND, node %d): %s", node, strerror(errno));
			return NULL;
		}
		mem = thp_area();
		syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0);
		if (!mem)
			return NULL;	/* thp_area() said why */
		if (on_node(mem, NR_PAGES, node) != NR_PAGES) {
			fail("%lu of %lu pages made on node %d", on_node(mem, NR_PAGES, node),
			     NR_PAGES, node);
			return NULL;
		}
	}
	for (unsigned long t = 0; t < SIZE; t += THP)
		if (!is_thp(mem + t) || !is_thp(mem + t + THP - PAGE)) {
			fail("not a THP on node %d", node);
			return NULL;
		}
	return mem;
}

/*
 * The child unmapped everything (it stays alive): only we map the THPs,
 * on every kernel, so mbind(MPOL_MF_MOVE) moves them, as THP.
 */
static int mbind_moves_thp_the_child_unmapped(char *mem)
{
	struct chan unmapped, done, msg;
	unsigned long long mig0, thp0;
	pid_t pid;
	int r = PASS;

	mem = area_on(mem, 0);
	if (!mem)
		return FAIL;
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
	mig0 = vmstat("pgmigrate_success");
	thp0 = vmstat("thp_migration_success");
	if (sys_mbind(mem, SIZE, MPOL_BIND, 1UL << 1, MPOL_MF_MOVE))
		r = fail("mbind: %s", strerror(errno));
	else if (on_node(mem, NR_PAGES, 1) != NR_PAGES)
		r = fail("%lu of %lu pages moved to node 1", on_node(mem, NR_PAGES, 1), NR_PAGES);
	else if (vmstat("thp_migration_success") - thp0 != SIZE / THP ||
		 vmstat("pgmigrate_success") - mig0 < NR_PAGES)
		r = fail("vmstat: thp_migration_success +%llu, pgmigrate_success +%llu",
			 vmstat("thp_migration_success") - thp0, vmstat("pgmigrate_success") - mig0);
	else if (!is_thp(mem) || !is_thp(mem + THP))
		r = fail("the pages moved but are no longer THP");
	post(&done);
	if (reap(pid, msg.fd[0]) == FAIL || r == FAIL)
		return FAIL;
	return check(mem, 0, SIZE, 0) ? FAIL : PASS;
}

/*
 * The child maps only the second half of each THP, we only the first: the
 * folios are shared (the child maps them), and mbind() without
 * MPOL_MF_MOVE_ALL must leave them (precise). 6.12's estimate sees
 * mapcount <= nr_pages and reads the first page alone (mapped once, by
 * us), so it moves the folios -- the child's half with them. Data is
 * intact either way.
 *
 * Linux >= 6.15 (mm_id) leaves them too: the fork gave the child slot 1
 * and set the "maybe shared" bit, and the two half-unmaps only lower slots
 * that keep mappings (folio_sub_return_large_mapcount() clears the bit
 * only when a slot is freed), so folio_maybe_mapped_shared() says shared
 * (mapcount 512 > 1, the bit) and migrate_folio_add() (mm/mempolicy.c)
 * does not queue them.
 */
static int mbind_leaves_thp_the_child_still_maps(char *mem)
{
	static int status[MAX_AREA_PAGES];
	struct chan halved, done, msg;
	unsigned long moved = 0;
	pid_t pid;
	int r = PASS;

	mem = area_on(mem, 0);
	if (!mem)
		return FAIL;
	chan_init(&halved);
	chan_init(&done);
	chan_init(&msg);
	pid = fork();
	if (pid == 0) {
		int bad = 0;

		for (unsigned long t = 0; t < SIZE; t += THP)
			madvise(mem + t, THP / 2, MADV_DONTNEED);
		post(&halved);
		await(&done);
		for (unsigned long t = 0; t < SIZE && !bad; t += THP)
			bad = check(mem, t + THP / 2, t + THP, 0);
		child_done(msg.fd[1], bad);
	}
	await(&halved);
	for (unsigned long t = 0; t < SIZE; t += THP)
		madvise(mem + t + THP / 2, THP / 2, MADV_DONTNEED);
	if (sys_mbind(mem, SIZE, MPOL_BIND, 1UL << 1, MPOL_MF_MOVE))
		r = fail("mbind: %s", strerror(errno));
	/* Where our halves are now. */
	for (unsigned long t = 0; t < SIZE && r == PASS; t += THP) {
		if (where(mem + t, THP_PAGES / 2, status))
			r = fail("move_pages query: %s", strerror(errno));
		for (unsigned long i = 0; i < THP_PAGES / 2; i++)
			moved += status[i] == 1;
	}
	if (r == PASS && (precise || mm_id_base) && moved)
		r = fail("%lu pages of THPs the child still maps were moved without MPOL_MF_MOVE_ALL", moved);
	if (r == PASS && !precise && !mm_id_base && moved != NR_PAGES / 2)
		r = fail("6.12's first-page estimate should move all %lu of our pages: %lu moved",
			 NR_PAGES / 2, moved);
	post(&done);
	if (reap(pid, msg.fd[0]) == FAIL || r == FAIL)
		return FAIL;
	for (unsigned long t = 0; t < SIZE; t += THP)
		if (check(mem, t, t + THP / 2, 0))
			return FAIL;
	return PASS;
}

/* In P (grandchild_run()): the area made on node 0, as area_on() says why. */
static char *gc_on_node0(char *mem)
{
	return area_on(mem, 0);
}

static int gc_intact(const char *mem)
{
	return check(mem, 0, SIZE, 0);
}

/*
 * In the grandchild G of grandchild_run() (thp_test.h: the only mapper of
 * both THPs, which on Linux >= 6.15 read "maybe shared" for good):
 * mbind(MPOL_BIND node 1, MPOL_MF_MOVE) of the area, made on node 0 in P.
 * Without MPOL_MF_MOVE_ALL, queue_folios_pte_range() hands each folio to
 * migrate_folio_add(), which queues it only if it is not shared, and
 * skipping a shared one is no failure (mbind() returns 0):
 *  - 7.3 (mm_id): folio_maybe_mapped_shared() (mm/mempolicy.c:1261) says
 *    "maybe shared": neither THP moves, every page stays on node 0 at its
 *    PFN, thp_migration_success unchanged, mbind() returns 0.
 *  - CONFIG_MM_RMAP_ID: exclusive: both THPs move to node 1, as THP
 *    (thp_migration_success +2).
 *  - 6.12: folio_likely_mapped_shared() (mm/mempolicy.c:1039) reads the
 *    first page's mapcount, 1: exclusive, moved as precise.
 * G's is the folios' first migration (made on node 0, not moved there:
 * area_on()). NUMA balancing is off while it runs: a hinting fault must not
 * move what mbind() left. Data checked in G, the only process that maps it.
 */
static int gc_mbind(char *mem)
{
	static uint64_t before[MAX_AREA_PAGES];
	const int move = precise || !mm_id_base;
	unsigned long long mig0, thp0, mig, thp;
	unsigned long on1;

	for (unsigned long i = 0; i < NR_PAGES; i++)
		before[i] = pfn_of(mem + i * PAGE);
	mig0 = vmstat("pgmigrate_success");
	thp0 = vmstat("thp_migration_success");
	if (sys_mbind(mem, SIZE, MPOL_BIND, 1UL << 1, MPOL_MF_MOVE))
		return fail("mbind: %s", strerror(errno));
	mig = vmstat("pgmigrate_success") - mig0;
	thp = vmstat("thp_migration_success") - thp0;
	on1 = on_node(mem, NR_PAGES, 1);
	if (move && on1 != NR_PAGES)
		return fail("%lu of %lu pages moved to node 1 (thp_migration_success +%llu), want all: only the grandchild maps the THPs",
			    on1, NR_PAGES, thp);
	if (move && (thp != SIZE / THP || !is_thp(mem) || !is_thp(mem + THP)))
		return fail("moved, but not as THP (thp_migration_success +%llu)", thp);
	if (!move && (on1 || on_node(mem, NR_PAGES, 0) != NR_PAGES))
		return fail("%lu of %lu pages moved to node 1 (thp_migration_success +%llu), want none: 7.3's mm_id says maybe shared",
			    on1, NR_PAGES, thp);
	for (unsigned long i = 0; !move && i < NR_PAGES; i++)
		if (pfn_of(mem + i * PAGE) != before[i])
			return fail("page %lu moved on node 0 (pfn %#llx -> %#llx)", i,
				    (unsigned long long)before[i],
				    (unsigned long long)pfn_of(mem + i * PAGE));
	for (unsigned long t = 0; !move && t < SIZE; t += THP)
		if (!is_thp_of_size(mem + t))
			return fail("the THP at %#lx was split", t);
	if (check(mem, 0, SIZE, 0))
		return FAIL;
	snprintf(why, sizeof(why),
		 "(grandchild: %lu/%lu pages moved to node 1, thp_migration_success +%llu, pgmigrate_success +%llu)",
		 on1, NR_PAGES, thp, mig);
	return PASS;
}

static int mbind_moves_thp_only_the_grandchild_maps(char *mem)
{
	static const struct grandchild_ops ops = {
		.prepare = gc_on_node0, .intact = gc_intact, .work = gc_mbind,
	};
	const char *knob = "/proc/sys/kernel/numa_balancing";
	char old[16];
	int r, balancing = !read_sys(knob, old, sizeof(old));

	(void)mem;	/* the test process's area: not used */
	if (balancing) {
		old[strcspn(old, "\n")] = 0;
		if (write_sys(knob, "0"))
			return fail("cannot turn NUMA balancing off: %s", strerror(errno));
	}
	r = grandchild_run(&ops);
	if (balancing)
		write_sys(knob, old);
	return r;
}

/*
 * move_pages() of THPs only we map (one address per THP: the folio moves
 * whole; its tail pages, asked for separately, would report -EBUSY while
 * the folio is isolated): every page ends on node 1, as THP.
 */
static int move_pages_moves_thp_only_we_map(char *mem)
{
	void *pages[SIZE / THP];
	int nodes[SIZE / THP], status[SIZE / THP];
	unsigned long long thp0;

	mem = area_on(mem, 0);
	if (!mem)
		return FAIL;
	{
		pid_t pid = fork();	/* a child that exits: the THPs are ours again */
		int st;

		if (pid == 0)
			_exit(0);
		waitpid(pid, &st, 0);
	}
	for (unsigned long t = 0; t < SIZE / THP; t++) {
		pages[t] = mem + t * THP;
		nodes[t] = 1;
	}
	thp0 = vmstat("thp_migration_success");
	if (syscall(SYS_move_pages, 0, SIZE / THP, pages, nodes, status, MPOL_MF_MOVE))
		return fail("move_pages: %s", strerror(errno));
	for (unsigned long t = 0; t < SIZE / THP; t++)
		if (status[t] != 1)
			return fail("THP %lu: status %d, want node 1", t, status[t]);
	if (on_node(mem, NR_PAGES, 1) != NR_PAGES)
		return fail("%lu of %lu pages on node 1", on_node(mem, NR_PAGES, 1), NR_PAGES);
	if (vmstat("thp_migration_success") - thp0 != SIZE / THP || !is_thp(mem + THP + PAGE))
		return fail("not migrated as THP (thp_migration_success +%llu)",
			    vmstat("thp_migration_success") - thp0);
	return check(mem, 0, SIZE, 0) ? FAIL : PASS;
}

/*
 * NUMA balancing: THPs on node 1, the task on a CPU of node 0, touching
 * them. The scanner marks the PTEs (numa_pte_updates), the hinting faults
 * (numa_hint_faults) migrate the folios to node 0, whole. Scan knobs are
 * made fast (debugfs); up to 60 s of touching.
 */
static int numa_balancing_moves_thp_to_the_task(char *mem)
{
	static const char *const knobs[][2] = {
		{ "/sys/kernel/debug/sched/numa_balancing/scan_delay_ms", "0" },
		{ "/sys/kernel/debug/sched/numa_balancing/scan_period_min_ms", "10" },
		{ "/sys/kernel/debug/sched/numa_balancing/scan_period_max_ms", "100" },
		{ "/sys/kernel/debug/sched/numa_balancing/scan_size_mb", "256" },
		{ "/proc/sys/kernel/numa_balancing", "1" },
	};
	unsigned long long pte0, hint0, mig0;
	cpu_set_t set, old;
	int r = PASS;

	if (cpu_node0 < 0)
		return fail("no CPU on node 0");
	mem = area_on(mem, 1);
	if (!mem)
		return FAIL;
	/*
	 * The counters before balancing is on: the scanner may run as soon as
	 * the last knob is written (on the way back to user space), and a
	 * baseline taken after its only pass would miss its PTE updates.
	 */
	pte0 = vmstat("numa_pte_updates");
	hint0 = vmstat("numa_hint_faults");
	mig0 = vmstat("pgmigrate_success");
	for (unsigned int i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
		if (write_sys(knobs[i][0], knobs[i][1]))
			return fail("cannot set %s: %s", knobs[i][0], strerror(errno));
	sched_getaffinity(0, sizeof(old), &old);
	CPU_ZERO(&set);
	CPU_SET(cpu_node0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	for (int round = 0; round < 600 && on_node(mem, NR_PAGES, 0) != NR_PAGES; round++) {
		for (unsigned long off = 0; off < SIZE; off += PAGE)
			(void)*(volatile char *)(mem + off);
		usleep(100000);
	}
	write_sys("/proc/sys/kernel/numa_balancing", "0");
	sched_setaffinity(0, sizeof(old), &old);
	if (on_node(mem, NR_PAGES, 0) != NR_PAGES) {
		char left[200];

		not_on_node(mem, 0, left, sizeof(left));
		r = fail("after 60 s %lu of %lu pages on node 0 (numa_pte_updates +%llu, numa_hint_faults +%llu):%s",
			 on_node(mem, NR_PAGES, 0), NR_PAGES, vmstat("numa_pte_updates") - pte0,
			 vmstat("numa_hint_faults") - hint0, left);
	}
	else if (vmstat("numa_pte_updates") == pte0 || vmstat("numa_hint_faults") == hint0 ||
		 vmstat("pgmigrate_success") == mig0)
		r = fail("moved without NUMA balancing's counters moving");
	for (unsigned long t = 0; r == PASS && t < SIZE; t += THP)
		if (!is_thp(mem + t) || !is_thp(mem + t + THP - PAGE))
			r = fail("the THP at %#lx was split on the way", t);
	if (r == FAIL)
		return FAIL;
	return check(mem, 0, SIZE, 0) ? FAIL : PASS;
}

static const struct scenario scenarios[] = {
	CASE(mbind_moves_thp_the_child_unmapped),
	CASE(mbind_leaves_thp_the_child_still_maps),
	CASE(mbind_moves_thp_only_the_grandchild_maps),
	CASE(move_pages_moves_thp_only_we_map),
	CASE(numa_balancing_moves_thp_to_the_task),
};

/* A CPU of node 0 from /sys/devices/system/node/node0/cpulist. */
static int first_cpu_of_node0(void)
{
	char buf[64] = "";
	int fd = open("/sys/devices/system/node/node0/cpulist", O_RDONLY);

	if (fd < 0)
		return -1;
	if (read(fd, buf, sizeof(buf) - 1) <= 0)
		buf[0] = 0;
	close(fd);
	return buf[0] >= '0' && buf[0] <= '9' ? atoi(buf) : -1;
}

int main(void)
{
	const char *env = getenv("RUSTMM_COW_REUSE");

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!env || (strcmp(env, "0") && strcmp(env, "1"))) {
		printf("RUSTMM-TEST numa_migrate.setup FAIL RUSTMM_COW_REUSE must be 0 or 1\n");
		return 1;
	}
	mm_id_base = thp_kernel_has_mm_id("numa_migrate");
	if (mm_id_base < 0)
		return 1;
	precise = env[0] == '1';
	mm_id_base = !precise && mm_id_base;
	if (access("/sys/devices/system/node/node1", F_OK)) {
		printf("RUSTMM-TEST numa_migrate.setup FAIL the guest has one NUMA node (numa=fake=2?)\n");
		return 1;
	}
	cpu_node0 = first_cpu_of_node0();
	return run_scenarios("numa_migrate", scenarios, sizeof(scenarios) / sizeof(scenarios[0]),
			     precise ? "[precise] " :
			     mm_id_base ? "[base: mm_id, Linux >= 6.15] " : "[base] ") ? 1 : 0;
}
