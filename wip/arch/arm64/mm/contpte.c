// SPDX-License-Identifier: GPL-2.0-only
/*
 * Copyright (C) 2023 ARM Ltd.
 */

#include <linux/mm.h>
#include <linux/efi.h>
#include <linux/export.h>
#include <asm/tlbflush.h>
#include <asm/contpte_rust.h>
#include <linux/debugfs.h>
#include <linux/percpu.h>

static inline bool mm_is_user(struct mm_struct *mm)
{
	/*
	 * Don't attempt to apply the contig bit to kernel mappings, because
	 * dynamically adding/removing the contig bit can cause page faults.
	 * These racing faults are ok for user space, since they get serialized
	 * on the PTL. But kernel mappings can't tolerate faults.
	 */
	if (unlikely(mm_is_efi(mm)))
		return false;
	return mm != &init_mm;
}

static inline pte_t *contpte_align_down(pte_t *ptep)
{
	return PTR_ALIGN_DOWN(ptep, sizeof(*ptep) * CONT_PTES);
}

#ifdef CONFIG_ARM64_CONTPTE_RUST
/*
 * The decisions of this file are made in Rust (asm/contpte_rust.h): C reads
 * a block's entries into an array, asks, and acts. Every PTE access, the
 * break-before-make and the TLB maintenance stay here.
 */
static inline void contpte_read_block(pte_t *ptep, pteval_t *block)
{
	int i;

	ptep = contpte_align_down(ptep);
	for (i = 0; i < CONT_PTES; i++)
		block[i] = pte_val(__ptep_get(ptep + i));
}

/* The index of a PTE pointer, whose low bits place it in its block. */
static inline unsigned long contpte_ptep_idx(pte_t *ptep)
{
	return (unsigned long)ptep / sizeof(*ptep);
}

/* Folds and unfolds, for tests and benchmarks (debugfs: contpte_stats). */
static DEFINE_PER_CPU(unsigned long, contpte_folds);
static DEFINE_PER_CPU(unsigned long, contpte_unfolds);

static int contpte_stats_show(struct seq_file *m, void *v)
{
	unsigned long folds = 0, unfolds = 0;
	int cpu;

	for_each_possible_cpu(cpu) {
		folds += per_cpu(contpte_folds, cpu);
		unfolds += per_cpu(contpte_unfolds, cpu);
	}
	seq_printf(m, "folds %lu\nunfolds %lu\n", folds, unfolds);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(contpte_stats);

static int __init contpte_stats_init(void)
{
	debugfs_create_file("contpte_stats", 0444, NULL, NULL,
			    &contpte_stats_fops);
	return 0;
}
late_initcall(contpte_stats_init);
#endif

static void contpte_try_unfold_partial(struct mm_struct *mm, unsigned long addr,
					pte_t *ptep, unsigned int nr)
{
	/*
	 * Unfold any partially covered contpte block at the beginning and end
	 * of the range.
	 */

#ifdef CONFIG_ARM64_CONTPTE_RUST
	unsigned int ends = rust_contpte_partial_ends(contpte_ptep_idx(ptep), nr);
	bool first = ends & CONTPTE_PARTIAL_FIRST;
	bool last = ends & CONTPTE_PARTIAL_LAST;
#else
	bool first = ptep != contpte_align_down(ptep) || nr < CONT_PTES;
	bool last = ptep + nr != contpte_align_down(ptep + nr);
#endif

	if (first)
		contpte_try_unfold(mm, addr, ptep, __ptep_get(ptep));

	if (last) {
		unsigned long last_addr = addr + PAGE_SIZE * (nr - 1);
		pte_t *last_ptep = ptep + nr - 1;

		contpte_try_unfold(mm, last_addr, last_ptep,
				   __ptep_get(last_ptep));
	}
}

static void contpte_convert(struct mm_struct *mm, unsigned long addr,
			    pte_t *ptep, pte_t pte)
{
	struct vm_area_struct vma = TLB_FLUSH_VMA(mm, 0);
	unsigned long start_addr;
	pte_t *start_ptep;
	int i;
#ifdef CONFIG_ARM64_CONTPTE_RUST
	pteval_t cleared[CONT_PTES];

	if (pte_cont(pte))
		this_cpu_inc(contpte_folds);
	else
		this_cpu_inc(contpte_unfolds);
	start_ptep = ptep = contpte_align_down(ptep);
	start_addr = addr = ALIGN_DOWN(addr, CONT_PTE_SIZE);

	/* Break: clear every entry, keeping what the hardware set. */
	for (i = 0; i < CONT_PTES; i++, ptep++, addr += PAGE_SIZE)
		cleared[i] = pte_val(__ptep_get_and_clear(mm, addr, ptep));
	pte = __pte(rust_contpte_convert(pte_val(pte), cleared));
#else
	start_ptep = ptep = contpte_align_down(ptep);
	start_addr = addr = ALIGN_DOWN(addr, CONT_PTE_SIZE);
	pte = pfn_pte(ALIGN_DOWN(pte_pfn(pte), CONT_PTES), pte_pgprot(pte));

	for (i = 0; i < CONT_PTES; i++, ptep++, addr += PAGE_SIZE) {
		pte_t ptent = __ptep_get_and_clear(mm, addr, ptep);

		if (pte_dirty(ptent))
			pte = pte_mkdirty(pte);

		if (pte_young(ptent))
			pte = pte_mkyoung(pte);
	}
#endif

	__flush_tlb_range(&vma, start_addr, addr, PAGE_SIZE, true, 3);

	__set_ptes(mm, start_addr, start_ptep, pte, CONT_PTES);
}

void __contpte_try_fold(struct mm_struct *mm, unsigned long addr,
			pte_t *ptep, pte_t pte)
{
	/*
	 * We have already checked that the virtual and pysical addresses are
	 * correctly aligned for a contpte mapping in contpte_try_fold() so the
	 * remaining checks are to ensure that the contpte range is fully
	 * covered by a single folio, and ensure that all the ptes are valid
	 * with contiguous PFNs and matching prots. We ignore the state of the
	 * access and dirty bits for the purpose of deciding if its a contiguous
	 * range; the folding process will generate a single contpte entry which
	 * has a single access and dirty bit. Those 2 bits are the logical OR of
	 * their respective bits in the constituent pte entries. In order to
	 * ensure the contpte range is covered by a single folio, we must
	 * recover the folio from the pfn, but special mappings don't have a
	 * folio backing them. Fortunately contpte_try_fold() already checked
	 * that the pte is not special - we never try to fold special mappings.
	 * Note we can't use vm_normal_page() for this since we don't have the
	 * vma.
	 */

#ifdef CONFIG_ARM64_CONTPTE_RUST
	pteval_t block[CONT_PTES];
	struct folio *folio;
	struct page *page;

	/* No folio lookup for kernel mms: Rust never folds them anyway. */
	if (!mm_is_user(mm))
		return;

	page = pte_page(pte);
	folio = page_folio(page);
	contpte_read_block(ptep, block);
	if (!rust_contpte_try_fold(true, addr, pte_val(pte),
				   folio_page_idx(folio, page),
				   folio_nr_pages(folio), block))
		return;
	contpte_convert(mm, addr, ptep, pte_mkcont(pte));
#else
	unsigned long folio_start, folio_end;
	unsigned long cont_start, cont_end;
	pte_t expected_pte, subpte;
	struct folio *folio;
	struct page *page;
	unsigned long pfn;
	pte_t *orig_ptep;
	pgprot_t prot;

	int i;

	if (!mm_is_user(mm))
		return;

	page = pte_page(pte);
	folio = page_folio(page);
	folio_start = addr - (page - &folio->page) * PAGE_SIZE;
	folio_end = folio_start + folio_nr_pages(folio) * PAGE_SIZE;
	cont_start = ALIGN_DOWN(addr, CONT_PTE_SIZE);
	cont_end = cont_start + CONT_PTE_SIZE;

	if (folio_start > cont_start || folio_end < cont_end)
		return;

	pfn = ALIGN_DOWN(pte_pfn(pte), CONT_PTES);
	prot = pte_pgprot(pte_mkold(pte_mkclean(pte)));
	expected_pte = pfn_pte(pfn, prot);
	orig_ptep = ptep;
	ptep = contpte_align_down(ptep);

	for (i = 0; i < CONT_PTES; i++) {
		subpte = pte_mkold(pte_mkclean(__ptep_get(ptep)));
		if (!pte_same(subpte, expected_pte))
			return;
		expected_pte = pte_advance_pfn(expected_pte, 1);
		ptep++;
	}

	pte = pte_mkcont(pte);
	contpte_convert(mm, addr, orig_ptep, pte);
#endif
}
EXPORT_SYMBOL_GPL(__contpte_try_fold);

void __contpte_try_unfold(struct mm_struct *mm, unsigned long addr,
			pte_t *ptep, pte_t pte)
{
	/*
	 * We have already checked that the ptes are contiguous in
	 * contpte_try_unfold(), so just check that the mm is user space.
	 */
	if (!mm_is_user(mm))
		return;

	pte = pte_mknoncont(pte);
	contpte_convert(mm, addr, ptep, pte);
}
EXPORT_SYMBOL_GPL(__contpte_try_unfold);

pte_t contpte_ptep_get(pte_t *ptep, pte_t orig_pte)
{
	/*
	 * Gather access/dirty bits, which may be populated in any of the ptes
	 * of the contig range. We are guaranteed to be holding the PTL, so any
	 * contiguous range cannot be unfolded or otherwise modified under our
	 * feet.
	 */

#ifdef CONFIG_ARM64_CONTPTE_RUST
	pteval_t block[CONT_PTES];

	contpte_read_block(ptep, block);
	return __pte(rust_contpte_gather(pte_val(orig_pte), block));
#else
	pte_t pte;
	int i;

	ptep = contpte_align_down(ptep);

	for (i = 0; i < CONT_PTES; i++, ptep++) {
		pte = __ptep_get(ptep);

		if (pte_dirty(pte))
			orig_pte = pte_mkdirty(orig_pte);

		if (pte_young(pte))
			orig_pte = pte_mkyoung(orig_pte);
	}

	return orig_pte;
#endif
}
EXPORT_SYMBOL_GPL(contpte_ptep_get);

pte_t contpte_ptep_get_lockless(pte_t *orig_ptep)
{
	/*
	 * The ptep_get_lockless() API requires us to read and return *orig_ptep
	 * so that it is self-consistent, without the PTL held, so we may be
	 * racing with other threads modifying the pte. Usually a READ_ONCE()
	 * would suffice, but for the contpte case, we also need to gather the
	 * access and dirty bits from across all ptes in the contiguous block,
	 * and we can't read all of those neighbouring ptes atomically, so any
	 * contiguous range may be unfolded/modified/refolded under our feet.
	 * Therefore we ensure we read a _consistent_ contpte range by checking
	 * that all ptes in the range are valid and have CONT_PTE set, that all
	 * pfns are contiguous and that all pgprots are the same (ignoring
	 * access/dirty). If we find a pte that is not consistent, then we must
	 * be racing with an update so start again. If the target pte does not
	 * have CONT_PTE set then that is considered consistent on its own
	 * because it is not part of a contpte range.
	 */

#ifdef CONFIG_ARM64_CONTPTE_RUST
	pteval_t block[CONT_PTES];
	pteval_t val;
	pte_t orig_pte;

	do {
		orig_pte = __ptep_get(orig_ptep);
		if (!pte_valid_cont(orig_pte))
			return orig_pte;
		contpte_read_block(orig_ptep, block);
	} while (!rust_contpte_gather_lockless(pte_val(orig_pte),
				orig_ptep - contpte_align_down(orig_ptep),
				block, &val));

	return __pte(val);
#else
	pgprot_t orig_prot;
	unsigned long pfn;
	pte_t orig_pte;
	pgprot_t prot;
	pte_t *ptep;
	pte_t pte;
	int i;

retry:
	orig_pte = __ptep_get(orig_ptep);

	if (!pte_valid_cont(orig_pte))
		return orig_pte;

	orig_prot = pte_pgprot(pte_mkold(pte_mkclean(orig_pte)));
	ptep = contpte_align_down(orig_ptep);
	pfn = pte_pfn(orig_pte) - (orig_ptep - ptep);

	for (i = 0; i < CONT_PTES; i++, ptep++, pfn++) {
		pte = __ptep_get(ptep);
		prot = pte_pgprot(pte_mkold(pte_mkclean(pte)));

		if (!pte_valid_cont(pte) ||
		   pte_pfn(pte) != pfn ||
		   pgprot_val(prot) != pgprot_val(orig_prot))
			goto retry;

		if (pte_dirty(pte))
			orig_pte = pte_mkdirty(orig_pte);

		if (pte_young(pte))
			orig_pte = pte_mkyoung(orig_pte);
	}

	return orig_pte;
#endif
}
EXPORT_SYMBOL_GPL(contpte_ptep_get_lockless);

void contpte_set_ptes(struct mm_struct *mm, unsigned long addr,
					pte_t *ptep, pte_t pte, unsigned int nr)
{
	unsigned long next;
	unsigned long end;
	unsigned long pfn;
	pgprot_t prot;

	/*
	 * The set_ptes() spec guarantees that when nr > 1, the initial state of
	 * all ptes is not-present. Therefore we never need to unfold or
	 * otherwise invalidate a range before we set the new ptes.
	 * contpte_set_ptes() should never be called for nr < 2.
	 */
	VM_WARN_ON(nr == 1);

	if (!mm_is_user(mm) || !pte_valid(pte)) {
		VM_WARN_ON_ONCE(!pte_valid(pte) && pte_cont(pte));
		return __set_ptes(mm, addr, ptep, pte, nr);
	}

	end = addr + (nr << PAGE_SHIFT);
	pfn = pte_pfn(pte);
	prot = pte_pgprot(pte);

	do {
#ifdef CONFIG_ARM64_CONTPTE_RUST
		struct contpte_chunk c = rust_contpte_set_ptes_chunk(addr, end, pfn,
							pgprot_val(prot));

		next = c.next;
		nr = c.nr;
		pte = __pte(c.pte);
#else
		next = pte_cont_addr_end(addr, end);
		nr = (next - addr) >> PAGE_SHIFT;
		pte = pfn_pte(pfn, prot);

		if (((addr | next | (pfn << PAGE_SHIFT)) & ~CONT_PTE_MASK) == 0)
			pte = pte_mkcont(pte);
		else
			pte = pte_mknoncont(pte);
#endif

		__set_ptes(mm, addr, ptep, pte, nr);

		addr = next;
		ptep += nr;
		pfn += nr;

	} while (addr != end);
}
EXPORT_SYMBOL_GPL(contpte_set_ptes);

void contpte_clear_full_ptes(struct mm_struct *mm, unsigned long addr,
				pte_t *ptep, unsigned int nr, int full)
{
	contpte_try_unfold_partial(mm, addr, ptep, nr);
	__clear_full_ptes(mm, addr, ptep, nr, full);
}
EXPORT_SYMBOL_GPL(contpte_clear_full_ptes);

pte_t contpte_get_and_clear_full_ptes(struct mm_struct *mm,
				unsigned long addr, pte_t *ptep,
				unsigned int nr, int full)
{
	contpte_try_unfold_partial(mm, addr, ptep, nr);
	return __get_and_clear_full_ptes(mm, addr, ptep, nr, full);
}
EXPORT_SYMBOL_GPL(contpte_get_and_clear_full_ptes);

int contpte_ptep_test_and_clear_young(struct vm_area_struct *vma,
					unsigned long addr, pte_t *ptep)
{
	/*
	 * ptep_clear_flush_young() technically requires us to clear the access
	 * flag for a _single_ pte. However, the core-mm code actually tracks
	 * access/dirty per folio, not per page. And since we only create a
	 * contig range when the range is covered by a single folio, we can get
	 * away with clearing young for the whole contig range here, so we avoid
	 * having to unfold.
	 */

	int young = 0;
	int i;

	ptep = contpte_align_down(ptep);
	addr = ALIGN_DOWN(addr, CONT_PTE_SIZE);

	for (i = 0; i < CONT_PTES; i++, ptep++, addr += PAGE_SIZE)
		young |= __ptep_test_and_clear_young(vma, addr, ptep);

	return young;
}
EXPORT_SYMBOL_GPL(contpte_ptep_test_and_clear_young);

int contpte_ptep_clear_flush_young(struct vm_area_struct *vma,
					unsigned long addr, pte_t *ptep)
{
	int young;

	young = contpte_ptep_test_and_clear_young(vma, addr, ptep);

	if (young) {
		/*
		 * See comment in __ptep_clear_flush_young(); same rationale for
		 * eliding the trailing DSB applies here.
		 */
		addr = ALIGN_DOWN(addr, CONT_PTE_SIZE);
		__flush_tlb_range_nosync(vma, addr, addr + CONT_PTE_SIZE,
					 PAGE_SIZE, true, 3);
	}

	return young;
}
EXPORT_SYMBOL_GPL(contpte_ptep_clear_flush_young);

void contpte_wrprotect_ptes(struct mm_struct *mm, unsigned long addr,
					pte_t *ptep, unsigned int nr)
{
	/*
	 * If wrprotecting an entire contig range, we can avoid unfolding. Just
	 * set wrprotect and wait for the later mmu_gather flush to invalidate
	 * the tlb. Until the flush, the page may or may not be wrprotected.
	 * After the flush, it is guaranteed wrprotected. If it's a partial
	 * range though, we must unfold, because we can't have a case where
	 * CONT_PTE is set but wrprotect applies to a subset of the PTEs; this
	 * would cause it to continue to be unpredictable after the flush.
	 */

	contpte_try_unfold_partial(mm, addr, ptep, nr);
	__wrprotect_ptes(mm, addr, ptep, nr);
}
EXPORT_SYMBOL_GPL(contpte_wrprotect_ptes);

void contpte_clear_young_dirty_ptes(struct vm_area_struct *vma,
				    unsigned long addr, pte_t *ptep,
				    unsigned int nr, cydp_t flags)
{
	/*
	 * We can safely clear access/dirty without needing to unfold from
	 * the architectures perspective, even when contpte is set. If the
	 * range starts or ends midway through a contpte block, we can just
	 * expand to include the full contpte block. While this is not
	 * exactly what the core-mm asked for, it tracks access/dirty per
	 * folio, not per page. And since we only create a contpte block
	 * when it is covered by a single folio, we can get away with
	 * clearing access/dirty for the whole block.
	 */
#ifdef CONFIG_ARM64_CONTPTE_RUST
	bool last_cont = pte_cont(__ptep_get(ptep + nr - 1));
	bool first_cont = pte_cont(__ptep_get(ptep));
	struct contpte_span s;

	s = rust_contpte_clear_young_dirty_span(addr, contpte_ptep_idx(ptep), nr,
						first_cont, last_cont);
	__clear_young_dirty_ptes(vma, s.start, ptep - s.back, s.nr, flags);
#else
	unsigned long start = addr;
	unsigned long end = start + nr * PAGE_SIZE;

	if (pte_cont(__ptep_get(ptep + nr - 1)))
		end = ALIGN(end, CONT_PTE_SIZE);

	if (pte_cont(__ptep_get(ptep))) {
		start = ALIGN_DOWN(start, CONT_PTE_SIZE);
		ptep = contpte_align_down(ptep);
	}

	__clear_young_dirty_ptes(vma, start, ptep, (end - start) / PAGE_SIZE, flags);
#endif
}
EXPORT_SYMBOL_GPL(contpte_clear_young_dirty_ptes);

#ifndef CONFIG_ARM64_CONTPTE_RUST
static bool contpte_all_subptes_match_access_flags(pte_t *ptep, pte_t entry)
{
	pte_t *cont_ptep = contpte_align_down(ptep);
	/*
	 * PFNs differ per sub-PTE. Match only bits consumed by
	 * __ptep_set_access_flags(): AF, DIRTY and write permission.
	 */
	const pteval_t cmp_mask = PTE_RDONLY | PTE_AF | PTE_WRITE | PTE_DIRTY;
	pteval_t entry_cmp = pte_val(entry) & cmp_mask;
	int i;

	for (i = 0; i < CONT_PTES; i++) {
		pteval_t pte_cmp = pte_val(__ptep_get(cont_ptep + i)) & cmp_mask;

		if (pte_cmp != entry_cmp)
			return false;
	}

	return true;
}
#endif

int contpte_ptep_set_access_flags(struct vm_area_struct *vma,
					unsigned long addr, pte_t *ptep,
					pte_t entry, int dirty)
{
	unsigned long start_addr;
	bool in_place;
	pte_t orig_pte;
	int i;
#ifdef CONFIG_ARM64_CONTPTE_RUST
	pteval_t block[CONT_PTES];
	unsigned int plan;

	/* The raw entries, not the gathered view (see below). */
	contpte_read_block(ptep, block);
	orig_pte = pte_mknoncont(__ptep_get(ptep));
	plan = rust_contpte_access_plan(block, pte_val(orig_pte),
					pte_val(entry));
	if (plan == CONTPTE_ACCESS_NOOP)
		return 0;
	in_place = plan == CONTPTE_ACCESS_BLOCK;
#else
	/*
	 * Check whether all sub-PTEs in the CONT block already match the
	 * requested access flags/write permission, using raw per-PTE values
	 * rather than the gathered ptep_get() view.
	 *
	 * __ptep_set_access_flags() can update AF, dirty and write
	 * permission, but only to make the mapping more permissive.
	 *
	 * ptep_get() gathers AF/dirty state across the whole CONT block,
	 * which is correct for a CPU with FEAT_HAFDBS. But page-table
	 * walkers that evaluate each descriptor individually (e.g. a CPU
	 * without DBM support, or an SMMU without HTTU, or with HA/HD
	 * disabled in CD.TCR) can keep faulting on the target sub-PTE if
	 * only a sibling has been updated. Gathering can therefore cause
	 * false no-ops when only a sibling has been updated:
	 *  - write faults: target still has PTE_RDONLY (needs PTE_RDONLY cleared)
	 *  - read faults:  target still lacks PTE_AF
	 *
	 * Per Arm ARM (DDI 0487) D8.7.1, any sub-PTE in a CONT range may
	 * become the effective cached translation, so all entries must have
	 * consistent attributes. Check the full CONT block before returning
	 * no-op, and when any sub-PTE mismatches, proceed to update the whole
	 * range.
	 */
	if (contpte_all_subptes_match_access_flags(ptep, entry))
		return 0;

	/*
	 * Use raw target pte (not gathered) for write-bit unfold decision.
	 */
	orig_pte = pte_mknoncont(__ptep_get(ptep));

	/*
	 * We can fix up access/dirty bits without having to unfold the contig
	 * range. But if the write bit is changing, we must unfold.
	 */
	in_place = pte_write(orig_pte) == pte_write(entry);
#endif
	if (in_place) {
		/*
		 * For HW access management, we technically only need to update
		 * the flag on a single pte in the range. But for SW access
		 * management, we need to update all the ptes to prevent extra
		 * faults. Avoid per-page tlb flush in __ptep_set_access_flags()
		 * and instead flush the whole range at the end.
		 */
		ptep = contpte_align_down(ptep);
		start_addr = addr = ALIGN_DOWN(addr, CONT_PTE_SIZE);

		/*
		 * We are not advancing entry because __ptep_set_access_flags()
		 * only consumes access flags from entry. And since we have checked
		 * for the whole contpte block and returned early, pte_same()
		 * within __ptep_set_access_flags() is likely false.
		 */
		for (i = 0; i < CONT_PTES; i++, ptep++, addr += PAGE_SIZE)
			__ptep_set_access_flags(vma, addr, ptep, entry, 0);

		if (dirty)
			__flush_tlb_range(vma, start_addr, addr,
							PAGE_SIZE, true, 3);
	} else {
		__contpte_try_unfold(vma->vm_mm, addr, ptep, orig_pte);
		__ptep_set_access_flags(vma, addr, ptep, entry, dirty);
	}

	return 1;
}
EXPORT_SYMBOL_GPL(contpte_ptep_set_access_flags);
