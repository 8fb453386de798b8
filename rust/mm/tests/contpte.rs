// SPDX-License-Identifier: GPL-2.0

//! Host tests of the contpte decisions: each against a line-by-line
//! transcription of 7.3.4's `arch/arm64/mm/contpte.c` and the arm64
//! accessors it uses (module `c73`, written from the C, not from the
//! core), on the named cases of the design, exhaustively where the input
//! space is small, and on 1,000,000 structured random blocks per granule --
//! the same vectors the kernel's differential KUnit suite runs against the
//! real C.

use rust_mm_core::contpte::bits::*;
use rust_mm_core::contpte::{
    access_flags_match, access_flags_plan, gather, AccessPlan, Layout, PaLayout, PartialEnds, Pte,
    Span, MAX_CONT_PTES,
};
use rust_mm_core::contpte_vectors::{digest, BlockGen, Case};
use std::cell::Cell;

/// 7.3.4's C, transcribed. Every function names the C it copies.
mod c73 {
    use rust_mm_core::contpte::{Layout, PaLayout};

    pub const PTE_VALID: u64 = 1;
    pub const PTE_RDONLY: u64 = 1 << 7;
    pub const PTE_AF: u64 = 1 << 10;
    pub const PTE_WRITE: u64 = 1 << 51;
    pub const PTE_CONT: u64 = 1 << 52;
    pub const PTE_DIRTY: u64 = 1 << 55;
    pub const PTE_SPECIAL: u64 = 1 << 56;

    pub fn pte_valid(p: u64) -> bool {
        p & PTE_VALID != 0
    }
    pub fn pte_cont(p: u64) -> bool {
        p & PTE_CONT != 0
    }
    pub fn pte_valid_cont(p: u64) -> bool {
        pte_valid(p) && pte_cont(p)
    }
    pub fn pte_young(p: u64) -> bool {
        p & PTE_AF != 0
    }
    pub fn pte_write(p: u64) -> bool {
        p & PTE_WRITE != 0
    }
    pub fn pte_rdonly(p: u64) -> bool {
        p & PTE_RDONLY != 0
    }
    pub fn pte_special(p: u64) -> bool {
        p & PTE_SPECIAL != 0
    }
    pub fn pte_hw_dirty(p: u64) -> bool {
        pte_write(p) && !pte_rdonly(p)
    }
    pub fn pte_sw_dirty(p: u64) -> bool {
        p & PTE_DIRTY != 0
    }
    pub fn pte_dirty(p: u64) -> bool {
        pte_sw_dirty(p) || pte_hw_dirty(p)
    }
    pub fn pte_mkclean(p: u64) -> u64 {
        (p & !PTE_DIRTY) | PTE_RDONLY
    }
    pub fn pte_mkdirty(p: u64) -> u64 {
        let mut p = p | PTE_DIRTY;
        if pte_write(p) {
            p &= !PTE_RDONLY;
        }
        p
    }
    pub fn pte_mkold(p: u64) -> u64 {
        p & !PTE_AF
    }
    pub fn pte_mkyoung(p: u64) -> u64 {
        p | PTE_AF
    }
    pub fn pte_mkcont(p: u64) -> u64 {
        p | PTE_CONT
    }
    pub fn pte_mknoncont(p: u64) -> u64 {
        p & !PTE_CONT
    }

    fn page_shift(l: &Layout) -> u32 {
        l.page_shift
    }
    pub fn cont_ptes(l: &Layout) -> u64 {
        1 << l.cont_shift
    }
    pub fn cont_pte_size(l: &Layout) -> u64 {
        cont_ptes(l) << page_shift(l)
    }
    fn pte_addr_low(l: &Layout) -> u64 {
        ((1u64 << (50 - page_shift(l))) - 1) << page_shift(l)
    }
    /// `__pte_to_phys()` of the configuration `l` describes.
    fn pte_to_phys(l: &Layout, pte: u64) -> u64 {
        match l.pa {
            PaLayout::Pa48 => pte & pte_addr_low(l),
            PaLayout::Pa52K64 => {
                let pte = pte & !(3 << 8); // PTE_MAYBE_SHARED = PTE_SHARED
                (pte & pte_addr_low(l)) | ((pte & (0xf << 12)) << 36)
            }
            PaLayout::Lpa2 { ds } => {
                let maybe_shared = if ds { 0 } else { 3 << 8 };
                let pte = pte & !maybe_shared;
                (pte & pte_addr_low(l)) | ((pte & (3 << 8)) << 42)
            }
        }
    }
    /// `__phys_to_pte_val()`.
    fn phys_to_pte_val(l: &Layout, phys: u64) -> u64 {
        match l.pa {
            PaLayout::Pa48 => phys,
            PaLayout::Pa52K64 => (phys | (phys >> 36)) & (pte_addr_low(l) | (0xf << 12)),
            PaLayout::Lpa2 { .. } => (phys | (phys >> 42)) & (((1u64 << 42) - 1) << 8),
        }
    }
    pub fn pte_pfn(l: &Layout, p: u64) -> u64 {
        pte_to_phys(l, p) >> page_shift(l)
    }
    pub fn pfn_pte(l: &Layout, pfn: u64, prot: u64) -> u64 {
        phys_to_pte_val(l, pfn.wrapping_shl(page_shift(l))) | prot
    }
    pub fn pte_pgprot(l: &Layout, p: u64) -> u64 {
        pfn_pte(l, pte_pfn(l, p), 0) ^ p
    }
    pub fn pte_advance_pfn(l: &Layout, p: u64, nr: u64) -> u64 {
        pfn_pte(l, pte_pfn(l, p).wrapping_add(nr), pte_pgprot(l, p))
    }
    fn align_down(x: u64, a: u64) -> u64 {
        x & !(a - 1)
    }

    /// The inline `contpte_try_fold()` and `__contpte_try_fold()`, up to
    /// the convert: whether contpte.c folds. `block` is the block as read.
    #[allow(clippy::too_many_arguments)]
    pub fn try_fold(
        l: &Layout,
        mm_is_user: bool,
        addr: u64,
        pte: u64,
        page_idx: u64,
        folio_nr: u64,
        block: &[u64],
    ) -> bool {
        let contmask = cont_ptes(l) - 1;
        let valign = ((addr >> page_shift(l)) & contmask) == contmask;
        if !valign {
            return false;
        }
        let palign = (pte_pfn(l, pte) & contmask) == contmask;
        let fold = palign && pte_valid(pte) && !pte_cont(pte) && !pte_special(pte);
        if !fold {
            return false;
        }
        if !mm_is_user {
            return false;
        }
        let ps = 1u64 << page_shift(l);
        let folio_start = addr.wrapping_sub(page_idx.wrapping_mul(ps));
        let folio_end = folio_start.wrapping_add(folio_nr.wrapping_mul(ps));
        let cont_start = align_down(addr, cont_pte_size(l));
        let cont_end = cont_start.wrapping_add(cont_pte_size(l));
        if folio_start > cont_start || folio_end < cont_end {
            return false;
        }
        let pfn = align_down(pte_pfn(l, pte), cont_ptes(l));
        let prot = pte_pgprot(l, pte_mkold(pte_mkclean(pte)));
        let mut expected = pfn_pte(l, pfn, prot);
        for &raw in block.iter().take(cont_ptes(l) as usize) {
            let subpte = pte_mkold(pte_mkclean(raw));
            if subpte != expected {
                return false;
            }
            expected = pte_advance_pfn(l, expected, 1);
        }
        true
    }

    /// `contpte_convert()`'s value written back (entry 0).
    pub fn convert(l: &Layout, pte: u64, cleared: &[u64]) -> u64 {
        let mut pte = pfn_pte(
            l,
            align_down(pte_pfn(l, pte), cont_ptes(l)),
            pte_pgprot(l, pte),
        );
        for &ptent in cleared {
            if pte_dirty(ptent) {
                pte = pte_mkdirty(pte);
            }
            if pte_young(ptent) {
                pte = pte_mkyoung(pte);
            }
        }
        pte
    }

    /// `contpte_ptep_get()`, with the indices it reads (the first dirty
    /// entry twice).
    pub fn ptep_get_reads(orig: u64, block: &[u64]) -> (u64, Vec<usize>) {
        let mut orig_pte = orig;
        let mut reads = Vec::new();
        let n = block.len();
        let mut i = 0;
        while i < n {
            reads.push(i);
            let pte = block[i];
            if pte_dirty(pte) {
                orig_pte = pte_mkdirty(orig_pte);
                while i < n {
                    reads.push(i);
                    if pte_young(block[i]) {
                        orig_pte = pte_mkyoung(orig_pte);
                        break;
                    }
                    i += 1;
                }
                break;
            }
            if pte_young(pte) {
                orig_pte = pte_mkyoung(orig_pte);
                i += 1;
                while i < n {
                    reads.push(i);
                    if pte_dirty(block[i]) {
                        orig_pte = pte_mkdirty(orig_pte);
                        break;
                    }
                    i += 1;
                }
                break;
            }
            i += 1;
        }
        (orig_pte, reads)
    }

    /// `contpte_ptep_get()`.
    pub fn ptep_get(orig: u64, block: &[u64]) -> u64 {
        ptep_get_reads(orig, block).0
    }

    /// `contpte_is_consistent()`.
    fn is_consistent(l: &Layout, pte: u64, pfn: u64, orig_prot: u64) -> bool {
        let prot = pte_pgprot(l, pte_mkold(pte_mkclean(pte)));
        pte_valid_cont(pte) && pte_pfn(l, pte) == pfn && prot == orig_prot
    }

    /// One pass of `contpte_ptep_get_lockless()`: `None` is `goto retry`.
    /// `block` is what the reads of the block return (`CONT_PTES` entries).
    pub fn ptep_get_lockless(l: &Layout, orig: u64, idx: usize, block: &[u64]) -> Option<u64> {
        ptep_get_lockless_reads(l, orig, idx, block).0
    }

    /// [`ptep_get_lockless`] and how many entries of the block it read
    /// (it reads a prefix; the first dirty entry twice, counted once).
    pub fn ptep_get_lockless_reads(
        l: &Layout,
        orig: u64,
        idx: usize,
        block: &[u64],
    ) -> (Option<u64>, usize) {
        let mut reads = 0;
        let mut read = |i: usize| {
            reads = reads.max(i + 1);
            block.get(i).copied()
        };
        let answer = lockless_pass(l, orig, idx, &mut read);
        (answer, reads)
    }

    fn lockless_pass(
        l: &Layout,
        orig: u64,
        idx: usize,
        read: &mut impl FnMut(usize) -> Option<u64>,
    ) -> Option<u64> {
        let mut orig_pte = orig;
        if !pte_valid_cont(orig_pte) {
            return Some(orig_pte);
        }
        let orig_prot = pte_pgprot(l, pte_mkold(pte_mkclean(orig_pte)));
        let mut pfn = pte_pfn(l, orig_pte).wrapping_sub(idx as u64);
        let n = cont_ptes(l) as usize;
        let mut i = 0;
        while i < n {
            let pte = read(i)?;
            if !is_consistent(l, pte, pfn, orig_prot) {
                return None;
            }
            if pte_dirty(pte) {
                orig_pte = pte_mkdirty(orig_pte);
                while i < n {
                    let pte = read(i)?;
                    if !is_consistent(l, pte, pfn, orig_prot) {
                        return None;
                    }
                    if pte_young(pte) {
                        orig_pte = pte_mkyoung(orig_pte);
                        break;
                    }
                    i += 1;
                    pfn = pfn.wrapping_add(1);
                }
                break;
            }
            if pte_young(pte) {
                orig_pte = pte_mkyoung(orig_pte);
                i += 1;
                pfn = pfn.wrapping_add(1);
                while i < n {
                    let pte = read(i)?;
                    if !is_consistent(l, pte, pfn, orig_prot) {
                        return None;
                    }
                    if pte_dirty(pte) {
                        orig_pte = pte_mkdirty(orig_pte);
                        break;
                    }
                    i += 1;
                    pfn = pfn.wrapping_add(1);
                }
                break;
            }
            i += 1;
            pfn = pfn.wrapping_add(1);
        }
        Some(orig_pte)
    }

    /// 6.12.117's `contpte_ptep_get_lockless()`, which checks every entry
    /// of the block: the mutant a 7.3 port must not be.
    pub fn ptep_get_lockless_6_12(l: &Layout, orig: u64, idx: usize, block: &[u64]) -> Option<u64> {
        let mut orig_pte = orig;
        if !pte_valid_cont(orig_pte) {
            return Some(orig_pte);
        }
        let orig_prot = pte_pgprot(l, pte_mkold(pte_mkclean(orig_pte)));
        let mut pfn = pte_pfn(l, orig_pte).wrapping_sub(idx as u64);
        for &pte in block {
            if !is_consistent(l, pte, pfn, orig_prot) {
                return None;
            }
            if pte_dirty(pte) {
                orig_pte = pte_mkdirty(orig_pte);
            }
            if pte_young(pte) {
                orig_pte = pte_mkyoung(orig_pte);
            }
            pfn = pfn.wrapping_add(1);
        }
        Some(orig_pte)
    }

    /// `contpte_set_ptes()`: the `__set_ptes(addr, pte, nr)` calls it makes.
    pub fn set_ptes(
        l: &Layout,
        mm_is_user: bool,
        mut addr: u64,
        pte: u64,
        nr: u32,
    ) -> Vec<(u64, u64, u32)> {
        let mut calls = Vec::new();
        if !mm_is_user || !pte_valid(pte) {
            calls.push((addr, pte, nr));
            return calls;
        }
        let end = addr.wrapping_add(nr.wrapping_shl(page_shift(l)) as u64);
        let mut pfn = pte_pfn(l, pte);
        let prot = pte_pgprot(l, pte);
        let cont_mask = !(cont_pte_size(l) - 1);
        loop {
            // pte_cont_addr_end()
            let b = addr.wrapping_add(cont_pte_size(l)) & cont_mask;
            let next = if b.wrapping_sub(1) < end.wrapping_sub(1) {
                b
            } else {
                end
            };
            let n = (next.wrapping_sub(addr) >> page_shift(l)) as u32;
            let mut pte = pfn_pte(l, pfn, prot);
            if ((addr | next | pfn.wrapping_shl(page_shift(l))) & !cont_mask) == 0 {
                pte = pte_mkcont(pte);
            } else {
                pte = pte_mknoncont(pte);
            }
            calls.push((addr, pte, n));
            addr = next;
            pfn = pfn.wrapping_add(n as u64);
            if addr == end {
                return calls;
            }
        }
    }

    /// `contpte_try_unfold_partial()`: (first end checked, last end
    /// checked) for a table whose entries at `idx` are as given.
    pub fn unfold_partial(l: &Layout, idx: u64, nr: u32) -> (bool, bool) {
        let n = cont_ptes(l);
        let first = idx != align_down(idx, n) || (nr as u64) < n;
        let end = idx.wrapping_add(nr as u64);
        (first, end != align_down(end, n))
    }

    /// `contpte_align_addr_ptep()` as `contpte_clear_young_dirty_ptes()`
    /// calls it: (start, ptep index, nr) it passes to
    /// `__clear_young_dirty_ptes()`.
    pub fn clear_young_dirty(
        l: &Layout,
        addr: u64,
        idx: u64,
        nr: u32,
        first_cont: bool,
        last_cont: bool,
    ) -> (u64, u64, u32) {
        let ps = 1u64 << page_shift(l);
        let mut start = addr;
        let mut end = start.wrapping_add((nr as u64).wrapping_mul(ps));
        let mut ptep = idx;
        if last_cont {
            let a = cont_pte_size(l);
            end = end.wrapping_add(a - 1) & !(a - 1);
        }
        if first_cont {
            start = align_down(start, cont_pte_size(l));
            ptep = align_down(ptep, cont_ptes(l));
        }
        (start, ptep, (end.wrapping_sub(start) / ps) as u32)
    }

    /// `contpte_ptep_set_access_flags()`: 0 = returns 0, 1 = the whole
    /// block in place, 2 = unfold and update the target.
    pub fn set_access_flags(block: &[u64], target: u64, entry: u64) -> u32 {
        let cmp_mask = PTE_RDONLY | PTE_AF | PTE_WRITE | PTE_DIRTY;
        let entry_cmp = entry & cmp_mask;
        if block.iter().all(|&p| p & cmp_mask == entry_cmp) {
            return 0;
        }
        let orig_pte = pte_mknoncont(target);
        if pte_write(orig_pte) == pte_write(entry) {
            1
        } else {
            2
        }
    }
}

/// The layouts 7.3 can build, the three granules first.
fn layouts() -> Vec<Layout> {
    let mut v: Vec<Layout> = [12, 14, 16]
        .iter()
        .map(|&s| Layout::for_page_shift(s).unwrap())
        .collect();
    v.push(Layout {
        pa: PaLayout::Pa52K64,
        ..Layout::for_page_shift(16).unwrap()
    });
    for ds in [false, true] {
        for s in [12, 14] {
            v.push(Layout {
                pa: PaLayout::Lpa2 { ds },
                ..Layout::for_page_shift(s).unwrap()
            });
        }
    }
    v
}

const L4K: Layout = match Layout::for_page_shift(12) {
    Some(l) => l,
    None => panic!(),
};

/// A writable, clean user PTE (PAGE_SHARED) of `pfn` on 4K.
fn rw(pfn: u64) -> Pte {
    L4K.pfn_pte(
        pfn,
        TYPE_PAGE | AF | SHARED | USER | RDONLY | NG | PXN | UXN | WRITE,
    )
}

/// A uniform 4K block of `rw` entries from `pfn`.
fn rw_block(pfn: u64) -> Vec<u64> {
    (0..16).map(|i| rw(pfn + i).0).collect()
}

/// Every decision on one case, Rust against the transcribed C.
fn check_case(l: &Layout, c: &Case, block: &[u64]) {
    let n = l.n();
    let last = Pte(block[n - 1]);
    let fold_addr = l.block_start(c.addr) + ((n as u64 - 1) << l.page_shift);
    for (addr, pte) in [(fold_addr, last), (c.addr, c.pte)] {
        let rust = l.fold_hint(addr, pte)
            && l.try_fold(c.mm_is_user, addr, pte, c.page_idx, c.folio_nr, block)
                == Some(pte.mkcont());
        let want = c73::try_fold(l, c.mm_is_user, addr, pte.0, c.page_idx, c.folio_nr, block);
        assert_eq!(rust, want, "fold {l:?} {c:?} {block:x?}");
    }
    for template in [c.pte.mkcont(), c.pte.mknoncont()] {
        assert_eq!(
            l.convert(template, block).0,
            c73::convert(l, template.0, block)
        );
    }
    // The gathers: the same answer from the same entries (a prefix of
    // the block; 7.3 stops at the first point where it has seen a dirty
    // and a young entry).
    let (want, c_reads) = c73::ptep_get_reads(c.pte.0, block);
    let reads = Cell::new(0);
    let got = gather(c.pte, block.iter().inspect(|_| reads.set(reads.get() + 1)));
    assert_eq!(got.0, want);
    assert_eq!(reads.get(), c_reads.last().map_or(0, |&i| i + 1));
    let (want, c_reads) = c73::ptep_get_lockless_reads(l, c.pte.0, c.idx, block);
    reads.set(0);
    let got = l.gather_lockless(
        c.pte,
        c.idx,
        block.iter().inspect(|_| reads.set(reads.get() + 1)),
    );
    assert_eq!(got.map(|p| p.0), want, "lockless {l:?} {c:?} {block:x?}");
    assert_eq!(
        reads.get(),
        c_reads,
        "lockless reads {l:?} {c:?} {block:x?}"
    );
    let plan = match access_flags_plan(block, c.pte, c.entry) {
        AccessPlan::NoOp => 0,
        AccessPlan::WholeBlock => 1,
        AccessPlan::UnfoldTarget => 2,
    };
    assert_eq!(plan, c73::set_access_flags(block, c.pte.0, c.entry.0));
}

#[test]
fn every_layout_7_3_can_build_checks_and_no_other() {
    for l in layouts() {
        assert!(l.check(), "{l:?}");
        assert!(l.n() <= MAX_CONT_PTES);
    }
    assert_eq!(
        [12, 14, 16].map(|s| Layout::for_page_shift(s).unwrap().n()),
        [16, 128, 32]
    );
    assert!(Layout::for_page_shift(13).is_none());
    let bad = [
        Layout {
            page_shift: 12,
            cont_shift: 5,
            pa: PaLayout::Pa48,
        },
        Layout {
            pa: PaLayout::Pa52K64,
            ..L4K
        },
        Layout {
            pa: PaLayout::Lpa2 { ds: true },
            ..Layout::for_page_shift(16).unwrap()
        },
    ];
    for l in bad {
        assert!(!l.check(), "{l:?}");
    }
}

#[test]
fn accessors_match_arm64_c_on_every_combination_of_their_bits() {
    let flags = [VALID, RDONLY, AF, WRITE, CONT, DIRTY, SPECIAL];
    let mut g = BlockGen::new(7);
    for combo in 0u32..(1 << flags.len()) {
        for _ in 0..64 {
            let mut p = g.bits() & !flags.iter().fold(0, |a, f| a | f);
            for (i, f) in flags.iter().enumerate() {
                if combo & (1 << i) != 0 {
                    p |= f;
                }
            }
            let q = Pte(p);
            assert_eq!(q.dirty(), c73::pte_dirty(p));
            assert_eq!(q.young(), c73::pte_young(p));
            assert_eq!(q.valid_cont(), c73::pte_valid_cont(p));
            assert_eq!(q.mkclean().0, c73::pte_mkclean(p));
            assert_eq!(q.mkdirty().0, c73::pte_mkdirty(p));
            assert_eq!(q.mkold().0, c73::pte_mkold(p));
            assert_eq!(q.mkcont().0, c73::pte_mkcont(p));
            assert_eq!(q.mknoncont().0, c73::pte_mknoncont(p));
            for l in layouts() {
                assert_eq!(l.pfn(q), c73::pte_pfn(&l, p));
                assert_eq!(l.pgprot(q), c73::pte_pgprot(&l, p));
                assert_eq!(l.advance_pfn(q, 1).0, c73::pte_advance_pfn(&l, p, 1));
            }
        }
    }
}

#[test]
fn arm64_dirty_means_sw_dirty_or_writable_and_not_rdonly() {
    let clean = rw(5);
    assert!(!clean.dirty() && clean.rdonly() && clean.write());
    let hw = Pte(clean.0 & !RDONLY);
    assert!(hw.dirty() && hw.hw_dirty() && !hw.sw_dirty());
    // mkclean makes it read-only again; mkdirty of a writable entry clears
    // RDONLY, of a read-only one keeps it.
    assert_eq!(hw.mkclean(), clean);
    assert!(!clean.mkdirty().rdonly());
    let ro = clean.wrprotect();
    assert!(ro.mkdirty().rdonly() && ro.mkdirty().sw_dirty());
    // wrprotect moves hardware-dirty to software dirty, not clean.
    assert!(hw.wrprotect().sw_dirty() && !clean.wrprotect().sw_dirty());
    // 7.3's pte_mkcont() sets PTE_CONT only (6.12's also PTE_TYPE_PAGE).
    assert_eq!(Pte(0).mkcont().0, CONT);
    assert_eq!(clean.mkcont().0, clean.0 | CONT);
}

#[test]
fn pfn_round_trips_at_the_edges_of_every_address_layout() {
    let k64 = Layout {
        pa: PaLayout::Pa52K64,
        ..Layout::for_page_shift(16).unwrap()
    };
    // PA bit 48 (pfn 2^32 with 64K pages) lands in PTE bit 12.
    // (PTE_ADDR_LOW reaches bit 49 on 64K, so PA bit 48 also stays
    // in bit 48: bit-exact with the C, harmless as decoding ORs them.)
    let p = k64.pfn_pte(1 << 32, 0);
    assert_eq!(p.0, (1 << 48) | (1 << 12));
    assert_eq!(k64.pfn(p), 1 << 32);
    assert_eq!(
        k64.pfn(k64.advance_pfn(k64.pfn_pte((1 << 32) - 1, 0), 1)),
        1 << 32
    );
    // LPA2: PA bit 50 (pfn 2^38 with 4K) lands in PTE bit 8; with DS clear
    // bits 8-9 are shareability and stay in the protection.
    for ds in [false, true] {
        let l = Layout {
            pa: PaLayout::Lpa2 { ds },
            ..L4K
        };
        let p = l.pfn_pte(1 << 38, 0);
        assert_eq!(p.0, 1 << 8);
        assert_eq!(l.pfn(p), if ds { 1 << 38 } else { 0 });
        assert_eq!(l.pgprot(p), if ds { 0 } else { 1 << 8 });
    }
    // 48-bit PAs do not mask an oversized PFN on the way in.
    assert_eq!(L4K.pfn_pte(1 << 38, 0).0, 1 << 50);
    assert_eq!(L4K.pfn(Pte(1 << 50)), 0);
}

#[test]
fn a_uniform_block_of_one_folio_folds_with_gathered_access_and_dirty() {
    let mut block = rw_block(0x1000);
    block[3] &= !RDONLY; // hardware-dirty
    block[9] &= !AF; // old
    let addr = 0x7f00_0000_f000;
    let pte = Pte(block[15]);
    assert!(L4K.fold_hint(addr, pte));
    let folded = L4K.try_fold(true, addr, pte, 15, 16, &block).unwrap();
    assert_eq!(folded, pte.mkcont());
    let first = L4K.convert(folded, &block);
    assert_eq!(first, rw(0x1000).mkcont().mkdirty().mkyoung());
    // Inside a larger folio too.
    assert!(L4K.try_fold(true, addr, pte, 31, 64, &block).is_some());
}

#[test]
fn a_block_is_never_folded_for_each_reason_7_3_refuses() {
    let block = rw_block(0x1000);
    let addr = 0x7f00_0000_f000;
    let pte = Pte(block[15]);
    // Misaligned address or PFN: the cheap test C keeps says no.
    assert!(!L4K.fold_hint(addr - 0x1000, pte));
    assert!(!L4K.fold_hint(addr, rw(0x1000 + 14)));
    // Special and devmap (6.12's pte_mkdevmap() sets PTE_SPECIAL too).
    assert!(!L4K.fold_hint(addr, Pte(pte.0 | SPECIAL)));
    assert!(!L4K.fold_hint(addr, Pte(pte.0 | SPECIAL | (1 << 57))));
    // Invalid (PROT_NONE, NUMA hinting) or already folded.
    assert!(!L4K.fold_hint(addr, Pte(pte.0 & !VALID)));
    assert!(!L4K.fold_hint(addr, pte.mkcont()));
    // A kernel mm.
    assert!(L4K.try_fold(false, addr, pte, 15, 16, &block).is_none());
    // A foreign folio: the folio does not cover the block.
    assert!(L4K.try_fold(true, addr, pte, 7, 8, &block).is_none());
    assert!(L4K.try_fold(true, addr, pte, 15, 20, &block).is_some());
    assert!(L4K.try_fold(true, addr, pte, 14, 16, &block).is_none());
    assert!(L4K.try_fold(true, addr, pte, 16, 32, &block).is_some());
    // A folio starting below address 0 wraps and does not cover, whatever
    // its PFNs say.
    assert!(L4K.try_fold(true, 0xf000, pte, 31, 32, &block).is_none());
    // A hole, a PFN off by one, differing permissions, an entry folded
    // already, an extra attribute, the wrong block length.
    for perturb in [
        |b: &mut Vec<u64>| b[4] = 0,
        |b: &mut Vec<u64>| b[4] = L4K.advance_pfn(Pte(b[4]), 1).0,
        |b: &mut Vec<u64>| b[4] &= !WRITE,
        |b: &mut Vec<u64>| b[4] |= CONT,
        |b: &mut Vec<u64>| b[4] |= 1 << 58,
        |b: &mut Vec<u64>| b[4] ^= PXN,
        |b: &mut Vec<u64>| {
            b.pop();
        },
    ] {
        let mut b = block.clone();
        perturb(&mut b);
        assert!(
            L4K.try_fold(true, addr, pte, 15, 16, &b).is_none(),
            "{b:x?}"
        );
    }
}

#[test]
fn gather_ors_access_and_dirty_and_keeps_the_target_pfn_and_cont() {
    let mut block: Vec<u64> = rw_block(0x1000)
        .iter()
        .map(|&p| Pte(p).mkcont().mkold().0)
        .collect();
    let target = Pte(block[2]);
    assert_eq!(gather(target, &block), target);
    block[7] &= !RDONLY;
    block[11] |= AF;
    let g = gather(target, &block);
    assert!(g.dirty() && g.sw_dirty() && !g.rdonly() && g.young() && g.cont());
    assert_eq!(L4K.pfn(g), 0x1002);
}

#[test]
fn a_lockless_reader_retries_on_any_mixed_view_of_what_it_reads() {
    let block: Vec<u64> = rw_block(0x1000)
        .iter()
        .map(|&p| Pte(p).mkcont().0)
        .collect();
    let target = Pte(block[5]);
    assert_eq!(
        L4K.gather_lockless(target, 5, &block),
        Some(gather(target, &block))
    );
    // A non-contiguous target is its own answer, whatever the block holds.
    let lone = target.mknoncont();
    assert_eq!(L4K.gather_lockless(lone, 5, [0u64; 0]), Some(lone));
    // A fold or unfold in progress: an entry cleared by the break, an
    // entry not yet (or no longer) contiguous, a PFN gap, other
    // permissions, the target read at another place.
    for (i, v) in [
        (9, 0),
        (9, Pte(block[9]).mknoncont().0),
        (9, L4K.advance_pfn(Pte(block[9]), 1).0),
        (9, Pte(block[9]).wrprotect().0),
        (5, L4K.advance_pfn(target, 16).0),
    ] {
        let mut b = block.clone();
        b[i] = v;
        assert_eq!(
            L4K.gather_lockless(target, 5, &b),
            None,
            "entry {i} = {v:x}"
        );
    }
    assert_eq!(L4K.gather_lockless(target, 4, &block), None);
    // Access and dirty differences are not a mixed view.
    let mut b = block.clone();
    b[9] = Pte(b[9]).mkold().mkdirty().0;
    assert!(L4K.gather_lockless(target, 5, &b).unwrap().dirty());
}

#[test]
fn a_lockless_reader_stops_checking_once_it_has_seen_dirty_and_young() {
    let block: Vec<u64> = rw_block(0x1000)
        .iter()
        .map(|&p| Pte(p).mkcont().mkold().0)
        .collect();
    let target = Pte(block[5]);
    // Entry 3 dirty and young: 7.3 reads entries 0..=3 and returns,
    // whatever the rest of the block holds (6.12 checked all 16 and
    // retried on the entry cleared by a break at 9).
    let mut b = block.clone();
    b[3] = Pte(b[3]).mkdirty().mkyoung().0;
    b[9] = 0;
    let got = L4K.gather_lockless(target, 5, &b).expect("7.3 returns");
    assert!(got.dirty() && got.young());
    assert_eq!(c73::ptep_get_lockless(&L4K, target.0, 5, &b), Some(got.0));
    assert_eq!(c73::ptep_get_lockless_6_12(&L4K, target.0, 5, &b), None);
    // Dirty at 2 and young at 7: the cleared entry at 5 lies inside what
    // is read, so the view is mixed.
    let mut b = block.clone();
    b[2] = Pte(b[2]).mkdirty().0;
    b[7] = Pte(b[7]).mkyoung().0;
    assert!(L4K.gather_lockless(target, 5, &b).is_some());
    b[5] = 0;
    assert_eq!(L4K.gather_lockless(target, 5, &b), None);
    // Young at 2, dirty at 4: stops at 4, past the target's own index.
    let mut b = block.clone();
    b[2] = Pte(b[2]).mkyoung().0;
    b[4] = Pte(b[4]).mkdirty().0;
    b[6] = Pte(b[6]).wrprotect().0;
    assert!(L4K.gather_lockless(target, 5, &b).is_some());
    // Neither bit anywhere: every entry is read and checked; no entry past
    // the block's 16th is read.
    let reads = Cell::new(0);
    let long: Vec<u64> = block.iter().chain(block.iter()).copied().collect();
    let got = L4K.gather_lockless(
        target,
        5,
        long.iter().inspect(|_| reads.set(reads.get() + 1)),
    );
    assert_eq!((got, reads.get()), (Some(target), 16));
    assert_eq!(L4K.gather_lockless(target, 5, &block[..15]), None);
}

#[test]
fn gather_reads_up_to_the_first_point_with_dirty_and_young_seen() {
    let block: Vec<u64> = rw_block(0x1000)
        .iter()
        .map(|&p| Pte(p).mkcont().mkold().0)
        .collect();
    let target = Pte(block[0]);
    for (dirty, young, stop) in [
        (Some(3), Some(3), 4),
        (Some(3), Some(9), 10),
        (Some(9), Some(3), 10),
        (Some(3), None, 16),
        (None, Some(15), 16),
        (None, None, 16),
    ] {
        let mut b = block.clone();
        if let Some(i) = dirty {
            b[i] = Pte(b[i]).mkdirty().0;
        }
        if let Some(i) = young {
            b[i] = Pte(b[i]).mkyoung().0;
        }
        let reads = Cell::new(0);
        let got = gather(target, b.iter().inspect(|_| reads.set(reads.get() + 1)));
        assert_eq!(got.dirty(), dirty.is_some());
        assert_eq!(got.young(), young.is_some());
        assert_eq!(reads.get(), stop, "dirty {dirty:?} young {young:?}");
        let (want, c_reads) = c73::ptep_get_reads(target.0, &b);
        assert_eq!(got.0, want);
        assert_eq!(c_reads.last().map_or(0, |&i| i + 1), stop);
    }
}

#[test]
fn set_ptes_marks_only_whole_aligned_blocks_contiguous_exhaustively() {
    for l in layouts() {
        let n = l.n() as u64;
        let ps = l.page_size();
        let prot = TYPE_PAGE | AF | USER | NG | WRITE;
        for va_off in 0..n {
            for pfn_off in [0, 1, n / 2, n - 1] {
                for nr in 2..=(3 * n as u32 + 1) {
                    let addr = 0x40_0000_0000 + va_off * ps;
                    let pte = l.pfn_pte(n * 1000 + pfn_off, prot);
                    let calls = c73::set_ptes(&l, true, addr, pte.0, nr);
                    let plan: Vec<(u64, u64, u32)> = {
                        let mut a = addr;
                        l.set_ptes_plan(addr, pte, nr)
                            .map(|c| {
                                let call = (a, c.pte.0, c.nr);
                                a = c.next;
                                call
                            })
                            .collect()
                    };
                    assert_eq!(plan, calls, "{l:?} va {va_off} pfn {pfn_off} nr {nr}");
                    // The chunks cover the range, and CONT means a block.
                    assert_eq!(plan.iter().map(|c| c.2).sum::<u32>(), nr);
                    for &(a, p, k) in &plan {
                        let whole = a % (n * ps) == 0 && k as u64 == n;
                        let pfn = n * 1000 + pfn_off + (a - addr) / ps;
                        assert_eq!(l.pfn(Pte(p)), pfn);
                        assert_eq!(Pte(p).cont(), whole && pfn.is_multiple_of(n));
                    }
                }
            }
        }
        // A kernel mm or an invalid entry: one call, as given.
        let none = l.pfn_pte(0, 0x0060_0000_0000_0f82);
        assert!(!l.set_ptes_splits(true, none));
        assert!(!l.set_ptes_splits(false, l.pfn_pte(0, prot)));
        assert_eq!(c73::set_ptes(&l, true, 0, none.0, 40).len(), 1);
    }
}

#[test]
fn set_ptes_runs_are_head_whole_blocks_and_tail() {
    let l = L4K;
    let base = 0x40_0000_0000;
    // Aligned start, aligned PFNs: whole blocks, contiguous, then a tail.
    let r = l.set_ptes_runs(base, 40, 16 * 1000);
    assert_eq!((r.head, r.blocks, r.tail, r.cont), (0, 2, 8, true));
    // Three pages into a block: 13 to its end first.
    let r = l.set_ptes_runs(base + 3 * 0x1000, 40, 16 * 1000 + 3);
    assert_eq!((r.head, r.blocks, r.tail, r.cont), (13, 1, 11, true));
    // Within one block: all head, nothing contiguous.
    let r = l.set_ptes_runs(base + 0x1000, 4, 16 * 1000 + 1);
    assert_eq!((r.head, r.blocks, r.tail), (4, 0, 0));
    // PFNs off by one against the addresses: whole blocks, not contiguous.
    let r = l.set_ptes_runs(base, 512, 16 * 1000 + 1);
    assert_eq!((r.head, r.blocks, r.tail, r.cont), (0, 32, 0, false));
    // A PMD's worth on every granule: whole blocks only.
    for l in layouts() {
        let r = l.set_ptes_runs(0, 512, 0);
        assert_eq!(r.head + r.tail, 512 % l.n() as u32, "{l:?}");
        assert_eq!(r.blocks as usize, 512 / l.n(), "{l:?}");
    }
}

#[test]
fn unfold_partial_looks_only_at_partly_covered_ends_exhaustively() {
    for l in layouts() {
        let n = l.n() as u64;
        for idx in 0..2 * n {
            for nr in 1..=(3 * n as u32) {
                let PartialEnds { first, last } = l.partial_ends(idx, nr);
                assert_eq!((first, last), c73::unfold_partial(&l, idx, nr));
            }
        }
    }
    assert_eq!(
        L4K.partial_ends(0, 16),
        PartialEnds {
            first: false,
            last: false
        }
    );
    assert_eq!(
        L4K.partial_ends(0, 8),
        PartialEnds {
            first: true,
            last: true
        }
    );
    assert_eq!(
        L4K.partial_ends(4, 16),
        PartialEnds {
            first: true,
            last: true
        }
    );
    assert_eq!(
        L4K.partial_ends(0, 32),
        PartialEnds {
            first: false,
            last: false
        }
    );
}

#[test]
fn clear_young_dirty_widens_to_whole_blocks_exhaustively() {
    for l in layouts() {
        let n = l.n() as u64;
        let ps = l.page_size();
        for off in 0..n {
            for nr in 1..=(2 * n as u32) {
                for (fc, lc) in [(false, false), (true, false), (false, true), (true, true)] {
                    let addr = 0x40_0000_0000 + off * ps;
                    let idx = 3 * n + off;
                    let Span { start, back, nr: k } = l.align_addr_ptep(addr, idx, nr, fc, lc);
                    assert_eq!(
                        (start, idx - back, k),
                        c73::clear_young_dirty(&l, addr, idx, nr, fc, lc)
                    );
                }
            }
        }
    }
    // One contiguous entry in the middle of a block: the whole block.
    let s = L4K.align_addr_ptep(0x5000, 5, 1, true, true);
    assert_eq!((s.start, s.back, s.nr), (0, 5, 16));
}

#[test]
fn access_flags_plan_matches_7_3_on_every_flag_combination() {
    let m = [RDONLY, AF, WRITE, DIRTY];
    let with = |base: u64, f: u32| {
        m.iter()
            .enumerate()
            .fold(base & !(RDONLY | AF | WRITE | DIRTY), |a, (i, b)| {
                if f & (1 << i) != 0 {
                    a | b
                } else {
                    a
                }
            })
    };
    for l in layouts() {
        let n = l.n();
        let base: Vec<u64> = (0..n as u64)
            .map(|i| l.pfn_pte(0x8000 + i, TYPE_PAGE | USER | CONT).0)
            .collect();
        for e in 0..16 {
            for t in 0..16 {
                for s in 0..16 {
                    for target in [0, n - 1] {
                        let block: Vec<u64> = base
                            .iter()
                            .enumerate()
                            .map(|(i, &p)| with(p, if i == target { t } else { s }))
                            .collect();
                        let entry = Pte(with(base[target], e));
                        let rust = match access_flags_plan(&block, Pte(block[target]), entry) {
                            AccessPlan::NoOp => 0,
                            AccessPlan::WholeBlock => 1,
                            AccessPlan::UnfoldTarget => 2,
                        };
                        assert_eq!(rust, c73::set_access_flags(&block, block[target], entry.0));
                    }
                }
            }
        }
    }
}

#[test]
fn a_dirty_sibling_does_not_hide_a_read_only_target() {
    // The v7.0-rc3 fix (in 7.3, and in 6.12.y): the gathered view says
    // "dirty and young", but the target itself is still read-only: not a
    // no-op.
    let mut block: Vec<u64> = rw_block(0x1000)
        .iter()
        .map(|&p| Pte(p).mkcont().0)
        .collect();
    block[3] &= !RDONLY;
    let entry = rw(0x1002).mkdirty().mkyoung();
    assert!(!access_flags_match(&block, entry));
    assert_eq!(
        access_flags_plan(&block, Pte(block[2]), entry),
        AccessPlan::WholeBlock
    );
    // Every entry already there: a no-op.
    let all: Vec<u64> = block.iter().map(|&p| Pte(p).mkdirty().0).collect();
    assert_eq!(
        access_flags_plan(&all, Pte(all[2]), entry),
        AccessPlan::NoOp
    );
    // A read-only block taking a write fault: unfold.
    let ro: Vec<u64> = block.iter().map(|&p| Pte(p).wrprotect().0).collect();
    assert_eq!(
        access_flags_plan(&ro, Pte(ro[2]), entry),
        AccessPlan::UnfoldTarget
    );
}

/// The digest of the first generated blocks, per granule (4K, 16K, 64K);
/// the KUnit suite asserts the same numbers.
const DIGESTS: [u64; 3] = [
    0x7720_d5e2_8774_cb4e,
    0x4197_841c_ab52_ec87,
    0x7773_ecf2_a13b_6f4b,
];

#[test]
fn the_vectors_are_the_ones_the_kunit_suite_runs() {
    let got: Vec<u64> = [12, 14, 16]
        .iter()
        .map(|&s| digest(&Layout::for_page_shift(s).unwrap()))
        .collect();
    assert_eq!(got, DIGESTS, "digests {got:#x?}");
}

#[test]
fn one_million_structured_blocks_per_granule_agree_with_7_3() {
    for l in layouts() {
        // The three granules as the kernel builds them get the full
        // million; the 52-bit layouts (no kernel we build) a tenth.
        let count = if l.pa == PaLayout::Pa48 {
            1_000_000
        } else {
            100_000
        };
        let mut g = BlockGen::new(0x5eed_0000 + l.page_shift as u64);
        let mut buf = [0u64; MAX_CONT_PTES];
        let block = &mut buf[..l.n()];
        let (mut folds, mut lockless_ok, mut noops) = (0u32, 0u32, 0u32);
        for _ in 0..count {
            let c = g.case(&l, block);
            check_case(&l, &c, block);
            let last = Pte(block[l.n() - 1]);
            let fa = l.block_start(c.addr) + ((l.n() as u64 - 1) << l.page_shift);
            if l.fold_hint(fa, last)
                && l.try_fold(c.mm_is_user, fa, last, c.page_idx, c.folio_nr, &*block)
                    .is_some()
            {
                folds += 1;
            }
            if c.pte.valid_cont() && l.gather_lockless(c.pte, c.idx, &*block).is_some() {
                lockless_ok += 1;
            }
            if access_flags_match(&*block, c.entry) {
                noops += 1;
            }
        }
        // The vectors reach every branch: foldable and not, consistent and
        // mixed lockless views, no-ops and updates.
        let min = count / 200;
        assert!(
            folds > min && folds < count - min,
            "{l:?}: {folds} folds of {count}"
        );
        assert!(lockless_ok > min, "{l:?}: {lockless_ok} consistent");
        assert!(noops > min / 10, "{l:?}: {noops} no-ops");
    }
}

/// Decisions with one deliberate mistake each: the vectors must tell every
/// one of them from 7.3, or the differential test could not fail.
#[test]
fn the_vectors_catch_every_mutated_decision() {
    type Mutant = fn(&Layout, &Case, &[u64]) -> bool;
    // Each returns whether the mutant disagrees with the transcribed C.
    let mutants: [(&str, Mutant); 7] = [
        (
            "lockless read that checks every entry (6.12's rule)",
            |l, c, b| {
                c73::ptep_get_lockless_6_12(l, c.pte.0, c.idx, b)
                    != c73::ptep_get_lockless(l, c.pte.0, c.idx, b)
            },
        ),
        ("gather that reads every entry (6.12's loop)", |_, c, b| {
            let (_, reads) = c73::ptep_get_reads(c.pte.0, b);
            reads.last().map_or(0, |&i| i + 1) != b.len()
        }),
        ("fold without the folio cover check", |l, c, b| {
            let last = Pte(b[l.n() - 1]);
            let fa = l.block_start(c.addr) + ((l.n() as u64 - 1) << l.page_shift);
            let m = l.fold_hint(fa, last) && c.mm_is_user && l.block_uniform(last, b);
            m != c73::try_fold(l, c.mm_is_user, fa, last.0, c.page_idx, c.folio_nr, b)
        }),
        ("fold comparing only PFNs, not attributes", |l, c, b| {
            let last = Pte(b[l.n() - 1]);
            let fa = l.block_start(c.addr) + ((l.n() as u64 - 1) << l.page_shift);
            let base = l.pfn(last) & !(l.n() as u64 - 1);
            let m = l.fold_hint(fa, last)
                && c.mm_is_user
                && l.folio_covers_block(fa, c.page_idx, c.folio_nr)
                && b.iter()
                    .enumerate()
                    .all(|(i, &p)| l.pfn(Pte(p)) == base + i as u64);
            m != c73::try_fold(l, c.mm_is_user, fa, last.0, c.page_idx, c.folio_nr, b)
        }),
        ("lockless read that ignores the attributes", |l, c, b| {
            let m = if !c.pte.valid_cont() {
                Some(c.pte)
            } else {
                let pfn = l.pfn(c.pte).wrapping_sub(c.idx as u64);
                b.iter()
                    .enumerate()
                    .all(|(i, &p)| Pte(p).valid_cont() && l.pfn(Pte(p)) == pfn + i as u64)
                    .then(|| gather(c.pte, b))
            };
            m.map(|p| p.0) != c73::ptep_get_lockless(l, c.pte.0, c.idx, b)
        }),
        ("gather that misses hardware-dirty entries", |_, c, b| {
            let m = b.iter().fold(c.pte, |a, &p| {
                let a = if Pte(p).sw_dirty() { a.mkdirty() } else { a };
                if Pte(p).young() {
                    a.mkyoung()
                } else {
                    a
                }
            });
            m.0 != c73::ptep_get(c.pte.0, b)
        }),
        (
            "access-flag no-op judged on the gathered view (before the v7.0-rc3 fix)",
            |_, c, b| {
                let g = gather(c.pte, b);
                let m = if g.0 & rust_mm_core::contpte::ACCESS_FLAGS
                    == c.entry.0 & rust_mm_core::contpte::ACCESS_FLAGS
                {
                    0
                } else if c.pte.write() == c.entry.write() {
                    1
                } else {
                    2
                };
                m != c73::set_access_flags(b, c.pte.0, c.entry.0)
            },
        ),
    ];
    for l in layouts().into_iter().take(3) {
        for (name, mutant) in mutants {
            let mut g = BlockGen::new(0x5eed_0000 + l.page_shift as u64);
            let mut buf = [0u64; MAX_CONT_PTES];
            let block = &mut buf[..l.n()];
            let caught = (0..100_000)
                .filter(|_| {
                    let c = g.case(&l, block);
                    mutant(&l, &c, block)
                })
                .count();
            assert!(caught > 0, "{l:?}: the vectors do not catch: {name}");
        }
    }
}
