// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite "contpte_rust": the contpte decisions made in Rust
 * (asm/contpte_rust.h) against 6.12's C decisions, which this file keeps
 * as a test-only reference, and the contpte API on real page tables of a
 * private mm.
 *
 * The differential cases run 1,000,000 structured random blocks (the
 * generator is rust/mm/core/contpte_vectors.rs; the host tests run the same
 * vectors, pinned by a digest) and exhaust the small input spaces: the
 * set_ptes() chunk plan, the partial ends of an unfold, the clear
 * young/dirty span and the access-flag plan.
 */
#include <kunit/test.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <asm/contpte_rust.h>

#define NR_BLOCKS	1000000

/* ---- 6.12's decisions (arch/arm64/mm/contpte.c), over arrays ---- */

/* __contpte_try_fold() after its mm check: whether it converts. */
static bool ref_try_fold(unsigned long addr, pte_t pte, unsigned long page_idx,
			 unsigned long folio_nr, const pteval_t *block)
{
	unsigned long folio_start, folio_end;
	unsigned long cont_start, cont_end;
	pte_t expected_pte, subpte;
	unsigned long pfn;
	pgprot_t prot;
	int i;

	folio_start = addr - page_idx * PAGE_SIZE;
	folio_end = folio_start + folio_nr * PAGE_SIZE;
	cont_start = ALIGN_DOWN(addr, CONT_PTE_SIZE);
	cont_end = cont_start + CONT_PTE_SIZE;

	if (folio_start > cont_start || folio_end < cont_end)
		return false;

	pfn = ALIGN_DOWN(pte_pfn(pte), CONT_PTES);
	prot = pte_pgprot(pte_mkold(pte_mkclean(pte)));
	expected_pte = pfn_pte(pfn, prot);

	for (i = 0; i < CONT_PTES; i++) {
		subpte = pte_mkold(pte_mkclean(__pte(block[i])));
		if (!pte_same(subpte, expected_pte))
			return false;
		expected_pte = pte_advance_pfn(expected_pte, 1);
	}
	return true;
}

/* contpte_convert()'s value written back. */
static pte_t ref_convert(pte_t pte, const pteval_t *cleared)
{
	int i;

	pte = pfn_pte(ALIGN_DOWN(pte_pfn(pte), CONT_PTES), pte_pgprot(pte));
	for (i = 0; i < CONT_PTES; i++) {
		pte_t ptent = __pte(cleared[i]);

		if (pte_dirty(ptent))
			pte = pte_mkdirty(pte);
		if (pte_young(ptent))
			pte = pte_mkyoung(pte);
	}
	return pte;
}

/* contpte_ptep_get(). */
static pte_t ref_gather(pte_t orig_pte, const pteval_t *block)
{
	int i;

	for (i = 0; i < CONT_PTES; i++) {
		pte_t pte = __pte(block[i]);

		if (pte_dirty(pte))
			orig_pte = pte_mkdirty(orig_pte);
		if (pte_young(pte))
			orig_pte = pte_mkyoung(orig_pte);
	}
	return orig_pte;
}

/* One pass of contpte_ptep_get_lockless(): false is "goto retry". */
static bool ref_lockless(pte_t orig_pte, unsigned int idx,
			 const pteval_t *block, pte_t *out)
{
	pgprot_t orig_prot, prot;
	unsigned long pfn;
	int i;

	if (!pte_valid_cont(orig_pte)) {
		*out = orig_pte;
		return true;
	}
	orig_prot = pte_pgprot(pte_mkold(pte_mkclean(orig_pte)));
	pfn = pte_pfn(orig_pte) - idx;
	for (i = 0; i < CONT_PTES; i++, pfn++) {
		pte_t pte = __pte(block[i]);

		prot = pte_pgprot(pte_mkold(pte_mkclean(pte)));
		if (!pte_valid_cont(pte) || pte_pfn(pte) != pfn ||
		    pgprot_val(prot) != pgprot_val(orig_prot))
			return false;
		if (pte_dirty(pte))
			orig_pte = pte_mkdirty(orig_pte);
		if (pte_young(pte))
			orig_pte = pte_mkyoung(orig_pte);
	}
	*out = orig_pte;
	return true;
}

/* One chunk of contpte_set_ptes()'s loop. */
static struct contpte_chunk ref_chunk(unsigned long addr, unsigned long end,
				      unsigned long pfn, pgprot_t prot)
{
	struct contpte_chunk c;
	pte_t pte;

	c.next = pte_cont_addr_end(addr, end);
	c.nr = (c.next - addr) >> PAGE_SHIFT;
	pte = pfn_pte(pfn, prot);
	if (((addr | c.next | (pfn << PAGE_SHIFT)) & ~CONT_PTE_MASK) == 0)
		pte = pte_mkcont(pte);
	else
		pte = pte_mknoncont(pte);
	c.pte = pte_val(pte);
	return c;
}

/* contpte_try_unfold_partial()'s tests, on a table at index idx. */
static unsigned int ref_partial(pte_t *table, unsigned long idx,
				unsigned int nr)
{
	pte_t *ptep = table + idx;
	unsigned int ends = 0;

	if (ptep != PTR_ALIGN_DOWN(ptep, sizeof(*ptep) * CONT_PTES) ||
	    nr < CONT_PTES)
		ends |= CONTPTE_PARTIAL_FIRST;
	if (ptep + nr != PTR_ALIGN_DOWN(ptep + nr, sizeof(*ptep) * CONT_PTES))
		ends |= CONTPTE_PARTIAL_LAST;
	return ends;
}

/* contpte_clear_young_dirty_ptes()'s range. */
static struct contpte_span ref_span(unsigned long addr, pte_t *ptep,
				    unsigned int nr, bool first_cont,
				    bool last_cont)
{
	unsigned long start = addr;
	unsigned long end = start + nr * PAGE_SIZE;
	pte_t *orig = ptep;
	struct contpte_span s;

	if (last_cont)
		end = ALIGN(end, CONT_PTE_SIZE);
	if (first_cont) {
		start = ALIGN_DOWN(start, CONT_PTE_SIZE);
		ptep = PTR_ALIGN_DOWN(ptep, sizeof(*ptep) * CONT_PTES);
	}
	s.start = start;
	s.back = orig - ptep;
	s.nr = (end - start) / PAGE_SIZE;
	return s;
}

/* contpte_ptep_set_access_flags()'s branches. */
static unsigned int ref_access(const pteval_t *block, pte_t target, pte_t entry)
{
	const pteval_t cmp_mask = PTE_RDONLY | PTE_AF | PTE_WRITE | PTE_DIRTY;
	pteval_t entry_cmp = pte_val(entry) & cmp_mask;
	bool match = true;
	int i;

	for (i = 0; i < CONT_PTES; i++)
		if ((block[i] & cmp_mask) != entry_cmp)
			match = false;
	if (match)
		return CONTPTE_ACCESS_NOOP;
	if (pte_write(pte_mknoncont(target)) == pte_write(entry))
		return CONTPTE_ACCESS_BLOCK;
	return CONTPTE_ACCESS_UNFOLD;
}

/* ---- differential cases ---- */

/* The host tests' digests (rust/mm/tests/contpte.rs), per PAGE_SHIFT. */
static u64 expected_digest(void)
{
	switch (PAGE_SHIFT) {
	case 12:
		return 0x7720d5e28774cb4eULL;
	case 14:
		return 0x4197841cab52ec87ULL;
	default:
		return 0x7773ecf2a13b6f4bULL;
	}
}

static void contpte_vectors_are_the_host_tests_vectors(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, rust_contpte_test_digest(), expected_digest());
}

static void contpte_decisions_agree_on_a_million_blocks(struct kunit *test)
{
	unsigned long folds = 0, consistent = 0, noops = 0, diffs = 0;
	struct contpte_test_case c;
	pteval_t *block;
	u64 state = 0x5eed0000 + PAGE_SHIFT;
	int n;

	block = kunit_kcalloc(test, CONT_PTES, sizeof(*block), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, block);

	for (n = 0; n < NR_BLOCKS; n++) {
		unsigned long fa;
		pte_t last, ref, templ;
		pteval_t rust;
		bool r, k;

		rust_contpte_test_case(&state, block, &c);
		last = __pte(block[CONT_PTES - 1]);
		fa = ALIGN_DOWN(c.addr, CONT_PTE_SIZE) +
		     (CONT_PTES - 1) * PAGE_SIZE;

		/* fold: the body of __contpte_try_fold() in a user mm */
		r = rust_contpte_try_fold(true, fa, pte_val(last), c.page_idx,
					  c.folio_nr, block);
		k = ref_try_fold(fa, last, c.page_idx, c.folio_nr, block);
		folds += k;
		if (r != k)
			diffs++;
		if (rust_contpte_try_fold(false, fa, pte_val(last), c.page_idx,
					  c.folio_nr, block))
			diffs++;

		/* convert, both directions */
		templ = pte_mkcont(__pte(c.pte));
		if (rust_contpte_convert(pte_val(templ), block) !=
		    pte_val(ref_convert(templ, block)))
			diffs++;
		templ = pte_mknoncont(__pte(c.pte));
		if (rust_contpte_convert(pte_val(templ), block) !=
		    pte_val(ref_convert(templ, block)))
			diffs++;

		/* gather under the PTL and without it */
		if (rust_contpte_gather(c.pte, block) !=
		    pte_val(ref_gather(__pte(c.pte), block)))
			diffs++;
		r = rust_contpte_gather_lockless(c.pte, c.idx, block, &rust);
		k = ref_lockless(__pte(c.pte), c.idx, block, &ref);
		if (r != k || (r && rust != pte_val(ref)))
			diffs++;
		consistent += k && pte_valid_cont(__pte(c.pte));

		/* access flags */
		k = ref_access(block, __pte(c.pte), __pte(c.entry));
		noops += k == CONTPTE_ACCESS_NOOP;
		if (rust_contpte_access_plan(block, c.pte, c.entry) != k)
			diffs++;

		if (diffs && diffs < 4)
			kunit_info(test, "block %d differs (target %u, pte %llx)",
				   n, c.idx, c.pte);
		if (!(n & 4095))
			cond_resched();
	}
	KUNIT_EXPECT_EQ(test, diffs, 0);
	/* The vectors reach both sides of each decision. */
	KUNIT_EXPECT_GT(test, folds, NR_BLOCKS / 200);
	KUNIT_EXPECT_LT(test, folds, NR_BLOCKS - NR_BLOCKS / 200);
	KUNIT_EXPECT_GT(test, consistent, NR_BLOCKS / 200);
	KUNIT_EXPECT_GT(test, noops, NR_BLOCKS / 2000);
	kunit_info(test, "%d blocks: %lu folds, %lu consistent lockless reads, %lu access no-ops",
		   NR_BLOCKS, folds, consistent, noops);
}

static void contpte_set_ptes_chunks_agree_exhaustively(struct kunit *test)
{
	const pgprot_t prot = PAGE_SHARED;
	unsigned long va, pfn_off, checked = 0, diffs = 0;
	unsigned int nr;

	for (va = 0; va < CONT_PTES; va++) {
		for (pfn_off = 0; pfn_off < 3; pfn_off++) {
			for (nr = 2; nr <= 3 * CONT_PTES + 1; nr++) {
				unsigned long addr = SZ_1G + va * PAGE_SIZE;
				unsigned long end = addr + ((unsigned long)nr << PAGE_SHIFT);
				unsigned long pfn = 1000 * CONT_PTES +
					(pfn_off == 2 ? CONT_PTES - 1 : pfn_off);

				do {
					struct contpte_chunk r, k;

					k = ref_chunk(addr, end, pfn, prot);
					r = rust_contpte_set_ptes_chunk(addr, end, pfn,
									pgprot_val(prot));
					if (r.next != k.next || r.nr != k.nr ||
					    r.pte != k.pte || !k.nr) {
						diffs++;
						break;
					}
					addr = k.next;
					pfn += k.nr;
					checked++;
				} while (addr != end);
			}
		}
	}
	KUNIT_EXPECT_EQ(test, diffs, 0);
	kunit_info(test, "%lu chunks", checked);
}

static void contpte_partial_ends_agree_exhaustively(struct kunit *test)
{
	pte_t *table = (pte_t *)__get_free_page(GFP_KERNEL);
	unsigned long idx, diffs = 0;
	unsigned int nr;

	KUNIT_ASSERT_NOT_NULL(test, table);
	for (idx = 0; idx < 2 * CONT_PTES; idx++)
		for (nr = 1; nr <= 3 * CONT_PTES; nr++)
			if (rust_contpte_partial_ends((unsigned long)(table + idx) /
						      sizeof(pte_t), nr) !=
			    ref_partial(table, idx, nr))
				diffs++;
	free_page((unsigned long)table);
	KUNIT_EXPECT_EQ(test, diffs, 0);
}

static void contpte_clear_young_dirty_span_agrees_exhaustively(struct kunit *test)
{
	pte_t *table = (pte_t *)__get_free_page(GFP_KERNEL);
	unsigned long off, diffs = 0;
	unsigned int nr, f;

	KUNIT_ASSERT_NOT_NULL(test, table);
	for (off = 0; off < CONT_PTES; off++) {
		for (nr = 1; nr <= 2 * CONT_PTES; nr++) {
			for (f = 0; f < 4; f++) {
				unsigned long addr = SZ_1G + (CONT_PTES + off) * PAGE_SIZE;
				pte_t *ptep = table + CONT_PTES + off;
				struct contpte_span r, k;

				k = ref_span(addr, ptep, nr, f & 1, f & 2);
				r = rust_contpte_clear_young_dirty_span(addr,
						(unsigned long)ptep / sizeof(pte_t),
						nr, f & 1, f & 2);
				if (r.start != k.start || r.back != k.back ||
				    r.nr != k.nr)
					diffs++;
			}
		}
	}
	free_page((unsigned long)table);
	KUNIT_EXPECT_EQ(test, diffs, 0);
}

/* pte with the RDONLY, AF, WRITE, DIRTY bits of the low 4 bits of f. */
static pte_t with_flags(pte_t pte, unsigned int f)
{
	pteval_t v = pte_val(pte) & ~(PTE_RDONLY | PTE_AF | PTE_WRITE | PTE_DIRTY);

	v |= (f & 1 ? PTE_RDONLY : 0) | (f & 2 ? PTE_AF : 0) |
	     (f & 4 ? PTE_WRITE : 0) | (f & 8 ? PTE_DIRTY : 0);
	return __pte(v);
}

static void contpte_access_plan_agrees_on_every_flag_combination(struct kunit *test)
{
	pteval_t *block = kunit_kcalloc(test, CONT_PTES, sizeof(*block), GFP_KERNEL);
	unsigned int e, t, s, w, diffs = 0;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, block);
	for (e = 0; e < 16; e++)
		for (t = 0; t < 16; t++)
			for (s = 0; s < 16; s++)
				for (w = 0; w < 2; w++) {
					int target = w ? CONT_PTES - 1 : 0;
					pte_t entry;

					for (i = 0; i < CONT_PTES; i++)
						block[i] = pte_val(with_flags(
							pte_mkcont(pfn_pte(0x8000 + i, PAGE_READONLY)),
							i == target ? t : s));
					entry = with_flags(__pte(block[target]), e);
					if (rust_contpte_access_plan(block, block[target],
								     pte_val(entry)) !=
					    ref_access(block, __pte(block[target]), entry))
						diffs++;
				}
	KUNIT_EXPECT_EQ(test, diffs, 0);
}

/* ---- real page tables of a private mm ---- */

struct contpte_env {
	struct mm_struct *mm;
	pte_t *table;		/* one page-table page */
	struct folio *folio;	/* one block's worth, naturally aligned */
	unsigned long addr;	/* the user address of table[0] */
};

static int contpte_env_init(struct kunit *test)
{
	struct contpte_env *env = kunit_kzalloc(test, sizeof(*env), GFP_KERNEL);

	if (!env)
		return -ENOMEM;
	env->mm = mm_alloc();
	env->table = (pte_t *)get_zeroed_page(GFP_KERNEL);
	env->folio = folio_alloc(GFP_KERNEL, ilog2(CONT_PTES));
	env->addr = SZ_1G;
	test->priv = env;
	if (!env->mm || !env->table || !env->folio)
		return -ENOMEM;
	return 0;
}

static void contpte_env_exit(struct kunit *test)
{
	struct contpte_env *env = test->priv;
	int i;

	if (!env)
		return;
	if (env->table) {
		for (i = 0; i < PTRS_PER_PTE; i++)
			__ptep_get_and_clear(env->mm, env->addr + i * PAGE_SIZE,
					     env->table + i);
		free_page((unsigned long)env->table);
	}
	if (env->folio)
		folio_put(env->folio);
	if (env->mm)
		mmput(env->mm);
}

/* The block mapping env's folio, block index 1 of the table. */
static pte_t *env_block(struct contpte_env *env, unsigned long *addr)
{
	*addr = env->addr + CONT_PTE_SIZE;
	return env->table + CONT_PTES;
}

static int count_cont(pte_t *ptep)
{
	int i, n = 0;

	for (i = 0; i < CONT_PTES; i++)
		n += pte_cont(__ptep_get(ptep + i));
	return n;
}

static void contpte_set_ptes_of_a_folio_block_sets_cont_on_every_entry(struct kunit *test)
{
	struct contpte_env *env = test->priv;
	unsigned long addr;
	pte_t *ptep = env_block(env, &addr);
	pte_t pte = mk_pte(&env->folio->page, PAGE_SHARED);
	int i;

	set_ptes(env->mm, addr, ptep, pte, CONT_PTES);
	KUNIT_EXPECT_EQ(test, count_cont(ptep), CONT_PTES);
	for (i = 0; i < CONT_PTES; i++)
		KUNIT_EXPECT_EQ(test, pte_pfn(__ptep_get(ptep + i)),
				folio_pfn(env->folio) + i);
	/* Half a block from its start: no entry is contiguous. */
	set_ptes(env->mm, addr - CONT_PTE_SIZE, env->table, pte, CONT_PTES / 2);
	KUNIT_EXPECT_EQ(test, count_cont(env->table), 0);
}

static void contpte_wrprotecting_one_entry_unfolds_the_block(struct kunit *test)
{
	struct contpte_env *env = test->priv;
	unsigned long addr;
	pte_t *ptep = env_block(env, &addr);
	int k = CONT_PTES / 2, i;

	set_ptes(env->mm, addr, ptep, mk_pte(&env->folio->page, PAGE_SHARED),
		 CONT_PTES);
	KUNIT_ASSERT_EQ(test, count_cont(ptep), CONT_PTES);
	ptep_set_wrprotect(env->mm, addr + k * PAGE_SIZE, ptep + k);
	KUNIT_EXPECT_EQ(test, count_cont(ptep), 0);
	for (i = 0; i < CONT_PTES; i++) {
		pte_t p = __ptep_get(ptep + i);

		KUNIT_EXPECT_TRUE(test, pte_valid(p));
		KUNIT_EXPECT_EQ(test, pte_write(p), i != k);
		KUNIT_EXPECT_EQ(test, pte_pfn(p), folio_pfn(env->folio) + i);
	}
}

static void contpte_rewriting_the_last_entry_refolds_a_uniform_block(struct kunit *test)
{
	struct contpte_env *env = test->priv;
	unsigned long addr;
	pte_t *ptep = env_block(env, &addr);
	pte_t pte = mk_pte(&env->folio->page, PAGE_SHARED);
	pte_t last = pte_advance_pfn(pte, CONT_PTES - 1);

	/* All but the last entry: a partial chunk, not contiguous. */
	set_ptes(env->mm, addr, ptep, pte, CONT_PTES - 1);
	KUNIT_EXPECT_EQ(test, count_cont(ptep), 0);
	/* The last one, read-only: differing permissions, no fold. */
	set_ptes(env->mm, addr + (CONT_PTES - 1) * PAGE_SIZE,
		 ptep + CONT_PTES - 1, pte_wrprotect(last), 1);
	KUNIT_EXPECT_EQ(test, count_cont(ptep), 0);
	/* Rewriting a middle entry does not fold (6.12 folds on the last). */
	set_ptes(env->mm, addr + PAGE_SIZE, ptep + 1,
		 pte_advance_pfn(pte, 1), 1);
	KUNIT_EXPECT_EQ(test, count_cont(ptep), 0);
	/* The last one with the block's permissions: the block folds. */
	set_ptes(env->mm, addr + (CONT_PTES - 1) * PAGE_SIZE,
		 ptep + CONT_PTES - 1, last, 1);
	KUNIT_EXPECT_EQ(test, count_cont(ptep), CONT_PTES);
}

static void contpte_a_hole_or_a_kernel_mm_is_never_folded(struct kunit *test)
{
	struct contpte_env *env = test->priv;
	unsigned long addr;
	pte_t *ptep = env_block(env, &addr);
	pte_t pte = mk_pte(&env->folio->page, PAGE_SHARED);

	/* A hole at entry 1. */
	set_pte_at(env->mm, addr, ptep, pte);
	set_ptes(env->mm, addr + 2 * PAGE_SIZE, ptep + 2,
		 pte_advance_pfn(pte, 2), CONT_PTES - 2);
	KUNIT_EXPECT_EQ(test, count_cont(ptep), 0);
	__ptep_get_and_clear(env->mm, addr, ptep);
	/* A block written through init_mm stays as written. */
	set_ptes(&init_mm, addr, ptep, pte, CONT_PTES);
	KUNIT_EXPECT_EQ(test, count_cont(ptep), 0);
}

static void contpte_access_and_dirty_of_one_entry_show_through_ptep_get(struct kunit *test)
{
	struct contpte_env *env = test->priv;
	unsigned long addr;
	pte_t *ptep = env_block(env, &addr);
	pte_t pte = pte_mkold(pte_mkclean(mk_pte(&env->folio->page, PAGE_SHARED)));
	int k = 3 % CONT_PTES, j = CONT_PTES - 1;

	set_ptes(env->mm, addr, ptep, pte, CONT_PTES);
	KUNIT_ASSERT_EQ(test, count_cont(ptep), CONT_PTES);
	KUNIT_EXPECT_FALSE(test, pte_dirty(ptep_get(ptep + j)));
	KUNIT_EXPECT_FALSE(test, pte_young(ptep_get(ptep + j)));
	/* What the hardware does to one descriptor of the block. */
	__set_pte(ptep + k, pte_mkyoung(pte_mkdirty(__ptep_get(ptep + k))));
	KUNIT_EXPECT_FALSE(test, pte_dirty(__ptep_get(ptep + j)));
	KUNIT_EXPECT_TRUE(test, pte_dirty(ptep_get(ptep + j)));
	KUNIT_EXPECT_TRUE(test, pte_young(ptep_get(ptep + j)));
	KUNIT_EXPECT_TRUE(test, pte_cont(ptep_get(ptep + j)));
	KUNIT_EXPECT_EQ(test, pte_val(ptep_get_lockless(ptep + j)),
			pte_val(ptep_get(ptep + j)));
	/* Clearing young on one entry clears the whole block. */
	KUNIT_EXPECT_EQ(test, ptep_test_and_clear_young(NULL, addr + j * PAGE_SIZE,
							ptep + j), 1);
	KUNIT_EXPECT_FALSE(test, pte_young(ptep_get(ptep + k)));
}

static struct kunit_case contpte_rust_cases[] = {
	KUNIT_CASE(contpte_vectors_are_the_host_tests_vectors),
	KUNIT_CASE(contpte_decisions_agree_on_a_million_blocks),
	KUNIT_CASE(contpte_set_ptes_chunks_agree_exhaustively),
	KUNIT_CASE(contpte_partial_ends_agree_exhaustively),
	KUNIT_CASE(contpte_clear_young_dirty_span_agrees_exhaustively),
	KUNIT_CASE(contpte_access_plan_agrees_on_every_flag_combination),
	KUNIT_CASE(contpte_set_ptes_of_a_folio_block_sets_cont_on_every_entry),
	KUNIT_CASE(contpte_wrprotecting_one_entry_unfolds_the_block),
	KUNIT_CASE(contpte_rewriting_the_last_entry_refolds_a_uniform_block),
	KUNIT_CASE(contpte_a_hole_or_a_kernel_mm_is_never_folded),
	KUNIT_CASE(contpte_access_and_dirty_of_one_entry_show_through_ptep_get),
	{}
};

static int contpte_rust_init(struct kunit *test)
{
	return contpte_env_init(test);
}

static struct kunit_suite contpte_rust_suite = {
	.name = "contpte_rust",
	.init = contpte_rust_init,
	.exit = contpte_env_exit,
	.test_cases = contpte_rust_cases,
};
kunit_test_suite(contpte_rust_suite);

MODULE_DESCRIPTION("KUnit tests of the Rust contpte decisions");
MODULE_LICENSE("GPL");
