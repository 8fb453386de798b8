// SPDX-License-Identifier: GPL-2.0

//! The decisions of arm64's transparent contiguous PTEs (contpte), over raw
//! 64-bit PTE values.
//!
//! arm64 can mark an aligned block of [`Layout::n`] PTEs that map physically
//! contiguous memory with identical attributes as *contiguous* (`PTE_CONT`),
//! so the TLB caches the block as one entry. Linux 7.3's
//! `arch/arm64/mm/contpte.c` folds such blocks behind the generic PTE API
//! and unfolds them when a caller changes part of one. Everything that file
//! *decides* is here: which blocks may be folded, what a block reads as,
//! which chunks of a `set_ptes()` get the bit, which ends of a range must be
//! unfolded, how far an access/dirty clear widens, and whether an
//! access-flag update is a no-op, an in-place update of the block, or needs
//! an unfold. C keeps every PTE read and write, break-before-make and all
//! TLB maintenance, and hands this module the values it read.
//!
//! Every function is bit-exact with the 7.3 C it replaces (the kernel's
//! differential KUnit suite `contpte_rust` runs both); the C each one
//! mirrors is named in its documentation. The layout of the PTE bits is
//! [`bits`]; the kernel checks it against its own constants at compile time.
//!
//! Two decisions changed from 6.12, the base of this module's first
//! release (the 6.12 series gives this file that release's content back):
//! `pte_mkcont()` sets only `PTE_CONT`, and the gathers of a block stop
//! reading once they have seen a dirty and a young entry --
//! [`gather`] for its loads only, [`Layout::gather_lockless`] also for
//! its answer (the entries after that point are not checked).

/// The bits of an arm64 PTE that the decisions read or write (7.3's
/// `pgtable-hwdef.h` and `pgtable-prot.h`, at the places 6.12 had them).
pub mod bits {
    /// `PTE_VALID`: the entry is a valid descriptor.
    pub const VALID: u64 = 1 << 0;
    /// `PTE_TYPE_PAGE`: valid, and a page (not a block) at level 3.
    pub const TYPE_PAGE: u64 = 3;
    /// `PTE_USER` (AP\[1\]): EL0 may access.
    pub const USER: u64 = 1 << 6;
    /// `PTE_RDONLY` (AP\[2\]): the bit the MMU tests for write permission.
    pub const RDONLY: u64 = 1 << 7;
    /// `PTE_SHARED` (SH\[1:0\]); PA\[51:50\] under LPA2 with TCR.DS set.
    pub const SHARED: u64 = 3 << 8;
    /// `PTE_AF`: the access flag ("young").
    pub const AF: u64 = 1 << 10;
    /// `PTE_NG`: not global.
    pub const NG: u64 = 1 << 11;
    /// `PTE_WRITE`, which is the hardware DBM bit.
    pub const WRITE: u64 = 1 << 51;
    /// `PTE_CONT`: the entry is part of a contiguous block.
    pub const CONT: u64 = 1 << 52;
    /// `PTE_PXN`: privileged execute-never.
    pub const PXN: u64 = 1 << 53;
    /// `PTE_UXN`: user execute-never.
    pub const UXN: u64 = 1 << 54;
    /// `PTE_DIRTY`: the software dirty bit.
    pub const DIRTY: u64 = 1 << 55;
    /// `PTE_SPECIAL`: no struct page behind the entry (never folded).
    pub const SPECIAL: u64 = 1 << 56;
}

use bits::*;
use core::borrow::Borrow;

/// One PTE value, with the accessors of 7.3's arm64 `pgtable.h`.
///
/// Each method is the C macro or inline of the same name, bit for bit; in
/// particular "dirty" is the software DIRTY bit *or* hardware-dirty
/// (writable and not read-only), and `mkclean` makes the entry read-only.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[repr(transparent)]
pub struct Pte(pub u64);

impl Pte {
    /// `pte_valid()`.
    #[inline]
    pub const fn valid(self) -> bool {
        self.0 & VALID != 0
    }
    /// `pte_cont()`.
    #[inline]
    pub const fn cont(self) -> bool {
        self.0 & CONT != 0
    }
    /// `pte_valid_cont()`.
    #[inline]
    pub const fn valid_cont(self) -> bool {
        self.valid() && self.cont()
    }
    /// `pte_young()`.
    #[inline]
    pub const fn young(self) -> bool {
        self.0 & AF != 0
    }
    /// `pte_write()`: the DBM bit.
    #[inline]
    pub const fn write(self) -> bool {
        self.0 & WRITE != 0
    }
    /// `pte_rdonly()`.
    #[inline]
    pub const fn rdonly(self) -> bool {
        self.0 & RDONLY != 0
    }
    /// `pte_special()`.
    #[inline]
    pub const fn special(self) -> bool {
        self.0 & SPECIAL != 0
    }
    /// `pte_sw_dirty()`.
    #[inline]
    pub const fn sw_dirty(self) -> bool {
        self.0 & DIRTY != 0
    }
    /// `pte_hw_dirty()`: writable and not read-only.
    #[inline]
    pub const fn hw_dirty(self) -> bool {
        self.write() && !self.rdonly()
    }
    /// `pte_dirty()`.
    #[inline]
    pub const fn dirty(self) -> bool {
        self.sw_dirty() || self.hw_dirty()
    }
    /// `pte_mkclean()`: clear software dirty, make read-only.
    #[inline]
    pub const fn mkclean(self) -> Pte {
        Pte((self.0 & !DIRTY) | RDONLY)
    }
    /// `pte_mkdirty()`: set software dirty; a writable entry becomes
    /// hardware-dirty too.
    #[inline]
    pub const fn mkdirty(self) -> Pte {
        let p = self.0 | DIRTY;
        Pte(if self.write() { p & !RDONLY } else { p })
    }
    /// `pte_mkold()`.
    #[inline]
    pub const fn mkold(self) -> Pte {
        Pte(self.0 & !AF)
    }
    /// `pte_mkyoung()`.
    #[inline]
    pub const fn mkyoung(self) -> Pte {
        Pte(self.0 | AF)
    }
    /// `pte_wrprotect()`: hardware-dirty moves to software dirty first.
    #[inline]
    pub const fn wrprotect(self) -> Pte {
        let p = if self.hw_dirty() {
            self.0 | DIRTY
        } else {
            self.0
        };
        Pte((p & !WRITE) | RDONLY)
    }
    /// `pte_mkcont()`: sets `PTE_CONT` (6.12 also set `PTE_TYPE_PAGE`;
    /// every entry a decision marks is a valid page, which has it).
    #[inline]
    pub const fn mkcont(self) -> Pte {
        Pte(self.0 | CONT)
    }
    /// `pte_mknoncont()`.
    #[inline]
    pub const fn mknoncont(self) -> Pte {
        Pte(self.0 & !CONT)
    }
    /// `pte_mkold(pte_mkclean(pte))`: the value with access and dirty state
    /// removed, which is what must agree across a block.
    #[inline]
    pub const fn without_access_dirty(self) -> Pte {
        self.mkclean().mkold()
    }
    /// This value with the access and dirty state of `other` added, as
    /// contpte.c gathers a block: `mkdirty` if `other` is dirty, `mkyoung`
    /// if it is young.
    #[inline]
    pub const fn gather(self, other: Pte) -> Pte {
        let p = if other.dirty() { self.mkdirty() } else { self };
        if other.young() {
            p.mkyoung()
        } else {
            p
        }
    }
}

/// Where the output address sits in a PTE (`__pte_to_phys()` and
/// `__phys_to_pte_val()`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PaLayout {
    /// 48-bit physical addresses: bits `PAGE_SHIFT..=49`, unmasked on the
    /// way in (`CONFIG_ARM64_PA_BITS_52` off).
    Pa48,
    /// 64K pages with 52-bit PAs: PA\[51:48\] in PTE bits 12..=15.
    Pa52K64,
    /// LPA2 (4K/16K pages with 52-bit PAs): PA\[51:50\] in bits 8..=9; with
    /// `ds` false (TCR.DS clear at run time) bits 8..=9 are the
    /// shareability field and are masked out of the address.
    Lpa2 {
        /// TCR.DS, `lpa2_is_enabled()`.
        ds: bool,
    },
}

/// The granule and address layout the decisions run under.
///
/// # Invariants
///
/// A `Layout` the kernel uses passes [`Layout::check`]: a page shift arm64
/// supports, its contpte block size of `CONFIG_ARM64_CONT_PTE_SHIFT`
/// default, and a [`PaLayout`] that granule can have.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Layout {
    /// `PAGE_SHIFT`: 12, 14 or 16.
    pub page_shift: u32,
    /// `CONT_PTE_SHIFT - PAGE_SHIFT`: log2 of the entries in a block.
    pub cont_shift: u32,
    /// Where the output address sits.
    pub pa: PaLayout,
}

/// The most entries a contpte block has on any granule (16K: 128).
pub const MAX_CONT_PTES: usize = 128;

impl Layout {
    /// The layout of a granule with 48-bit PAs, `None` for a page shift
    /// arm64 does not have.
    #[inline]
    pub const fn for_page_shift(page_shift: u32) -> Option<Layout> {
        let cont_shift = match page_shift {
            12 => 4,
            14 => 7,
            16 => 5,
            _ => return None,
        };
        Some(Layout {
            page_shift,
            cont_shift,
            pa: PaLayout::Pa48,
        })
    }

    /// Whether this is a layout 7.3 can build: page shift 12/14/16 with
    /// block sizes 16/128/32 entries, 52-bit PAs on 64K only without
    /// LPA2 and on 4K/16K only with it.
    #[inline]
    pub const fn check(&self) -> bool {
        let cont_ok = match Layout::for_page_shift(self.page_shift) {
            Some(l) => l.cont_shift == self.cont_shift,
            None => false,
        };
        let pa_ok = match self.pa {
            PaLayout::Pa48 => true,
            PaLayout::Pa52K64 => self.page_shift == 16,
            PaLayout::Lpa2 { .. } => self.page_shift != 16,
        };
        cont_ok && pa_ok && self.n() <= MAX_CONT_PTES
    }

    /// `CONT_PTES`: entries in a block.
    #[inline]
    pub const fn n(&self) -> usize {
        1 << self.cont_shift
    }

    /// `PAGE_SIZE`.
    #[inline]
    pub const fn page_size(&self) -> u64 {
        1 << self.page_shift
    }

    /// `CONT_PTE_SIZE`: bytes of address space a block maps.
    #[inline]
    pub const fn cont_size(&self) -> u64 {
        1 << (self.page_shift + self.cont_shift)
    }

    // The address conversions from here to advance_pfn() are
    // #[inline(always)]: under CONFIG_RUST_MM_LTO the exports are inlined
    // into contpte.c's C functions, and a Rust function LLVM left out of
    // line in the crate cannot follow them there (Rust's +strict-align is
    // not among C's target features), so each would stay a call per PTE
    // (scripts/test/lto-check.py names such calls).

    /// `PTE_ADDR_LOW`: bits `PAGE_SHIFT..=49`.
    #[inline(always)]
    const fn addr_low(&self) -> u64 {
        ((1u64 << (50 - self.page_shift)) - 1) << self.page_shift
    }

    /// `(PTE_ADDR_HIGH, PTE_ADDR_HIGH_SHIFT)` of a 52-bit layout.
    #[inline(always)]
    const fn addr_high(&self) -> (u64, u32) {
        match self.pa {
            PaLayout::Pa52K64 => (0xf << 12, 36),
            _ => (3 << 8, 42),
        }
    }

    /// `__pte_to_phys()`.
    #[inline(always)]
    pub const fn pte_to_phys(&self, p: Pte) -> u64 {
        let v = match self.pa {
            PaLayout::Pa48 => return p.0 & self.addr_low(),
            PaLayout::Lpa2 { ds: true } => p.0,
            // PTE_MAYBE_SHARED is PTE_SHARED unless LPA2 is enabled.
            _ => p.0 & !SHARED,
        };
        let (high, shift) = self.addr_high();
        (v & self.addr_low()) | ((v & high) << shift)
    }

    /// `__phys_to_pte_val()`.
    #[inline(always)]
    pub const fn phys_to_pte_val(&self, phys: u64) -> u64 {
        match self.pa {
            PaLayout::Pa48 => phys,
            PaLayout::Pa52K64 => {
                let (high, shift) = self.addr_high();
                (phys | (phys >> shift)) & (self.addr_low() | high)
            }
            PaLayout::Lpa2 { .. } => {
                let (_, shift) = self.addr_high();
                // GENMASK_ULL(49, 8)
                (phys | (phys >> shift)) & (((1u64 << 42) - 1) << 8)
            }
        }
    }

    /// `pte_pfn()`.
    #[inline(always)]
    pub const fn pfn(&self, p: Pte) -> u64 {
        self.pte_to_phys(p) >> self.page_shift
    }

    /// `pfn_pte(pfn, prot)`.
    #[inline(always)]
    pub const fn pfn_pte(&self, pfn: u64, prot: u64) -> Pte {
        Pte(self.phys_to_pte_val(pfn.wrapping_shl(self.page_shift)) | prot)
    }

    /// `pte_pgprot()`: every bit that is not the output address.
    #[inline(always)]
    pub const fn pgprot(&self, p: Pte) -> u64 {
        self.pfn_pte(self.pfn(p), 0).0 ^ p.0
    }

    /// `pte_advance_pfn()`: the same attributes, `nr` pages further.
    #[inline(always)]
    pub const fn advance_pfn(&self, p: Pte, nr: u64) -> Pte {
        self.pfn_pte(self.pfn(p).wrapping_add(nr), self.pgprot(p))
    }

    /// `ALIGN_DOWN(addr, CONT_PTE_SIZE)`.
    #[inline]
    pub const fn block_start(&self, addr: u64) -> u64 {
        addr & !(self.cont_size() - 1)
    }

    /// The inline `contpte_try_fold()`'s cheap test, which C keeps in
    /// `pgtable.h`: `addr` is the last page of its block, the PFN the last
    /// of an aligned run, and `pte` valid, not yet contiguous and not
    /// special. Only then does C ask [`Layout::try_fold`].
    #[inline]
    pub const fn fold_hint(&self, addr: u64, pte: Pte) -> bool {
        let last = (self.n() - 1) as u64;
        (addr >> self.page_shift) & last == last
            && self.pfn(pte) & last == last
            && pte.valid()
            && !pte.cont()
            && !pte.special()
    }

    /// Whether the folio covers `addr`'s whole block in *virtual* address
    /// space (`__contpte_try_fold()`): the folio starts `page_idx` pages
    /// before `addr` and has `folio_nr` pages. Wrapping unsigned arithmetic,
    /// exactly as contpte.c's: a folio whose start would lie below address 0
    /// does not cover.
    #[inline]
    pub const fn folio_covers_block(&self, addr: u64, page_idx: u64, folio_nr: u64) -> bool {
        let ps = self.page_size();
        let folio_start = addr.wrapping_sub(page_idx.wrapping_mul(ps));
        let folio_end = folio_start.wrapping_add(folio_nr.wrapping_mul(ps));
        let cont_start = self.block_start(addr);
        let cont_end = cont_start.wrapping_add(self.cont_size());
        !(folio_start > cont_start || folio_end < cont_end)
    }

    /// Whether `block` (the [`Layout::n`] entries of `pte`'s block, as read
    /// under the PTL) is one physically contiguous, aligned run with `pte`'s
    /// attributes, ignoring access and dirty state. A block of the wrong
    /// length is not uniform. Each entry is read once, in order, stopping at
    /// the first that differs (see [`Block`]).
    #[inline]
    pub fn block_uniform(&self, pte: Pte, block: impl Block) -> bool {
        let pfn = self.pfn(pte) & !((self.n() - 1) as u64);
        let mut expected = self.pfn_pte(pfn, self.pgprot(pte.without_access_dirty()));
        let mut count = 0;
        for raw in block {
            if count == self.n() || Pte(*raw.borrow()).without_access_dirty() != expected {
                return false;
            }
            expected = self.advance_pfn(expected, 1);
            count += 1;
        }
        count == self.n()
    }

    /// `__contpte_try_fold()`: the value to fold `addr`'s block with (C then
    /// converts the block with it), or `None` to leave it alone.
    ///
    /// `page_idx` and `folio_nr` describe the folio of `pte`'s page (C looks
    /// it up), `block` is the block as read under the PTL. Folds only in a
    /// user mm, only a block one folio covers, and only a uniform block.
    #[inline]
    pub fn try_fold(
        &self,
        mm_is_user: bool,
        addr: u64,
        pte: Pte,
        page_idx: u64,
        folio_nr: u64,
        block: impl Block,
    ) -> Option<Pte> {
        if !mm_is_user
            || !self.folio_covers_block(addr, page_idx, folio_nr)
            || !self.block_uniform(pte, block)
        {
            return None;
        }
        Some(pte.mkcont())
    }

    /// `contpte_convert()`'s new value: the first entry of the block to
    /// write back (C writes [`Layout::n`] entries from it with advancing
    /// PFNs), from the value `pte` to convert to and the entries the break
    /// cleared. It carries `pte`'s attributes, the block's first PFN, and
    /// the access and dirty state of every cleared entry.
    #[inline]
    pub fn convert(&self, pte: Pte, cleared: &[u64]) -> Pte {
        let pfn = self.pfn(pte) & !((self.n() - 1) as u64);
        let first = self.pfn_pte(pfn, self.pgprot(pte));
        gather(first, cleared)
    }

    /// `contpte_ptep_get_lockless()`'s check of one read of the block
    /// without the PTL: `orig` is the entry at index `idx` of its block
    /// (read first), `block` the block read after it. `Some` is what
    /// `ptep_get_lockless()` returns; `None` means the reads saw a fold,
    /// unfold or other change in progress and C must read again.
    ///
    /// A non-contiguous `orig` is its own answer. Otherwise the entries are
    /// read in order until one dirty and one young entry have been seen
    /// (one entry may be both), or to the block's end, and each entry read
    /// must be `contpte_is_consistent()`: valid and contiguous, at its
    /// place in one PFN run through `orig`, with `orig`'s attributes apart
    /// from access and dirty state. The entries after the stop are neither
    /// read nor checked: 7.3 returns where 6.12 retried on a change there.
    /// A block that ends before [`Layout::n`] entries without the stop is
    /// not a consistent block, and no entry past the n-th is read.
    ///
    /// 7.3's C reads the first dirty entry twice (its search for a young
    /// entry starts there); this reads it once. Over the same values the
    /// answers are equal; on a live block the single read is one C could
    /// have made.
    #[inline]
    pub fn gather_lockless(&self, orig: Pte, idx: usize, block: impl Block) -> Option<Pte> {
        if !orig.valid_cont() {
            return Some(orig);
        }
        if idx >= self.n() {
            return None;
        }
        let prot = self.pgprot(orig.without_access_dirty());
        let mut pfn = self.pfn(orig).wrapping_sub(idx as u64);
        let mut seen = Seen::default();
        let mut count = 0;
        for raw in block.into_iter().take(self.n()) {
            let p = Pte(*raw.borrow());
            if !p.valid_cont()
                || self.pfn(p) != pfn
                || self.pgprot(p.without_access_dirty()) != prot
            {
                return None;
            }
            count += 1;
            if seen.add(p) {
                break;
            }
            pfn = pfn.wrapping_add(1);
        }
        (seen.both() || count == self.n()).then(|| seen.apply(orig))
    }

    /// Whether `contpte_set_ptes()` splits its range into block-sized
    /// chunks at all: only for a valid entry in a user mm; otherwise C
    /// writes the whole range as it is.
    #[inline]
    pub const fn set_ptes_splits(&self, mm_is_user: bool, pte: Pte) -> bool {
        mm_is_user && pte.valid()
    }

    /// `contpte_set_ptes()`'s plan for `nr` entries from the page-aligned
    /// `addr`, mapping PFNs from `pfn` on: contpte.c cuts the range at every
    /// block boundary and marks a chunk contiguous iff it is one whole
    /// aligned block of aligned PFNs. Since the address and the PFN
    /// advance together, that is three runs: the entries before the first
    /// block boundary, the whole blocks, the entries after the last one;
    /// only the whole blocks can be contiguous, and they all are iff the
    /// PFNs are aligned as the addresses are. C writes the runs (one
    /// call for the range instead of one per chunk).
    #[inline]
    pub const fn set_ptes_runs(&self, addr: u64, nr: u32, pfn: u64) -> SetPtesRuns {
        let n = self.n() as u64;
        let off = (addr >> self.page_shift) & (n - 1);
        let head = if off == 0 {
            0
        } else if n - off < nr as u64 {
            n - off
        } else {
            nr as u64
        };
        let rest = nr as u64 - head;
        SetPtesRuns {
            head: head as u32,
            blocks: (rest / n) as u32,
            tail: (rest % n) as u32,
            cont: pfn.wrapping_sub(addr >> self.page_shift) & (n - 1) == 0,
        }
    }

    /// `contpte_set_ptes()`'s whole plan, chunk by chunk, for `nr` entries
    /// from `addr` starting with `pte`: [`Layout::set_ptes_runs`] as the
    /// chunks its loop writes (what the tests compare).
    #[inline]
    pub fn set_ptes_plan(&self, addr: u64, pte: Pte, nr: u32) -> SetPtesPlan {
        let pfn = self.pfn(pte);
        SetPtesPlan {
            layout: *self,
            runs: self.set_ptes_runs(addr, nr, pfn),
            addr,
            pfn,
            prot: self.pgprot(pte),
            run: 0,
        }
    }

    /// `contpte_try_unfold_partial()`'s ends: of the `nr` entries starting
    /// at page-table index `ptep_idx`, whether the first entry's block and
    /// whether the last entry's block are only partly covered, so C must
    /// (try to) unfold them. C reads the last entry only after unfolding
    /// the first, so an unfold of both ends in one block happens once.
    #[inline]
    pub const fn partial_ends(&self, ptep_idx: u64, nr: u32) -> PartialEnds {
        let mask = (self.n() - 1) as u64;
        PartialEnds {
            first: ptep_idx & mask != 0 || (nr as usize) < self.n(),
            last: ptep_idx.wrapping_add(nr as u64) & mask != 0,
        }
    }

    /// `contpte_align_addr_ptep()`'s range, which 7.3's
    /// `contpte_clear_young_dirty_ptes()`, `contpte_test_and_clear_young_ptes()`
    /// and `contpte_clear_flush_young_ptes()` clear (and the last flushes):
    /// `nr` entries from `addr` (page-table index `ptep_idx`), widened to
    /// the whole block at the end if the last entry is contiguous and at
    /// the start if the first is (C reads the last entry first).
    #[inline]
    pub const fn align_addr_ptep(
        &self,
        addr: u64,
        ptep_idx: u64,
        nr: u32,
        first_cont: bool,
        last_cont: bool,
    ) -> Span {
        let size = self.cont_size();
        let mut start = addr;
        let mut end = addr.wrapping_add((nr as u64).wrapping_mul(self.page_size()));
        if last_cont {
            end = end.wrapping_add(size - 1) & !(size - 1);
        }
        let mut back = 0;
        if first_cont {
            start = self.block_start(start);
            back = ptep_idx & (self.n() - 1) as u64;
        }
        Span {
            start,
            back,
            nr: (end.wrapping_sub(start) / self.page_size()) as u32,
        }
    }
}

/// The mask of the bits `__ptep_set_access_flags()` consumes.
pub const ACCESS_FLAGS: u64 = RDONLY | AF | WRITE | DIRTY;

/// The entries of a block as a decision reads them: each once, in order.
/// A slice of values read before (`&[u64]`: the tests, C's cleared values)
/// or the kernel edge's live view of a page table, which loads each entry
/// when the decision asks for it (a relaxed atomic load, what
/// `__ptep_get()` is), so a decision that stops early reads no further,
/// as contpte.c's loops do.
pub trait Block: IntoIterator<Item: Borrow<u64>> {}

impl<T: IntoIterator<Item: Borrow<u64>>> Block for T {}

/// The access and dirty state a gather has seen so far.
#[derive(Clone, Copy, Default)]
struct Seen {
    dirty: bool,
    young: bool,
}

impl Seen {
    /// Adds `p`'s state; whether both have now been seen (7.3's loops stop
    /// there).
    #[inline]
    fn add(&mut self, p: Pte) -> bool {
        self.dirty |= p.dirty();
        self.young |= p.young();
        self.both()
    }

    #[inline]
    fn both(self) -> bool {
        self.dirty && self.young
    }

    /// `orig` with `pte_mkdirty()` and `pte_mkyoung()` as seen.
    #[inline]
    fn apply(self, orig: Pte) -> Pte {
        let p = if self.dirty { orig.mkdirty() } else { orig };
        if self.young {
            p.mkyoung()
        } else {
            p
        }
    }
}

/// `contpte_ptep_get()`: `orig` with the access and dirty state of its
/// block (read under the PTL) gathered in. Keeps `orig`'s PFN and its
/// `PTE_CONT`.
///
/// As 7.3's loop, it stops reading once it has seen a dirty and a young
/// entry: what follows cannot change the answer, which is the state of
/// every entry ORed in. 7.3's C reads the first dirty entry twice; this
/// reads it once.
///
/// Written as 7.3's two loops (the first entry with either bit decides
/// which one is still looked for), not with [`Seen`]: inlined into
/// `contpte_ptep_get()` by the LTO link, the loop that tests both bits of
/// every entry without branches cost 28 instructions per call where 7.3's
/// C costs 18 (`make profile`, thp.munmap on arm64).
#[inline]
pub fn gather(orig: Pte, block: impl Block) -> Pte {
    let mut entries = block.into_iter().map(|raw| Pte(*raw.borrow()));
    while let Some(p) = entries.next() {
        if p.dirty() {
            let orig = orig.mkdirty();
            if p.young() || entries.any(|q| q.young()) {
                return orig.mkyoung();
            }
            return orig;
        }
        if p.young() {
            let orig = orig.mkyoung();
            if entries.any(|q| q.dirty()) {
                return orig.mkdirty();
            }
            return orig;
        }
    }
    orig
}

/// `contpte_all_subptes_match_access_flags()`: every raw entry of the block
/// has `entry`'s RDONLY, AF, WRITE and DIRTY bits (each entry on its own,
/// not the gathered view: a sibling's state must not hide the target's).
/// Stops at the first entry that differs.
#[inline]
pub fn access_flags_match(block: impl Block, entry: Pte) -> bool {
    block
        .into_iter()
        .all(|raw| raw.borrow() & ACCESS_FLAGS == entry.0 & ACCESS_FLAGS)
}

/// What `contpte_ptep_set_access_flags()` does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AccessPlan {
    /// Nothing: every entry already has the flags (returns 0).
    NoOp,
    /// Merge the flags into every entry of the block in place, no unfold
    /// (the write bit stays); flush the block if the caller said dirty.
    WholeBlock,
    /// The write permission changes: unfold the block, then update only the
    /// target.
    UnfoldTarget,
}

/// `contpte_ptep_set_access_flags()`'s decision, from the block's raw
/// entries, the raw target entry and the requested `entry`.
#[inline]
pub fn access_flags_plan(block: impl Block, target: Pte, entry: Pte) -> AccessPlan {
    if access_flags_match(block, entry) {
        AccessPlan::NoOp
    } else if target.mknoncont().write() == entry.write() {
        AccessPlan::WholeBlock
    } else {
        AccessPlan::UnfoldTarget
    }
}

/// One chunk of a `set_ptes()` range: write `nr` entries from `pte` (PFNs
/// advancing), ending at address `next`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Chunk {
    /// The address after the chunk.
    pub next: u64,
    /// Entries in the chunk.
    pub nr: u32,
    /// The chunk's first entry, `PTE_CONT` set iff the chunk is a block.
    pub pte: Pte,
}

/// [`Layout::set_ptes_runs`]' answer: `head` entries, then `blocks` whole
/// blocks (contiguous iff `cont`), then `tail` entries.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SetPtesRuns {
    /// Entries before the first block boundary (0 if `addr` is on one).
    pub head: u32,
    /// Whole blocks after them.
    pub blocks: u32,
    /// Entries after the last whole block.
    pub tail: u32,
    /// The whole blocks get `PTE_CONT`: the PFNs are aligned as the
    /// addresses are.
    pub cont: bool,
}

/// The chunks of one `contpte_set_ptes()` call, in order.
#[derive(Clone, Debug)]
pub struct SetPtesPlan {
    layout: Layout,
    runs: SetPtesRuns,
    addr: u64,
    pfn: u64,
    prot: u64,
    /// Chunks yielded so far.
    run: u64,
}

impl Iterator for SetPtesPlan {
    type Item = Chunk;

    fn next(&mut self) -> Option<Chunk> {
        let r = self.runs;
        let head = u64::from(r.head > 0);
        let (nr, cont) = if self.run < head {
            (r.head, false)
        } else if self.run < head + u64::from(r.blocks) {
            (self.layout.n() as u32, r.cont)
        } else if self.run == head + u64::from(r.blocks) && r.tail > 0 {
            (r.tail, false)
        } else {
            return None;
        };
        let pte = self.layout.pfn_pte(self.pfn, self.prot);
        let next = self
            .addr
            .wrapping_add(u64::from(nr) << self.layout.page_shift);
        let c = Chunk {
            next,
            nr,
            pte: if cont { pte.mkcont() } else { pte.mknoncont() },
        };
        self.addr = next;
        self.pfn = self.pfn.wrapping_add(u64::from(nr));
        self.run += 1;
        Some(c)
    }
}

/// Which ends of a range `contpte_try_unfold_partial()` must look at.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PartialEnds {
    /// The first entry's block is only partly in the range.
    pub first: bool,
    /// The last entry's block is only partly in the range.
    pub last: bool,
}

/// The range `contpte_align_addr_ptep()` widens a batch to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Span {
    /// The first address.
    pub start: u64,
    /// How many entries before the caller's first one the range starts.
    pub back: u64,
    /// Entries in the range.
    pub nr: u32,
}
