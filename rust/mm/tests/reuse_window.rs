// SPDX-License-Identifier: GPL-2.0

//! Host tests of `reuse_window()`: which PTEs a write fault that proved a
//! folio exclusive may make writable in the same fault. The window must
//! never leave the vma (a read-only neighbour vma made writable is a
//! permission leak) or the page table of the faulting PTE (whose lock is
//! the one the fault holds), must hold the faulting page, and must cover
//! every page the folio would occupy there if mapped linearly. Checked on
//! x86_64's and arm64's geometries, exhaustively over a small geometry,
//! on random 64-bit inputs, and against mutated windows the checker must
//! reject.

#![cfg(not(loom))]

mod rng;

use rng::XorShift;
use rust_mm_core::folio_rmap::{reuse_window, ReuseWindow};

const PAGE_SHIFT: u32 = 12;
const PMD_SHIFT: u32 = 21;
const PAGE: u64 = 1 << PAGE_SHIFT;
const PMD: u64 = 1 << PMD_SHIFT;

type WindowFn = fn(u64, u64, u64, u64, u64, u32, u32) -> ReuseWindow;

/// One question to the window function.
#[derive(Clone, Copy, Debug)]
struct Input {
    addr: u64,
    idx: u64,
    nr: u64,
    vma_start: u64,
    vma_end: u64,
    page_shift: u32,
    table_shift: u32,
}

impl Input {
    fn ask(&self, f: WindowFn) -> ReuseWindow {
        f(
            self.addr,
            self.idx,
            self.nr,
            self.vma_start,
            self.vma_end,
            self.page_shift,
            self.table_shift,
        )
    }

    /// Whether the input describes a possible fault (else: empty window).
    fn valid(&self) -> bool {
        let ps = self.page_shift;
        if ps == 0 || ps >= self.table_shift || self.table_shift >= 64 {
            return false;
        }
        let mask = (1u64 << ps) - 1;
        let at = self.addr & !mask;
        self.idx < self.nr
            && self.vma_start & mask == 0
            && self.vma_end & mask == 0
            && self.vma_start <= at
            && at < self.vma_end
            && self.idx.checked_mul(1 << ps).is_some()
            && (self.nr - self.idx).checked_mul(1 << ps).is_some()
    }

    /// The ground truth for page `p` (an address): may its PTE be looked
    /// at? Inside the vma, in the faulting PTE's table, and where the
    /// folio's pages lie if it is mapped linearly around the faulting page.
    fn allowed(&self, p: u64) -> bool {
        let page = 1u64 << self.page_shift;
        let at = self.addr & !(page - 1);
        let table = !((1u64 << self.table_shift) - 1);
        let off = (i128::from(p) - i128::from(at)) / i128::from(page);
        p >= self.vma_start
            && p < self.vma_end
            && p & table == at & table
            && off >= -i128::from(self.idx)
            && off < i128::from(self.nr - self.idx)
    }
}

/// Every property of a window for `inp`, or what broke.
fn check(inp: &Input, w: ReuseWindow) -> Result<(), String> {
    if !inp.valid() {
        return if w.start == w.end {
            Ok(())
        } else {
            Err(format!(
                "{inp:?}: bad input must give an empty window, got {w:?}"
            ))
        };
    }
    let page = 1u64 << inp.page_shift;
    let at = inp.addr & !(page - 1);
    if !w.start.is_multiple_of(page) || !w.end.is_multiple_of(page) {
        return Err(format!("{inp:?}: window {w:?} is not page aligned"));
    }
    if !w.contains(at) {
        return Err(format!(
            "{inp:?}: window {w:?} misses the faulting page {at:#x}"
        ));
    }
    // Every page inside must be allowed ...
    let mut p = w.start;
    while p < w.end {
        if !inp.allowed(p) {
            return Err(format!(
                "{inp:?}: window {w:?} holds {p:#x}, outside vma/table/folio"
            ));
        }
        p += page;
    }
    // ... and the pages just outside must not be (maximal, and contiguous
    // by construction of `allowed`: an interval).
    if w.start >= page && inp.allowed(w.start - page) {
        return Err(format!("{inp:?}: window {w:?} could start a page lower"));
    }
    if w.end.checked_add(page).is_some() && inp.allowed(w.end) {
        return Err(format!("{inp:?}: window {w:?} could end a page higher"));
    }
    Ok(())
}

fn check_all(f: WindowFn, inputs: &[Input]) -> Result<usize, String> {
    for inp in inputs {
        check(inp, inp.ask(f))?;
    }
    Ok(inputs.len())
}

/// Every geometry of a small address space: pages of 1 << 12, tables of 8
/// pages, 32 pages of address space, folios of 1..16 pages, every vma and
/// every faulting page in it, and some faults outside.
fn small_geometry() -> Vec<Input> {
    let mut v = Vec::new();
    let table_shift = PAGE_SHIFT + 3;
    for vs in 0..32u64 {
        for ve in vs + 1..=32 {
            for nr in [1u64, 2, 4, 8, 16] {
                for idx in 0..nr {
                    for a in vs.saturating_sub(1)..(ve + 1).min(32) {
                        v.push(Input {
                            addr: a * PAGE + 0x123,
                            idx,
                            nr,
                            vma_start: vs * PAGE,
                            vma_end: ve * PAGE,
                            page_shift: PAGE_SHIFT,
                            table_shift,
                        });
                    }
                }
            }
        }
    }
    v
}

#[test]
fn a_pmd_aligned_thp_in_its_own_vma_gets_its_whole_pmd() {
    let base = 0x7f00_0000_0000 + 5 * PMD;
    for idx in [0, 1, 100, 511] {
        let w = reuse_window(
            base + idx * PAGE + 7,
            idx,
            512,
            base - PMD,
            base + 3 * PMD,
            PAGE_SHIFT,
            PMD_SHIFT,
        );
        assert_eq!(
            w,
            ReuseWindow {
                start: base,
                end: base + PMD
            }
        );
    }
}

#[test]
fn a_read_only_half_split_off_by_mprotect_is_outside_the_window() {
    // mprotect(PROT_READ) of the upper half: the fault is in the lower vma.
    let base = 0x4000_0000;
    let w = reuse_window(
        base + 3 * PAGE,
        3,
        512,
        base,
        base + 256 * PAGE,
        PAGE_SHIFT,
        PMD_SHIFT,
    );
    assert_eq!(
        w,
        ReuseWindow {
            start: base,
            end: base + 256 * PAGE
        }
    );
    // And from the upper (writable) half, the lower read-only vma is out.
    let w = reuse_window(
        base + 300 * PAGE,
        300,
        512,
        base + 256 * PAGE,
        base + PMD,
        PAGE_SHIFT,
        PMD_SHIFT,
    );
    assert_eq!(
        w,
        ReuseWindow {
            start: base + 256 * PAGE,
            end: base + PMD
        }
    );
}

#[test]
fn a_folio_moved_across_a_table_boundary_stops_at_the_faulting_table() {
    // mremap() put the THP 16 pages below a PMD boundary; the fault is at
    // page `idx` of it.
    let start = 0x4000_0000 + PMD - 16 * PAGE;
    let at = |idx: u64| {
        reuse_window(
            start + idx * PAGE,
            idx,
            512,
            start,
            start + PMD,
            PAGE_SHIFT,
            PMD_SHIFT,
        )
    };
    let below = ReuseWindow {
        start,
        end: start + 16 * PAGE,
    };
    let above = ReuseWindow {
        start: start + 16 * PAGE,
        end: start + PMD,
    };
    assert_eq!(at(2), below);
    assert_eq!(at(20), above);
}

#[test]
fn a_64k_mthp_gets_its_16_pages_and_arm64_granules_their_own_tables() {
    let base = 0x10_0000;
    let w = reuse_window(base + 5 * PAGE, 5, 16, 0, 1 << 40, PAGE_SHIFT, PMD_SHIFT);
    assert_eq!(
        w,
        ReuseWindow {
            start: base,
            end: base + 16 * PAGE
        }
    );
    // arm64 16K pages (PMD 32M) and 64K pages (PMD 512M): a whole THP.
    for (ps, ts) in [(14u32, 25u32), (16, 29)] {
        let t = 1u64 << ts;
        let w = reuse_window(3 * t + (7 << ps), 7, 1 << (ts - ps), 0, 1 << 47, ps, ts);
        assert_eq!(
            w,
            ReuseWindow {
                start: 3 * t,
                end: 4 * t
            }
        );
    }
}

#[test]
fn bad_input_gives_the_empty_window() {
    let base = 0x4000_0000;
    let cases = [
        // idx outside the folio
        (base, 512, 512, base, base + PMD, PAGE_SHIFT, PMD_SHIFT),
        // the fault outside the vma
        (base + PMD, 0, 512, base, base + PMD, PAGE_SHIFT, PMD_SHIFT),
        (base - PAGE, 0, 512, base, base + PMD, PAGE_SHIFT, PMD_SHIFT),
        // an unaligned vma
        (base, 0, 512, base + 1, base + PMD, PAGE_SHIFT, PMD_SHIFT),
        // shifts the arithmetic cannot hold
        (base, 0, 512, base, base + PMD, 0, PMD_SHIFT),
        (base, 0, 512, base, base + PMD, PMD_SHIFT, PMD_SHIFT),
        (base, 0, 512, base, base + PMD, PAGE_SHIFT, 64),
        // a folio too large to express in bytes
        (base, 0, u64::MAX, base, base + PMD, PAGE_SHIFT, PMD_SHIFT),
    ];
    for (a, i, n, s, e, ps, ts) in cases {
        let w = reuse_window(a, i, n, s, e, ps, ts);
        assert_eq!(
            w.start, w.end,
            "{a:#x} {i} {n} {s:#x} {e:#x} {ps} {ts}: {w:?}"
        );
    }
}

#[test]
fn every_small_geometry_gives_exactly_the_allowed_pages() {
    let inputs = small_geometry();
    let n = check_all(reuse_window, &inputs).unwrap();
    assert!(n > 100_000, "only {n} geometries");
}

#[test]
fn random_64_bit_inputs_never_panic_and_keep_every_property() {
    let mut rng = XorShift::new(17);
    let mut inputs = Vec::new();
    for i in 0..200_000u64 {
        let page_shift = [12u32, 14, 16][(i % 3) as usize];
        let table_shift = page_shift + 9 + (i % 5) as u32 % 5;
        let r = rng.next();
        // Half near the top of the address space, half anywhere.
        let top = if i % 2 == 0 { u64::MAX - (r >> 20) } else { r };
        let vma_start = top.wrapping_sub(rng.next() >> 24) & !((1 << page_shift) - 1);
        let vma_end = vma_start.saturating_add(rng.next() >> 24) & !((1 << page_shift) - 1);
        let nr = if i % 7 == 0 {
            rng.next()
        } else {
            1 << (rng.next() % 11)
        };
        inputs.push(Input {
            addr: vma_start.wrapping_add(rng.next() >> 26),
            idx: if nr == 0 { 0 } else { rng.next() % nr },
            nr,
            vma_start,
            vma_end,
            page_shift,
            table_shift,
        });
    }
    // Plus raw garbage.
    for _ in 0..100_000 {
        inputs.push(Input {
            addr: rng.next(),
            idx: rng.next(),
            nr: rng.next(),
            vma_start: rng.next(),
            vma_end: rng.next(),
            page_shift: (rng.next() % 70) as u32,
            table_shift: (rng.next() % 70) as u32,
        });
    }
    let valid = inputs.iter().filter(|i| i.valid()).count();
    assert!(valid > 50_000, "only {valid} valid inputs");
    // `check` walks the window page by page: bound the walks it does.
    for inp in &inputs {
        let w = inp.ask(reuse_window);
        let page = 1u64 << inp.page_shift.clamp(1, 63);
        if inp.valid() && (w.end - w.start) / page > 1 << 12 {
            // Too long to walk: check the ends and alignment only.
            assert!(w.contains(inp.addr & !(page - 1)), "{inp:?} {w:?}");
            assert!(
                inp.allowed(w.start) && inp.allowed(w.end - page),
                "{inp:?} {w:?}"
            );
            continue;
        }
        check(inp, w).unwrap();
    }
}

// ---------------------------------------------------------------------
// The check can fail: windows that forget one clip are rejected.

fn without_vma_clip(a: u64, i: u64, n: u64, s: u64, e: u64, ps: u32, ts: u32) -> ReuseWindow {
    let w = reuse_window(a, i, n, s, e, ps, ts);
    if w.start == w.end {
        return w;
    }
    // The table and folio clips only.
    reuse_window(a, i, n, 0, !((1 << ps) - 1), ps, ts)
}

fn without_table_clip(a: u64, i: u64, n: u64, s: u64, e: u64, ps: u32, ts: u32) -> ReuseWindow {
    let w = reuse_window(a, i, n, s, e, ps, ts);
    if w.start == w.end {
        return w;
    }
    reuse_window(a, i, n, s, e, ps, 63)
}

fn one_page_too_far(a: u64, i: u64, n: u64, s: u64, e: u64, ps: u32, ts: u32) -> ReuseWindow {
    let w = reuse_window(a, i, n, s, e, ps, ts);
    if w.start == w.end {
        return w;
    }
    ReuseWindow {
        start: w.start,
        end: w.end + (1 << ps),
    }
}

fn only_the_faulting_page(a: u64, i: u64, n: u64, s: u64, e: u64, ps: u32, ts: u32) -> ReuseWindow {
    let w = reuse_window(a, i, n, s, e, ps, ts);
    if w.start == w.end {
        return w;
    }
    let at = a & !((1 << ps) - 1);
    ReuseWindow {
        start: at,
        end: at + (1 << ps),
    }
}

#[test]
fn mutation_windows_missing_a_clip_or_too_long_or_too_short_are_caught() {
    let inputs = small_geometry();
    for (name, f) in [
        ("without the vma clip", without_vma_clip as WindowFn),
        ("without the table clip", without_table_clip),
        ("one page too far", one_page_too_far),
        ("only the faulting page", only_the_faulting_page),
    ] {
        let r = check_all(f, &inputs);
        assert!(r.is_err(), "the checker passed a window {name}");
        eprintln!("mutation {name}: caught: {}", r.unwrap_err());
    }
}
