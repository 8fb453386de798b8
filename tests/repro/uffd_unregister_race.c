// SPDX-License-Identifier: GPL-2.0
/*
 * The race behind selftests/mm/uffd-unit-tests' rare "events" failure
 * ("UFFDIO_COPY error: -2"; docs/test-guests.md): a missing-page fault
 * taken under the per-VMA lock can queue its message after
 * UFFDIO_UNREGISTER woke the range's waiters (under mmap_write_lock,
 * which such a fault does not take) and before the VMA lost its
 * registration. The message then outlives the registration, and a
 * UFFDIO_COPY for it fails with -ENOENT (validate_dst_vma(): no uffd ctx).
 *
 * One thread read-faults page 0 of a registered range while the main
 * thread unregisters the range, with random delays on both sides; after
 * each UFFDIO_UNREGISTER, a queued PAGEFAULT message is the race. Prints
 * "uffd-unregister-race: N iterations, N stale fault messages, N
 * UFFDIO_COPY -ENOENT". Nothing here depends on large folios: the pages
 * are order-0, and MADV_DONTNEED drops them between iterations.
 *
 * Usage: uffd_unregister_race [ITERATIONS]	(default 100000)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static char *area;
static atomic_int go, done;
static atomic_uint fault_delay;

static void spin(unsigned int n)
{
	for (volatile unsigned int i = 0; i < n; i++)
		;
}

static void *faulter(void *arg)
{
	(void)arg;
	for (;;) {
		int g;

		while ((g = atomic_load(&go)) == 0)
			;
		if (g < 0)
			return NULL;
		spin(atomic_load(&fault_delay));
		(void)*(volatile char *)area;	/* read fault on page 0 */
		atomic_store(&go, 0);
		atomic_store(&done, 1);
	}
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 100000, stale = 0, enoent = 0;
	long psz = sysconf(_SC_PAGESIZE);
	size_t len = 16 * psz;
	struct uffdio_api api = { .api = UFFD_API };
	pthread_t t;
	char *src;
	int uffd;

	area = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	src = malloc(psz);
	if (area == MAP_FAILED || !src)
		return perror("mmap"), 1;
	memset(src, 0x5a, psz);
	/* An anon_vma, so that faults take the per-VMA lock path. */
	area[len - 1] = 1;
	uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api))
		return perror("userfaultfd"), 1;
	if (pthread_create(&t, NULL, faulter, NULL))
		return perror("pthread_create"), 1;
	for (long i = 0; i < iters; i++) {
		struct uffdio_register reg = {
			.range = { (unsigned long)area, len },
			.mode = UFFDIO_REGISTER_MODE_MISSING,
		};
		struct uffd_msg msg;

		madvise(area, psz, MADV_DONTNEED);
		if (ioctl(uffd, UFFDIO_REGISTER, &reg))
			return perror("UFFDIO_REGISTER"), 1;
		atomic_store(&fault_delay, rand() % 4000);
		atomic_store(&done, 0);
		atomic_store(&go, 1);
		spin(rand() % 4000);
		if (ioctl(uffd, UFFDIO_UNREGISTER, &reg.range))
			return perror("UFFDIO_UNREGISTER"), 1;
		if (read(uffd, &msg, sizeof(msg)) == sizeof(msg) &&
		    msg.event == UFFD_EVENT_PAGEFAULT) {
			struct uffdio_copy copy = {
				.dst = msg.arg.pagefault.address & ~(psz - 1),
				.src = (unsigned long)src,
				.len = psz,
			};
			struct uffdio_range all = { (unsigned long)area, len };

			stale++;
			if (ioctl(uffd, UFFDIO_COPY, &copy) && copy.copy == -ENOENT)
				enoent++;
			ioctl(uffd, UFFDIO_WAKE, &all);	/* let the faulter retry */
		}
		while (!atomic_load(&done))
			;
	}
	atomic_store(&go, -1);
	pthread_join(t, NULL);
	printf("uffd-unregister-race: %ld iterations, %ld stale fault messages, %ld UFFDIO_COPY -ENOENT\n",
	       iters, stale, enoent);
	return 0;
}
