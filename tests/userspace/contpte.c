// SPDX-License-Identifier: GPL-2.0
/*
 * The operations that fold and unfold arm64 contiguous-PTE blocks, on 64K
 * mTHP (one block with 4K pages): fork, partial munmap, mprotect of one
 * page and back, MADV_DONTNEED of part of a block, MADV_FREE of whole
 * blocks and mremap, each with its data checked in every process.
 *
 * Where the kernel counts folds and unfolds (CONFIG_ARM64_CONTPTE_RUST:
 * <debugfs>/contpte_stats; RUSTMM_CONTPTE_STATS=1 says it must), every
 * scenario also checks how many blocks the kernel's rules fold and unfold -- so
 * the tests show CONT in use rather than assume it, and record where the kernel
 * leaves a block unfolded for good. Elsewhere those checks are not
 * possible and the scenario says so in its note; the data checks run on
 * every kernel and arch.
 *
 * It prints its plan, then "RUSTMM-TEST contpte_64k.<name> PASS|FAIL <why>"
 * per scenario (tests/userspace/result.h); no 64K THP is a FAIL.
 */
#include "thp_test.h"

#define BLOCK_PAGES	16	/* CONT_PTES with 4K pages */
#define BLOCK		(BLOCK_PAGES * PAGE)

static int stats_expected;
struct cstats {
	unsigned long long folds, unfolds;
};

/* The kernel's fold and unfold counts; 0 if it has none. */
static int cstats(struct cstats *s)
{
	FILE *f = fopen("/sys/kernel/debug/contpte_stats", "r");
	int ok;

	s->folds = s->unfolds = 0;
	if (!f)
		return 0;
	ok = fscanf(f, "folds %llu unfolds %llu", &s->folds, &s->unfolds) == 2;
	fclose(f);
	return ok;
}

/*
 * The folds and unfolds since @s0 must be @folds and @unfolds (-1: any);
 * says what it saw either way. PASS where the kernel does not count.
 */
static int expect_cstats(const char *what, const struct cstats *s0,
			 long folds, long unfolds)
{
	struct cstats s;
	long df, du;
	size_t len = strlen(why);

	if (!cstats(&s))
		return stats_expected ? fail("no <debugfs>/contpte_stats") : PASS;
	df = (long)(s.folds - s0->folds);
	du = (long)(s.unfolds - s0->unfolds);
	snprintf(why + len, sizeof(why) - len, "%s%s: %ld folds, %ld unfolds",
		 len ? "; " : "", what, df, du);
	if ((folds >= 0 && df != folds) || (unfolds >= 0 && du != unfolds)) {
		len = strlen(why);
		snprintf(why + len, sizeof(why) - len, " (want %ld and %ld)",
			 folds, unfolds);
		return FAIL;
	}
	return PASS;
}

static int fork_keeps_both_sides_data(char *mem)
{
	struct cstats s0;
	struct chan go;
	int msg[2];
	pid_t pid;
	int r;

	chan_init(&go);
	if (pipe(msg))
		return fail("pipe: %s", strerror(errno));
	cstats(&s0);
	pid = fork();
	if (pid < 0)
		return fail("fork: %s", strerror(errno));
	if (!pid) {
		await(&go);
		int bad = check(mem, 0, SIZE, 0);

		if (!bad) {
			fill(mem, 0, SIZE, 2);
			bad = check(mem, 0, SIZE, 2);
		}
		child_done(msg[1], bad);
	}
	/*
	 * fork write-protects whole blocks in place (no unfold) and maps the
	 * child's copy with set_ptes(), whole blocks contiguous.
	 */
	r = expect_cstats("fork", &s0, 0, 0);
	fill(mem, 0, SIZE, 1);
	post(&go);
	if (reap(pid, msg[0]) == FAIL)
		r = FAIL;
	close(msg[0]);
	close(msg[1]);
	if (r == PASS && check(mem, 0, SIZE, 1))
		return FAIL;
	return r;
}

static int partial_munmap_keeps_the_rest(char *mem)
{
	struct cstats s0;
	int r;

	cstats(&s0);
	/* The second half of block 0, and all of block 1 but its first page. */
	if (munmap(mem + BLOCK / 2, BLOCK / 2) || munmap(mem + THP + PAGE, THP - PAGE))
		return fail("munmap: %s", strerror(errno));
	r = expect_cstats("munmap", &s0, 0, 2);
	if (check(mem, 0, BLOCK / 2, 0) || check(mem, THP, THP + PAGE, 0))
		return FAIL;
	fill(mem, 0, BLOCK / 2, 3);
	return check(mem, 0, BLOCK / 2, 3) ? FAIL : r;
}

/* mprotect(PROT_READ) of @page and back, then write and check. */
static int mprotect_page_and_back(char *mem, unsigned long page, long refolds)
{
	struct cstats s0;
	int r;

	cstats(&s0);
	if (mprotect(mem + page * PAGE, PAGE, PROT_READ) ||
	    mprotect(mem + page * PAGE, PAGE, PROT_READ | PROT_WRITE))
		return fail("mprotect: %s", strerror(errno));
	/*
	 * The first call unfolds; the way back rewrites only @page, and
	 * contpte folds only when the block's last entry is rewritten.
	 */
	r = expect_cstats("mprotect", &s0, refolds, 1);
	if (check(mem, 0, SIZE, 0))
		return FAIL;
	fill(mem, 0, SIZE, 4);
	return check(mem, 0, SIZE, 4) ? FAIL : r;
}

static int mprotect_middle_page_and_back_leaves_block_unfolded(char *mem)
{
	return mprotect_page_and_back(mem, 5, 0);
}

static int mprotect_last_page_and_back_refolds(char *mem)
{
	return mprotect_page_and_back(mem, BLOCK_PAGES - 1, 1);
}

static int madv_dontneed_of_half_a_block_zeroes_only_it(char *mem)
{
	struct cstats s0;
	int r;

	cstats(&s0);
	if (madvise(mem + 4 * PAGE, 8 * PAGE, MADV_DONTNEED))
		return fail("MADV_DONTNEED: %s", strerror(errno));
	r = expect_cstats("MADV_DONTNEED", &s0, 0, 1);
	if (check(mem, 0, 4 * PAGE, 0) || check(mem, 4 * PAGE, 12 * PAGE, -1) ||
	    check(mem, 12 * PAGE, SIZE, 0))
		return FAIL;
	return r;
}

static int madv_free_of_whole_blocks_unfolds_nothing(char *mem)
{
	struct cstats s0;
	int r;

	cstats(&s0);
	/* Clears dirty (and young) on whole blocks in place: no unfold. */
	if (madvise(mem, SIZE, MADV_FREE))
		return fail("MADV_FREE: %s", strerror(errno));
	r = expect_cstats("MADV_FREE", &s0, 0, 0);
	/* Not reclaimed (no memory pressure): the data is still there. */
	if (check(mem, 0, SIZE, 0))
		return FAIL;
	fill(mem, 0, SIZE, 5);
	return check(mem, 0, SIZE, 5) ? FAIL : r;
}

static int mremap_moves_blocks_with_their_data(char *mem)
{
	char *dst = mmap(NULL, SIZE + THP, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *to = (char *)(((uintptr_t)dst + THP - 1) & ~(THP - 1));
	unsigned int major = 0, minor = 0;
	struct cstats s0;
	long moved;
	char *got;
	int r;

	if (dst == MAP_FAILED)
		return fail("mmap: %s", strerror(errno));
	if (thp_kernel_release("contpte", &major, &minor)) {
		munmap(dst, SIZE + THP);
		return FAIL;
	}
	cstats(&s0);
	got = mremap(mem, SIZE, SIZE, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	if (got != to) {
		munmap(dst, SIZE + THP);
		return fail("mremap: %s", strerror(errno));
	}
	/*
	 * 6.12's move_ptes() moves entry by entry: each block unfolds at its
	 * first entry and folds again at the new place when its last one
	 * lands. 7.3's moves a folio's entries as one batch
	 * (mremap_folio_pte_batch(), get_and_clear_ptes() and set_ptes() of
	 * nr entries): a whole block is cleared without an unfold and
	 * written contiguous by contpte_set_ptes(), no fold. The test knows
	 * the two kernels it is built for: 6.x by entry, 7.x by batch.
	 */
	moved = major >= 7 ? 0 : NR_THP;
	r = expect_cstats("mremap", &s0, moved, moved);
	if (check(to, 0, SIZE, 0))
		r = FAIL;
	else {
		fill(to, 0, SIZE, 6);
		if (check(to, 0, SIZE, 6))
			r = FAIL;
	}
	munmap(dst, SIZE + THP);
	return r;
}

static const struct scenario scenarios[] = {
	CASE(fork_keeps_both_sides_data),
	CASE(partial_munmap_keeps_the_rest),
	CASE(mprotect_middle_page_and_back_leaves_block_unfolded),
	CASE(mprotect_last_page_and_back_refolds),
	CASE(madv_dontneed_of_half_a_block_zeroes_only_it),
	CASE(madv_free_of_whole_blocks_unfolds_nothing),
	CASE(mremap_moves_blocks_with_their_data),
};

int main(void)
{
	char *args[] = { "contpte", "--thp-kb=64", NULL };
	const char *env = getenv("RUSTMM_CONTPTE_STATS");
	struct cstats s;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (thp_test_init(2, args, "contpte"))
		return 1;
	if (!env || (strcmp(env, "0") && strcmp(env, "1"))) {
		printf("RUSTMM-TEST %s.setup FAIL RUSTMM_CONTPTE_STATS must be 0 or 1\n",
		       thp_program);
		return 1;
	}
	stats_expected = env[0] == '1';
	if (stats_expected && !cstats(&s)) {
		printf("RUSTMM-TEST %s.setup FAIL no <debugfs>/contpte_stats\n", thp_program);
		return 1;
	}
	return run_scenarios(thp_program, scenarios,
			     sizeof(scenarios) / sizeof(scenarios[0]),
			     stats_expected ? "[folds counted] " :
			     "[data only: no fold counts here] ") ? 1 : 0;
}
