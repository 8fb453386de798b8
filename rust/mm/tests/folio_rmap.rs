// SPDX-License-Identifier: GPL-2.0

//! Host tests of a large folio's rmap state: the compile-time layout check,
//! the writers, `sharing` against a ground-truth count of who maps what
//! (constructed patterns, random sequences, the original series' collision
//! multiset), the reuse conditions, and readers racing real writer threads.

#![cfg(not(loom))]

mod collision;
mod fake_folio;
mod rng;

use collision::original_collision;
use fake_folio::{race_writers, FakeFolio, Mm};
use rng::XorShift;
use rust_mm_core::atomic_seqcount::NoPreempt;
use rust_mm_core::folio_rmap::{is_tracked_order, FolioRmap, Layout, MmIds, Sharing, READ_TRIES};
use rust_mm_core::rmap_id::subid::{self, DUMMY_ID, MAX_ID, MAX_VALUES};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A folio plus the ground truth of how many pages each mm maps.
struct World {
    folio: FakeFolio,
    truth: HashMap<u32, i64>,
}

impl World {
    fn new(order: u32) -> Self {
        World {
            folio: FakeFolio::new(order),
            truth: HashMap::new(),
        }
    }

    fn map(&mut self, mm: &Mm, n: i32) {
        self.folio.rmap().add::<NoPreempt>(&mm.ids(), n);
        *self.truth.entry(mm.id).or_default() += i64::from(n);
        self.truth.retain(|_, c| *c != 0);
    }

    fn expected(&self, mm: &Mm) -> Sharing {
        let total: i64 = self.truth.values().sum();
        if total == 0 {
            Sharing::Unmapped
        } else if mm.id != DUMMY_ID && self.truth.len() == 1 && self.truth.contains_key(&mm.id) {
            // Exclusive iff only mm maps it -- unless mapped more often than
            // it has pages, which the reader calls shared by definition.
            if total > self.folio.rmap().nr_pages() {
                Sharing::Shared
            } else {
                Sharing::Exclusive
            }
        } else {
            Sharing::Shared
        }
    }

    fn check(&self, mm: &Mm) {
        assert_eq!(
            self.folio.rmap().sharing(&mm.ids()),
            self.expected(mm),
            "mm {} truth {:?}",
            mm.id,
            self.truth
        );
    }
}

/// Linux 6.12's x86_64 layout: the seqcount in page[1].private, values from
/// page[2].index, order-1 folios untracked.
const X86_64: Layout = Layout {
    page_size: 64,
    seq_offset: 64 + 40,
    pair_offset: 32,
    first_value_word: 4,
    track_min_order: 2,
};

/// Linux 7.3's: the seqcount in page[1].index and value 0 in
/// page[1].private (mm IDs' words), every large order tracked.
const X86_64_7_3: Layout = Layout {
    page_size: 64,
    seq_offset: 64 + 32,
    pair_offset: 32,
    first_value_word: 3,
    track_min_order: 1,
};

#[test]
fn x86_64_layout_fits_every_class_and_bad_layouts_are_rejected() {
    const _: () = assert!(X86_64.check());
    assert_eq!(X86_64.value_offset(0), 2 * 64 + 32);
    assert_eq!(X86_64.value_offset(1), 2 * 64 + 40);
    assert_eq!(X86_64.value_offset(3), 3 * 64 + 40);
    assert_eq!(X86_64.value_offset(5), 4 * 64 + 40);
    // A pair that runs off the end of the page.
    assert!(!Layout {
        pair_offset: 56,
        ..X86_64
    }
    .check());
    // A seqcount that is not 8-byte aligned.
    assert!(!Layout {
        seq_offset: 64 + 36,
        ..X86_64
    }
    .check());
    // Every class's last value lies inside its smallest tracked folio.
    for order in 2..=subid::MAX_ORDER {
        let values = subid::class_for_order(order).unwrap().values;
        assert!(X86_64.last_value_page(values) < 1 << order, "order {order}");
    }
    // 6.12's values cannot serve order 1: page 2 is past its end.
    assert!(!Layout {
        track_min_order: 1,
        ..X86_64
    }
    .check());
}

#[test]
fn linux_7_3_layout_tracks_order_1_in_page_1() {
    const _: () = assert!(X86_64_7_3.check());
    assert_eq!(X86_64_7_3.value_offset(0), 64 + 40);
    assert_eq!(X86_64_7_3.value_offset(1), 2 * 64 + 32);
    assert_eq!(X86_64_7_3.value_offset(2), 2 * 64 + 40);
    assert_eq!(X86_64_7_3.value_offset(4), 3 * 64 + 40);
    assert_eq!(X86_64_7_3.value_offset(5), 4 * 64 + 32);
    assert!(X86_64_7_3.tracks(1) && !X86_64.tracks(1));
    assert!(X86_64_7_3.tracks(15) && !X86_64_7_3.tracks(16));
    for order in 1..=subid::MAX_ORDER {
        let values = subid::class_for_order(order).unwrap().values;
        assert!(
            X86_64_7_3.last_value_page(values) < 1 << order,
            "order {order}"
        );
    }
    // The seqcount on a value's word, or past an order-1 folio.
    assert!(!Layout {
        seq_offset: 64 + 40,
        ..X86_64_7_3
    }
    .check());
    assert!(!Layout {
        seq_offset: 2 * 64,
        ..X86_64_7_3
    }
    .check());
    // Values starting in the head page.
    assert!(!Layout {
        first_value_word: 1,
        ..X86_64_7_3
    }
    .check());
}

#[test]
fn only_orders_1_to_15_can_be_tracked() {
    assert!(!is_tracked_order(0));
    assert!((1..=15).all(is_tracked_order));
    assert!(!is_tracked_order(16));
    let f = FakeFolio::new(2);
    assert!(FolioRmap::new(0, &f).is_none());
    assert!(FolioRmap::new(16, &f).is_none());
}

#[test]
fn reset_clears_recycled_garbage_to_unmapped() {
    let f = FakeFolio::new(9);
    assert_eq!(f.mapcount.load(Ordering::Relaxed), -1);
    assert!(f
        .values
        .iter()
        .take(4)
        .all(|v| v.load(Ordering::Relaxed) == 0));
    // Only the class's values are touched (order 9 has 4).
    assert_eq!(f.values[4].load(Ordering::Relaxed), 0xdead_beef);
    assert_eq!(f.rmap().sharing(&Mm::new(7).ids()), Sharing::Unmapped);
}

#[test]
fn one_mm_mapping_part_or_all_pages_is_exclusive_and_a_second_mm_makes_it_shared() {
    let (a, b) = (Mm::new(5), Mm::new(6));
    for order in 2..=15 {
        let mut w = World::new(order);
        let nr = 1i32 << order;
        w.map(&a, 1);
        w.check(&a);
        w.check(&b);
        w.map(&a, nr - 1);
        w.check(&a);
        w.map(&b, 1);
        w.check(&a);
        w.check(&b);
        w.map(&a, -nr);
        w.check(&b);
        w.map(&b, -1);
        w.check(&a);
    }
}

#[test]
fn more_mappings_than_pages_is_shared_even_for_one_mm() {
    let a = Mm::new(77);
    let mut w = World::new(2);
    w.map(&a, 4);
    assert_eq!(w.folio.rmap().sharing(&a.ids()), Sharing::Exclusive);
    w.map(&a, 1);
    assert_eq!(w.folio.rmap().sharing(&a.ids()), Sharing::Shared);
}

#[test]
fn dummy_id_mm_is_never_exclusive_and_does_not_hide_other_mms() {
    let d = Mm::new(DUMMY_ID);
    let a = Mm::new(1);
    let mut w = World::new(4);
    w.map(&d, 3);
    // A second dummy mm would add the same zeros: never call it exclusive.
    assert_eq!(w.folio.rmap().sharing(&d.ids()), Sharing::Shared);
    assert_eq!(w.folio.rmap().sharing(&a.ids()), Sharing::Shared);
    w.map(&a, 2);
    assert_eq!(w.folio.rmap().sharing(&a.ids()), Sharing::Shared);
    w.map(&d, -3);
    assert_eq!(w.folio.rmap().sharing(&a.ids()), Sharing::Exclusive);
}

#[test]
fn set_new_is_exclusive_to_its_mm_like_n_single_adds() {
    let a = Mm::new(0x00ab_cdef);
    for order in [2, 4, 9, 10, 13] {
        let f = FakeFolio::new(order);
        let g = FakeFolio::new(order);
        let nr = 1 << order;
        f.rmap().set_new::<NoPreempt>(&a.ids(), nr);
        for _ in 0..nr {
            g.rmap().add::<NoPreempt>(&a.ids(), 1);
        }
        assert_eq!(f.rmap().snapshot(), g.rmap().snapshot(), "order {order}");
        assert_eq!(f.rmap().sharing(&a.ids()), Sharing::Exclusive);
    }
}

#[test]
fn add_gives_the_same_values_exclusive_or_shared_for_every_tracked_order() {
    // `add` has one straight-line body per value count and one branch per
    // entry mode: check every order (so every value count) in both modes
    // against the definition value[k] = sum over mms of count * subid[k].
    let a = Mm::new(0x00ab_cdef);
    let b = Mm::new(0x0000_0007);
    for order in 2..=subid::MAX_ORDER {
        let excl = FakeFolio::new(order);
        let shared = FakeFolio::new(order);
        let ops = [(&a, 5), (&b, 3), (&a, -2), (&b, 1)];
        for (mm, n) in ops {
            excl.rmap().add::<NoPreempt>(&mm.ids(), n);
        }
        // Another writer inside: every `add` enters as a shared writer.
        let other = shared.seq.write_shared::<NoPreempt>();
        for (mm, n) in ops {
            shared.rmap().add::<NoPreempt>(&mm.ids(), n);
        }
        drop(other);
        let (off, nr) = subid::ORDER_SUBIDS[order as usize];
        let mut want = [0u64; MAX_VALUES];
        for (k, w) in want.iter_mut().enumerate().take(nr) {
            *w = a.subids.as_slice()[off + k]
                .wrapping_mul(3)
                .wrapping_add(b.subids.as_slice()[off + k].wrapping_mul(4));
        }
        let snap = excl.rmap().snapshot().expect("no writer inside");
        assert_eq!(snap.mapcount, 7, "order {order}");
        assert_eq!(snap.values, want, "order {order}");
        assert_eq!(shared.rmap().snapshot(), Some(snap), "order {order}");
    }
}

/// What a folio's values must be after `ops`, computed from every sub-ID of
/// the class (no live count involved).
fn full_update_values(order: u32, ops: &[(&Mm, i32)]) -> [u64; MAX_VALUES] {
    let (off, nr) = subid::ORDER_SUBIDS[order as usize];
    let mut want = [0u64; MAX_VALUES];
    for (mm, n) in ops {
        for (k, w) in want.iter_mut().enumerate().take(nr) {
            let s = mm.subids.as_slice()[off + k];
            *w = w.wrapping_add(s.wrapping_mul(i64::from(*n) as u64));
        }
    }
    want
}

/// IDs whose live counts differ per class: small (the benchmark's), 12-bit
/// (a busy machine's), a 0 chunk in the middle, the largest, the dummy.
const LIVE_MIX: [u32; 8] = [1, 63, 64, 0x0abc, 0x1001, 0x0004_0000, MAX_ID, DUMMY_ID];

#[test]
fn skipping_zero_subids_gives_the_values_of_a_full_update_in_both_modes() {
    for order in 2..=subid::MAX_ORDER {
        for (i, &a) in LIVE_MIX.iter().enumerate() {
            let (a, b) = (Mm::new(a), Mm::new(LIVE_MIX[(i + 3) % LIVE_MIX.len()]));
            let ops = [(&a, 7), (&b, 2), (&a, -3), (&b, -1), (&a, 1)];
            let excl = FakeFolio::new(order);
            let shared = FakeFolio::new(order);
            let other = shared.seq.write_shared::<NoPreempt>();
            for (mm, n) in ops {
                excl.rmap().add::<NoPreempt>(&mm.ids(), n);
                shared.rmap().add::<NoPreempt>(&mm.ids(), n);
            }
            drop(other);
            let want = full_update_values(order, &ops);
            let snap = excl.rmap().snapshot().expect("no writer inside");
            assert_eq!(snap.values, want, "order {order} ids {} {}", a.id, b.id);
            assert_eq!(snap.mapcount, 6);
            assert_eq!(shared.rmap().snapshot(), Some(snap), "order {order}");
            // 6 mappings left, 5 by a, 1 by b: shared unless b is a.
            let expect = if b.id == a.id && a.id != DUMMY_ID && 6 <= 1 << order {
                Sharing::Exclusive
            } else {
                Sharing::Shared
            };
            assert_eq!(excl.rmap().sharing(&a.ids()), expect);
        }
    }
}

/// The control: live counts must never be short. An mm whose cached count
/// leaves out its last non-zero sub-ID leaves that value short, and then an
/// mm whose ID is the low chunks of the first one's reads a folio the
/// first one maps as its own -- the leak the exact counts prevent.
#[test]
fn a_short_live_count_would_make_a_foreign_mapping_look_exclusive() {
    let order = 9;
    let owner = Mm::new(1 << 18 | 0x41); // chunks 1, 1, 0, 1 (6 bits each)
    let low = Mm::new(0x0000_0041); // chunks 1, 1, 0, 0
    assert_eq!(owner.subids.live()[order as usize], 4);
    let mut short = *owner.subids.live();
    short[order as usize] = 2;
    let short_ids = MmIds {
        live: &short,
        ..owner.ids()
    };
    let f = FakeFolio::new(order);
    f.rmap().add::<NoPreempt>(&short_ids, 3);
    let values = f.rmap().snapshot().unwrap().values;
    assert_ne!(values, full_update_values(order, &[(&owner, 3)]));
    assert_eq!(f.rmap().sharing(&low.ids()), Sharing::Exclusive, "the leak");
    // With the real count the same mapping reads shared for `low`.
    let g = FakeFolio::new(order);
    g.rmap().add::<NoPreempt>(&owner.ids(), 3);
    assert_eq!(g.rmap().sharing(&low.ids()), Sharing::Shared);
    assert_eq!(g.rmap().sharing(&owner.ids()), Sharing::Exclusive);
}

/// The dummy mm (no live values) changes the mapcount and adds 0 to the
/// values; readers never call it exclusive, and it does not hide others.
#[test]
fn the_dummy_mms_updates_change_the_mapcount_only() {
    let other = Mm::new(0x0012_3456);
    for order in 2..=subid::MAX_ORDER {
        let f = FakeFolio::new(order);
        f.rmap().add::<NoPreempt>(&MmIds::dummy(), 3);
        let snap = f.rmap().snapshot().unwrap();
        assert_eq!((snap.mapcount, snap.values), (3, [0; MAX_VALUES]));
        assert_eq!(f.rmap().sharing(&MmIds::dummy()), Sharing::Shared);
        f.rmap().add::<NoPreempt>(&other.ids(), 1);
        assert_eq!(f.rmap().sharing(&other.ids()), Sharing::Shared);
        f.rmap().add::<NoPreempt>(&MmIds::dummy(), -3);
        assert_eq!(f.rmap().sharing(&other.ids()), Sharing::Exclusive);
    }
}

/// A live count above the class's value count (a corrupted cache) is
/// clamped: no value beyond the class is touched.
#[test]
fn a_live_count_above_the_class_is_clamped_to_the_class() {
    let mm = Mm::new(MAX_ID);
    let mut long = *mm.subids.live();
    long[2] = u8::MAX;
    let ids = MmIds {
        live: &long,
        ..mm.ids()
    };
    let f = FakeFolio::new(2);
    f.rmap().add::<NoPreempt>(&ids, 1);
    let values: Vec<u64> = f.values.iter().map(|v| v.load(Ordering::Relaxed)).collect();
    // Order 2 has one value; the words after it keep FakeFolio's garbage.
    assert_eq!(values[1..], [0xdead_beef; MAX_VALUES - 1]);
    assert_eq!(f.rmap().sharing(&mm.ids()), Sharing::Exclusive);
}

#[test]
fn random_map_unmap_sequences_match_the_ground_truth() {
    let mut rng = XorShift::new(0x0005_eedf_0110);
    for round in 0..400 {
        let order = 2 + (rng.next() % 14) as u32;
        let nr = 1i64 << order;
        let mms: Vec<Mm> = (0..1 + rng.next() % 4)
            .map(|_| {
                // Full-width IDs, and small ones with fewer live values.
                let bits = [24, 24, 12, 6][(rng.next() % 4) as usize];
                Mm::new((rng.next() % (1 << bits)) as u32)
            })
            .collect();
        let mut w = World::new(order);
        for _ in 0..60 {
            let i = (rng.next() % mms.len() as u64) as usize;
            let mapped = *w.truth.get(&mms[i].id).unwrap_or(&0);
            let total: i64 = w.truth.values().sum();
            let unmap = mapped > 0 && rng.next().is_multiple_of(3);
            let n = if unmap {
                -(1 + (rng.next() % mapped as u64) as i64)
            } else {
                // Stay within nr_pages mappings most of the time, sometimes
                // beyond (obviously shared).
                let room = (nr + 2 - total).max(1);
                1 + (rng.next() % room as u64) as i64
            };
            w.map(&mms[i], n as i32);
            for m in &mms {
                w.check(m);
            }
        }
        let _ = round;
    }
}

#[test]
fn original_collision_multiset_mapped_into_an_order_9_folio_reads_shared() {
    let c = original_collision();
    let (owner, mappings) = (c.owner, c.mappings);
    let mut per_mm: HashMap<u32, i32> = HashMap::new();
    for m in &mappings {
        *per_mm.entry(*m).or_default() += 1;
    }
    assert!(per_mm.len() > 1 && per_mm.len() < 70);
    for order in 6..=9 {
        let mut w = World::new(order);
        for (&id, &n) in &per_mm {
            w.map(&Mm::new(id), n);
        }
        let owner = Mm::new(owner);
        assert_eq!(w.folio.rmap().sharing(&owner.ids()), Sharing::Shared);
        w.check(&owner);
        // Nor may the owner reuse it on a write fault.
        w.folio.refcount.store(70, Ordering::Relaxed);
        assert!(!w.folio.rmap().may_reuse(&owner.ids(), &w.folio.counts()));
    }
}

#[test]
fn reuse_needs_refcount_equal_mapcount_no_pmd_mapping_and_exclusivity() {
    let (a, b) = (Mm::new(42), Mm::new(43));
    let mut w = World::new(9);
    w.map(&a, 512);
    w.folio.refcount.store(512, Ordering::Relaxed);
    assert!(w.folio.rmap().may_reuse(&a.ids(), &w.folio.counts()));
    assert!(!w.folio.rmap().may_reuse(&b.ids(), &w.folio.counts()));
    // A GUP pin, swap cache or LRU batch reference.
    w.folio.refcount.store(513, Ordering::Relaxed);
    assert!(!w.folio.rmap().may_reuse(&a.ids(), &w.folio.counts()));
    w.folio.refcount.store(512, Ordering::Relaxed);
    // PMD-mapped somewhere.
    w.folio.entire.store(0, Ordering::Relaxed);
    assert!(!w.folio.rmap().may_reuse(&a.ids(), &w.folio.counts()));
    w.folio.entire.store(-1, Ordering::Relaxed);
    // Another mm still maps one page.
    w.map(&b, 1);
    w.folio.refcount.store(513, Ordering::Relaxed);
    assert!(!w.folio.rmap().may_reuse(&a.ids(), &w.folio.counts()));
    w.map(&b, -1);
    w.folio.refcount.store(512, Ordering::Relaxed);
    assert!(w.folio.rmap().may_reuse(&a.ids(), &w.folio.counts()));
}

#[test]
fn a_writer_inside_means_copy_and_readers_give_up_as_shared() {
    let a = Mm::new(9);
    let mut w = World::new(4);
    w.map(&a, 3);
    w.folio.refcount.store(3, Ordering::Relaxed);
    let guard = w.folio.seq.write::<NoPreempt>();
    assert!(!w.folio.rmap().may_reuse(&a.ids(), &w.folio.counts()));
    assert_eq!(w.folio.rmap().sharing(&a.ids()), Sharing::GaveUp);
    assert!(Sharing::GaveUp.maybe_shared());
    drop(guard);
    assert_eq!(w.folio.rmap().sharing(&a.ids()), Sharing::Exclusive);
}

// The reader makes at least one attempt before it gives up.
const _: () = assert!(READ_TRIES >= 1);

#[test]
fn readers_racing_writer_threads_never_see_a_foreign_mapping_as_exclusive() {
    // mm B keeps one page mapped throughout; two threads map and unmap
    // pages for mm A (exclusive and shared write sections interleave).
    // A reader asking for A must never get "exclusive".
    let f = Arc::new(FakeFolio::new(9));
    let a = Arc::new(Mm::new(0x0012_3456));
    let b = Mm::new(0x0065_4321);
    f.rmap().add::<NoPreempt>(&b.ids(), 1);
    race_writers(&f, &a, || {
        assert_ne!(f.rmap().sharing(&a.ids()), Sharing::Exclusive);
    });
    // Writers left: exactly B's page remains.
    assert_eq!(f.rmap().sharing(&b.ids()), Sharing::Exclusive);
    assert_eq!(f.rmap().snapshot().unwrap().mapcount, 1);
}
