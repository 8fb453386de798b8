/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The contpte decisions of arch/arm64/mm/contpte.c, in Rust
 * (rust/mm/arm64_contpte.rs, logic in rust/mm/core/contpte.rs).
 *
 * C reads the entries of a contpte block into an array of CONT_PTES values
 * and asks; it keeps every PTE read and write, break-before-make and all
 * TLB maintenance. Each function is bit-exact with the 6.12 C it replaces
 * (KUnit suite contpte_rust).
 */
#ifndef __ASM_CONTPTE_RUST_H
#define __ASM_CONTPTE_RUST_H

#include <linux/types.h>
#include <asm/page.h>
#include <asm/pgtable-hwdef.h>
#include <asm/pgtable-prot.h>

/* One chunk of contpte_set_ptes(): nr entries from pte, ending at next. */
struct contpte_chunk {
	unsigned long next;
	unsigned int nr;
	pteval_t pte;
};

/* The range contpte_clear_young_dirty_ptes() clears. */
struct contpte_span {
	unsigned long start;
	unsigned long back;	/* entries before the caller's first one */
	unsigned int nr;
};

/* What contpte_ptep_set_access_flags() does. */
enum contpte_access_plan {
	CONTPTE_ACCESS_NOOP,	/* every entry has the flags: return 0 */
	CONTPTE_ACCESS_BLOCK,	/* merge into every entry, no unfold */
	CONTPTE_ACCESS_UNFOLD,	/* write permission changes: unfold */
};

/* The ends contpte_try_unfold_partial() must unfold. */
enum {
	CONTPTE_PARTIAL_FIRST = 1,
	CONTPTE_PARTIAL_LAST = 2,
};

bool rust_contpte_try_fold(bool mm_is_user, unsigned long addr, pteval_t pte,
			   unsigned long page_idx, unsigned long folio_nr,
			   const pteval_t *block);
pteval_t rust_contpte_convert(pteval_t pte, const pteval_t *cleared);
pteval_t rust_contpte_gather(pteval_t orig, const pteval_t *block);
bool rust_contpte_gather_lockless(pteval_t orig, unsigned int idx,
				  const pteval_t *block, pteval_t *out);
struct contpte_chunk rust_contpte_set_ptes_chunk(unsigned long addr,
						 unsigned long end,
						 unsigned long pfn,
						 pteval_t prot);
unsigned int rust_contpte_partial_ends(unsigned long ptep_idx,
				       unsigned int nr);
struct contpte_span rust_contpte_clear_young_dirty_span(unsigned long addr,
							unsigned long ptep_idx,
							unsigned int nr,
							bool first_cont,
							bool last_cont);
unsigned int rust_contpte_access_plan(const pteval_t *block, pteval_t target,
				      pteval_t entry);

#ifdef CONFIG_ARM64_CONTPTE_RUST_KUNIT_TEST
/* One generated case of the differential suite (core/contpte_vectors.rs). */
struct contpte_test_case {
	pteval_t pte;
	unsigned int idx;
	unsigned long addr;
	unsigned long page_idx;
	unsigned long folio_nr;
	pteval_t entry;
	bool mm_is_user;
};

u64 rust_contpte_test_digest(void);
void rust_contpte_test_case(u64 *state, pteval_t *block,
			    struct contpte_test_case *c);
#endif

#endif /* __ASM_CONTPTE_RUST_H */
