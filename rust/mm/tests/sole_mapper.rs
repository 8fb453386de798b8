// SPDX-License-Identifier: GPL-2.0

//! Host tests of the mm-free reader (Linux 7.3's
//! `folio_maybe_mapped_shared(folio)`): `subid::values_single_owner` on
//! constructed cases, exhaustively against a brute-force model for small
//! classes, on random configurations and on garbage; and
//! `FolioRmap::sole_mapper` on a folio, including the double fork where
//! only the grandchild keeps its mappings.

#![cfg(not(loom))]

mod collision;
mod fake_folio;
mod rng;

use collision::original_collision;
use fake_folio::{race_writers, FakeFolio, Mm};
use rng::XorShift;
use rust_mm_core::atomic_seqcount::NoPreempt;
use rust_mm_core::folio_rmap::{MmIds, Sharing, TRACK_MIN_ORDER};
use rust_mm_core::rmap_id::subid::{
    class_for_order, values_match, values_single_owner, Class, SubIds, CLASSES, DUMMY_ID, ID_BITS,
    MAX_ID, MAX_ORDER, MAX_VALUES, MIN_ORDER,
};
use std::collections::HashMap;
use std::sync::Arc;

// ---------------------------------------------------------------------------
// Helpers

/// The values of a folio of `order` after each `(sub-IDs, count)` mm mapped
/// `count` pages, computed as `FolioRmap::add` does: `count * subid_j`
/// added to value `j`, wrapping.
fn values_of(order: u32, mms: &[(&SubIds, u64)]) -> Vec<u64> {
    let class = class_for_order(order).unwrap();
    let mut values = vec![0u64; class.values];
    for &(s, count) in mms {
        for (v, &sub) in values.iter_mut().zip(s.for_order(order).unwrap()) {
            *v = v.wrapping_add(sub.wrapping_mul(count));
        }
    }
    values
}

/// The brute-force model: exactly one distinct mm maps the folio, and its
/// ID is not the dummy. The same real ID twice is the same mm (IDs are
/// unique among mms with mappings); each dummy entry is an mm of its own.
fn model_single_owner(mms: &[(u32, u64)]) -> bool {
    let mut owners: Vec<u32> = Vec::new();
    let mut dummies = 0;
    for &(id, count) in mms {
        if count == 0 {
            continue;
        }
        if id == DUMMY_ID {
            dummies += 1;
        } else if !owners.contains(&id) {
            owners.push(id);
        }
    }
    dummies == 0 && owners.len() == 1
}

/// `values_single_owner` written differently: every digit extracted with
/// 128-bit powers of the base, the value bounded by `(P + 1)^width`.
fn reference_single_owner(class: &Class, n: u64, values: &[u64]) -> bool {
    if n == 0 || n > class.p || values.len() != class.values {
        return false;
    }
    let base = u128::from(class.p) + 1;
    let mut saw_n = false;
    for (j, &v) in values.iter().enumerate() {
        let width = class.chunks[j].bits;
        if u128::from(v) >= base.pow(width) {
            return false;
        }
        for i in 0..width {
            let digit = (u128::from(v) / base.pow(i)) % base;
            if digit == u128::from(n) {
                saw_n = true;
            } else if digit != 0 {
                return false;
            }
        }
    }
    saw_n
}

/// `(P + 1)^i` in 64 bits (only asked for powers that fit).
fn power(class: &Class, i: u32) -> u64 {
    (class.p + 1).checked_pow(i).unwrap()
}

/// The largest order of every class, plus order 2 (the smallest tracked).
fn orders_of_every_class() -> Vec<u32> {
    let mut orders: Vec<u32> = CLASSES.iter().map(|c| c.max_order).collect();
    orders.push(2);
    orders
}

// ---------------------------------------------------------------------------
// (a) Unit cases of values_single_owner

#[test]
fn one_mm_with_a_real_id_is_the_single_owner_for_every_count_up_to_p() {
    for order in MIN_ORDER..=MAX_ORDER {
        let class = class_for_order(order).unwrap();
        for id in [1, 2, 3, 63, 64, 0x1001, 0x0012_3456, 0x00fc_0000, MAX_ID] {
            let s = SubIds::new(id).unwrap();
            for n in [1, 2, 3, class.p / 2, class.p - 1, class.p] {
                let values = values_of(order, &[(&s, n)]);
                assert!(
                    values_single_owner(class, n, &values),
                    "order {order} id {id:#x} n {n}"
                );
                // And the mm-specific reader agrees.
                assert!(values_match(n, &values, s.for_order(order).unwrap()));
            }
        }
    }
}

#[test]
fn two_mms_are_never_a_single_owner() {
    for order in orders_of_every_class() {
        let class = class_for_order(order).unwrap();
        for (a, b) in [
            (1, 2),
            (1, 3),
            (3, 1),
            (0x1001, 0x0001),
            (0x00fc_0000, 0x0004_0000),
            (MAX_ID, MAX_ID - 1),
            (MAX_ID, 1),
        ] {
            let (sa, sb) = (SubIds::new(a).unwrap(), SubIds::new(b).unwrap());
            for (ka, kb) in [(1, 1), (1, class.p - 1), (class.p / 2, class.p / 2)] {
                let values = values_of(order, &[(&sa, ka), (&sb, kb)]);
                assert!(
                    !values_single_owner(class, ka + kb, &values),
                    "order {order} ids {a:#x}/{b:#x} counts {ka}/{kb}"
                );
            }
        }
    }
}

#[test]
fn only_dummy_mappings_are_not_a_single_owner() {
    let dummy = SubIds::new(DUMMY_ID).unwrap();
    for order in orders_of_every_class() {
        let class = class_for_order(order).unwrap();
        for n in [1, 2, class.p] {
            let values = values_of(order, &[(&dummy, n)]);
            assert!(values.iter().all(|&v| v == 0));
            assert!(
                !values_single_owner(class, n, &values),
                "order {order} n {n}"
            );
        }
    }
}

#[test]
fn one_real_and_one_dummy_mm_are_not_a_single_owner() {
    let dummy = SubIds::new(DUMMY_ID).unwrap();
    for order in orders_of_every_class() {
        let class = class_for_order(order).unwrap();
        for id in [1, 0x0012_3456, MAX_ID] {
            let s = SubIds::new(id).unwrap();
            for (k, d) in [(1, 1), (class.p - 1, 1), (1, class.p - 1)] {
                let values = values_of(order, &[(&s, k), (&dummy, d)]);
                assert!(
                    !values_single_owner(class, k + d, &values),
                    "order {order} id {id:#x} {k}+{d}"
                );
                // Without the dummy's mappings in the mapcount, the values
                // are the real mm's alone.
                assert!(values_single_owner(class, k, &values));
            }
        }
    }
}

#[test]
fn mapcount_p_is_accepted_and_p_plus_1_is_not() {
    for class in CLASSES.iter() {
        let order = class.max_order;
        let s = SubIds::new(MAX_ID).unwrap();
        // n = P of the all-ones ID: the largest sums there are, no overflow.
        let values = values_of(order, &[(&s, class.p)]);
        assert!(values_single_owner(class, class.p, &values));
        // n = P + 1 by the same mm: refused whatever the values (computed
        // wrapping, as the kernel would).
        let values = values_of(order, &[(&s, class.p + 1)]);
        assert!(!values_single_owner(class, class.p + 1, &values));
        // n = P + 1 of ID 1: digit 0 would be P + 1, i.e. carries into
        // digit 1; refused by the bound before the digits are looked at.
        let one = SubIds::new(1).unwrap();
        let values = values_of(order, &[(&one, class.p + 1)]);
        assert_eq!(values[0], power(class, 1));
        assert!(!values_single_owner(class, class.p + 1, &values));
        // And with a mapcount of P those carried values are no owner's.
        assert!(!values_single_owner(class, class.p, &values));
        assert!(!values_single_owner(class, u64::MAX, &values));
    }
}

#[test]
fn a_corrupted_value_whose_digit_exceeds_p_is_refused() {
    for order in orders_of_every_class() {
        let class = class_for_order(order).unwrap();
        let s = SubIds::new(MAX_ID).unwrap();
        for n in [1, 2, class.p - 1, class.p] {
            let good = values_of(order, &[(&s, n)]);
            assert!(values_single_owner(class, n, &good));
            for j in 0..class.values {
                for i in 0..class.chunks[j].bits {
                    // Digit i raised by P + 1 - n to P + 1: it carries, so
                    // digit i reads 0 and digit i + 1 reads n + 1 (or, at
                    // the top, the value overflows the chunk's width).
                    let mut bad = good.clone();
                    bad[j] = bad[j].wrapping_add((class.p + 1 - n) * power(class, i));
                    assert!(
                        !values_single_owner(class, n, &bad),
                        "order {order} n {n} value {j} digit {i}"
                    );
                    // A digit of n + 1 in place of n (for n = P: P + 1,
                    // carrying through every digit above).
                    let mut bad = good.clone();
                    bad[j] = bad[j].wrapping_add(power(class, i));
                    assert!(!values_single_owner(class, n, &bad));
                    // A digit of n - 1: no owner's for n >= 2; for n = 1
                    // it is the string of the ID without bit i, whose
                    // owner it then rightly names.
                    let mut bad = good.clone();
                    bad[j] = bad[j].wrapping_sub(power(class, i));
                    assert_eq!(values_single_owner(class, n, &bad), n == 1);
                }
            }
        }
    }
}

#[test]
fn a_value_with_bits_above_its_top_digit_is_refused() {
    for order in orders_of_every_class() {
        let class = class_for_order(order).unwrap();
        for id in [1, MAX_ID] {
            let s = SubIds::new(id).unwrap();
            let n = 1;
            let good = values_of(order, &[(&s, n)]);
            for j in 0..class.values {
                let width = class.chunks[j].bits;
                let mut bad = good.clone();
                bad[j] += power(class, width);
                assert!(
                    !values_single_owner(class, n, &bad),
                    "order {order} value {j}"
                );
                let mut bad = good.clone();
                bad[j] |= 1 << 63;
                assert!(!values_single_owner(class, n, &bad));
                let mut bad = good.clone();
                bad[j] = u64::MAX;
                assert!(!values_single_owner(class, n, &bad));
            }
        }
    }
}

#[test]
fn degenerate_input_is_refused_without_panicking() {
    for class in CLASSES.iter() {
        let s = SubIds::new(1).unwrap();
        let values = values_of(class.max_order, &[(&s, 1)]);
        assert!(values_single_owner(class, 1, &values));
        assert!(!values_single_owner(class, 0, &values));
        assert!(!values_single_owner(class, 0, &vec![0; class.values]));
        assert!(!values_single_owner(class, 1, &values[..class.values - 1]));
        let mut longer = values.clone();
        longer.push(0);
        assert!(!values_single_owner(class, 1, &longer));
        assert!(!values_single_owner(class, 1, &[]));
        assert!(!values_single_owner(
            class,
            u64::MAX,
            &vec![u64::MAX; class.values]
        ));
        assert!(!values_single_owner(class, 1, &[u64::MAX; MAX_VALUES + 1]));
    }
    // A class nobody builds: value count beyond the chunk array, P of 0 or
    // u64::MAX. Refused, not a panic.
    let mut weird = CLASSES[0];
    weird.values = MAX_VALUES + 1;
    assert!(!values_single_owner(&weird, 1, &[1; MAX_VALUES + 1]));
    let mut weird = CLASSES[0];
    weird.p = 0;
    assert!(!values_single_owner(&weird, 1, &[1]));
    assert!(!values_single_owner(&weird, 0, &[0]));
    let mut weird = CLASSES[0];
    weird.p = u64::MAX;
    assert!(!values_single_owner(&weird, 1, &[u64::MAX]));
    assert!(!values_single_owner(&weird, u64::MAX, &[u64::MAX]));
}

#[test]
fn small_ids_leave_the_high_values_zero_and_still_count_as_the_owner() {
    // An ID below 64 has only its first value live in every class with
    // more than one; the rest stay 0, which the digits accept.
    for class in CLASSES.iter().filter(|c| c.values > 1) {
        let order = class.max_order;
        let s = SubIds::new(5).unwrap();
        assert_eq!(s.live()[order as usize], 1);
        let values = values_of(order, &[(&s, 3)]);
        assert!(values[1..].iter().all(|&v| v == 0));
        assert!(values_single_owner(class, 3, &values));
    }
}

#[test]
fn the_original_collision_multiset_has_no_single_owner_in_our_classes() {
    let c = original_collision();
    let n = c.mappings.len() as u64;
    for order in 6..=9 {
        let class = class_for_order(order).unwrap();
        let subids: Vec<SubIds> = c
            .mappings
            .iter()
            .map(|&m| SubIds::new(m).unwrap())
            .collect();
        let mms: Vec<(&SubIds, u64)> = subids.iter().map(|s| (s, 1)).collect();
        assert!(!values_single_owner(class, n, &values_of(order, &mms)));
        let owner = SubIds::new(c.owner).unwrap();
        assert!(values_single_owner(
            class,
            n,
            &values_of(order, &[(&owner, n)])
        ));
    }
}

// ---------------------------------------------------------------------------
// (b) Exhaustive against the model

/// For `order`, every multiset of up to three mms from `ids` and every
/// per-mm count in `counts` (0 included) with total at most P: the function
/// equals the model, and when it says "one owner", that owner's own
/// `values_match` agrees. Returns the number of cases.
fn exhaustive(order: u32, ids: &[u32], counts: &[u64]) -> u64 {
    let class = class_for_order(order).unwrap();
    let subids: Vec<SubIds> = ids.iter().map(|&id| SubIds::new(id).unwrap()).collect();
    let mut cases = 0u64;
    let k = ids.len();
    for a in 0..k {
        for b in a..=k {
            for c in b..=k {
                // Index k stands for "no mm": multisets of one, two, three.
                let picked: Vec<usize> = [a, b, c].into_iter().filter(|&i| i < k).collect();
                let mut cs = vec![0usize; picked.len()];
                loop {
                    let n: u64 = cs.iter().map(|&i| counts[i]).sum();
                    if n <= class.p {
                        let mms: Vec<(u32, u64)> = picked
                            .iter()
                            .zip(&cs)
                            .map(|(&m, &ci)| (ids[m], counts[ci]))
                            .collect();
                        let sub: Vec<(&SubIds, u64)> = picked
                            .iter()
                            .zip(&cs)
                            .map(|(&m, &ci)| (&subids[m], counts[ci]))
                            .collect();
                        let values = values_of(order, &sub);
                        let want = model_single_owner(&mms);
                        let got = values_single_owner(class, n, &values);
                        assert_eq!(got, want, "order {order} mms {mms:?} values {values:?}");
                        if got {
                            let (owner, _) = sub.iter().find(|(_, ct)| *ct != 0).unwrap();
                            assert!(values_match(n, &values, owner.for_order(order).unwrap()));
                        }
                        cases += 1;
                    }
                    // Next count tuple (odometer).
                    let mut i = 0;
                    while i < cs.len() {
                        cs[i] += 1;
                        if cs[i] < counts.len() {
                            break;
                        }
                        cs[i] = 0;
                        i += 1;
                    }
                    if i == cs.len() {
                        break;
                    }
                }
            }
        }
    }
    cases
}

/// The dummy, small IDs, IDs with high chunk bits, IDs that are unions or
/// near-misses of each other, and the largest.
fn id_set() -> Vec<u32> {
    vec![
        DUMMY_ID,
        1,
        2,
        3,
        64,
        65,
        0x0fff,
        0x1000,
        0x1001,
        0x00fc_0000,
        0x0080_0000,
        0x0080_0001,
        0x00ff_f000,
        MAX_ID - 1,
        MAX_ID,
    ]
}

#[test]
fn exhaustive_order_2_every_multiset_of_three_mms_matches_the_model() {
    // One value of 24 digits, P = 4: a larger ID set, every count.
    let mut ids = id_set();
    for bit in 0..ID_BITS {
        ids.push(1 << bit);
        ids.push(MAX_ID ^ (1 << bit));
    }
    ids.sort_unstable();
    ids.dedup();
    let p = class_for_order(2).unwrap().p;
    let counts: Vec<u64> = (0..=p).collect();
    let cases = exhaustive(2, &ids, &counts);
    eprintln!("order 2: {cases} cases");
    assert!(cases > 500_000, "only {cases}");
}

#[test]
fn exhaustive_orders_3_and_4_every_multiset_of_three_mms_matches_the_model() {
    // Two values of 12 digits, P = 32: every count.
    for order in [3, 4] {
        let p = class_for_order(order).unwrap().p;
        let counts: Vec<u64> = (0..=p).collect();
        let cases = exhaustive(order, &id_set(), &counts);
        eprintln!("order {order}: {cases} cases");
        assert!(cases > 3_000_000, "only {cases}");
    }
}

#[test]
fn exhaustive_order_9_on_a_small_id_set_and_edge_counts_matches_the_model() {
    // Four values of 6 digits, P = 1024: too many counts for three mms, so
    // a set around the edges (1, P/3, P/2, P - 1, P) for those; every count
    // for one mm and for two.
    let ids = [DUMMY_ID, 1, 63, 0x1000, 0x00fc_0000, 0x0004_0041, MAX_ID];
    let counts = [
        0, 1, 2, 3, 7, 100, 255, 256, 257, 341, 342, 511, 512, 513, 683, 1000, 1021, 1022, 1023,
        1024,
    ];
    let cases = exhaustive(9, &ids, &counts);
    let class = class_for_order(9).unwrap();
    let p = class.p;
    let mut full = 0u64;
    for (a, b) in [(1, 2), (1, MAX_ID), (0x00fc_0000, MAX_ID), (DUMMY_ID, 1)] {
        let (sa, sb) = (SubIds::new(a).unwrap(), SubIds::new(b).unwrap());
        for ka in 0..=p {
            for kb in 0..=p - ka {
                let values = values_of(9, &[(&sa, ka), (&sb, kb)]);
                let want = model_single_owner(&[(a, ka), (b, kb)]);
                assert_eq!(
                    values_single_owner(class, ka + kb, &values),
                    want,
                    "{a:#x} x {ka}, {b:#x} x {kb}"
                );
                full += 1;
            }
        }
    }
    eprintln!("order 9: {cases} edge-count cases, {full} all-count pairs");
    assert!(cases > 100_000, "only {cases}");
}

// ---------------------------------------------------------------------------
// (c) Random configurations and garbage

fn random_id(rng: &mut XorShift) -> u32 {
    match rng.next() % 8 {
        0 => DUMMY_ID,
        1 => 1 + (rng.next() % 64) as u32,
        2 => MAX_ID,
        3 => (rng.next() as u32 & MAX_ID) & !0xfff, // high chunk bits only
        4 => 1 << (rng.next() % u64::from(ID_BITS)),
        _ => rng.next() as u32 & MAX_ID,
    }
}

#[test]
fn random_configurations_match_the_model() {
    let mut rng = XorShift::new(0x5013_0e4e);
    let mut owners = 0u64;
    const ITERATIONS: u64 = 300_000;
    for it in 0..ITERATIONS {
        let order = MIN_ORDER + (rng.next() % u64::from(MAX_ORDER - MIN_ORDER + 1)) as u32;
        let class = class_for_order(order).unwrap();
        let nr_mms = 1 + (rng.next() % 4) as usize;
        let mut ids: Vec<u32> = (0..nr_mms).map(|_| random_id(&mut rng)).collect();
        // Often the same mm again (a second mapping of the same process),
        // or an ID one bit away from the first.
        if nr_mms > 1 && it % 3 == 0 {
            ids[1] = ids[0];
        }
        if nr_mms > 1 && it % 5 == 0 {
            ids[1] = ids[0] ^ (1 << (rng.next() % u64::from(ID_BITS)));
        }
        // Total up to P, sometimes a little above.
        let limit = if it % 10 == 0 { class.p + 3 } else { class.p };
        let mut left = rng.next() % (limit + 1);
        let mut mms: Vec<(u32, u64)> = Vec::new();
        for (i, &id) in ids.iter().enumerate() {
            let c = if i + 1 == ids.len() {
                left
            } else {
                rng.next() % (left + 1)
            };
            left -= c;
            mms.push((id, c));
        }
        let n: u64 = mms.iter().map(|m| m.1).sum();
        let subids: Vec<SubIds> = mms.iter().map(|m| SubIds::new(m.0).unwrap()).collect();
        let sub: Vec<(&SubIds, u64)> = subids.iter().zip(&mms).map(|(s, m)| (s, m.1)).collect();
        let values = values_of(order, &sub);
        let want = n <= class.p && model_single_owner(&mms);
        let got = values_single_owner(class, n, &values);
        assert_eq!(got, want, "order {order} mms {mms:?}");
        assert_eq!(got, reference_single_owner(class, n, &values));
        owners += u64::from(got);
    }
    eprintln!("{ITERATIONS} random configurations, {owners} with one owner");
    assert!(owners > ITERATIONS / 10 && owners < ITERATIONS * 9 / 10);
}

#[test]
fn random_garbage_never_panics_and_matches_the_digit_reference() {
    let mut rng = XorShift::new(0x6a5b_a6e5);
    const ITERATIONS: u64 = 300_000;
    let mut accepted = 0u64;
    for it in 0..ITERATIONS {
        let order = MIN_ORDER + (rng.next() % u64::from(MAX_ORDER - MIN_ORDER + 1)) as u32;
        let class = class_for_order(order).unwrap();
        let n = match it % 4 {
            0 => rng.next(),
            1 => rng.next() % (class.p + 2),
            _ => 1 + rng.next() % class.p,
        };
        let values: Vec<u64> = match it % 3 {
            // Pure noise.
            0 => (0..class.values).map(|_| rng.next()).collect(),
            // A valid single-owner string for this n (when n <= P), with
            // one digit or one bit disturbed half of the time.
            _ => {
                let s = SubIds::new(random_id(&mut rng)).unwrap();
                let mut v = values_of(order, &[(&s, n)]);
                if rng.next().is_multiple_of(2) {
                    let j = (rng.next() % class.values as u64) as usize;
                    if rng.next().is_multiple_of(2) {
                        let i = (rng.next() % u64::from(class.chunks[j].bits)) as u32;
                        v[j] = v[j].wrapping_add(power(class, i));
                    } else {
                        v[j] ^= 1 << (rng.next() % 64);
                    }
                }
                v
            }
        };
        let got = values_single_owner(class, n, &values);
        assert_eq!(
            got,
            reference_single_owner(class, n, &values),
            "order {order} n {n}"
        );
        accepted += u64::from(got);
    }
    eprintln!("{ITERATIONS} garbage inputs, {accepted} accepted");
    assert!(accepted > 0);
}

// ---------------------------------------------------------------------------
// (d) FolioRmap::sole_mapper

/// A folio and the ground truth of how many pages each mm maps (mms by
/// index, so two dummy mms stay two).
struct World {
    folio: FakeFolio,
    truth: HashMap<usize, (u32, i64)>,
}

impl World {
    fn new(order: u32) -> Self {
        World {
            folio: FakeFolio::new(order),
            truth: HashMap::new(),
        }
    }

    fn map(&mut self, who: usize, mm: &Mm, n: i32) {
        self.folio.rmap().add::<NoPreempt>(&mm.ids(), n);
        self.truth.entry(who).or_insert((mm.id, 0)).1 += i64::from(n);
        self.truth.retain(|_, (_, c)| *c != 0);
    }

    fn expected(&self) -> Sharing {
        let total: i64 = self.truth.values().map(|t| t.1).sum();
        let mms: Vec<(u32, u64)> = self.truth.values().map(|&(id, c)| (id, c as u64)).collect();
        if total == 0 {
            Sharing::Unmapped
        } else if total > self.folio.rmap().nr_pages() || !model_single_owner(&mms) {
            Sharing::Shared
        } else {
            Sharing::Exclusive
        }
    }

    /// `sole_mapper` is the model's answer, and it agrees with `sharing`:
    /// exclusive iff some mm of `mms` gets "exclusive" from `sharing`.
    fn check(&self, mms: &[&Mm]) {
        let rmap = self.folio.rmap();
        let sole = rmap.sole_mapper();
        assert_eq!(sole, self.expected(), "truth {:?}", self.truth);
        let someone = mms
            .iter()
            .any(|mm| rmap.sharing(&mm.ids()) == Sharing::Exclusive);
        assert_eq!(
            sole == Sharing::Exclusive,
            someone,
            "truth {:?}",
            self.truth
        );
    }
}

#[test]
fn double_fork_leaves_the_grandchild_as_the_sole_mapper() {
    let triples = [
        (1, 2, 3),
        (3, 1, 2), // the parent's ID is the union of the other two
        (5, 0x1001, MAX_ID),
        (0x00fc_0000, 0x3f, 0x0004_0000),
        (MAX_ID, MAX_ID - 1, 1),
    ];
    let mut steps = 0u64;
    for order in TRACK_MIN_ORDER..=MAX_ORDER {
        let nr = 1i32 << order;
        for &(p, c, g) in &triples {
            let (parent, child, grandchild) = (Mm::new(p), Mm::new(c), Mm::new(g));
            let all = [&parent, &child, &grandchild];
            // Every page, as fork() duplicates them: the later stages are
            // "obviously shared" (mapcount > pages) until only one is left.
            // And a part of the pages each, so every stage goes through the
            // digits.
            for pages in [nr, (nr / 3).max(1)] {
                let mut w = World::new(order);
                assert_eq!(w.folio.rmap().sole_mapper(), Sharing::Unmapped);
                w.map(0, &parent, pages);
                w.check(&all);
                assert_eq!(w.folio.rmap().sole_mapper(), Sharing::Exclusive);
                w.map(1, &child, pages); // fork
                w.check(&all);
                w.map(2, &grandchild, pages); // the child forks
                w.check(&all);
                assert_eq!(w.folio.rmap().sole_mapper(), Sharing::Shared);
                w.map(0, &parent, -pages); // the parent exits
                w.check(&all);
                assert_eq!(w.folio.rmap().sole_mapper(), Sharing::Shared);
                w.map(1, &child, -pages); // the child exits
                w.check(&all);
                // Only the grandchild maps the folio: exclusive, and
                // `sharing` says so for it and for no one else.
                assert_eq!(w.folio.rmap().sole_mapper(), Sharing::Exclusive);
                assert_eq!(
                    w.folio.rmap().sharing(&grandchild.ids()),
                    Sharing::Exclusive
                );
                assert_eq!(w.folio.rmap().sharing(&parent.ids()), Sharing::Shared);
                assert_eq!(w.folio.rmap().sharing(&child.ids()), Sharing::Shared);
                w.map(2, &grandchild, -pages);
                w.check(&all);
                assert_eq!(w.folio.rmap().sole_mapper(), Sharing::Unmapped);
                steps += 7;
            }
        }
    }
    eprintln!("{steps} double-fork steps");
}

#[test]
fn a_dummy_grandchild_is_never_the_sole_mapper() {
    for order in [2, 4, 9, 15] {
        let (parent, child, grandchild) = (Mm::new(7), Mm::new(8), Mm::new(DUMMY_ID));
        let all = [&parent, &child, &grandchild];
        let mut w = World::new(order);
        w.map(0, &parent, 3);
        w.map(1, &child, 3);
        w.map(2, &grandchild, 3);
        w.map(0, &parent, -3);
        w.map(1, &child, -3);
        w.check(&all);
        assert_eq!(w.folio.rmap().sole_mapper(), Sharing::Shared);
        assert_eq!(w.folio.rmap().sharing(&grandchild.ids()), Sharing::Shared);
        // A second dummy mm changes nothing: still shared.
        w.map(3, &Mm::new(DUMMY_ID), 1);
        w.check(&all);
        // And a real mm beside the dummies does not look like the owner.
        w.map(0, &parent, 1);
        w.check(&all);
        assert_eq!(w.folio.rmap().sole_mapper(), Sharing::Shared);
    }
}

#[test]
fn random_map_unmap_sequences_agree_with_the_ground_truth_and_sharing() {
    let mut rng = XorShift::new(0x501e);
    let mut checks = 0u64;
    for round in 0..400 {
        let order = TRACK_MIN_ORDER + (round % (MAX_ORDER - TRACK_MIN_ORDER + 1));
        // Four mms; two mms never share a real ID (the dummy they may).
        let mut ids: Vec<u32> = Vec::new();
        while ids.len() < 4 {
            let id = random_id(&mut rng);
            if id == DUMMY_ID || !ids.contains(&id) {
                ids.push(id);
            }
        }
        let mms: Vec<Mm> = ids.into_iter().map(Mm::new).collect();
        let refs: Vec<&Mm> = mms.iter().collect();
        let mut w = World::new(order);
        let nr = w.folio.rmap().nr_pages();
        let mut mapped = [0i64; 4];
        for _ in 0..40 {
            // Mostly one or two mms active, so "exclusive" comes up often.
            let who = (rng.next() % if rng.next().is_multiple_of(2) { 2 } else { 4 }) as usize;
            let k = if mapped[who] > 0 && rng.next().is_multiple_of(2) {
                -(1 + (rng.next() % mapped[who] as u64) as i64)
            } else {
                1 + (rng.next() % (nr as u64).min(64)) as i64
            };
            mapped[who] += k;
            w.map(who, &mms[who], k as i32);
            w.check(&refs);
            checks += 1;
        }
    }
    eprintln!("{checks} random steps");
}

#[test]
fn more_mappings_than_pages_is_shared_without_the_seqcount_and_a_writer_means_gave_up() {
    let a = Mm::new(9);
    let mut w = World::new(4);
    w.map(0, &a, 3);
    let guard = w.folio.seq.write::<NoPreempt>();
    assert_eq!(w.folio.rmap().sole_mapper(), Sharing::GaveUp);
    assert!(Sharing::GaveUp.maybe_shared());
    drop(guard);
    assert_eq!(w.folio.rmap().sole_mapper(), Sharing::Exclusive);
    // 17 mappings of a 16-page folio: shared, even with a writer inside.
    w.map(0, &a, 14);
    let guard = w.folio.seq.write::<NoPreempt>();
    assert_eq!(w.folio.rmap().sole_mapper(), Sharing::Shared);
    drop(guard);
    assert_eq!(w.folio.rmap().sole_mapper(), Sharing::Shared);
    w.map(0, &a, -1);
    assert_eq!(w.folio.rmap().sole_mapper(), Sharing::Exclusive);
}

#[test]
fn set_new_makes_the_folio_its_mms_alone() {
    for order in TRACK_MIN_ORDER..=MAX_ORDER {
        let f = FakeFolio::new(order);
        let mm = Mm::new(0x0012_3456);
        let nr = 1i32 << order;
        f.rmap().set_new::<NoPreempt>(&mm.ids(), nr);
        assert_eq!(f.rmap().sole_mapper(), Sharing::Exclusive);
        f.rmap().set_new::<NoPreempt>(&MmIds::dummy(), 1);
        assert_eq!(f.rmap().sole_mapper(), Sharing::Shared);
    }
}

#[test]
fn readers_racing_writer_threads_never_see_one_owner_while_two_map() {
    // mms A and B keep one page mapped each throughout; two threads map
    // and unmap more pages for A. The mm-free reader must never answer
    // "exclusive".
    let f = Arc::new(FakeFolio::new(9));
    let a = Arc::new(Mm::new(0x0012_3456));
    let b = Mm::new(0x0065_4321);
    f.rmap().add::<NoPreempt>(&a.ids(), 1);
    f.rmap().add::<NoPreempt>(&b.ids(), 1);
    race_writers(&f, &a, || {
        assert_ne!(f.rmap().sole_mapper(), Sharing::Exclusive);
    });
    // Writers left: one page each, still shared; once A unmaps its page,
    // B's alone.
    assert_eq!(f.rmap().snapshot().unwrap().mapcount, 2);
    assert_eq!(f.rmap().sole_mapper(), Sharing::Shared);
    f.rmap().add::<NoPreempt>(&a.ids(), -1);
    assert_eq!(f.rmap().sole_mapper(), Sharing::Exclusive);
}
