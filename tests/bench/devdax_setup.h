/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A device-dax instance of a given alignment, made by sysfs writes alone
 * (no ndctl/daxctl: docs/notes/compound-pagemaps-plan.md, C.2), from the
 * legacy pmem the kernel makes of RAM marked "memmap=nn!ss" on its command
 * line (e820 type 12, CONFIG_X86_PMEM_LEGACY: the e820 nvdimm bus with
 * region0 and its one io namespace, namespace0.0). What
 * "ndctl create-namespace -f -e namespace0.0 -m devdax -M mem -a ALIGN"
 * does:
 *
 *   0. read ndbusN/wait_probe: the nd bus registers and probes its devices
 *      asynchronously, in a domain of its own that the boot does not wait
 *      for;
 *   1. namespace0.0 off nd_pmem (bound at boot as /dev/pmem0, with an
 *      order-0 FS_DAX memmap over the namespace): a driver-bound namespace
 *      cannot be claimed;
 *   2. the region's dax seed (region0/dax_seed, e.g. "dax0.0" on the nd
 *      bus): uuid (a new one each time: an info block of an earlier
 *      instance with another uuid is then rewritten, not refused as a
 *      settings mismatch), mode "ram" (no altmap: the memmap is in RAM and
 *      the vmemmap of compound pages is deduplicated), align (4096,
 *      2097152 or 1073741824), namespace "namespace0.0";
 *   3. bind it to dax_pmem: the DAX info block is written (RAM mode:
 *      the data starts at the first ALIGN boundary after 8 KiB), the
 *      pgmap of the whole namespace is memremapped with folios of ALIGN
 *      (vmemmap_shift) and the dax bus device "dax0.0" (region 0, id 0:
 *      the namespace's numbers) binds to device_dax: /dev/dax0.0 in
 *      devtmpfs.
 *
 * The emulated pmem is RAM: every boot starts without an info block, so
 * every boot runs these steps. devdax_destroy() unbinds the device and
 * releases the namespace (which stays off nd_pmem: rebinding nd_pmem would
 * find our info block and bring the device back); a later devdax_create()
 * in the same boot makes a new instance, with a new uuid. The unbind waits
 * in memunmap_pages() until every dev_pagemap reference is dropped: a
 * leaked one blocks it for good (run it in a child with a time limit to
 * find out).
 *
 * Header-only and self-contained (everything static and devdax_-named),
 * for tests/bench/rmap_bench.c and tests/userspace programs alike. Kernel
 * config: CONFIG_X86_PMEM_LEGACY, LIBNVDIMM, BLK_DEV_PMEM, ZONE_DEVICE,
 * NVDIMM_PFN, NVDIMM_DAX, DEV_DAX, DEV_DAX_PMEM, no DEV_DAX_KMEM, and
 * devtmpfs mounted on /dev.
 */
#ifndef RUSTMM_DEVDAX_SETUP_H
#define RUSTMM_DEVDAX_SETUP_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

/*
 * The gup_test ABI: mm/gup_test.h of the tree (not uapi:
 * tools/testing/selftests/mm includes it from the tree), and FOLL_WRITE
 * (include/linux/mm_types.h). The sizes are asserted against 6.12's.
 */
struct gup_test {
	uint64_t get_delta_usec;
	uint64_t put_delta_usec;
	uint64_t addr;
	uint64_t size;
	uint32_t nr_pages_per_call;
	uint32_t gup_flags;
	uint32_t test_flags;
	uint32_t which_pages[8];	/* GUP_TEST_MAX_PAGES_TO_DUMP */
};

struct pin_longterm_test {
	uint64_t addr;
	uint64_t size;
	uint32_t flags;
};

#define GUP_FAST_BENCHMARK	_IOWR('g', 1, struct gup_test)
#define PIN_FAST_BENCHMARK	_IOWR('g', 2, struct gup_test)
#define PIN_LONGTERM_BENCHMARK	_IOWR('g', 3, struct gup_test)
#define GUP_BASIC_TEST		_IOWR('g', 4, struct gup_test)
#define PIN_BASIC_TEST		_IOWR('g', 5, struct gup_test)
#define DUMP_USER_PAGES_TEST	_IOWR('g', 6, struct gup_test)
#define PIN_LONGTERM_TEST_START	_IOW('g', 7, struct pin_longterm_test)
#define PIN_LONGTERM_TEST_STOP	_IO('g', 8)
#define PIN_LONGTERM_TEST_READ	_IOW('g', 9, uint64_t)
#define PIN_LONGTERM_TEST_FLAG_USE_WRITE	1
#define PIN_LONGTERM_TEST_FLAG_USE_FAST		2
#define FOLL_WRITE		0x01

_Static_assert(sizeof(struct gup_test) == 80, "struct gup_test of 6.12");
_Static_assert(sizeof(struct pin_longterm_test) == 24,
	       "struct pin_longterm_test of 6.12");

#define DEVDAX_NS		"namespace0.0"
#define DEVDAX_ND		"/sys/bus/nd/devices/"
#define DEVDAX_ND_DRV		"/sys/bus/nd/drivers/"
/* The dax bus device dax_pmem makes of namespace0.0 (region 0, id 0). */
#define DEVDAX_NAME		"dax0.0"
#define DEVDAX_SYS		"/sys/bus/dax/devices/" DEVDAX_NAME
#define DEVDAX_DEV		"/dev/" DEVDAX_NAME
/* How long to wait for a device to appear or bind (ms). */
#define DEVDAX_WAIT_MS		10000

struct devdax {
	char path[32];		/* "/dev/dax0.0" */
	char nd_dax[32];	/* the nd device claiming the namespace ("dax0.0") */
	unsigned long start;	/* physical address of the device's data */
	unsigned long size;	/* bytes of /dev/dax0.0 */
	unsigned long align;	/* as the device reports it: its folio size */
	/* /proc/vmstat nr_memmap_pages moved by step 1 and by step 3 */
	long long memmap_unbind_pmem, memmap_bind;
	char why[256];		/* what failed, for the caller to print */
};

static __attribute__((unused, format(printf, 2, 3)))
int devdax_fail(struct devdax *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->why, sizeof(d->why), fmt, ap);
	va_end(ap);
	return -1;
}

/* The first line of @path without its newline; -1 if unreadable. */
static __attribute__((unused))
int devdax_read(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	if (fd >= 0)
		close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static __attribute__((unused))
int devdax_read_ul(const char *path, unsigned long *v)
{
	char buf[64], *end;

	if (devdax_read(path, buf, sizeof(buf)) || !buf[0])
		return -1;
	*v = strtoul(buf, &end, 0);
	return *end ? -1 : 0;
}

static __attribute__((unused))
int devdax_write(struct devdax *d, const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), e;
	ssize_t n;

	if (fd < 0)
		return devdax_fail(d, "open %s: %s", path, strerror(errno));
	n = write(fd, val, strlen(val));
	e = errno;
	close(fd);
	if (n != (ssize_t)strlen(val))
		return devdax_fail(d, "write \"%.*s\" to %s: %s", (int)strcspn(val, "\n"), val,
				   path, n < 0 ? strerror(e) : "short write");
	return 0;
}

/* The driver @dev (a sysfs device directory) is bound to; "" if none. */
static __attribute__((unused))
void devdax_driver(const char *dev, char *drv, size_t len)
{
	char path[256], link[256];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/driver", dev);
	n = readlink(path, link, sizeof(link) - 1);
	drv[0] = 0;
	if (n > 0) {
		const char *base;

		link[n] = 0;
		base = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
		if (strlen(base) < len)
			memcpy(drv, base, strlen(base) + 1);
	}
}

/* A /proc/vmstat counter; -1 if there is none. */
static __attribute__((unused))
long long devdax_vmstat(const char *name)
{
	char key[64];
	long long v, found = -1;
	FILE *f = fopen("/proc/vmstat", "r");

	while (f && fscanf(f, "%63s %lld", key, &v) == 2)
		if (!strcmp(key, name))
			found = v;
	if (f)
		fclose(f);
	return found;
}

static __attribute__((unused))
void devdax_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Wait until @path exists (@drv NULL) or its device is bound to @drv. */
static __attribute__((unused))
int devdax_wait(const char *path, const char *drv)
{
	char cur[64];

	for (long ms = 0; ms <= DEVDAX_WAIT_MS; ms += 10) {
		if (!drv && !access(path, F_OK))
			return 0;
		if (drv) {
			devdax_driver(path, cur, sizeof(cur));
			if (!strcmp(cur, drv))
				return 0;
		}
		devdax_sleep_ms(10);
	}
	return -1;
}

/* Step 0: every nd bus's registrations and probes are done. */
static __attribute__((unused))
void devdax_settle(void)
{
	char path[300], buf[16];
	struct dirent *e;
	DIR *dir = opendir(DEVDAX_ND);

	while (dir && (e = readdir(dir)))
		if (!strncmp(e->d_name, "ndbus", 5)) {
			snprintf(path, sizeof(path), DEVDAX_ND "%s/wait_probe", e->d_name);
			devdax_read(path, buf, sizeof(buf));
		}
	if (dir)
		closedir(dir);
}

/*
 * Make /dev/dax0.0 with folios of @align bytes over namespace0.0 (steps
 * above); fill @d. 0, or -1 with @d->why.
 */
static __attribute__((unused))
int devdax_create(unsigned long align, struct devdax *d)
{
	static unsigned int seq;
	char path[300], val[64], drv[64], holder[64];
	long long m0, m1;

	memset(d, 0, sizeof(*d));
	snprintf(d->path, sizeof(d->path), DEVDAX_DEV);
	devdax_settle();
	if (devdax_wait(DEVDAX_ND DEVDAX_NS, NULL))
		return devdax_fail(d, "no " DEVDAX_ND DEVDAX_NS " (booted with memmap=nn!ss? "
				   "CONFIG_X86_PMEM_LEGACY, CONFIG_BLK_DEV_PMEM?)");
	if (!access(DEVDAX_SYS, F_OK))
		return devdax_fail(d, DEVDAX_SYS " exists already: destroy it first");
	if (devdax_read(DEVDAX_ND DEVDAX_NS "/holder", holder, sizeof(holder)))
		return devdax_fail(d, "cannot read " DEVDAX_ND DEVDAX_NS "/holder");
	if (holder[0])
		return devdax_fail(d, DEVDAX_NS " is claimed by %s already", holder);

	/*
	 * 1. Off nd_pmem (its memmap goes: nr_memmap_pages drops). The
	 * first time in this process, give nd_pmem's boot-time probe the
	 * time to bind it (after a devdax_destroy() it stays unbound).
	 */
	if (!seq)
		devdax_wait(DEVDAX_ND DEVDAX_NS, "nd_pmem");
	devdax_driver(DEVDAX_ND DEVDAX_NS, drv, sizeof(drv));
	m0 = devdax_vmstat("nr_memmap_pages");
	if (!strcmp(drv, "nd_pmem") &&
	    devdax_write(d, DEVDAX_ND_DRV "nd_pmem/unbind", DEVDAX_NS))
		return -1;
	devdax_driver(DEVDAX_ND DEVDAX_NS, drv, sizeof(drv));
	if (drv[0])
		return devdax_fail(d, DEVDAX_NS " is bound to %s", drv);
	d->memmap_unbind_pmem = devdax_vmstat("nr_memmap_pages") - m0;

	/* 2. The region's dax seed, configured. */
	if (devdax_read(DEVDAX_ND "region0/dax_seed", d->nd_dax, sizeof(d->nd_dax)) ||
	    !d->nd_dax[0])
		return devdax_fail(d, "no dax seed in " DEVDAX_ND "region0/dax_seed "
				   "(CONFIG_NVDIMM_DAX?)");
	snprintf(val, sizeof(val), "5f1a6c2e-3b7d-4c1e-9a2f-%04x%08x",
		 (unsigned int)getpid() & 0xffff, ++seq);
	snprintf(path, sizeof(path), DEVDAX_ND "%s/uuid", d->nd_dax);
	if (devdax_write(d, path, val))
		return -1;
	snprintf(path, sizeof(path), DEVDAX_ND "%s/mode", d->nd_dax);
	if (devdax_write(d, path, "ram\n"))
		return -1;
	snprintf(path, sizeof(path), DEVDAX_ND "%s/align", d->nd_dax);
	snprintf(val, sizeof(val), "%lu", align);
	if (devdax_write(d, path, val))
		return -1;
	snprintf(path, sizeof(path), DEVDAX_ND "%s/namespace", d->nd_dax);
	if (devdax_write(d, path, DEVDAX_NS))
		return -1;

	/* 3. Bound to dax_pmem: the info block, the pgmap, /dev/dax0.0. */
	m0 = devdax_vmstat("nr_memmap_pages");
	if (devdax_write(d, DEVDAX_ND_DRV "dax_pmem/bind", d->nd_dax))
		return -1;
	if (devdax_wait(DEVDAX_SYS, "device_dax"))
		return devdax_fail(d, DEVDAX_SYS " not bound to device_dax after %d ms "
				   "(CONFIG_DEV_DAX_KMEM took it?)", DEVDAX_WAIT_MS);
	/* device_dax's probe memremapped the pages. */
	m1 = devdax_vmstat("nr_memmap_pages");
	d->memmap_bind = m1 - m0;
	if (devdax_wait(DEVDAX_DEV, NULL))
		return devdax_fail(d, "no " DEVDAX_DEV " after %d ms (devtmpfs on /dev?)",
				   DEVDAX_WAIT_MS);
	if (devdax_read_ul(DEVDAX_SYS "/size", &d->size) ||
	    devdax_read_ul(DEVDAX_SYS "/align", &d->align) ||
	    devdax_read_ul(DEVDAX_SYS "/resource", &d->start))
		return devdax_fail(d, "cannot read " DEVDAX_SYS "/{size,align,resource}");
	if (d->align != align)
		return devdax_fail(d, DEVDAX_NAME " has align %lu, not %lu", d->align, align);
	return 0;
}

/*
 * Undo devdax_create(): unbind dax_pmem (/dev/dax0.0 goes; waits for every
 * reference to the pgmap), release the namespace. Unmap and close the
 * device first. 0, or -1 with @d->why.
 */
static __attribute__((unused))
int devdax_destroy(struct devdax *d)
{
	char path[300];

	if (devdax_write(d, DEVDAX_ND_DRV "dax_pmem/unbind", d->nd_dax))
		return -1;
	snprintf(path, sizeof(path), DEVDAX_ND "%s/namespace", d->nd_dax);
	if (devdax_write(d, path, "\n"))
		return -1;
	return 0;
}

#endif /* RUSTMM_DEVDAX_SETUP_H */
