// SPDX-License-Identifier: GPL-2.0
/*
 * Device-dax with compound pagemaps (seed 004, topic compound-pagemaps),
 * booted on x86_64 with 2 GiB of guest RAM made legacy pmem by
 * memmap=2G!4G (e820 type 12: region0 with namespace0.0 on the e820
 * nvdimm bus, 1 GiB-aligned, sharing no 128 MiB section with RAM). The
 * program turns it into /dev/dax0.0 by sysfs writes alone, as
 * "ndctl create-namespace -e namespace0.0 -m devdax -M mem -a 2M" would
 * (no info block on a fresh boot; "mem" = no altmap, so the vmemmap of
 * 2 MiB and 1 GiB compounds is deduplicated), and checks:
 *
 * - vmemmap accounting (/proc/vmstat nr_memmap_pages): unbinding nd_pmem
 *   frees the order-0 memmap it built at boot (512 vmemmap pages per
 *   128 MiB section); binding a 2 MiB-aligned device-dax adds 2 per 2 MiB
 *   compound (the head page and one tails-only page; the other 6 reuse
 *   the latter) over the whole namespace (the pgmap covers the 2 MiB info
 *   block area too), not the 512 per section of an unoptimised memmap;
 *   nr_memmap_boot_pages does not move; unbinding gives every page back;
 *   with 1 GiB alignment it is 2 per 1 GiB compound;
 * - the mapping: MAP_SHARED, every byte as written, each page at its
 *   device offset (pfn from dump_page()), in compound folios of the
 *   device's order;
 * - get_user_pages and pin_user_pages, fast and slow (gup_test), over PMD
 *   and PUD leaves: whole leaves per call, calls of 700 and 1000 pages
 *   from 3 pages into a folio, single pages across a folio boundary, with
 *   and without FOLL_WRITE: every page taken, every pin returned
 *   (nr_foll_pin_acquired and _released move by the page count), data
 *   unchanged;
 * - FOLL_LONGTERM: device-dax folios are ZONE_DEVICE, not movable, so
 *   pinnable, and the dax inode has no writeback, so FOLL_WRITE too
 *   (6.12's gup-fast refused long-term pins on devmap leaves and the slow
 *   path pinned; 7.3's gup-fast takes read-only ones itself and leaves
 *   writable ones, whose mapping is neither anon nor shmem, to the slow
 *   path): the pinned pages hold the mapping's data
 *   (PIN_LONGTERM_TEST_READ), held until released;
 * - direct I/O from /dev/zram0 into the mapping (the block layer's
 *   pin_user_pages_fast()) lands exactly in the bytes asked for, from 3
 *   pages into a folio and across folio boundaries;
 * - fork: the child sees the parent's data and the parent the child's
 *   writes; the data outlives munmap (device memory);
 * - no reference left behind: each sampled folio's refcount and pincount
 *   (DUMP_USER_PAGES_TEST, read back from /dev/kmsg) are what they were
 *   before any gup; and the unbind returns (memunmap_pages() waits for
 *   every dev_pagemap reference: on 6.12 gup took one per page, so a
 *   leak hung it; 7.3's gup takes none, and the refcounts are the check;
 *   the write runs in a child, reported after 300 s).
 *
 * The expected values are upstream's, the same on the unpatched kernel
 * and on ours: the topic plans the vmemmap in Rust (the same pages for
 * these aligned geometries) and, on 7.3, refuses only ranges whose
 * compound heads would not be naturally aligned, which this namespace
 * (at 4 GiB) is not. RUSTMM_COMPOUND_PAGEMAPS=1 or 0 (from
 * run-userspace.sh) only names in each line which code ran.
 *
 * It prints its plan, then "RUSTMM-TEST devdax.<name> PASS|FAIL|SKIP
 * <why>" per scenario (tests/userspace/result.h; a PASS says what it
 * measured). The scenarios build on one another: after a failed step the
 * ones that need the device report SKIP, which the harness counts as a
 * failure too (none of them declares it may skip).
 */
#include "thp_test.h"
#include "../bench/devdax_setup.h"

#include <assert.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#define SZ_2M		(2UL << 20)
#define SZ_1G		(1UL << 30)
#define SECTION		(128UL << 20)	/* x86_64 SECTION_SIZE_BITS 27 */
#define STRUCT_PAGE	64UL		/* sizeof(struct page), x86_64 */
#define RESERVE_NR	2		/* VMEMMAP_RESERVE_NR */
/* vmemmap pages per section without the optimisation: 512 */
#define SECTION_MEMMAP	(SECTION / PAGE * STRUCT_PAGE / PAGE)

#define NS		"namespace0.0"
#define ND_DEVS		"/sys/bus/nd/devices/"
#define ND_DRV		"/sys/bus/nd/drivers/"
/* The dax bus device dax_pmem makes of namespace0.0 (region 0, id 0). */
#define DAX		"dax0.0"
#define DAX_DEV		"/sys/bus/dax/devices/" DAX
#define DAX_UNBIND	"/sys/bus/dax/drivers/device_dax/unbind"
#define UNBIND_WAIT	300	/* s: longer is a hang */

/* struct gup_test, its ioctls, devdax_driver(): the benchmark's header. */

/* The device and what the scenarios learnt about it. */
static struct {
	char nd_dax[32];		/* the nd device claiming namespace0.0 */
	unsigned long ns_start, ns_size;
	unsigned long align;		/* of the bound device; 0: none */
	unsigned long start, size;	/* /dev/dax0.0's physical range */
	long long bind_delta;		/* nr_memmap_pages at bind */
	int fd, gup_fd;
	char *mem;			/* /dev/dax0.0 mapped, whole */
	int ready;			/* bound, mapped and filled */
} dd = { .fd = -1, .gup_fd = -1 };

/* ---- sysfs and /proc ---------------------------------------------- */

/* Write @val to a sysfs file: PASS, or FAIL with why. */
static int sys_write(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), e;
	ssize_t n;

	if (fd < 0)
		return fail("open %s: %s", path, strerror(errno));
	n = write(fd, val, strlen(val));
	e = errno;
	close(fd);
	if (n != (ssize_t)strlen(val))
		return fail("write \"%.*s\" to %s: %s", (int)strcspn(val, "\n"),
			    val, path, n < 0 ? strerror(e) : "short write");
	return PASS;
}

/*
 * Write @val to @path in a child and wait at most UNBIND_WAIT s: an unbind
 * that never returns (memunmap_pages() waiting for a dev_pagemap
 * reference nobody drops) fails the scenario instead of the whole run.
 */
static int sys_write_watched(const char *path, const char *val)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return fail("fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open(path, O_WRONLY);

		if (fd < 0)
			_exit(errno);
		_exit(write(fd, val, strlen(val)) == (ssize_t)strlen(val) ?
		      0 : errno ? errno : EIO);
	}
	for (int i = 0; i < UNBIND_WAIT * 10; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			if (WIFEXITED(status) && !WEXITSTATUS(status))
				return PASS;
			return fail("write \"%s\" to %s: %s", val, path,
				    WIFEXITED(status) ?
				    strerror(WEXITSTATUS(status)) : "killed");
		}
		usleep(100000);
	}
	return fail("write \"%s\" to %s still blocked after %d s: a reference to the device's pages (dev_pagemap) was never dropped",
		    val, path, UNBIND_WAIT);
}

struct memmap {
	long long pages, boot;
};

static void memmap_read(struct memmap *m)
{
	m->pages = (long long)vmstat("nr_memmap_pages");
	m->boot = (long long)vmstat("nr_memmap_boot_pages");
}

/*
 * The pin counters, folded first: they are per-CPU node counters and
 * /proc/vmstat shows only what was folded (vm.stat_refresh folds all).
 */
static void pins(unsigned long long *acquired, unsigned long long *released)
{
	write_sys("/proc/sys/vm/stat_refresh", "1");
	*acquired = vmstat("nr_foll_pin_acquired");
	*released = vmstat("nr_foll_pin_released");
}

/* ---- data ----------------------------------------------------------- */

/* The 8 bytes at device offset @off under @seed: no two alike. */
static inline uint64_t word(unsigned long off, int seed)
{
	return (off * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)seed << 56) ^
	       0x5a5a5a5a5a5a5a5aULL;
}

static void fill_words(char *mem, unsigned long from, unsigned long to, int seed)
{
	for (unsigned long off = from; off < to; off += 8)
		*(uint64_t *)(mem + off) = word(off, seed);
}

/* PASS if [from, to) of the mapping holds @seed's words; else which byte. */
static int check_words(const char *mem, unsigned long from, unsigned long to,
		       int seed, const char *what)
{
	for (unsigned long off = from; off < to; off += 8) {
		uint64_t want = word(off, seed), got = *(const uint64_t *)(mem + off);
		int b = 0;

		if (got == want)
			continue;
		while (((got >> (8 * b)) & 0xff) == ((want >> (8 * b)) & 0xff))
			b++;
		return fail("%s: byte %#lx of the device is %#x, want %#x (seed %d)",
			    what, off + b, (unsigned int)(got >> (8 * b)) & 0xff,
			    (unsigned int)(want >> (8 * b)) & 0xff, seed);
	}
	return PASS;
}

static int map_dax(void)
{
	dd.fd = open("/dev/" DAX, O_RDWR);
	if (dd.fd < 0)
		return fail("open /dev/" DAX ": %s", strerror(errno));
	dd.mem = mmap(NULL, dd.size, PROT_READ | PROT_WRITE, MAP_SHARED, dd.fd, 0);
	if (dd.mem == MAP_FAILED) {
		dd.mem = NULL;
		return fail("mmap of /dev/" DAX ", %lu MiB, MAP_SHARED: %s",
			    dd.size >> 20, strerror(errno));
	}
	if ((uintptr_t)dd.mem & (dd.align - 1))
		return fail("/dev/" DAX " mapped at %p, not %lu KiB-aligned",
			    dd.mem, dd.align >> 10);
	return PASS;
}

static void unmap_dax(void)
{
	if (dd.mem)
		munmap(dd.mem, dd.size);
	if (dd.fd >= 0)
		close(dd.fd);
	dd.mem = NULL;
	dd.fd = -1;
}

/* ---- gup_test ------------------------------------------------------- */

static const char *cmd_name(unsigned long cmd)
{
	switch (cmd) {
	case GUP_FAST_BENCHMARK:
		return "GUP_FAST_BENCHMARK";
	case PIN_FAST_BENCHMARK:
		return "PIN_FAST_BENCHMARK";
	case PIN_LONGTERM_BENCHMARK:
		return "PIN_LONGTERM_BENCHMARK";
	case GUP_BASIC_TEST:
		return "GUP_BASIC_TEST";
	case PIN_BASIC_TEST:
		return "PIN_BASIC_TEST";
	}
	return "?";
}

/* A range of the mapping and how many pages gup_test asks for per call. */
struct range {
	unsigned long off, len;
	unsigned int per_call;
};

/*
 * One gup_test run over @r: the ioctl succeeds, covers the range (gup_test
 * stops at the first call that gets no page and reports how far it came)
 * and, for the pinning commands, pins and unpins exactly one reference
 * per page (a get pins none).
 */
static int gup_run(unsigned long cmd, const struct range *r, unsigned int flags)
{
	struct gup_test g = {
		.addr = (uintptr_t)(dd.mem + r->off),
		.size = r->len,
		.nr_pages_per_call = r->per_call,
		.gup_flags = flags,
	};
	unsigned long n = r->len / PAGE, want;
	unsigned long long a0, r0, a1, r1;

	want = cmd == GUP_FAST_BENCHMARK || cmd == GUP_BASIC_TEST ? 0 : n;
	pins(&a0, &r0);
	if (ioctl(dd.gup_fd, cmd, &g))
		return fail("%s at +%#lx, %lu pages, %u per call%s: %s",
			    cmd_name(cmd), r->off, n, r->per_call,
			    flags ? ", FOLL_WRITE" : "", strerror(errno));
	pins(&a1, &r1);
	if (g.size != r->len)
		return fail("%s at +%#lx, %lu pages, %u per call%s: took %llu of %lu bytes",
			    cmd_name(cmd), r->off, n, r->per_call,
			    flags ? ", FOLL_WRITE" : "",
			    (unsigned long long)g.size, r->len);
	if (a1 - a0 != want || r1 - r0 != want)
		return fail("%s at +%#lx, %lu pages, %u per call%s: nr_foll_pin_acquired +%llu, nr_foll_pin_released +%llu, want +%lu each",
			    cmd_name(cmd), r->off, n, r->per_call,
			    flags ? ", FOLL_WRITE" : "", a1 - a0, r1 - r0, want);
	return PASS;
}

/*
 * The text of the next record of the kernel log open at @fd (O_NONBLOCK)
 * in @rec, without its header; NULL at the end of the log. Records
 * overwritten meanwhile are skipped.
 */
static char *kmsg_next(int fd, char *rec, size_t len)
{
	for (;;) {
		ssize_t n = read(fd, rec, len - 1);
		char *msg;

		if (n < 0 && errno == EPIPE)
			continue;	/* records overwritten: read on */
		if (n <= 0)
			return NULL;
		rec[n] = 0;
		msg = strchr(rec, ';');
		if (msg)
			return msg + 1;
	}
}

/* What dump_page() said about one page's folio. */
struct dump {
	int ref, pin, order;
	unsigned long pfn;
};

/*
 * DUMP_USER_PAGES_TEST of the page at @addr (get_user_pages() of it, then
 * dump_page(), then put_page()): the folio's refcount (ours included),
 * pincount and order, and the page's pfn, read back from /dev/kmsg.
 */
static int dump_folio(char *addr, struct dump *d)
{
	struct gup_test g = {
		.addr = (uintptr_t)addr,
		.size = PAGE,
		.nr_pages_per_call = 1,
		.which_pages = { 1 },
	};
	static char rec[4096];
	int kfd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK), got = 0;

	if (kfd < 0)
		return fail("open /dev/kmsg: %s", strerror(errno));
	lseek(kfd, 0, SEEK_END);
	if (ioctl(dd.gup_fd, DUMP_USER_PAGES_TEST, &g)) {
		close(kfd);
		return fail("DUMP_USER_PAGES_TEST at +%#lx: %s",
			    (unsigned long)(addr - dd.mem), strerror(errno));
	}
	while (got != 3) {
		char *msg = kmsg_next(kfd, rec, sizeof(rec));

		if (!msg)
			break;
		if (sscanf(msg, "page: refcount:%d mapcount:%*d mapping:%*s index:%*s pfn:%lx",
			   &d->ref, &d->pfn) == 2)
			got = 1;
		else if (got == 1 &&
			 sscanf(msg, "head: order:%d mapcount:%*d entire_mapcount:%*d nr_pages_mapped:%*d pincount:%d",
				&d->order, &d->pin) == 2)
			got = 3;
	}
	close(kfd);
	if (got != 3)
		return fail("no dump_page() of a large folio in /dev/kmsg for +%#lx",
			    (unsigned long)(addr - dd.mem));
	return PASS;
}

/* Pages whose folios are sampled before and after the gups. */
#define NR_SAMPLES	6
static unsigned long sample_off[NR_SAMPLES];
static struct dump sample0[NR_SAMPLES];

static void set_samples(void)
{
	sample_off[0] = 0;			/* the first folio's head */
	sample_off[1] = 3 * PAGE;		/* where gups start from */
	sample_off[2] = SZ_2M - PAGE;		/* before 2 MiB */
	sample_off[3] = SZ_2M + PAGE;		/* after it */
	sample_off[4] = dd.size - SZ_2M;	/* the last 2 MiB */
	sample_off[5] = dd.size - PAGE;		/* the last page */
}

/*
 * Each sample's folio: of the device's order, the page at its device
 * offset (pfn), no pin; with @base, the refcount and pincount as in
 * sample0[] (recorded when @base is NULL).
 */
static int check_samples(const struct dump *base, char *note, size_t len)
{
	const int order = __builtin_ctzl(dd.align / PAGE);

	for (int i = 0; i < NR_SAMPLES; i++) {
		unsigned long off = sample_off[i];
		struct dump d;

		if (dump_folio(dd.mem + off, &d) != PASS)
			return FAIL;
		if (d.order != order)
			return fail("the page at +%#lx is in a folio of order %d, want %d",
				    off, d.order, order);
		if (d.pfn != (dd.start + off) / PAGE)
			return fail("the page at +%#lx is pfn %#lx, want %#lx (device start %#lx)",
				    off, d.pfn, (dd.start + off) / PAGE, dd.start);
		if (!base) {
			if (d.pin)
				return fail("the folio at +%#lx has pincount %d before any pin",
					    off, d.pin);
			sample0[i] = d;
			continue;
		}
		if (d.ref != base[i].ref || d.pin != base[i].pin)
			return fail("the folio at +%#lx: refcount %d, pincount %d; before the gups %d, %d (each read while the dump holds one more reference)",
				    off, d.ref, d.pin, base[i].ref, base[i].pin);
	}
	if (note)
		snprintf(note, len, "refcount %d, pincount 0 in each of %d sampled order-%d folios",
			 sample0[0].ref, NR_SAMPLES, order);
	return PASS;
}

/* ---- the device ----------------------------------------------------- */

/*
 * Bind nd dax0.0 (namespace0.0, mode ram, @align, a fresh @uuid: a
 * different uuid makes nd_pfn_init() write a new info block) to dax_pmem:
 * nr_memmap_pages must grow by 2 per compound of the whole namespace,
 * nr_memmap_boot_pages not at all; the dax device must have @align, start
 * one alignment unit into the namespace (the info block's) and reach its
 * end.
 */
static int bind_devdax(unsigned long align, const char *uuid)
{
	char path[128], val[32], drv[32];
	unsigned long got_align = 0, nr = dd.ns_size / align;
	long long want = (long long)nr * RESERVE_NR;
	long long unopt = dd.ns_size / SECTION * SECTION_MEMMAP;
	struct memmap m0, m1;

	snprintf(path, sizeof(path), ND_DEVS "%s/uuid", dd.nd_dax);
	if (sys_write(path, uuid))
		return FAIL;
	snprintf(path, sizeof(path), ND_DEVS "%s/mode", dd.nd_dax);
	if (sys_write(path, "ram\n"))
		return FAIL;
	snprintf(path, sizeof(path), ND_DEVS "%s/align", dd.nd_dax);
	snprintf(val, sizeof(val), "%lu", align);
	if (sys_write(path, val))
		return FAIL;
	snprintf(path, sizeof(path), ND_DEVS "%s/namespace", dd.nd_dax);
	if (devdax_read(path, val, sizeof(val)))
		return fail("read %s: %s", path, strerror(errno));
	if (strcmp(val, NS) && sys_write(path, NS))
		return FAIL;

	memmap_read(&m0);
	if (sys_write(ND_DRV "dax_pmem/bind", dd.nd_dax))
		return FAIL;
	memmap_read(&m1);

	dd.bind_delta = m1.pages - m0.pages;
	devdax_driver(DAX_DEV, drv, sizeof(drv));
	if (strcmp(drv, "device_dax"))
		return fail("%s bound to dax_pmem, but " DAX " is bound to \"%s\", not device_dax",
			    dd.nd_dax, drv);
	dd.align = align;
	if (devdax_read_ul(DAX_DEV "/align", &got_align) || got_align != align ||
	    devdax_read_ul(DAX_DEV "/resource", &dd.start) ||
	    devdax_read_ul(DAX_DEV "/size", &dd.size))
		return fail(DAX "'s align %lu (want %lu), or no resource/size", got_align, align);
	if (dd.start != dd.ns_start + align || dd.start + dd.size != dd.ns_start + dd.ns_size)
		return fail(DAX " is [%#lx, %#lx), want [%#lx, %#lx): the data after one %lu KiB info block unit",
			    dd.start, dd.start + dd.size, dd.ns_start + align,
			    dd.ns_start + dd.ns_size, align >> 10);
	snprintf(why, sizeof(why),
		 "nr_memmap_pages %+lld, want %+lld: %d per %lu KiB compound, %lu compounds over the %lu MiB namespace (unoptimised: %+lld); nr_memmap_boot_pages %+lld",
		 dd.bind_delta, want, RESERVE_NR, align >> 10, nr, dd.ns_size >> 20,
		 unopt, m1.boot - m0.boot);
	if (dd.bind_delta != want || m1.boot != m0.boot)
		return FAIL;
	return PASS;
}

/*
 * Unbind /dev/dax0.0 from device_dax (memunmap_pages(): the vmemmap goes)
 * and nd dax0.0 from dax_pmem (the dax device goes): nr_memmap_pages drops
 * by what the bind added, at the first step, and not again.
 */
static int unbind_devdax(void)
{
	struct memmap m0, m1, m2;
	struct stat st;

	unmap_dax();
	if (dd.gup_fd >= 0)
		close(dd.gup_fd);
	dd.gup_fd = -1;
	dd.ready = 0;
	memmap_read(&m0);
	if (sys_write_watched(DAX_UNBIND, DAX))
		return FAIL;
	memmap_read(&m1);
	if (sys_write_watched(ND_DRV "dax_pmem/unbind", dd.nd_dax))
		return FAIL;
	memmap_read(&m2);
	dd.align = 0;
	snprintf(why, sizeof(why),
		 "nr_memmap_pages %+lld at the device_dax unbind (the bind: %+lld), %+lld at dax_pmem's; nr_memmap_boot_pages %+lld",
		 m1.pages - m0.pages, dd.bind_delta, m2.pages - m1.pages,
		 m2.boot - m0.boot);
	if (m1.pages - m0.pages != -dd.bind_delta || m2.pages != m1.pages ||
	    m2.boot != m0.boot)
		return FAIL;
	if (!stat(DAX_DEV, &st) || !stat("/dev/" DAX, &st)) {
		size_t len = strlen(why);

		snprintf(why + len, sizeof(why) - len,
			 "; " DAX " still exists after dax_pmem's unbind");
		return FAIL;
	}
	return PASS;
}

static int open_gup_test(void)
{
	dd.gup_fd = open("/sys/kernel/debug/gup_test", O_RDWR);
	if (dd.gup_fd < 0)
		return fail("open /sys/kernel/debug/gup_test: %s", strerror(errno));
	return PASS;
}

/* Map the whole device, fill it with @seed, read it back; sample folios. */
static int map_fill_check(int seed, char *note, size_t len)
{
	int r;

	if (open_gup_test() || map_dax())
		return FAIL;
	fill_words(dd.mem, 0, dd.size, seed);
	r = check_words(dd.mem, 0, dd.size, seed, "after the fill");
	set_samples();
	if (r == PASS)
		r = check_samples(NULL, note, len);
	dd.ready = r == PASS;
	return r;
}

/* ---- scenarios: 2 MiB ------------------------------------------------ */

/* A scenario that cannot run: what it needed. */
static int skip(const char *what)
{
	snprintf(why, sizeof(why), "%s", what);
	return SKIP;
}

static int nd_pmem_unbind_frees_its_order0_memmap(void)
{
	char drv[32] = "";
	struct memmap m0, m1;
	long long want;

	for (int i = 0; i < 100 && strcmp(drv, "nd_pmem"); i++) {
		devdax_driver(ND_DEVS NS, drv, sizeof(drv));
		if (strcmp(drv, "nd_pmem"))
			usleep(100000);
	}
	if (strcmp(drv, "nd_pmem"))
		return fail(NS " is bound to \"%s\", not nd_pmem (no legacy pmem? the guest needs memmap=2G!4G and CONFIG_X86_PMEM_LEGACY)",
			    drv);
	if (devdax_read_ul(ND_DEVS NS "/resource", &dd.ns_start) ||
	    devdax_read_ul(ND_DEVS NS "/size", &dd.ns_size))
		return fail("no resource or size of " NS ": %s", strerror(errno));
	/* 1 GiB-aligned: no section shared with boot RAM, room for 1G. */
	if (dd.ns_start % SZ_1G || dd.ns_size % SZ_1G || dd.ns_size < 2 * SZ_1G)
		return fail(NS " is [%#lx, +%#lx): want 1 GiB-aligned, at least 2 GiB",
			    dd.ns_start, dd.ns_size);
	if (devdax_read(ND_DEVS "region0/dax_seed", dd.nd_dax, sizeof(dd.nd_dax)) ||
	    !dd.nd_dax[0])
		return fail("no dax seed in region0");

	/*
	 * pmem_attach_disk() memremaps the whole namespace as an FS_DAX
	 * pgmap (pmem_should_map_pages(), with or without CONFIG_FS_DAX),
	 * order 0: 512 vmemmap pages per section.
	 */
	want = -(long long)(dd.ns_size / SECTION * SECTION_MEMMAP);
	memmap_read(&m0);
	if (sys_write(ND_DRV "nd_pmem/unbind", NS))
		return FAIL;
	memmap_read(&m1);
	snprintf(why, sizeof(why),
		 NS " [%#lx, +%lu MiB]: nr_memmap_pages %+lld, want %+lld (%lu per section); nr_memmap_boot_pages %+lld",
		 dd.ns_start, dd.ns_size >> 20, m1.pages - m0.pages, want,
		 SECTION_MEMMAP, m1.boot - m0.boot);
	if (m1.pages - m0.pages != want || m1.boot != m0.boot)
		return FAIL;
	return PASS;
}

static int bind_2m_devdax_adds_two_vmemmap_pages_per_compound(void)
{
	char drv[32];

	if (!dd.nd_dax[0])
		return skip("no namespace to use (first scenario failed)");
	devdax_driver(ND_DEVS NS, drv, sizeof(drv));
	if (drv[0])
		return skip(NS " is still bound");
	return bind_devdax(SZ_2M, "5f1a6c2e-3b7d-4c1e-9a2f-0d4e8b7c6a51");
}

static int every_page_holds_its_data_in_2m_folios(void)
{
	char note[160];
	int r;

	if (dd.align != SZ_2M)
		return skip("no 2 MiB device-dax");
	r = map_fill_check(1, note, sizeof(note));
	if (r == PASS)
		snprintf(why, sizeof(why), "%lu MiB at %p; %s", dd.size >> 20,
			 dd.mem, note);
	return r;
}

/*
 * The ranges of the gup runs. 2 MiB is a folio boundary of the 2 MiB
 * device and a PMD-size point inside the one folio of the 1 GiB device.
 */
static void gup_ranges(struct range *r, unsigned long size)
{
	/* Whole leaves per call (512 pages: a PMD; on a PUD, 512 of it). */
	r[0] = (struct range){ 0, size, 512 };
	/* From 3 pages into a folio, 700 pages per call, ending mid-folio. */
	r[1] = (struct range){ 3 * PAGE, 3 * SZ_2M + 100 * PAGE, 700 };
	/* One page per call, across 2 MiB and 4 MiB. */
	r[2] = (struct range){ SZ_2M - 2 * PAGE, SZ_2M + 4 * PAGE, 1 };
	/* Inside one folio, 100 per call. */
	r[3] = (struct range){ SZ_2M + 5 * PAGE, 256 * PAGE, 100 };
	/* 1000 per call from 3 pages in, across 4 MiB. */
	r[4] = (struct range){ SZ_2M + 3 * PAGE, SZ_2M + 7 * PAGE, 1000 };
}

static int gup_all(unsigned long size, unsigned long slow_max, int *runs)
{
	static const unsigned long cmds[] = {
		GUP_FAST_BENCHMARK, PIN_FAST_BENCHMARK, GUP_BASIC_TEST, PIN_BASIC_TEST,
	};
	struct range rs[5];

	gup_ranges(rs, size);
	*runs = 0;
	for (size_t c = 0; c < ARRAY_SIZE(cmds); c++)
		for (size_t i = 0; i < ARRAY_SIZE(rs); i++)
			for (unsigned int f = 0; f <= FOLL_WRITE; f += FOLL_WRITE) {
				struct range r = rs[i];

				/* The slow paths go page by page: less of them. */
				if ((cmds[c] == GUP_BASIC_TEST || cmds[c] == PIN_BASIC_TEST) &&
				    r.len > slow_max)
					r.len = slow_max;
				if (r.off + r.len > size)
					r.len = size - r.off;
				if (gup_run(cmds[c], &r, f))
					return FAIL;
				(*runs)++;
			}
	return PASS;
}

static int gup_and_pin_over_pmd_leaves_take_every_page_once(void)
{
	int runs, r;

	if (!dd.ready || dd.align != SZ_2M)
		return skip("no mapped 2 MiB device-dax");
	r = gup_all(dd.size, 256UL << 20, &runs);
	if (r == PASS)
		r = check_words(dd.mem, 0, dd.size, 1, "after the gups");
	if (r == PASS)
		snprintf(why, sizeof(why),
			 "%d gup_test runs (get/pin, fast/slow, 512/700/1/100/1000 pages per call, with and without FOLL_WRITE): every page taken, every pin returned, data intact",
			 runs);
	return r;
}

/*
 * PIN_LONGTERM_BENCHMARK (pin_user_pages(FOLL_LONGTERM)) succeeds over the
 * range; PIN_LONGTERM_TEST_START pins it (gup-fast first, if asked; the
 * slow path pins what gup-fast leaves), the pins
 * are held until STOP, and READ copies out of the pinned pages exactly
 * the mapping's bytes.
 */
static int longterm(unsigned long off, unsigned long len, int seed)
{
	unsigned long n = len / PAGE;
	struct range rg = { off, len, 512 };
	unsigned long long a0, r0, a1, r1;
	char *buf = aligned_alloc(PAGE, len);
	int r = PASS;

	if (!buf)
		return fail("no buffer of %lu bytes", len);
	for (unsigned int f = 0; r == PASS && f <= FOLL_WRITE; f += FOLL_WRITE)
		r = gup_run(PIN_LONGTERM_BENCHMARK, &rg, f);
	for (uint32_t flags = 0; r == PASS && flags < 4; flags++) {
		struct pin_longterm_test t = {
			.addr = (uintptr_t)(dd.mem + off), .size = len, .flags = flags,
		};
		uint64_t to = (uintptr_t)buf;

		memset(buf, 0, len);
		pins(&a0, &r0);
		if (ioctl(dd.gup_fd, PIN_LONGTERM_TEST_START, &t)) {
			r = fail("PIN_LONGTERM_TEST_START at +%#lx, %lu pages, flags %u: %s",
				 off, n, flags, strerror(errno));
			break;
		}
		pins(&a1, &r1);
		/*
		 * n pins held. 7.3's gup-fast grabs a writable long-term pin
		 * on a leaf, then gives it back (the dax inode's folios are
		 * neither anon nor shmem: gup_fast_folio_allowed()) and the
		 * slow path pins: up to n more taken and as many released.
		 */
		if (a1 - a0 - (r1 - r0) != n || a1 - a0 > 2 * n)
			r = fail("PIN_LONGTERM_TEST_START, flags %u: %llu pins taken, %llu released, want %lu held",
				 flags, a1 - a0, r1 - r0, n);
		if (r == PASS && ioctl(dd.gup_fd, PIN_LONGTERM_TEST_READ, &to))
			r = fail("PIN_LONGTERM_TEST_READ: %s", strerror(errno));
		if (r == PASS && memcmp(buf, dd.mem + off, len)) {
			unsigned long i = 0;

			while (buf[i] == dd.mem[off + i])
				i++;
			r = fail("long-term pinned pages, flags %u: byte %#lx of the range reads %#x through the pin, %#x through the mapping",
				 flags, i, (unsigned char)buf[i],
				 (unsigned char)dd.mem[off + i]);
		}
		if (ioctl(dd.gup_fd, PIN_LONGTERM_TEST_STOP) && r == PASS)
			r = fail("PIN_LONGTERM_TEST_STOP: %s", strerror(errno));
		pins(&a1, &r1);
		if (r == PASS && (a1 - a0 != r1 - r0 || a1 - a0 < n))
			r = fail("after PIN_LONGTERM_TEST_STOP, flags %u: %llu pins taken, %llu released, want %lu or more, all released",
				 flags, a1 - a0, r1 - r0, n);
	}
	free(buf);
	if (r == PASS)
		r = check_words(dd.mem, 0, off + len + SZ_2M, seed,
				"after the long-term pins");
	return r;
}

static int longterm_pins_hold_the_mappings_bytes_until_released(void)
{
	int r;

	if (!dd.ready || dd.align != SZ_2M)
		return skip("no mapped 2 MiB device-dax");
	r = longterm(3 * PAGE, 2 * SZ_2M + 20 * PAGE, 1);
	if (r == PASS)
		snprintf(why, sizeof(why),
			 "PIN_LONGTERM_BENCHMARK and PIN_LONGTERM_TEST (slow, fast, read, write) over %lu pages from +3 pages: pinned, the pinned pages hold the mapping's bytes, released",
			 (2 * SZ_2M + 20 * PAGE) / PAGE);
	return r;
}

/*
 * O_DIRECT reads of /dev/zram0 (the guest's swap device, whose first page
 * is the swap header) into the mapping at @off: the block layer pins the
 * pages with pin_user_pages_fast(); the bytes read must equal a read into
 * anonymous memory and land in [off, off + len) only. The unpins may be
 * deferred to a worker: waited for, 2 s at most.
 */
static int direct_read(unsigned long off, unsigned long len, int seed)
{
	unsigned long long a0, r0, a1 = 0, r1 = 0;
	char *ref = aligned_alloc(PAGE, len);
	int zfd = open("/dev/zram0", O_RDONLY | O_DIRECT), r = PASS;
	unsigned long guard = 16 * PAGE;
	ssize_t n;

	if (!ref || zfd < 0) {
		r = fail("open /dev/zram0 O_DIRECT: %s", strerror(errno));
		goto out;
	}
	n = pread(zfd, ref, len, 0);
	if (n != (ssize_t)len) {
		r = fail("pread of %lu bytes of /dev/zram0 into anonymous memory: %zd (%s)",
			 len, n, strerror(errno));
		goto out;
	}
	pins(&a0, &r0);
	n = pread(zfd, dd.mem + off, len, 0);
	if (n != (ssize_t)len) {
		r = fail("O_DIRECT pread of %lu bytes into the mapping at +%#lx: %zd (%s)",
			 len, off, n, strerror(errno));
		goto out;
	}
	for (int i = 0; i < 40; i++) {
		pins(&a1, &r1);
		if (a1 - a0 >= len / PAGE && a1 - a0 == r1 - r0)
			break;
		usleep(50000);
	}
	if (a1 - a0 < len / PAGE || a1 - a0 != r1 - r0) {
		r = fail("O_DIRECT read into +%#lx: %llu pins taken, %llu released, want %lu or more, all released",
			 off, a1 - a0, r1 - r0, len / PAGE);
		goto out;
	}
	if (memcmp(dd.mem + off, ref, len)) {
		unsigned long i = 0;

		while (dd.mem[off + i] == ref[i])
			i++;
		r = fail("O_DIRECT read into +%#lx: byte %#lx of it is %#x, /dev/zram0 has %#x",
			 off, i, (unsigned char)dd.mem[off + i], (unsigned char)ref[i]);
		goto out;
	}
	r = check_words(dd.mem, off >= guard ? off - guard : 0, off, seed,
			"before an O_DIRECT read's range");
	if (r == PASS)
		r = check_words(dd.mem, off + len,
				off + len + guard < dd.size ? off + len + guard : dd.size,
				seed, "after an O_DIRECT read's range");
	/* Put the pattern back for the scenarios after. */
	fill_words(dd.mem, off, off + len, seed);
out:
	if (zfd >= 0)
		close(zfd);
	free(ref);
	return r;
}

static int direct_io_lands_in_the_pinned_pages(void)
{
	int r;

	if (!dd.ready || dd.align != SZ_2M)
		return skip("no mapped 2 MiB device-dax");
	r = direct_read(3 * PAGE, SZ_2M + 7 * PAGE, 1);
	if (r == PASS)
		r = direct_read(SZ_2M - 3 * PAGE, SZ_2M + 7 * PAGE, 1);
	if (r == PASS)
		r = check_words(dd.mem, 0, 4 * SZ_2M, 1, "after the O_DIRECT reads");
	if (r == PASS)
		snprintf(why, sizeof(why),
			 "two O_DIRECT reads of %lu pages, from +3 pages and from 3 pages before a folio boundary: the device's bytes, there only, every pin released",
			 (SZ_2M + 7 * PAGE) / PAGE);
	return r;
}

#define FORK_WINDOW	(64UL << 20)

static int fork_child_writes_are_seen_and_outlive_munmap(void)
{
	const unsigned long w = dd.size > FORK_WINDOW ? FORK_WINDOW : dd.size;
	const unsigned long half = w / 2;
	struct chan msg;
	pid_t pid;
	int r;

	if (!dd.ready || dd.align != SZ_2M)
		return skip("no mapped 2 MiB device-dax");
	fill_words(dd.mem, 0, w, 2);
	chan_init(&msg);
	pid = fork();
	if (pid == 0) {
		int bad = check_words(dd.mem, 0, w, 2, "in the child after fork") != PASS;

		if (!bad)
			fill_words(dd.mem, half, w, 3);
		munmap(dd.mem, dd.size);
		child_done(msg.fd[1], bad);
	}
	r = reap(pid, msg.fd[0]);
	if (r == PASS)
		r = check_words(dd.mem, 0, half, 2, "the parent's half");
	if (r == PASS)
		r = check_words(dd.mem, half, w, 3, "the child's half, in the parent");
	if (r != PASS)
		return r;
	/* Unmapped and closed everywhere: the device keeps the data. */
	unmap_dax();
	if (map_dax())
		return FAIL;
	r = check_words(dd.mem, 0, half, 2, "the parent's half after munmap");
	if (r == PASS)
		r = check_words(dd.mem, half, w, 3, "the child's half after munmap");
	if (r == PASS)
		r = check_words(dd.mem, w, dd.size, 1, "the rest after munmap");
	if (r == PASS)
		snprintf(why, sizeof(why),
			 "the child read the parent's %lu MiB and rewrote half, the parent read it; all of it there after munmap in both and mmap again",
			 w >> 20);
	return r;
}

static int gup_left_no_reference_behind(void)
{
	char note[160];
	int r;

	if (!dd.ready || dd.align != SZ_2M || !dd.mem)
		return skip("no mapped 2 MiB device-dax");
	r = check_samples(sample0, note, sizeof(note));
	if (r == PASS)
		snprintf(why, sizeof(why), "after every gup, pin and O_DIRECT read: %s",
			 note);
	return r;
}

static int unbind_gives_every_vmemmap_page_back(void)
{
	if (dd.align != SZ_2M)
		return skip("no 2 MiB device-dax bound");
	return unbind_devdax();
}

/* ---- scenarios: 1 GiB ------------------------------------------------ */

static int cpu_has(const char *flag)
{
	char line[4096], word[64];
	FILE *f = fopen("/proc/cpuinfo", "r");
	int found = 0;

	snprintf(word, sizeof(word), " %s", flag);
	while (f && !found && fgets(line, sizeof(line), f)) {
		char *p;

		if (strncmp(line, "flags", 5))
			continue;
		line[strcspn(line, "\n")] = ' ';
		p = strstr(line, word);
		found = p && (p[strlen(word)] == ' ');
	}
	if (f)
		fclose(f);
	return found;
}

static int bind_1g_devdax_adds_two_vmemmap_pages_per_compound(void)
{
	char drv[32];

	if (!dd.nd_dax[0])
		return skip("no namespace to use (first scenario failed)");
	devdax_driver(ND_DEVS NS, drv, sizeof(drv));
	if (drv[0] || dd.align)
		return skip("the 2 MiB device-dax is still bound");
	return bind_devdax(SZ_1G, "9c4d2b7e-61a8-4f03-b5e2-3a7c0d91e864");
}

static int gup_and_pin_over_a_pud_leaf(void)
{
	char note[160];
	int runs, r;

	if (dd.align != SZ_1G)
		return skip("no 1 GiB device-dax");
	/* Without 1G pages a PUD leaf is a reserved-bit fault: an oops. */
	if (!cpu_has("pdpe1gb"))
		return fail("the guest CPU has no pdpe1gb (run-userspace.sh passes -cpu qemu64,+pdpe1gb): not mapping 1 GiB leaves");
	r = map_fill_check(4, note, sizeof(note));
	if (r == PASS)
		r = gup_all(dd.size, 64UL << 20, &runs);
	if (r == PASS)
		r = longterm(3 * PAGE, SZ_2M + 20 * PAGE, 4);
	if (r == PASS)
		r = direct_read(3 * PAGE, SZ_2M + 7 * PAGE, 4);
	if (r == PASS)
		r = check_words(dd.mem, 0, dd.size, 4, "after the gups");
	if (r == PASS)
		r = check_samples(sample0, NULL, 0);
	if (r == PASS)
		snprintf(why, sizeof(why),
			 "%lu MiB in PUD leaves; %d gup_test runs, long-term pins and an O_DIRECT read from +3 pages: every page taken once, every pin returned, data intact; %s, unchanged after",
			 dd.size >> 20, runs, note);
	return r;
}

static int unbind_1g_gives_every_vmemmap_page_back(void)
{
	if (dd.align != SZ_1G)
		return skip("no 1 GiB device-dax bound");
	return unbind_devdax();
}

/*
 * dump_page() prints at KERN_WARNING, and 7.3 prints the console from a
 * thread: its lines reached the console in the middle of our result lines.
 * While the program runs the console shows only errors and worse
 * (console_loglevel 4); every message stays in /dev/kmsg, where the last
 * scenario looks for warnings in what this program made the kernel say.
 */
static char printk_old[64];
static int kmsg_fd = -1;

static void console_quiet(void)
{
	if (read_sys("/proc/sys/kernel/printk", printk_old, sizeof(printk_old)))
		printk_old[0] = 0;
	kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (kmsg_fd >= 0)
		lseek(kmsg_fd, 0, SEEK_END);
	write_sys("/proc/sys/kernel/printk", "4");
}

static void console_restore(void)
{
	/* Let the console thread pass what it still holds, at level 4. */
	usleep(500000);
	if (printk_old[0])
		write_sys("/proc/sys/kernel/printk", printk_old);
}

static int the_kernel_logged_no_warning_or_bug(void)
{
	static const char *const bad[] = { "WARNING:", "BUG:", "Oops", "Kernel panic" };
	static char rec[4096];
	int lines = 0;
	char *msg;

	if (kmsg_fd < 0)
		return fail("open /dev/kmsg: cannot check the kernel log");
	while ((msg = kmsg_next(kmsg_fd, rec, sizeof(rec)))) {
		lines++;
		for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
			if (strstr(msg, bad[i])) {
				msg[strcspn(msg, "\n")] = 0;
				return fail("the kernel logged \"%.200s\"", msg);
			}
	}
	snprintf(why, sizeof(why),
		 "%d kernel messages while the program ran (the console showed errors only), no warning, BUG or oops among them",
		 lines);
	return PASS;
}

static const struct test_case scenarios[] = {
	CASE(nd_pmem_unbind_frees_its_order0_memmap),
	CASE(bind_2m_devdax_adds_two_vmemmap_pages_per_compound),
	CASE(every_page_holds_its_data_in_2m_folios),
	CASE(gup_and_pin_over_pmd_leaves_take_every_page_once),
	CASE(longterm_pins_hold_the_mappings_bytes_until_released),
	CASE(direct_io_lands_in_the_pinned_pages),
	CASE(fork_child_writes_are_seen_and_outlive_munmap),
	CASE(gup_left_no_reference_behind),
	CASE(unbind_gives_every_vmemmap_page_back),
	CASE(bind_1g_devdax_adds_two_vmemmap_pages_per_compound),
	CASE(gup_and_pin_over_a_pud_leaf),
	CASE(unbind_1g_gives_every_vmemmap_page_back),
	CASE(the_kernel_logged_no_warning_or_bug),
};

int main(void)
{
	const char *env = getenv("RUSTMM_COMPOUND_PAGEMAPS"), *note = "";
	int failed;

	setvbuf(stdout, NULL, _IONBF, 0);
	/* Which kernel code ran: the expected values are the same for both. */
	if (env && !strcmp(env, "1"))
		note = "[CONFIG_COMPOUND_PAGEMAPS_RUST] ";
	else if (env && !strcmp(env, "0"))
		note = "[upstream's code] ";
	console_quiet();
	failed = run_cases("devdax", scenarios, ARRAY_SIZE(scenarios), note);
	console_restore();
	return failed ? 1 : 0;
}
