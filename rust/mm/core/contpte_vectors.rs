// SPDX-License-Identifier: GPL-2.0

//! Structured random contpte blocks for the differential tests.
//!
//! The host tests (`cargo test`) and the kernel's KUnit suite `contpte_rust`
//! draw the same blocks from the same seeds, so "the same vectors" is a
//! fact, not a hope: both check a digest of the first blocks (see
//! [`DIGEST_SEED`]). Uniform noise would almost never be foldable, so a
//! block starts foldable -- one folio's aligned PFN run, one user
//! protection, random access and dirty state per entry, sometimes already
//! folded -- and then usually gets one perturbation: a flipped bit (any bit,
//! or one the decisions care about), a PFN off by one, a hole, a PROT_NONE
//! entry, a misaligned run, or an extra attribute on one entry.

use super::contpte::bits::*;
use super::contpte::{Layout, Pte};

/// `PTE_DEVMAP` (6.12 sets `PTE_SPECIAL` with it).
const DEVMAP: u64 = 1 << 57;
/// `PTE_UFFD_WP`.
const UFFD_WP: u64 = 1 << 58;
/// `PTE_GP` (BTI guarded).
const GP: u64 = 1 << 50;
/// `PTE_PRESENT_INVALID`, the same bit as `PTE_NG`.
const PRESENT_INVALID: u64 = NG;

/// `_PAGE_DEFAULT` with `MT_NORMAL`: page, young, inner shareable.
const PAGE_DEFAULT: u64 = TYPE_PAGE | AF | SHARED;
/// The user protections 6.12's `protection_map` produces (`pgtable-prot.h`).
const USER_PROTS: [u64; 6] = [
    // PAGE_SHARED: writable, clean (RDONLY with DBM)
    PAGE_DEFAULT | USER | RDONLY | NG | PXN | UXN | WRITE,
    // PAGE_SHARED_EXEC
    PAGE_DEFAULT | USER | RDONLY | NG | PXN | WRITE,
    // PAGE_READONLY
    PAGE_DEFAULT | USER | RDONLY | NG | PXN | UXN,
    // PAGE_READONLY_EXEC
    PAGE_DEFAULT | USER | RDONLY | NG | PXN,
    // PAGE_EXECONLY
    PAGE_DEFAULT | RDONLY | NG | PXN,
    // a private writable mapping after a write: hardware-dirty
    PAGE_DEFAULT | USER | NG | PXN | UXN | WRITE,
];
/// `PAGE_NONE`.
const PAGE_NONE: u64 = (PAGE_DEFAULT & !VALID) | PRESENT_INVALID | RDONLY | NG | PXN | UXN;
/// Bits the decisions treat specially, flipped more often than others.
const INTERESTING: [u64; 17] = [
    VALID,
    2,
    1 << 2,
    USER,
    RDONLY,
    1 << 8,
    AF,
    NG,
    GP,
    WRITE,
    CONT,
    PXN,
    UXN,
    DIRTY,
    SPECIAL,
    DEVMAP,
    UFFD_WP,
];

/// The seed whose first [`DIGEST_BLOCKS`] blocks both sides digest.
pub const DIGEST_SEED: u64 = 0x5eed_0001;
/// How many blocks the digest covers.
pub const DIGEST_BLOCKS: u32 = 1000;

/// One generated case: a block and the inputs of every decision on it.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    /// The entry a decision is about: the block's last entry for a fold,
    /// the target for the others (its value as C would pass it).
    pub pte: Pte,
    /// The target's index in the block.
    pub idx: usize,
    /// The virtual address of the target.
    pub addr: u64,
    /// The target page's index in its folio.
    pub page_idx: u64,
    /// The folio's pages.
    pub folio_nr: u64,
    /// A requested access-flag update of the target.
    pub entry: Pte,
    /// Whether the mm is a user mm.
    pub mm_is_user: bool,
}

/// A deterministic generator of [`Case`]s (xorshift64*).
pub struct BlockGen(u64);

impl BlockGen {
    /// A generator from `seed` (0 is replaced by a fixed constant).
    pub const fn new(seed: u64) -> BlockGen {
        BlockGen(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    /// The generator's state: [`BlockGen::new`] of it continues the
    /// sequence (how the kernel keeps a generator between calls from C).
    pub const fn state(&self) -> u64 {
        self.0
    }

    /// The next 64 random bits.
    pub fn bits(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A random number below `n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.bits() % n
    }

    /// A random access and dirty state for `p`: young or old, software
    /// dirty or not, and hardware-dirty if writable.
    fn access_dirty(&mut self, p: u64) -> u64 {
        let r = self.bits();
        let mut p = p & !(AF | DIRTY);
        if r & 1 != 0 {
            p |= AF;
        }
        if r & 2 != 0 {
            p |= DIRTY;
        }
        if p & WRITE != 0 {
            p = if r & 4 != 0 { p & !RDONLY } else { p | RDONLY };
        }
        p
    }

    /// Fills `block` (length `layout.n()`) with the next case's block and
    /// returns the case.
    pub fn case(&mut self, layout: &Layout, block: &mut [u64]) -> Case {
        let n = layout.n();
        let nm = n as u64;
        let mut prot = USER_PROTS[self.below(USER_PROTS.len() as u64) as usize];
        match self.below(8) {
            0 => prot |= UFFD_WP,
            1 => prot |= GP,
            _ => {}
        }
        let folded = self.below(3) == 0;
        // A folded block as contpte_convert() leaves it: every entry with
        // the same access and dirty state.
        let uniform = if folded && self.below(2) == 0 {
            Some(self.access_dirty(prot))
        } else {
            None
        };
        // A PFN below 2^36 (48-bit PAs with 4K pages), aligned to the block.
        let max_pfn = 1u64 << (48 - layout.page_shift);
        let base = self.below(max_pfn) & !(nm - 1);
        for (i, e) in block.iter_mut().enumerate() {
            let p = layout.pfn_pte(base + i as u64, prot).0;
            let p = if folded { p | CONT } else { p };
            *e = match uniform {
                Some(u) => (p & !(AF | DIRTY | RDONLY)) | (u & (AF | DIRTY | RDONLY)),
                None => self.access_dirty(p),
            };
        }
        let victim = self.below(nm) as usize;
        match self.below(12) {
            0..=2 => {}
            3 => block[victim] ^= 1 << self.below(64),
            4 | 5 => block[victim] ^= INTERESTING[self.below(INTERESTING.len() as u64) as usize],
            6 => {
                let d = if self.below(2) == 0 { 1 } else { u64::MAX };
                block[victim] = layout.advance_pfn(Pte(block[victim]), d).0;
            }
            7 => block[victim] = 0,
            8 => block[victim] = layout.pfn_pte(base + victim as u64, PAGE_NONE).0,
            9 => {
                let k = 1 + self.below(nm - 1);
                for e in block.iter_mut() {
                    *e = layout.advance_pfn(Pte(*e), k).0;
                }
            }
            10 => block[victim] |= SPECIAL | if self.below(2) == 0 { DEVMAP } else { 0 },
            _ => block[victim] ^= CONT,
        }
        let idx = if self.below(2) == 0 {
            n - 1
        } else {
            self.below(nm) as usize
        };
        let va_block =
            (self.below(1 << 20) << (layout.page_shift + layout.cont_shift)) & !(1 << 47);
        let mut addr = va_block + ((idx as u64) << layout.page_shift);
        if self.below(16) == 0 {
            addr = addr.wrapping_add(layout.page_size());
        }
        // The folio: one block, the block inside a larger folio, a smaller
        // folio, or a folio placed so that it does not cover the block.
        let (folio_nr, page_idx) = match self.below(6) {
            0 | 1 => (nm, idx as u64),
            2 => (4 * nm, nm + idx as u64),
            3 => (nm / 2, (idx % (n / 2)) as u64),
            4 => (4 * nm, self.below(4 * nm)),
            _ => (1, 0),
        };
        let target = block[idx];
        let mut entry = Pte(target).mknoncont();
        match self.below(5) {
            0 => entry = entry.mkyoung(),
            1 => entry = entry.mkdirty().mkyoung(),
            2 => entry = Pte(entry.0 | WRITE).mkdirty().mkyoung(),
            3 => entry = Pte(self.access_dirty(entry.0)),
            _ => {}
        }
        Case {
            pte: Pte(target),
            idx,
            addr,
            page_idx,
            folio_nr,
            entry,
            mm_is_user: self.below(16) != 0,
        }
    }
}

/// A digest of the first [`DIGEST_BLOCKS`] cases from [`DIGEST_SEED`] on
/// `layout`: equal on the host and in the kernel iff both generate the
/// same vectors.
pub fn digest(layout: &Layout) -> u64 {
    let mut g = BlockGen::new(DIGEST_SEED);
    let mut block = [0u64; super::contpte::MAX_CONT_PTES];
    let block = &mut block[..layout.n()];
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |v: u64| h = (h ^ v).wrapping_mul(0x0000_0100_0000_01b3);
    for _ in 0..DIGEST_BLOCKS {
        let c = g.case(layout, block);
        for &e in block.iter() {
            mix(e);
        }
        mix(c.pte.0);
        mix(c.idx as u64);
        mix(c.addr);
        mix(c.page_idx);
        mix(c.folio_nr);
        mix(c.entry.0);
        mix(u64::from(c.mm_is_user));
    }
    h
}
