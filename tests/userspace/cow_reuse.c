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
 * behaviour: 6.12 never reuses a large folio, so every written page must
 * have moved. Folios another process still maps, or that a GUP reference
 * holds, must be copied on every kernel -- reusing them is a data leak.
 *
 * Each scenario prints "RUSTMM-TEST cow_reuse.<name> PASS|FAIL|SKIP <why>";
 * it skips only if the kernel gave no THP.
 */
#include "thp_test.h"

#define NR_PAGES	(SIZE / PAGE)

static int expect_reuse;

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
	return pfns_say(mem, before, 0, NR_PAGES, expect_reuse);
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
	return pfns_say(mem, before, 0, NR_PAGES, expect_reuse);
}

/*
 * The child is alive but has unmapped the whole area: only we map the
 * folios, so precise tracking reuses them (6.12's estimate cannot).
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
	return pfns_say(mem, before, 0, NR_PAGES, expect_reuse);
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
		r = pfns_say(mem, before, THP / PAGE, NR_PAGES, expect_reuse);
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

static const struct scenario scenarios[] = {
	{ "child_exited_memset_reuses", child_exited_memset_reuses },
	{ "child_exited_byte_writes_reuse", child_exited_byte_writes_reuse },
	{ "child_alive_but_unmapped_reuses", child_alive_but_unmapped_reuses },
	{ "child_keeps_one_page_forces_copy", child_keeps_one_page_forces_copy },
	{ "gup_reference_forces_copy", gup_reference_forces_copy },
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
	expect_reuse = env[0] == '1';
	return run_scenarios("cow_reuse", scenarios,
			     sizeof(scenarios) / sizeof(scenarios[0]),
			     expect_reuse ? "[reuse expected] " : "[base: copies] ") ? 1 : 0;
}
