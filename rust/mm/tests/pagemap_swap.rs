// SPDX-License-Identifier: GPL-2.0

//! Host tests of the pagemap entries of shared memory's unmapped pages
//! (`core/pagemap_swap.rs`). The swap frame must be 6.12's encoding of a
//! `PM_SWAP` entry and never a wrapped or truncated one; one walk of a
//! file's entries over a range must give, offset by offset, what a lookup
//! per offset (the original patch's `xa_load()` per entry) gives --
//! large entries, ranges that cut them, entries visited twice included;
//! a PTE the page table says something about keeps 6.12's entry. Checked
//! on the kernel's geometry, exhaustively over a small one, on random
//! files and garbage, and against mutated fills the checker must reject.

#![cfg(not(loom))]

mod rng;

use rng::XorShift;
use rust_mm_core::pagemap_swap::{
    report, scan_categories, scan_categories_in_place, single_slot, swap_frame, swapped_entry,
    takes_file, walks_file, Entry, EntryKind, FileRange, Found, PteState, RecordError, Run,
    VmaKind, FILE, MAX_SWAP_OFFSET, MMAP_EXCLUSIVE, PFRAME_BITS, PFRAME_MASK, PRESENT, PTE_DECIDED,
    RESIDENT, SCAN_FILE, SCAN_SWAPPED, SOFT_DIRTY, SWAP, SWAPPED_NOWHERE, SWAP_TYPES,
    SWP_OFFSET_MASK, SWP_TYPE_SHIFT, UFFD_WP,
};

/// A folio pointer as the XArray holds one (aligned: low bits clear).
const FOLIO_PTR: u64 = 0xffff_8880_0123_4540;

/// What C hands Rust for `e`: the entry shmem stores, written as the
/// kernel writes it -- `xa_mk_value(swp_entry(type, offset).val)`, i.e.
/// `(type << SWP_TYPE_SHIFT | offset) << 1 | 1`, for a swap entry; a
/// folio pointer for a folio.
fn stored(e: &Entry) -> Found {
    let xa_entry = match e.kind {
        EntryKind::Folio => FOLIO_PTR,
        EntryKind::Swap => {
            assert!(e.swap_type < SWAP_TYPES && e.swap_offset <= SWP_OFFSET_MASK);
            (((e.swap_type as u64) << SWP_TYPE_SHIFT | e.swap_offset) << 1) | 1
        }
    };
    Found {
        index: e.index,
        order: e.order,
        xa_entry,
        nr: 1,
    }
}

/// 6.12's `pte_to_pagemap_entry()` for a swap PTE, as C writes it:
/// `frame = swp_type(entry) | (swp_offset(entry) << MAX_SWAPFILES_SHIFT)`
/// and `make_pme(frame, PM_SWAP)` masks the frame to 55 bits.
fn c_swap_pme(swap_type: u64, offset: u64) -> u64 {
    ((swap_type | (offset << 5)) & ((1u64 << 55) - 1)) | (1 << 62)
}

#[test]
fn the_swap_frame_is_6_12s_pm_swap_encoding() {
    for t in 0..SWAP_TYPES {
        for off in [
            1u64,
            2,
            0x1234,
            1 << 20,
            MAX_SWAP_OFFSET - 1,
            MAX_SWAP_OFFSET,
        ] {
            assert_eq!(
                swapped_entry(t, off),
                c_swap_pme(u64::from(t), off) | FILE,
                "type {t} offset {off:#x}"
            );
            let frame = swap_frame(t, off).unwrap();
            assert_eq!(frame & 31, u64::from(t));
            assert_eq!(frame >> 5, off);
        }
    }
}

#[test]
fn a_location_a_frame_cannot_hold_is_swapped_nowhere_never_truncated() {
    // 6.12's make_pme() would drop the offset's top bits: another page's
    // location. Ours says "swapped, location unknown".
    for (t, off) in [
        (0u32, MAX_SWAP_OFFSET + 1),
        (3, u64::MAX),
        (SWAP_TYPES, 5),
        (u32::MAX, 1),
    ] {
        assert_eq!(swap_frame(t, off), None, "type {t} offset {off:#x}");
        assert_eq!(swapped_entry(t, off), SWAPPED_NOWHERE);
    }
    assert_eq!(SWAPPED_NOWHERE & PFRAME_MASK, 0);
}

/// A shmem file's XArray as the test holds it: naturally aligned entries
/// that do not overlap (`(start, order, kind, swap_type, swap_offset)`).
#[derive(Clone, Debug, Default)]
struct File {
    entries: Vec<(u64, u32, EntryKind, u32, u64)>,
}

impl File {
    /// The entry covering `off`, as `xa_load()` finds it.
    fn load(&self, off: u64) -> Option<(u64, u32, EntryKind, u32, u64)> {
        self.entries
            .iter()
            .copied()
            .find(|&(s, o, ..)| off >= s && off - s < (1u64 << o))
    }

    /// The original patch's answer for `off`: one lookup per offset.
    fn expected(&self, off: u64) -> u64 {
        match self.load(off) {
            None => 0,
            Some((_, _, EntryKind::Folio, ..)) => RESIDENT,
            Some((s, _, EntryKind::Swap, t, base)) => match base.checked_add(off - s) {
                Some(o) => swapped_entry(t, o),
                None => SWAPPED_NOWHERE,
            },
        }
    }

    /// What one walk over `[first, first + len)` visits: every entry that
    /// covers an offset of the range, found at the first offset of the
    /// range it covers (as `xas_for_each()` from `first` finds a large
    /// entry that starts below it) -- and, like a walk that meets a large
    /// entry's sibling slots again, optionally once more at its last.
    fn walk(&self, first: u64, len: u64, twice: bool) -> Vec<Entry> {
        let mut out = Vec::new();
        let last = first + len - 1;
        for &(s, o, kind, swap_type, swap_offset) in &self.entries {
            let e = s + ((1u64 << o) - 1);
            if e < first || s > last {
                continue;
            }
            let mut visit = |index| {
                out.push(Entry {
                    index,
                    order: o,
                    kind,
                    swap_type,
                    swap_offset,
                })
            };
            visit(s.max(first));
            if twice {
                visit(e.min(last));
            }
        }
        out
    }
}

/// Fills `slots` (offsets from `first`) from the entries one walk found;
/// returns how many offsets the entries filled.
type WalkFn = fn(u64, &mut [u64], &[Entry]) -> Result<usize, String>;

fn walk(first: u64, slots: &mut [u64], entries: &[Entry]) -> Result<usize, String> {
    let mut range = FileRange::new(first, slots, SWAP_TYPES, true);
    let mut filled = 0;
    for e in entries {
        filled += range
            .record(e)
            .map_err(|err| format!("{e:?} from {first}: {err:?}"))?;
    }
    Ok(filled)
}

/// Walk `file` over `[first, first + len)` with `f` and compare every
/// slot with the per-offset lookup; also the count of filled offsets
/// (a walk that meets an entry twice counts it twice: not compared).
fn check_range(file: &File, first: u64, len: u64, twice: bool, f: WalkFn) -> Result<(), String> {
    let mut slots = vec![0xdead_beef_u64; len as usize];
    let entries = file.walk(first, len, twice);
    let filled = f(first, &mut slots, &entries)?;
    let want = (first..first + len)
        .filter(|&o| file.load(o).is_some())
        .count();
    if !twice && filled != want {
        return Err(format!(
            "{file:?} over [{first}, +{len}): {filled} offsets filled, {want} covered"
        ));
    }
    for (i, &got) in slots.iter().enumerate() {
        let off = first + i as u64;
        let exp = file.expected(off);
        if got != exp {
            return Err(format!(
                "{file:?} over [{first}, +{len}): offset {off}: {got:#x}, lookup says {exp:#x}"
            ));
        }
    }
    Ok(())
}

/// Every file of at most three entries of orders 0..=3 over offsets
/// 0..16, with swap offsets near 0 and near the frame's limit.
fn small_files() -> Vec<File> {
    let mut files = vec![File::default()];
    let kinds = [
        (EntryKind::Folio, 0, 0),
        (EntryKind::Swap, 1, 100),
        (EntryKind::Swap, 31, MAX_SWAP_OFFSET - 5),
        (EntryKind::Swap, 2, u64::MAX - 3),
    ];
    let mut singles = Vec::new();
    for order in 0..=3u32 {
        for start in (0..16u64).step_by(1 << order) {
            for &(k, t, base) in &kinds {
                singles.push((start, order, k, t, base));
            }
        }
    }
    for (i, &a) in singles.iter().enumerate() {
        files.push(File { entries: vec![a] });
        for &b in singles.iter().skip(i + 1).step_by(7) {
            let overlap = |x: (u64, u32, EntryKind, u32, u64),
                           y: (u64, u32, EntryKind, u32, u64)| {
                x.0 < y.0 + (1 << y.1) && y.0 < x.0 + (1 << x.1)
            };
            if !overlap(a, b) {
                files.push(File {
                    entries: vec![a, b],
                });
            }
        }
    }
    files
}

fn check_all_small(f: WalkFn) -> Result<usize, String> {
    let mut n = 0;
    for file in small_files() {
        for first in 0..16u64 {
            for len in 1..=(17 - first).min(9) {
                check_range(&file, first, len, n % 3 == 0, f)?;
                n += 1;
            }
        }
    }
    Ok(n)
}

#[test]
fn one_walk_equals_a_lookup_per_offset_over_every_small_file() {
    let n = check_all_small(walk).unwrap();
    assert!(n > 100_000, "only {n} ranges");
}

#[test]
fn a_large_swap_entry_cut_by_the_range_gives_each_offset_its_own_slot() {
    // A 64K mTHP of shmem swapped out as one order-4 entry at offsets
    // 32..48, swap offset 0x1000 for offset 32; the range is 40..56.
    let mut slots = [7u64; 16];
    let mut r = FileRange::new(40, &mut slots, SWAP_TYPES, true);
    let e = Entry {
        index: 40,
        order: 4,
        kind: EntryKind::Swap,
        swap_type: 1,
        swap_offset: 0x1000,
    };
    assert_eq!(r.record(&e), Ok(8));
    for (i, &s) in r.slots().iter().enumerate() {
        if i < 8 {
            assert_eq!(s, swapped_entry(1, 0x1000 + 8 + i as u64), "slot {i}");
        } else {
            assert_eq!(s, 0, "slot {i} is past the entry: a hole");
        }
    }
    // The kernel's PMD-size shmem THP (order 9) swapped as one entry.
    let mut slots = vec![0u64; 512];
    let mut r = FileRange::new(512, &mut slots, SWAP_TYPES, true);
    let e = Entry {
        index: 700,
        order: 9,
        kind: EntryKind::Swap,
        swap_type: 0,
        swap_offset: 0x20000,
    };
    assert_eq!(r.record(&e), Ok(512));
    assert_eq!(r.slots()[511], swapped_entry(0, 0x20000 + 511));
}

#[test]
fn bad_entries_record_nothing_or_nowhere_and_never_panic() {
    let mut slots = [0u64; 8];
    let mut r = FileRange::new(u64::MAX - 3, &mut slots, SWAP_TYPES, true);
    // An order the arithmetic cannot hold.
    let mut e = Entry {
        index: u64::MAX,
        order: 64,
        kind: EntryKind::Swap,
        swap_type: 0,
        swap_offset: 1,
    };
    assert_eq!(r.record(&e), Err(RecordError::Order));
    // The top entry of the offset space, and a range running past the top:
    // only the offsets that exist are filled.
    e.order = 63;
    assert_eq!(r.record(&e), Ok(4));
    assert_eq!(r.slots()[4..], [0, 0, 0, 0]);
    // Outside the range.
    let mut r = FileRange::new(100, &mut slots, SWAP_TYPES, true);
    e.index = 99;
    e.order = 0;
    assert_eq!(r.record(&e), Err(RecordError::Outside));
    e.index = 108;
    assert_eq!(r.record(&e), Err(RecordError::Outside));
    // An empty range.
    let mut empty: [u64; 0] = [];
    let mut r = FileRange::new(0, &mut empty, SWAP_TYPES, true);
    e.index = 0;
    assert_eq!(r.record(&e), Err(RecordError::Outside));
    // A swap type beyond MAX_SWAPFILES, and offsets that wrap.
    let mut r = FileRange::new(0, &mut slots, SWAP_TYPES, true);
    e.swap_type = 40;
    e.order = 3;
    assert_eq!(r.record(&e), Ok(8));
    assert!(r.slots().iter().all(|&s| s == SWAPPED_NOWHERE));
    e.swap_type = 2;
    e.swap_offset = u64::MAX - 1;
    assert_eq!(r.record(&e), Ok(8));
    assert_eq!(
        r.slots()[0],
        SWAPPED_NOWHERE,
        "u64::MAX - 1 does not fit a frame"
    );
    assert!(
        r.slots()[2..].iter().all(|&s| s == SWAPPED_NOWHERE),
        "wrapped offsets"
    );
}

#[test]
fn poisoned_entries_and_hidden_locations_are_swapped_nowhere() {
    // x86_64 6.12 with migration, hwpoison and markers: MAX_SWAPFILES 29;
    // shmem's swap-in error entry has the marker type, 31.
    let max = 29;
    let mut slots = [0u64; 4];
    let mut r = FileRange::new(8, &mut slots, max, true);
    let mut e = Entry {
        index: 8,
        order: 1,
        kind: EntryKind::Swap,
        swap_type: 31,
        swap_offset: 2,
    };
    assert_eq!(r.record(&e), Ok(2));
    e.index = 10;
    e.swap_type = 28;
    assert_eq!(r.record(&e), Ok(2));
    assert_eq!(
        r.slots(),
        [
            SWAPPED_NOWHERE,
            SWAPPED_NOWHERE,
            swapped_entry(28, 2),
            swapped_entry(28, 3)
        ]
    );
    // A reader that may not see PFNs reads frame 0, as for a swap PTE.
    let mut r = FileRange::new(8, &mut slots, max, false);
    assert_eq!(r.record(&e), Ok(2));
    e.kind = EntryKind::Folio;
    e.index = 8;
    assert_eq!(r.record(&e), Ok(2));
    assert_eq!(
        r.slots(),
        [RESIDENT, RESIDENT, SWAPPED_NOWHERE, SWAPPED_NOWHERE]
    );
}

#[test]
fn random_files_and_ranges_equal_the_per_offset_lookup() {
    let mut rng = XorShift::new(20);
    for round in 0..3_000 {
        // A file of up to 4096 offsets: runs of holes, pages, and large
        // entries of orders up to 9, like shmem's after mTHP swap-out.
        let mut file = File::default();
        let mut off = 0u64;
        while off < 4096 {
            let r = rng.next();
            let order = [0u32, 0, 0, 2, 4, 9][(r % 6) as usize];
            let span = 1u64 << order;
            off = off.next_multiple_of(span);
            match (r >> 8) % 3 {
                0 => {}
                1 => file.entries.push((off, order, EntryKind::Folio, 0, 0)),
                _ => file.entries.push((
                    off,
                    order,
                    EntryKind::Swap,
                    ((r >> 16) % 32) as u32,
                    (rng.next() >> (10 + (r >> 32) % 20)) & !(span - 1),
                )),
            }
            off += span;
        }
        for _ in 0..4 {
            let first = rng.next() % 4096;
            let len = 1 + rng.next() % 1024;
            check_range(&file, first, len, round % 2 == 0, walk).unwrap();
        }
    }
}

#[test]
fn random_garbage_entries_never_panic_and_fill_only_what_they_cover() {
    let mut rng = XorShift::new(2021);
    let mut slots = vec![0u64; 64];
    for _ in 0..300_000 {
        let first = match rng.next() % 3 {
            0 => rng.next(),
            1 => u64::MAX - rng.next() % 128,
            _ => rng.next() % 256,
        };
        let len = (rng.next() % 65) as usize;
        let e = Entry {
            index: if rng.next().is_multiple_of(2) {
                rng.next()
            } else {
                first.wrapping_add(rng.next() % 96)
            },
            order: (rng.next() % 70) as u32,
            kind: if rng.next().is_multiple_of(2) {
                EntryKind::Folio
            } else {
                EntryKind::Swap
            },
            swap_type: (rng.next() % 40) as u32,
            swap_offset: rng.next() >> (rng.next() % 64),
        };
        let mut r = FileRange::new(
            first,
            &mut slots[..len],
            (rng.next() % 33) as u32,
            !rng.next().is_multiple_of(4),
        );
        let res = r.record(&e);
        let covered = r.slots().iter().filter(|&&s| s != 0).count();
        match res {
            Ok(n) => assert_eq!(n, covered, "{e:?} from {first:#x} len {len}"),
            Err(_) => assert_eq!(covered, 0, "{e:?} from {first:#x} len {len}"),
        }
        for &s in r.slots() {
            assert!(
                s == 0 || s == RESIDENT || s & !PFRAME_MASK == SWAP | FILE,
                "{s:#x}"
            );
        }
    }
}

// ---------------------------------------------------------------------
// The decision per PTE and per vma.

const PTES: [PteState; 3] = [PteState::None, PteState::Present, PteState::Swap];
const VMAS: [VmaKind; 4] = [
    VmaKind::PrivateAnon,
    VmaKind::SharedShmem,
    VmaKind::PrivateShmem,
    VmaKind::Other,
];

#[test]
fn only_an_opted_in_reader_of_a_shared_shmem_vma_walks_the_file() {
    for vma in VMAS {
        for opted in [false, true] {
            assert_eq!(
                walks_file(opted, vma),
                opted && vma == VmaKind::SharedShmem,
                "{vma:?} opted in {opted}"
            );
        }
    }
}

#[test]
fn every_pte_state_and_file_entry_gets_the_documented_answer() {
    // What 6.12 computes for each PTE state (any of its bits).
    let currents = [
        0,
        SOFT_DIRTY,
        PRESENT | FILE | MMAP_EXCLUSIVE | 0x1234,
        PRESENT | FILE | SOFT_DIRTY | 0x99,
        SWAP | 0x21,
        SWAP | SOFT_DIRTY | UFFD_WP | 0x40,
        UFFD_WP,
        UFFD_WP | SOFT_DIRTY,
    ];
    let valid_slots = [
        0,
        RESIDENT,
        swapped_entry(0, 1),
        swapped_entry(31, MAX_SWAP_OFFSET),
        SWAPPED_NOWHERE,
    ];
    // Slots no walk produces: C handing over garbage.
    let bad_slots = [
        PRESENT | 5,
        SWAP | 7,
        FILE | 1,
        u64::MAX,
        UFFD_WP,
        SOFT_DIRTY,
    ];
    let mut n = 0;
    for pte in PTES {
        for &cur in &currents {
            for &slot in valid_slots.iter().chain(&bad_slots) {
                let got = report(pte, cur, slot);
                let valid = valid_slots.contains(&slot);
                let want = if pte == PteState::None && valid && slot != 0 {
                    slot | (cur & SOFT_DIRTY)
                } else {
                    cur
                };
                assert_eq!(got, want, "{pte:?} current {cur:#x} slot {slot:#x}");
                n += 1;
            }
        }
    }
    assert_eq!(n, 3 * 8 * 11);
}

#[test]
fn a_pte_none_entry_reports_hole_resident_or_the_swap_location() {
    assert_eq!(
        report(PteState::None, 0, 0),
        0,
        "a hole stays 'never touched'"
    );
    assert_eq!(report(PteState::None, SOFT_DIRTY, 0), SOFT_DIRTY);
    assert_eq!(report(PteState::None, 0, RESIDENT), FILE);
    let s = swapped_entry(2, 0x777);
    assert_eq!(report(PteState::None, 0, s), s);
    assert_eq!(s & (SWAP | FILE | PRESENT), SWAP | FILE);
    // A uffd-wp marker on a swapped-out shmem page keeps 6.12's entry.
    assert_eq!(report(PteState::Swap, SWAP | UFFD_WP, s), SWAP | UFFD_WP);
}

#[test]
fn the_pte_state_is_read_from_6_12s_entry_over_every_flag_combination() {
    // What 6.12's pte_to_pagemap_entry() gives each kind of PTE.
    assert_eq!(PteState::of_entry(0), PteState::None);
    assert_eq!(PteState::of_entry(SOFT_DIRTY), PteState::None);
    assert_eq!(PteState::of_entry(PRESENT | FILE | 0x42), PteState::Present);
    assert_eq!(PteState::of_entry(SWAP | 0x21), PteState::Swap);
    // A uffd-wp marker: a swap PTE to 6.12, PM_SWAP | PM_UFFD_WP.
    assert_eq!(PteState::of_entry(SWAP | UFFD_WP), PteState::Swap);
    // Every combination of the flag bits (55..64), with frames.
    let mut n = 0;
    for flags in 0..1u64 << (64 - PFRAME_BITS) {
        for frame in [0, 1, 0x1234, PFRAME_MASK] {
            let pme = flags << PFRAME_BITS | frame;
            let want = if pme & PRESENT != 0 {
                PteState::Present
            } else if pme & SWAP != 0 {
                PteState::Swap
            } else {
                PteState::None
            };
            assert_eq!(PteState::of_entry(pme), want, "{pme:#x}");
            assert_eq!(takes_file(pme), pme & PTE_DECIDED == 0, "{pme:#x}");
            n += 1;
        }
    }
    assert_eq!(n, 512 * 4);
}

#[test]
fn every_swap_entry_shmem_stores_decodes_to_its_type_and_offset() {
    // Every type a value entry can carry, offsets at the edges of what a
    // frame holds and of what the value holds, at orders 0 and 9.
    let offsets = [
        0,
        1,
        0x2a,
        MAX_SWAP_OFFSET - 1,
        MAX_SWAP_OFFSET,
        MAX_SWAP_OFFSET + 1,
        SWP_OFFSET_MASK - 1,
        SWP_OFFSET_MASK,
    ];
    let mut n = 0;
    for swap_type in 0..SWAP_TYPES {
        for swap_offset in offsets {
            for order in [0, 9] {
                let e = Entry {
                    index: 77,
                    order,
                    kind: EntryKind::Swap,
                    swap_type,
                    swap_offset,
                };
                assert_eq!(stored(&e).decode(), Ok(e), "{e:?}");
                n += 1;
            }
        }
    }
    assert_eq!(n, 32 * 8 * 2);
    let folio = Entry {
        index: 5,
        order: 2,
        kind: EntryKind::Folio,
        swap_type: 0,
        swap_offset: 0,
    };
    assert_eq!(stored(&folio).decode(), Ok(folio));
}

#[test]
fn null_and_internal_entries_are_refused_by_their_low_bits() {
    // The low two bits of an XArray entry: 00 a pointer (NULL: nothing),
    // x1 a value, 10 internal (node, sibling, retry, zero). Over every
    // pattern of the low 8 bits under a few high ones.
    for high in [0, 1 << 8, FOLIO_PTR & !0xff, !0xff] {
        for low in 0..256u64 {
            let raw = high | low;
            let f = Found {
                index: 0,
                order: 0,
                xa_entry: raw,
                nr: 1,
            };
            let got = f.decode().map(|e| e.kind);
            let want = match raw & 3 {
                1 | 3 => Ok(EntryKind::Swap),
                0 if raw != 0 => Ok(EntryKind::Folio),
                _ => Err(RecordError::Entry),
            };
            assert_eq!(got, want, "{raw:#x}");
            // The run's single-entry path refuses the same entries, and
            // writes nothing for them.
            let mut pmes = [0u64; 3];
            let mut r = Run::new(0, &mut pmes, SWAP_TYPES, true);
            let merged = r.merge_all([f]);
            assert_eq!(merged.is_err(), want.is_err(), "{raw:#x}");
            if want.is_err() {
                assert_eq!(merged, Err(RecordError::Entry), "{raw:#x}");
                assert_eq!(r.pmes(), &[0; 3], "{raw:#x}");
            }
        }
    }
    // A refused entry writes nothing; the entries around it are merged.
    let mut pmes = [0u64; 4];
    let mut r = Run::new(10, &mut pmes, SWAP_TYPES, true);
    let retry = Found {
        index: 11,
        order: 0,
        xa_entry: 0x402,
        nr: 1,
    };
    let folio = |index| Found {
        index,
        order: 0,
        xa_entry: FOLIO_PTR,
        nr: 1,
    };
    assert_eq!(
        r.merge_all([folio(10), retry, folio(12)]),
        Err(RecordError::Entry)
    );
    assert_eq!(r.pmes(), &[RESIDENT, 0, RESIDENT, 0]);
}

#[test]
fn a_single_entry_decodes_straight_to_the_slot_its_entry_records() {
    // single_slot() is Found::decode() then FileRange::record()'s slot for
    // an order-0 entry, with no Entry in between: over every swap type,
    // offsets at the edges of a frame and of the value's offset field,
    // folios and refused entries, for readers shown no type, some types,
    // or all of them.
    let mut raws = vec![0u64, 1, 2, 3, FOLIO_PTR, FOLIO_PTR | 2, u64::MAX];
    for t in 0..SWAP_TYPES as u64 {
        for off in [
            0,
            1,
            MAX_SWAP_OFFSET - 1,
            MAX_SWAP_OFFSET,
            MAX_SWAP_OFFSET + 1,
            SWP_OFFSET_MASK,
        ] {
            raws.push(((t << SWP_TYPE_SHIFT | off) << 1) | 1);
        }
    }
    let mut rng = XorShift::new(0x51_6e_61_e5);
    raws.extend((0..20_000).map(|_| rng.next()));
    for located_types in [0, 1, 2, 29, SWAP_TYPES - 1, SWAP_TYPES, u32::MAX] {
        for &raw in &raws {
            let f = Found {
                index: 7,
                order: 0,
                xa_entry: raw,
                nr: 1,
            };
            let want = f.decode().and_then(|e| {
                let mut slot = [0u64];
                FileRange::new(7, &mut slot, located_types, true).record(&e)?;
                Ok(slot[0])
            });
            assert_eq!(
                single_slot(raw, located_types),
                want,
                "{raw:#x} {located_types}"
            );
        }
    }
}

#[test]
fn takes_file_is_exactly_where_report_gives_the_files_entry() {
    // C walks the XArray only where takes_file() (no PTE_DECIDED bit);
    // an entry outside it whose report() took the file's entry would be
    // reported wrong.
    let currents = [
        0,
        SOFT_DIRTY,
        PRESENT | FILE | 0x42,
        PRESENT,
        SWAP | 0x21,
        SWAP | UFFD_WP,
        SWAP | PRESENT,
        UFFD_WP,
        FILE | MMAP_EXCLUSIVE,
    ];
    for cur in currents {
        let takes = [RESIDENT, swapped_entry(1, 9), SWAPPED_NOWHERE]
            .iter()
            .any(|&slot| report(PteState::of_entry(cur), cur, slot) != cur);
        assert_eq!(takes_file(cur), takes, "{cur:#x}");
    }
}

#[test]
fn a_run_merges_every_entry_and_names_the_first_refusal() {
    let e = |index, order, kind, swap_offset| Entry {
        index,
        order,
        kind,
        swap_type: 1,
        swap_offset,
    };
    let entries = [
        e(100, 0, EntryKind::Folio, 0),
        e(103, 70, EntryKind::Swap, 5), // refused: order
        e(104, 2, EntryKind::Swap, 40),
        e(500, 0, EntryKind::Swap, 1), // outside: nothing, no error
        e(110, 0, EntryKind::Swap, 77),
    ];
    // 6.12's entries of pte_none PTEs (0, or soft-dirty), but offset 2 is
    // present and offset 10 a uffd-wp marker: the page table wins there.
    let mut pmes = [0u64; 16];
    pmes[3] = SOFT_DIRTY;
    pmes[5] = SOFT_DIRTY;
    pmes[2] = PRESENT | FILE | 0x42;
    pmes[10] = SWAP | UFFD_WP;
    let before = pmes;
    let mut r = Run::new(100, &mut pmes, SWAP_TYPES, true);
    assert_eq!(
        r.merge_all(entries.iter().map(stored)),
        Err(RecordError::Order)
    );
    let want: Vec<u64> = (0..16u64)
        .map(|i| match i {
            0 => RESIDENT,
            4 | 6 | 7 => swapped_entry(1, 40 + i - 4),
            5 => swapped_entry(1, 41) | SOFT_DIRTY,
            _ => before[i as usize],
        })
        .collect();
    assert_eq!(r.pmes(), &want[..]);
    let mut pmes = [0u64; 16];
    let mut r = Run::new(100, &mut pmes, SWAP_TYPES, true);
    assert_eq!(
        r.merge_all([entries[0], entries[2], entries[3]].iter().map(stored)),
        Ok(5)
    );
    assert_eq!(r.merge_all([]), Ok(0));
    // An order-0 entry just below the run, and at the top of the offsets
    // with the run at 0: outside, nothing written.
    let mut pmes = [0u64; 8];
    let mut r = Run::new(104, &mut pmes, SWAP_TYPES, true);
    assert_eq!(
        r.merge(&e(103, 0, EntryKind::Swap, 1)),
        Err(RecordError::Outside)
    );
    assert_eq!(
        r.merge(&e(112, 0, EntryKind::Swap, 1)),
        Err(RecordError::Outside)
    );
    assert_eq!(r.merge(&e(104, 2, EntryKind::Swap, 40)), Ok(4));
    assert_eq!(
        r.pmes(),
        &[
            swapped_entry(1, 40),
            swapped_entry(1, 41),
            swapped_entry(1, 42),
            swapped_entry(1, 43),
            0,
            0,
            0,
            0
        ]
    );
    let mut pmes = [0u64; 4];
    let mut r = Run::new(0, &mut pmes, SWAP_TYPES, true);
    assert_eq!(
        r.merge(&e(u64::MAX, 0, EntryKind::Folio, 0)),
        Err(RecordError::Outside)
    );
    assert_eq!(r.pmes(), &[0; 4]);
}

#[test]
fn a_run_equals_the_reference_slots_then_report_over_random_runs() {
    // Run::merge_all (what the kernel runs) against FileRange's slots
    // followed by report() per offset, for random entries and 6.12
    // entries (any bits: garbage too).
    let mut rng = XorShift::new(0x6d65_7267);
    let cur_pool = [
        0,
        SOFT_DIRTY,
        PRESENT | FILE | 0x42,
        SWAP | 0x21,
        UFFD_WP,
        u64::MAX,
    ];
    for _ in 0..3000 {
        let n = 1 + (rng.next() % 40) as usize;
        let first = rng.next() % 64;
        let before: Vec<u64> = (0..n)
            .map(|_| cur_pool[(rng.next() % cur_pool.len() as u64) as usize])
            .collect();
        let candidates: Vec<Entry> = (0..rng.next() % 6)
            .map(|_| Entry {
                index: rng.next() % 128,
                order: (rng.next() % 4) as u32,
                kind: if rng.next().is_multiple_of(3) {
                    EntryKind::Folio
                } else {
                    EntryKind::Swap
                },
                swap_type: (rng.next() % SWAP_TYPES as u64) as u32,
                swap_offset: rng.next() % 1000,
            })
            .collect();
        let show = !rng.next().is_multiple_of(4);
        // Types at or above this are not swap devices (MAX_SWAPFILES is
        // below SWAP_TYPES in the kernel).
        let swap_types = SWAP_TYPES - (rng.next() % 4) as u32;
        // An XArray holds one entry per index: keep the entries that do
        // not overlap an earlier one, as a walk meets them.
        let mut taken = [false; 256];
        let mut entries = Vec::new();
        for e in candidates {
            let span = 1usize << e.order;
            let start = e.index as usize & !(span - 1);
            if (start..start + span).all(|i| !taken[i]) {
                (start..start + span).for_each(|i| taken[i] = true);
                entries.push(e);
            }
        }
        let mut slots = vec![0u64; n];
        let mut reference = FileRange::new(first, &mut slots, swap_types, show);
        for e in &entries {
            let _ = reference.record(e);
        }
        let mut pmes = before.clone();
        let mut run = Run::new(first, &mut pmes, swap_types, show);
        let _ = run.merge_all(entries.iter().map(stored));
        for i in 0..n {
            let want = report(PteState::of_entry(before[i]), before[i], slots[i]);
            assert_eq!(pmes[i], want, "offset {i} of {n} from {first}: {entries:?}");
        }
    }
}

#[test]
fn a_run_of_consecutive_swap_entries_merges_as_its_entries_written_out() {
    // C's walk sends one entry for nr consecutive values at consecutive
    // indices; merged, it must give exactly what the nr single entries
    // give -- cut by the range on either side, over PTEs in every state,
    // with the location shown or not, and across the end of a swap
    // type's offsets (the next value is the next type's offset 0).
    let mut rng = XorShift::new(0x7275_6e73);
    let cur_pool = [0, SOFT_DIRTY, PRESENT | FILE | 0x42, SWAP | 0x21, UFFD_WP];
    let value_pool = [
        0,
        1,
        1000,
        MAX_SWAP_OFFSET - 3,
        SWP_OFFSET_MASK - 2,
        3 << SWP_TYPE_SHIFT | 7,
        31 << SWP_TYPE_SHIFT | 5,
    ];
    let mut n = 0;
    for _ in 0..20_000 {
        let len = 1 + (rng.next() % 24) as usize;
        let first = rng.next() % 32;
        let nr = 2 + (rng.next() % 20) as u32;
        let value = value_pool[(rng.next() % value_pool.len() as u64) as usize];
        let value = value.min((u64::MAX >> 1) - u64::from(nr));
        let run = Found {
            index: rng.next() % 48,
            order: 0,
            xa_entry: value << 1 | 1,
            nr,
        };
        let before: Vec<u64> = (0..len)
            .map(|_| cur_pool[(rng.next() % cur_pool.len() as u64) as usize])
            .collect();
        let show = !rng.next().is_multiple_of(4);
        let swap_types = SWAP_TYPES - (rng.next() % 4) as u32;
        let mut whole = before.clone();
        let got = Run::new(first, &mut whole, swap_types, show).merge_all([run]);
        let mut split = before.clone();
        let singles: Vec<Found> = (0..nr).map(|i| run.nth(i).unwrap()).collect();
        let want = Run::new(first, &mut split, swap_types, show).merge_all(singles);
        assert_eq!(whole, split, "{run:?} over {len} from {first}");
        assert_eq!(got, want, "{run:?} over {len} from {first}");
        n += usize::from(got.unwrap_or(0) > 0);
    }
    // About 40 % of the runs overlap the range: the comparison is not
    // vacuous.
    assert!(n > 5_000, "{n}");
}

#[test]
fn runs_c_never_builds_are_refused_whole() {
    let run = |index, order, xa_entry, nr| Found {
        index,
        order,
        xa_entry,
        nr,
    };
    let swap = (1 << SWP_TYPE_SHIFT | 40) << 1 | 1;
    let bad = [
        run(0, 0, swap, 0),            // no entry at all
        run(0, 0, FOLIO_PTR, 2),       // folios are never a run
        run(0, 1, swap, 2),            // nor large entries
        run(u64::MAX - 1, 0, swap, 3), // indices would wrap
        run(0, 0, u64::MAX - 2, 3),    // values would wrap
    ];
    for r in bad {
        let mut pmes = [0u64; 8];
        let got = Run::new(0, &mut pmes, SWAP_TYPES, true).merge_all([r]);
        assert_eq!(got, Err(RecordError::Entry), "{r:?}");
        assert_eq!(pmes, [0; 8], "{r:?}");
        assert_eq!(r.nth(1), None, "{r:?}");
    }
    // The one that is: four slots from offset 1 of type 1, offset 40.
    let mut pmes = [0u64; 8];
    let got = Run::new(0, &mut pmes, SWAP_TYPES, true).merge_all([run(1, 0, swap, 4)]);
    assert_eq!(got, Ok(4));
    let want: Vec<u64> = (0..8)
        .map(|i| match i {
            1..=4 => swapped_entry(1, 40 + i - 1),
            _ => 0,
        })
        .collect();
    assert_eq!(&pmes[..], &want[..]);
}

// ---------------------------------------------------------------------
// The check can fail: fills that forget the alignment of a large entry,
// let 6.12's mask wrap an offset, ignore the range's start, or miss a
// large entry's last page are rejected.

/// Takes the index the walk found an entry at as its start.
fn unaligned(first: u64, slots: &mut [u64], entries: &[Entry]) -> Result<usize, String> {
    let shifted: Vec<Entry> = entries
        .iter()
        .map(|e| {
            let start = e.index & !((1u64 << e.order) - 1);
            Entry {
                swap_offset: e.swap_offset.wrapping_sub(e.index - start),
                ..*e
            }
        })
        .collect();
    walk(first, slots, &shifted)
}

/// Writes what 6.12's `make_pme()` would for a location too large.
fn masked(first: u64, slots: &mut [u64], entries: &[Entry]) -> Result<usize, String> {
    let n = walk(first, slots, entries)?;
    for e in entries.iter().filter(|e| e.kind == EntryKind::Swap) {
        let start = e.index & !((1u64 << e.order) - 1);
        for (i, s) in slots.iter_mut().enumerate() {
            let off = first + i as u64;
            if *s == SWAPPED_NOWHERE && off >= start && off - start < 1 << e.order {
                let o = e.swap_offset.wrapping_add(off - start);
                *s = c_swap_pme(u64::from(e.swap_type), o) | FILE;
            }
        }
    }
    Ok(n)
}

/// Puts an entry's offsets at slot `offset - entry start`.
fn from_entry_start(first: u64, slots: &mut [u64], entries: &[Entry]) -> Result<usize, String> {
    let n = walk(first, slots, entries)?;
    let orig = slots.to_vec();
    for e in entries {
        let start = e.index & !((1u64 << e.order) - 1);
        if start < first {
            let skip = (first - start) as usize;
            for i in 0..slots.len() {
                slots[i] = if i + skip < orig.len() {
                    orig[i + skip]
                } else {
                    0
                };
            }
        }
    }
    Ok(n)
}

/// Misses the last page of every large entry.
fn short_by_one(first: u64, slots: &mut [u64], entries: &[Entry]) -> Result<usize, String> {
    let n = walk(first, slots, entries)?;
    for e in entries.iter().filter(|e| e.order > 0) {
        let last = (e.index | ((1u64 << e.order) - 1)).wrapping_sub(first);
        if let Some(s) = slots.get_mut(last as usize) {
            *s = 0;
        }
    }
    Ok(n)
}

#[test]
fn mutation_fills_misaligned_wrapped_shifted_or_short_are_caught() {
    for (name, f) in [
        ("taking the visited index as the start", unaligned as WalkFn),
        ("masking a location too large", masked),
        ("counting from the entry's start", from_entry_start),
        ("missing a large entry's last page", short_by_one),
    ] {
        let r = check_all_small(f);
        assert!(r.is_err(), "the checker passed a fill {name}");
        eprintln!("mutation {name}: caught: {}", r.unwrap_err());
    }
}

/// The categories an opted-in `PAGEMAP_SCAN` must give the `pte_none`
/// pages of `[first, first + len)` of `file`, from the file itself (not
/// from the entries): swapped and file-backed where a swap entry covers
/// the offset, file-backed where a folio does, nothing over a hole.
fn scan_oracle(file: &File, first: u64, len: u64) -> Vec<u64> {
    (first..first + len)
        .map(|off| match file.load(off) {
            None => 0,
            Some((_, _, EntryKind::Folio, ..)) => SCAN_FILE,
            Some((_, _, EntryKind::Swap, ..)) => SCAN_SWAPPED | SCAN_FILE,
        })
        .collect()
}

/// What the kernel computes for an opted-in scan of a range whose PTEs
/// are all none: the walk's entries merged into zeroed pagemap entries
/// (the location hidden or not: a scan gives no locations), then
/// [`scan_categories_in_place`].
fn scan(file: &File, first: u64, len: u64, show: bool) -> Result<Vec<u64>, String> {
    let mut pmes = vec![0u64; len as usize];
    let found: Vec<Found> = file.walk(first, len, false).iter().map(stored).collect();
    Run::new(first, &mut pmes, SWAP_TYPES, show)
        .merge_all(found)
        .map_err(|e| format!("{file:?} over [{first}, +{len}): {e:?}"))?;
    scan_categories_in_place(&mut pmes);
    Ok(pmes)
}

#[test]
fn a_scan_finds_swapped_and_cached_pages_exactly_where_the_file_holds_them() {
    // Every small file and range, then random files like shmem's after
    // mTHP swap-out, with the location shown and hidden.
    let mut n = 0;
    // Only files shmem can hold: swap offsets a swap entry can store.
    let storable = |f: &File| f.entries.iter().all(|e| e.4 <= SWP_OFFSET_MASK);
    for file in small_files().into_iter().filter(storable) {
        for first in 0..16u64 {
            for len in 1..=(17 - first).min(9) {
                let got = scan(&file, first, len, n % 2 == 0).unwrap();
                assert_eq!(
                    got,
                    scan_oracle(&file, first, len),
                    "{file:?} [{first}, +{len})"
                );
                n += 1;
            }
        }
    }
    let mut rng = XorShift::new(0x7363_616e);
    for _ in 0..500 {
        let mut file = File::default();
        let mut off = 0u64;
        while off < 2048 {
            let r = rng.next();
            let order = [0u32, 0, 2, 4, 9][(r % 5) as usize];
            let span = 1u64 << order;
            off = off.next_multiple_of(span);
            match (r >> 8) % 3 {
                0 => {}
                1 => file.entries.push((off, order, EntryKind::Folio, 0, 0)),
                _ => file
                    .entries
                    .push((off, order, EntryKind::Swap, 1, (r >> 20) & !(span - 1))),
            }
            off += span;
        }
        let first = rng.next() % 2048;
        let len = 1 + rng.next() % 512;
        let got = scan(&file, first, len, rng.next().is_multiple_of(2)).unwrap();
        assert_eq!(got, scan_oracle(&file, first, len));
        n += 1;
    }
    assert!(n > 10_000, "{n} ranges");
}

#[test]
fn a_scan_calls_swapped_only_what_a_read_calls_swapped_over_every_flag_combination() {
    // Every combination of the flag bits with frames: the categories
    // follow the read's entry for a pte_none page (report()), and an
    // entry no merge over pte_none entries can give adds nothing.
    for flags in 0..1u64 << (64 - PFRAME_BITS) {
        for frame in [0, 1, 0x1234, PFRAME_MASK] {
            let pme = flags << PFRAME_BITS | frame;
            let got = scan_categories(pme);
            let read = report(PteState::None, 0, pme & !SOFT_DIRTY);
            let producible = read == pme & !SOFT_DIRTY && read != 0;
            let want = match (producible, read & SWAP != 0, read & FILE != 0) {
                (false, ..) => 0,
                (true, true, _) => SCAN_SWAPPED | SCAN_FILE,
                (true, false, true) => SCAN_FILE,
                (true, false, false) => 0,
            };
            assert_eq!(got, want, "{pme:#x}");
            assert_eq!(
                got & SCAN_SWAPPED != 0,
                producible && pme & SWAP != 0,
                "{pme:#x}"
            );
            if pme & PRESENT != 0 {
                assert_eq!(got, 0, "a present entry is the PTE's: {pme:#x}");
            }
        }
    }
    // The control: a checker that took any SWAP bit as swapped would
    // call a swap PTE's entry (a decided one, never merged) swapped.
    assert_eq!(scan_categories(SWAP | UFFD_WP), 0);
    assert_eq!(scan_categories(SWAP | 0x21), 0);
    assert_eq!(
        scan_categories(swapped_entry(3, 9) | SOFT_DIRTY),
        SCAN_SWAPPED | SCAN_FILE
    );
    assert_eq!(scan_categories(SWAPPED_NOWHERE), SCAN_SWAPPED | SCAN_FILE);
}
