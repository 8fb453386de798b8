// SPDX-License-Identifier: GPL-2.0
/*
 * COW isolation of PTE-mapped anonymous THP across fork: no process may
 * ever read what another process wrote after fork. Every scenario checks
 * data byte for byte in every process involved. These must pass on any
 * correct kernel -- the base 6.12 (which always copies) and the patched one
 * with COW reuse: a scenario that fails is a cross-process data leak.
 *
 * It prints its plan, then "RUSTMM-TEST cow_isolation.<name> PASS|FAIL
 * <why>" per scenario (tests/userspace/result.h); no THP is a FAIL. Run as
 * root (pagemap PFNs, kpageflags and the THP knobs it sets up).
 *
 * Built with -DSELFCHECK_SHARED, the memory is MAP_SHARED instead, so every
 * write is visible to every process: each scenario must then report FAIL.
 * `make test` runs that build on the host to show the checks can fail.
 */
#include "thp_test.h"

/*
 * Fork a child that keeps the THP mapped, waits for @go, then checks that
 * its whole area still holds the data as of fork (seed 0).
 */
static pid_t fork_checker(char *mem, struct chan *go, struct chan *msg)
{
	pid_t pid;

	chan_init(go);
	chan_init(msg);
	pid = fork();
	if (pid == 0) {
		await(go);
		child_done(msg->fd[1], check(mem, 0, SIZE, 0));
	}
	return pid;
}

/* Parent writes after fork; the child, still mapping the THP, must not see it. */
static int parent_write_child_alive(char *mem)
{
	struct chan written, msg;
	pid_t pid = fork_checker(mem, &written, &msg);

	fill(mem, 0, SIZE, 1);
	post(&written);
	if (reap(pid, msg.fd[0]) == FAIL)
		return FAIL;
	return check(mem, 0, SIZE, 1) ? FAIL : PASS;
}

/* Same, one byte per page (each write fault COWs one page only). */
static int parent_write_byte_child_alive(char *mem)
{
	struct chan written, msg;
	pid_t pid = fork_checker(mem, &written, &msg);

	for (unsigned long off = 0; off < SIZE; off += PAGE)
		mem[off + 100] ^= 0x5a;
	post(&written);
	if (reap(pid, msg.fd[0]) == FAIL)
		return FAIL;
	for (unsigned long off = 0; off < SIZE; off += PAGE)
		if ((unsigned char)mem[off + 100] != (pattern(off / PAGE, 0) ^ 0x5a))
			return fail("parent lost its own byte write at %#lx", off);
	return PASS;
}

/* The child writes; the parent must keep its data. */
static int child_write_parent_keeps(char *mem)
{
	struct chan msg;
	pid_t pid;

	chan_init(&msg);
	pid = fork();
	if (pid == 0) {
		fill(mem, 0, SIZE, 2);
		child_done(msg.fd[1], check(mem, 0, SIZE, 2));
	}
	if (reap(pid, msg.fd[0]) == FAIL)
		return FAIL;
	return check(mem, 0, SIZE, 0) ? FAIL : PASS;
}

/* The parent unmaps half of each THP, then writes the rest. */
static int partial_munmap(char *mem)
{
	struct chan written, msg;
	pid_t pid;

	chan_init(&written);
	chan_init(&msg);
	pid = fork();
	if (pid == 0) {
		await(&written);
		if (check(mem, 0, SIZE, 0))
			child_done(msg.fd[1], 1);
		fill(mem, 0, SIZE, 2);
		child_done(msg.fd[1], check(mem, 0, SIZE, 2));
	}
	for (unsigned long t = 0; t < SIZE; t += THP)
		munmap(mem + t + THP / 2, THP / 2);
	for (unsigned long t = 0; t < SIZE; t += THP)
		fill(mem, t, t + THP / 2, 1);
	post(&written);
	if (reap(pid, msg.fd[0]) == FAIL)
		return FAIL;
	for (unsigned long t = 0; t < SIZE; t += THP)
		if (check(mem, t, t + THP / 2, 1))
			return FAIL;
	return PASS;
}

/* The parent moves part of a THP elsewhere with mremap, then writes both. */
static int partial_mremap(char *mem)
{
	/* Pages 16..47 of a PMD THP, the middle half of a smaller one. */
	const unsigned long np = THP / PAGE >= 64 ? 32 : THP / PAGE / 2;
	const unsigned long from = THP / PAGE >= 64 ? 16 : THP / PAGE / 4;
	struct chan written, msg;
	char *dst, *moved;
	pid_t pid;

	dst = mmap(NULL, THP, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (dst == MAP_FAILED)
		return fail("mmap: %s", strerror(errno));
	pid = fork_checker(mem, &written, &msg);
	/* Pages from..from + np - 1 of the first THP now live at dst. */
	moved = mremap(mem + from * PAGE, np * PAGE, np * PAGE,
		       MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	if (moved == MAP_FAILED) {
		post(&written);
		reap(pid, msg.fd[0]);
		return fail("mremap: %s", strerror(errno));
	}
	/* The first folio is now in two vmas of ours and one of the child. */
	if (rmap_verify(mem, THP) == FAIL || rmap_verify(dst, THP) == FAIL) {
		post(&written);
		reap(pid, msg.fd[0]);
		return FAIL;
	}
	for (unsigned long i = 0; i < np; i++) {
		if ((unsigned char)moved[i * PAGE] != pattern(from + i, 0))
			return fail("mremap lost page %lu", from + i);
		memset(moved + i * PAGE, pattern(from + i, 1), PAGE);
	}
	fill(mem, 0, from * PAGE, 1);
	fill(mem, (from + np) * PAGE, SIZE, 1);
	post(&written);
	munmap(dst, THP);
	return reap(pid, msg.fd[0]);
}

/* The child drops every other page with MADV_DONTNEED. */
static int madv_dontneed(char *mem)
{
	struct chan dropped, written, msg;
	pid_t pid;

	chan_init(&dropped);
	chan_init(&written);
	chan_init(&msg);
	pid = fork();
	if (pid == 0) {
		for (unsigned long off = 0; off < SIZE; off += 2 * PAGE)
			madvise(mem + off, PAGE, MADV_DONTNEED);
		post(&dropped);
		await(&written);
		for (unsigned long off = 0; off < SIZE; off += PAGE) {
			int seed = (off / PAGE) % 2 ? 0 : -1;

			if (check(mem, off, off + PAGE, seed))
				child_done(msg.fd[1], 1);
		}
		child_done(msg.fd[1], 0);
	}
	await(&dropped);
	if (check(mem, 0, SIZE, 0)) {
		post(&written);
		reap(pid, msg.fd[0]);
		return FAIL;
	}
	fill(mem, 0, SIZE, 1);
	post(&written);
	if (reap(pid, msg.fd[0]) == FAIL)
		return FAIL;
	return check(mem, 0, SIZE, 1) ? FAIL : PASS;
}

/* Two children and the parent each write their own data. */
static int two_children(char *mem)
{
	struct chan go1, go2, msg1, msg2;
	pid_t a, b;
	int ra, rb;

	chan_init(&go1);
	chan_init(&msg1);
	a = fork();
	if (a == 0) {
		fill(mem, 0, SIZE / 2, 3);
		await(&go1);
		child_done(msg1.fd[1], check(mem, 0, SIZE / 2, 3) ||
					check(mem, SIZE / 2, SIZE, 0));
	}
	b = fork_checker(mem, &go2, &msg2);
	fill(mem, 0, SIZE, 1);
	post(&go1);
	post(&go2);
	ra = reap(a, msg1.fd[0]);
	rb = reap(b, msg2.fd[0]);
	if (ra == FAIL || rb == FAIL)
		return FAIL;
	return check(mem, 0, SIZE, 1) ? FAIL : PASS;
}

/*
 * The child takes a GUP reference with vmsplice() and unmaps; the parent
 * then writes. The pipe must still deliver the data as of fork: reusing the
 * page in the parent would let the child read the parent's later writes.
 */
static int vmsplice_pin(char *mem)
{
	struct chan spliced, written, msg;
	const unsigned long len = 16 * PAGE;
	int p[2];
	pid_t pid;

	if (pipe(p))
		return fail("pipe: %s", strerror(errno));
	fcntl(p[1], F_SETPIPE_SZ, (int)len);
	chan_init(&spliced);
	chan_init(&written);
	chan_init(&msg);
	pid = fork();
	if (pid == 0) {
		struct iovec iov = { .iov_base = mem, .iov_len = len };
		static char buf[16 * 4096];
		ssize_t got = 0, n;

		if (vmsplice(p[1], &iov, 1, 0) != (ssize_t)len) {
			snprintf(why, sizeof(why), "vmsplice: %s", strerror(errno));
			child_done(msg.fd[1], 1);
		}
		munmap(mem, SIZE);
		post(&spliced);
		await(&written);
		while (got < (ssize_t)len && (n = read(p[0], buf + got, len - got)) > 0)
			got += n;
		if (got != (ssize_t)len) {
			snprintf(why, sizeof(why), "read %zd of %lu bytes", got, len);
			child_done(msg.fd[1], 1);
		}
		child_done(msg.fd[1], check(buf, 0, len, 0));
	}
	await(&spliced);
	fill(mem, 0, SIZE, 1);
	post(&written);
	if (reap(pid, msg.fd[0]) == FAIL)
		return FAIL;
	return check(mem, 0, SIZE, 1) ? FAIL : PASS;
}

static const struct scenario scenarios[] = {
	CASE(parent_write_child_alive),
	CASE(parent_write_byte_child_alive),
	CASE(child_write_parent_keeps),
	CASE(partial_munmap),
	CASE(partial_mremap),
	CASE(madv_dontneed),
	CASE(two_children),
	CASE(vmsplice_pin),
};

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (thp_test_init(argc, argv, "cow_isolation"))
		return 1;
	return run_scenarios("cow_isolation", scenarios,
			     sizeof(scenarios) / sizeof(scenarios[0]), "") ? 1 : 0;
}
