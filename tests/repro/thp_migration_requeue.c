// SPDX-License-Identifier: GPL-2.0
/*
 * A migrated PTE-mapped anon THP (or mTHP) comes out of migration flagged
 * "partially mapped" and queued on the deferred split queue although every
 * page of it is mapped; its next migration then splits it, and the split
 * maps its zero-filled pages to the shared zero page. Seen in 6.12.117 (the
 * 6.12.y backport of "mm: migrate: requeue destination folio on deferred
 * split queue"; docs/test-guests.md, docs/arm64.md) and, by reading, still
 * in 7.3 (docs/notes/upstream-findings-7.3-reading.md, finding b):
 *
 *   try_to_migrate_one() unmaps the source PTE by PTE; the first
 *   folio_remove_rmap_pte() makes __folio_remove_rmap() see a folio that
 *   is still mapped elsewhere, so it sets partially_mapped and calls
 *   deferred_split_folio(folio, true). migrate_folio_move() records "on
 *   the deferred list, partially mapped" from the source after that unmap
 *   and requeues the fully mapped destination with
 *   deferred_split_folio(dst, src_partially_mapped). At the folio's next
 *   migration, migrate_pages_batch() sees nr_pages > 2, on the deferred
 *   list and partially mapped, and splits it (try_split_folio():
 *   thp_migration_fail and thp_migration_split +1 for a PMD-sized folio);
 *   the split remaps zero-filled subpages to the shared zero page
 *   (RMP_USE_SHARED_ZEROPAGE / TTU_USE_SHARED_ZEROPAGE), where
 *   move_pages() reports -EFAULT for them. A PMD-mapped THP is not
 *   affected (one PMD migration entry, no per-page rmap removal).
 *
 * Each round makes one anon folio of SIZE_KB (the PMD size: MADV_HUGEPAGE;
 * an mTHP size: that size's enabled set to "always" and the PMD size's to
 * "never" for the round, restored after), folio-aligned in a VMA of its
 * own, writes a pattern to every page but a few (8 for a PMD THP; those
 * stay zero-filled), PTE-maps it without splitting the folio
 * (mprotect(PROT_READ) of one page, then PROT_READ|PROT_WRITE again) and
 * checks with /proc/self/pagemap and /proc/kpageflags that it is still one
 * folio (KPF_THP on every page, head and tails) and with smaps that no
 * AnonHugePages are left. (The area's policy, MPOL_BIND to every memory
 * node without MPOL_F_MOF, keeps NUMA balancing off it.) Then:
 *
 *   step 1: move_pages() its first page to the other node. Buggy: the
 *           destination is flagged, hugepages-<N>kB/stats/
 *           nr_anon_partially_mapped +1 (split_deferred, and for the PMD
 *           size thp_deferred_split_page, +2: source and destination).
 *   step 2: move it back. Buggy: split on the way (thp_migration_split
 *           +1 for the PMD size, hugepages-<N>kB/stats/split +1 for an
 *           mTHP), the pages come back order-0, the zero-filled ones are
 *           the zero page (KPF_ZERO_PAGE, move_pages() -EFAULT). Fixed:
 *           one more migration of the whole folio, still one folio.
 *
 * and checks the data (every written page its pattern, the others zero).
 * One line per round:
 *
 *   thp-migration-requeue: 2048kB: node 0->1->0; step1 <counter deltas>
 *   thp=512/512; step2 <counter deltas> thp=0/512 zero_page=8/8 efault=8
 *   on_node0=504/504; data=ok => PRESENT|ABSENT|ERROR (why)
 *
 * A round is PRESENT if step 1 flagged the destination
 * (nr_anon_partially_mapped +1) or, on a kernel without that counter,
 * step 2 split the folio; ABSENT if neither happened and step 2 moved the
 * folio back whole; ERROR if it could not tell (step 1 did not move the
 * folio whole, step 2 split an unflagged folio -- a failed allocation
 * splits too --, the data changed) or could not set up. The last line,
 * "thp-migration-requeue: PRESENT|ABSENT|ERROR", is PRESENT if a round
 * was, else ERROR if a round was, else ABSENT. A counter the kernel lacks
 * prints as n/a. Counters are system-wide: run it on an otherwise idle
 * machine (khugepaged asleep, no NUMA balancing on the area). An mTHP
 * round restores the knobs it set when it ends; a kill mid-round leaves
 * them set.
 *
 * Needs root (pagemap PFNs, kpageflags, the sysfs knobs), two memory
 * nodes (a guest: numa=fake=2) and THP enabled ("madvise" or "always");
 * without them it says what is missing and exits 1. It exits 0 whatever
 * the verdict: it is a reproducer, not a test.
 *
 * Usage: thp_migration_requeue [SIZE_KB ...]
 *        (default: the PMD size, then 64 if hugepages-64kB exists)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PREFIX		"thp-migration-requeue: "
#define THP_SYS		"/sys/kernel/mm/transparent_hugepage"
#define MPOL_BIND	2
#define MPOL_MF_MOVE	(1 << 1)

#define KPF_COMPOUND_HEAD	15
#define KPF_COMPOUND_TAIL	16
#define KPF_THP			22
#define KPF_ZERO_PAGE		24
#define PM_PRESENT		(1ULL << 63)
#define PM_PFN_MASK		((1ULL << 55) - 1)

enum verdict { ABSENT, PRESENT, ERROR, SETUP_ERROR };
static const char *const verdict_name[] = { "ABSENT", "PRESENT", "ERROR", "ERROR" };

/* /proc/vmstat's, then hugepages-<N>kB/stats/'s (-1: the kernel has none). */
enum {
	C_THP_MIG_OK, C_THP_MIG_FAIL, C_THP_MIG_SPLIT, C_THP_DEFERRED, C_THP_SPLIT,
	C_PGMIG_OK, C_PGMIG_FAIL,
	C_PARTIAL, C_SPLIT_DEFERRED, C_SPLIT, C_SPLIT_FAILED,
	NR_CTRS, FIRST_SIZE_CTR = C_PARTIAL,
};

static const char *const ctr_name[NR_CTRS] = {
	"thp_migration_success", "thp_migration_fail", "thp_migration_split",
	"thp_deferred_split_page", "thp_split_page",
	"pgmigrate_success", "pgmigrate_fail",
	"nr_anon_partially_mapped", "split_deferred", "split", "split_failed",
};

struct ctrs {
	long long v[NR_CTRS];
};

static long psize;
static int pagemap_fd, kpageflags_fd;
static char line[1536];		/* the round's output line */
static char why[256];		/* why a round is ERROR */

static void add(const char *fmt, ...)
{
	size_t used = strlen(line);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line + used, sizeof(line) - used, fmt, ap);
	va_end(ap);
}

static int read_str(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static int write_str(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	ssize_t n = -1;

	if (fd >= 0) {
		n = write(fd, val, strlen(val));
		close(fd);
	}
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

/* The [selected] word of an "always inherit madvise [never]" knob. */
static int thp_mode(const char *path, char *mode, size_t len)
{
	char buf[128], *lb, *rb;

	if (read_str(path, buf, sizeof(buf)))
		return -1;
	lb = strchr(buf, '[');
	rb = lb ? strchr(lb, ']') : NULL;
	if (!rb || (size_t)(rb - lb) > len)
		return -1;
	*rb = 0;
	snprintf(mode, len, "%s", lb + 1);
	return 0;
}

static void snapshot(struct ctrs *c, long kb)
{
	char path[160], buf[64], name[64];
	long long val;
	FILE *f;
	int i;

	for (i = 0; i < NR_CTRS; i++)
		c->v[i] = -1;
	f = fopen("/proc/vmstat", "r");
	while (f && fscanf(f, "%63s %lld", name, &val) == 2)
		for (i = 0; i < FIRST_SIZE_CTR; i++)
			if (!strcmp(name, ctr_name[i]))
				c->v[i] = val;
	if (f)
		fclose(f);
	for (i = FIRST_SIZE_CTR; i < NR_CTRS; i++) {
		snprintf(path, sizeof(path), THP_SYS "/hugepages-%ldkB/stats/%s", kb, ctr_name[i]);
		if (!read_str(path, buf, sizeof(buf)))
			c->v[i] = strtoll(buf, NULL, 0);
	}
}

/* The change of counter @i from @a to @b; LLONG_MIN if the kernel has none. */
static long long delta(const struct ctrs *a, const struct ctrs *b, int i)
{
	if (a->v[i] < 0 || b->v[i] < 0)
		return LLONG_MIN;
	return b->v[i] - a->v[i];
}

static void add_deltas(const struct ctrs *a, const struct ctrs *b, const int *which, int n)
{
	for (int k = 0; k < n; k++) {
		long long d = delta(a, b, which[k]);

		if (d == LLONG_MIN)
			add(" %s=n/a", ctr_name[which[k]]);
		else
			add(" %s%+lld", ctr_name[which[k]], d);
	}
}

static uint64_t pfn_of(const char *addr)
{
	uint64_t ent = 0;

	if (pread(pagemap_fd, &ent, 8, (uintptr_t)addr / psize * 8) != 8)
		return 0;
	return ent & PM_PRESENT ? ent & PM_PFN_MASK : 0;
}

static uint64_t kflags(uint64_t pfn)
{
	uint64_t flags = 0;

	if (!pfn || pread(kpageflags_fd, &flags, 8, pfn * 8) != 8)
		return 0;
	return flags;
}

static int has(uint64_t flags, int bit)
{
	return (flags >> bit) & 1;
}

/* @n pages from @area are one folio of @n pages: head, tails, KPF_THP. */
static int one_folio(const char *area, long n)
{
	uint64_t pfn0 = pfn_of(area), f = kflags(pfn0);

	if (!pfn0 || pfn0 % n || !has(f, KPF_COMPOUND_HEAD) || !has(f, KPF_THP))
		return 0;
	for (long i = 1; i < n; i++) {
		f = kflags(pfn_of(area + i * psize));
		if (pfn_of(area + i * psize) != pfn0 + i ||
		    !has(f, KPF_COMPOUND_TAIL) || !has(f, KPF_THP))
			return 0;
	}
	/* Not the start of a larger folio either. */
	return !has(kflags(pfn0 + n), KPF_COMPOUND_TAIL);
}

/* How many of @n pages from @area have kpageflags bit @bit. */
static long count_flag(const char *area, long n, int bit)
{
	long count = 0;

	for (long i = 0; i < n; i++)
		count += has(kflags(pfn_of(area + i * psize)), bit);
	return count;
}

/* move_pages(): where @n pages from @area are (@node NULL) or move them. */
static long sys_move_pages(char *area, long n, const int *node, int *status)
{
	void **pages = calloc(n, sizeof(*pages));
	int *nodes = calloc(n, sizeof(*nodes));
	long ret = -1;

	errno = ENOMEM;
	if (pages && nodes) {
		for (long i = 0; i < n; i++) {
			pages[i] = area + i * psize;
			nodes[i] = node ? *node : 0;
		}
		ret = syscall(SYS_move_pages, 0, n, pages, node ? nodes : NULL, status,
			      node ? MPOL_MF_MOVE : 0);
	}
	free(pages);
	free(nodes);
	return ret;
}

/* Move the folio of @area's first page to @node (retrying a busy folio). */
static int move_first(char *area, int node)
{
	int status = -EBUSY;

	for (int tries = 0; tries < 5; tries++) {
		if (sys_move_pages(area, 1, &node, &status) < 0)
			return -errno;
		if (status != -EBUSY && status != -EAGAIN)
			break;
		usleep(100000);
	}
	return status;
}

/* Memory nodes of this machine (has_memory, else online) into @nodes. */
static int memory_nodes(int *nodes, int max)
{
	char buf[256], *p = buf;
	int n = 0;

	if (read_str("/sys/devices/system/node/has_memory", buf, sizeof(buf)) &&
	    read_str("/sys/devices/system/node/online", buf, sizeof(buf)))
		return 0;
	while (*p && n < max) {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo;

		if (end == p)
			break;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		for (long i = lo; i <= hi && n < max; i++)
			nodes[n++] = (int)i;
		p = *end == ',' ? end + 1 : end;
	}
	return n;
}

/* Page @i of a round with zero pages every @stride pages stays zero-filled. */
static int zero_filled(long i, long stride)
{
	return i % stride == stride - 1;
}

static uint64_t word(long page, long j)
{
	return 0xa5a5000000000000ULL | (uint64_t)page << 24 | (uint64_t)j;
}

/* AnonHugePages (kB) of the VMAs overlapping [area, area + size). */
static long anon_huge_kb(const char *area, size_t size)
{
	unsigned long start, end, a = (uintptr_t)area;
	char buf[512];
	long kb, sum = 0;
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	while (fgets(buf, sizeof(buf), f)) {
		if (sscanf(buf, "%lx-%lx ", &start, &end) == 2)
			in = start < a + size && end > a;
		else if (in && sscanf(buf, "AnonHugePages: %ld kB", &kb) == 1)
			sum += kb;
	}
	fclose(f);
	return sum;
}

static int error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return ERROR;
}

static int setup_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return SETUP_ERROR;
}

/*
 * One round on a folio of @kb KiB (@npages pages, @pmd: the PMD size),
 * mapped at @area: everything after the knobs and the mapping. @status:
 * room for @npages move_pages() results.
 */
static int experiment(char *area, long kb, long npages, int pmd, const int *nodes, int nnodes,
		      int *status)
{
	/* What each step prints: the counters of the folio's kind. */
	static const int pmd_step1[] = { C_THP_MIG_OK, C_THP_MIG_FAIL, C_THP_DEFERRED, C_PARTIAL };
	static const int pmd_step2[] = { C_THP_MIG_OK, C_THP_MIG_FAIL, C_THP_MIG_SPLIT,
					 C_THP_SPLIT, C_PARTIAL };
	static const int m_step1[] = { C_PGMIG_OK, C_PGMIG_FAIL, C_SPLIT_DEFERRED, C_PARTIAL };
	static const int m_step2[] = { C_PGMIG_OK, C_PGMIG_FAIL, C_SPLIT, C_SPLIT_FAILED,
				       C_PARTIAL };
	unsigned long mask = 0;
	char mthp_dir[32];
	long nzero = npages >= 64 ? 8 : npages / 4, stride = npages / nzero, words = psize / 8;
	long thp1, thp2, zero_page = 0, efault = 0, back = 0, bad = 0;
	int from, to = -1, st, flagged, split;
	struct ctrs c0, c1, c2;

	snprintf(mthp_dir, sizeof(mthp_dir), "hugepages-%ldkB/", kb);
	/*
	 * NUMA balancing must not move it between the steps: a VMA policy
	 * without MPOL_F_MOF (mbind() sets none) makes task_numa_work() skip
	 * the VMA. Bound to every memory node, it allocates as by default.
	 */
	for (int i = 0; i < nnodes; i++)
		if (nodes[i] < 63)
			mask |= 1UL << nodes[i];
	if (syscall(SYS_mbind, area, npages * psize, MPOL_BIND, &mask, 8 * sizeof(mask), 0))
		return setup_error("mbind: %s", strerror(errno));
	/* A write fault allocates the folio; every page but the zero ones written. */
	area[0] = 1;
	for (long i = 0; i < npages; i++) {
		uint64_t *p = (uint64_t *)(area + i * psize);

		if (zero_filled(i, stride))
			continue;
		for (long j = 0; j < words; j++)
			p[j] = word(i, j);
	}
	if (!one_folio(area, npages))
		return setup_error("no %ldkB folio at fault: %ld of %ld pages KPF_THP, %ld folio heads (%s/%senabled? no free %ldkB block?)",
				   kb, count_flag(area, npages, KPF_THP), npages,
				   count_flag(area, npages, KPF_COMPOUND_HEAD), THP_SYS, mthp_dir,
				   kb);
	/* PTE-map it; the folio stays whole. */
	if (mprotect(area + psize, psize, PROT_READ) ||
	    mprotect(area + psize, psize, PROT_READ | PROT_WRITE))
		return setup_error("mprotect: %s", strerror(errno));
	if (pmd && anon_huge_kb(area, npages * psize) != 0)
		return setup_error("still PMD-mapped after mprotect (AnonHugePages %ld kB)",
				   anon_huge_kb(area, npages * psize));
	if (!one_folio(area, npages))
		return setup_error("PTE-mapping it split the folio (%ld of %ld pages KPF_THP)",
				   count_flag(area, npages, KPF_THP), npages);

	/* Where it is, and the other node. */
	if (sys_move_pages(area, npages, NULL, status))
		return setup_error("move_pages (query): %s", strerror(errno));
	from = status[0];
	for (long i = 0; i < npages; i++)
		if (status[i] != from)
			return setup_error("page %ld on node %d, page 0 on %d", i, status[i], from);
	for (int i = 0; i < nnodes && to < 0; i++)
		if (nodes[i] != from)
			to = nodes[i];
	if (from < 0 || to < 0)
		return setup_error("the folio is on node %d, no other memory node", from);
	add(" node %d->%d->%d; step1", from, to, from);

	/* Step 1: there. */
	snapshot(&c0, kb);
	st = move_first(area, to);
	snapshot(&c1, kb);
	if (pmd)
		add_deltas(&c0, &c1, pmd_step1, 4);
	else
		add_deltas(&c0, &c1, m_step1, 4);
	thp1 = count_flag(area, npages, KPF_THP);
	add(" thp=%ld/%ld;", thp1, npages);
	if (st != to)
		return error("step 1 did not move it: status %d", st);
	if (!one_folio(area, npages))
		return error("step 1 split the folio: its first migration must move it whole");
	flagged = delta(&c0, &c1, C_PARTIAL) > 0;	/* LLONG_MIN: n/a */

	/* Step 2: back. */
	add(" step2");
	st = move_first(area, from);
	snapshot(&c2, kb);
	if (pmd)
		add_deltas(&c1, &c2, pmd_step2, 5);
	else
		add_deltas(&c1, &c2, m_step2, 5);
	thp2 = count_flag(area, npages, KPF_THP);
	split = !one_folio(area, npages);
	if (sys_move_pages(area, npages, NULL, status))
		for (long i = 0; i < npages; i++)
			status[i] = -errno;
	for (long i = 0; i < npages; i++) {
		if (zero_filled(i, stride)) {
			zero_page += has(kflags(pfn_of(area + i * psize)), KPF_ZERO_PAGE);
			efault += status[i] == -EFAULT;
		} else {
			back += status[i] == from;
		}
	}
	add(" thp=%ld/%ld zero_page=%ld/%ld efault=%ld on_node%d=%ld/%ld;", thp2, npages,
	    zero_page, nzero, efault, from, back, npages - nzero);

	/* Data: the pattern where written, zero elsewhere. */
	for (long i = 0; i < npages; i++) {
		const uint64_t *p = (const uint64_t *)(area + i * psize);
		int zero = zero_filled(i, stride);

		for (long j = 0; j < words; j++)
			if (p[j] != (zero ? 0 : word(i, j))) {
				bad++;
				break;
			}
	}
	if (bad) {
		add(" data=BAD (%ld pages)", bad);
		return error("data changed");
	}
	add(" data=ok");
	/*
	 * A split without the flag (the kernel has the counter) is not this
	 * bug: a failed allocation on node @from splits a folio too.
	 */
	if (split && !flagged && delta(&c0, &c1, C_PARTIAL) != LLONG_MIN)
		return error("step 2 split it although step 1 did not flag it: no free %ldkB block on node %d?",
			     kb, from);
	if (flagged || split) {
		snprintf(why, sizeof(why), "%s%s%s",
			 flagged ? "step 1 flagged it partially mapped" : "",
			 flagged && split ? ", " : "", split ? "step 2 split it" : "");
		return PRESENT;
	}
	if (st != from || back != npages - nzero)
		return error("step 2 did not move it back: status %d, %ld pages on node %d",
			     st, back, from);
	return ABSENT;
}

/* One round: set up the knobs and the mapping, run, restore. */
static int round_of(long kb, long pmd_kb, const int *nodes, int nnodes)
{
	char mpath[128], ppath[128], mold[32] = "", pold[32] = "";
	size_t size = (size_t)kb << 10;
	long npages = size / psize;
	int pmd = kb == pmd_kb, *status = NULL, v;
	char *base, *area;

	line[0] = 0;
	why[0] = 0;
	add(PREFIX "%ldkB:", kb);
	snprintf(mpath, sizeof(mpath), THP_SYS "/hugepages-%ldkB/enabled", kb);
	snprintf(ppath, sizeof(ppath), THP_SYS "/hugepages-%ldkB/enabled", pmd_kb);
	if (npages < 4 || kb & (kb - 1)) {
		v = setup_error("%ld kB is not a large folio size of this kernel", kb);
		goto out;
	}
	status = calloc(npages, sizeof(*status));
	if (!status) {
		v = setup_error("out of memory");
		goto out;
	}
	if (!pmd) {
		/* This size alone: "always" for it, "never" for the PMD size. */
		if (thp_mode(mpath, mold, sizeof(mold))) {
			v = setup_error("no %s (mTHP needs Linux >= 6.8)", mpath);
			goto out;
		}
		thp_mode(ppath, pold, sizeof(pold));
		if (write_str(mpath, "always") || (pold[0] && write_str(ppath, "never"))) {
			v = setup_error("cannot write %s or %s: %s", mpath, ppath, strerror(errno));
			goto restore;
		}
	}
	/* Folio-aligned, between PROT_NONE guards: a VMA of its own. */
	base = mmap(NULL, 3 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED) {
		v = setup_error("mmap: %s", strerror(errno));
		goto restore;
	}
	area = (char *)(((uintptr_t)base + psize + size - 1) & ~(uintptr_t)(size - 1));
	if (mprotect(area, size, PROT_READ | PROT_WRITE)) {
		v = setup_error("mprotect: %s", strerror(errno));
	} else {
		madvise(area, size, MADV_HUGEPAGE);
		v = experiment(area, kb, npages, pmd, nodes, nnodes, status);
	}
	munmap(base, 3 * size);
restore:
	if (mold[0])
		write_str(mpath, mold);
	if (pold[0])
		write_str(ppath, pold);
out:
	free(status);
	if (v == SETUP_ERROR)
		add(" setup error: %s => ERROR", why);
	else
		add(" => %s%s%s%s", verdict_name[v], why[0] ? " (" : "", why, why[0] ? ")" : "");
	printf("%s\n", line);
	return v;
}

static int fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf(PREFIX "error: ");
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n" PREFIX "ERROR\n");
	return 1;
}

int main(int argc, char **argv)
{
	int nodes[64], nnodes, present = 0, errors = 0, setup = 0;
	long sizes[16], nsizes = 0, pmd_kb;
	char buf[64], path[128], mode[32] = "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	psize = sysconf(_SC_PAGESIZE);
	if (geteuid() != 0)
		return fatal("needs root (pagemap PFNs, /proc/kpageflags, %s)", THP_SYS);
	if (read_str(THP_SYS "/hpage_pmd_size", buf, sizeof(buf)))
		return fatal("no %s/hpage_pmd_size: a kernel without CONFIG_TRANSPARENT_HUGEPAGE?",
			     THP_SYS);
	pmd_kb = strtol(buf, NULL, 10) >> 10;
	nnodes = memory_nodes(nodes, 64);
	if (nnodes < 2)
		return fatal("%d NUMA node(s) with memory; it needs two (a guest: numa=fake=2)",
			     nnodes);
	pagemap_fd = open("/proc/self/pagemap", O_RDONLY);
	kpageflags_fd = open("/proc/kpageflags", O_RDONLY);
	if (pagemap_fd < 0 || kpageflags_fd < 0)
		return fatal("cannot open /proc/self/pagemap or /proc/kpageflags: %s",
			     strerror(errno));
	for (int i = 1; i < argc && nsizes < 16; i++) {
		char *end;

		sizes[nsizes] = strtol(argv[i], &end, 10);
		if (*end || sizes[nsizes] <= 0)
			return fatal("usage: %s [SIZE_KB ...] (default: %ld 64)", argv[0], pmd_kb);
		nsizes++;
	}
	if (!nsizes) {
		sizes[nsizes++] = pmd_kb;
		snprintf(path, sizeof(path), THP_SYS "/hugepages-64kB/enabled");
		if (pmd_kb != 64 && !access(path, F_OK))
			sizes[nsizes++] = 64;
		else
			printf(PREFIX "64kB: skipped (no %s)\n", path);
	}
	/*
	 * A PMD-size round needs THP at fault; the PMD size's own knob (Linux
	 * >= 6.8) may override "never" above it. (mTHP rounds set theirs.)
	 */
	snprintf(path, sizeof(path), THP_SYS "/hugepages-%ldkB/enabled", pmd_kb);
	if (thp_mode(path, mode, sizeof(mode)) || !strcmp(mode, "inherit")) {
		snprintf(path, sizeof(path), THP_SYS "/enabled");
		thp_mode(path, mode, sizeof(mode));
	}
	for (long i = 0; i < nsizes; i++)
		if (sizes[i] == pmd_kb && !strcmp(mode, "never"))
			return fatal("THP of the PMD size is off (%s: never); it needs \"madvise\" or \"always\"",
				     path);
	for (long i = 0; i < nsizes; i++) {
		int v = round_of(sizes[i], pmd_kb, nodes, nnodes);

		present |= v == PRESENT;
		errors |= v == ERROR || v == SETUP_ERROR;
		setup |= v == SETUP_ERROR;
	}
	printf(PREFIX "%s\n", present ? "PRESENT" : errors ? "ERROR" : "ABSENT");
	return setup;
}
