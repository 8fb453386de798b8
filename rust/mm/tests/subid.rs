// SPDX-License-Identifier: GPL-2.0

//! Host tests of the sub-ID construction: the classes, the lookups, and the
//! "mapped exclusively iff values match" property -- exhaustively for small
//! P, on random multisets for the real classes, and the collision of the
//! original 8-bits/P=512 class modulo 2^64.

use collision::original_collision;
use rust_mm_core::rmap_id::subid::{
    self, class_for_order, max_sum, subid_of, values_match, SubIdError, SubIds, CLASSES, DUMMY_ID,
    ID_BITS, MAX_ID, MAX_ORDER, MAX_VALUES, MIN_ORDER, NARROW_BITS, NR_SUBIDS,
};

mod collision;
mod rng;
use rng::XorShift;

#[test]
fn classes_cover_every_order_once_in_increasing_value_count() {
    let mut next = MIN_ORDER;
    let mut last_values = 0;
    for class in CLASSES.iter() {
        assert_eq!(class.min_order, next, "gap or overlap before {class:?}");
        assert!(class.max_order >= class.min_order);
        assert!(class.values > last_values && class.values <= MAX_VALUES);
        last_values = class.values;
        next = class.max_order + 1;
    }
    assert_eq!(next, MAX_ORDER + 1);
    // The THP orders of x86_64 and arm64 4K/16K/64K (PMD orders 9, 11, 13).
    for order in [2, 4, 9, 11, 13, 15] {
        assert!(class_for_order(order).is_ok(), "order {order}");
    }
    assert_eq!(NR_SUBIDS, CLASSES.iter().map(|c| c.values).sum::<usize>());
}

#[test]
fn chunks_partition_the_id_bits() {
    for class in CLASSES.iter() {
        let mut shift = 0;
        for chunk in class.chunks() {
            assert_eq!(chunk.shift, shift);
            assert!(chunk.bits >= 1 && chunk.bits <= class.max_bits);
            shift += chunk.bits;
        }
        assert_eq!(shift, ID_BITS, "class {}", class.values);
        assert!(class.chunks[class.values..].iter().all(|c| c.bits == 0));
    }
}

/// Independent check in 128-bit arithmetic: (P + 1)^w - 1 == P * max_subid
/// and it is below 2^64 for every chunk of every class; and each class is
/// maximal: one more order would overflow its widest chunk.
#[test]
fn every_class_sum_is_below_2_pow_64_and_the_next_order_is_not() {
    for class in CLASSES.iter() {
        let base = class.p as u128 + 1;
        for chunk in class.chunks() {
            let full = base.pow(chunk.bits) - 1;
            assert_eq!(full, class.p as u128 * chunk.max_subid as u128);
            assert!(full < 1u128 << 64);
        }
        assert_eq!(class.max_sum as u128, base.pow(class.max_bits) - 1);
        if class.max_order < MAX_ORDER {
            let bigger = (1u128 << (class.max_order + 1)) + 1;
            assert!(bigger.pow(class.max_bits) > 1u128 << 64);
            assert_eq!(max_sum(class.max_bits, 1 << (class.max_order + 1)), None);
        }
    }
}

#[test]
fn subid_digits_are_the_chunk_bits_in_base_p_plus_1() {
    for class in CLASSES.iter() {
        for (j, chunk) in class.chunks().iter().enumerate() {
            let mut rng = XorShift::new(u64::from(chunk.shift) + class.p);
            for _ in 0..200 {
                let c = (rng.next() as u32) & ((1 << chunk.bits) - 1);
                let s = subid::subid(c << chunk.shift, class.max_order, j).unwrap();
                // Read the digits back.
                let mut rest = s as u128;
                for bit in 0..chunk.bits {
                    let digit = rest % (class.p as u128 + 1);
                    assert_eq!(digit, u128::from((c >> bit) & 1));
                    rest /= class.p as u128 + 1;
                }
                assert_eq!(rest, 0);
            }
        }
    }
}

#[test]
fn narrow_and_wide_lookups_agree_with_cached_subids() {
    let mut rng = XorShift::new(7);
    let mut ids: Vec<u32> = (0..300).map(|_| rng.next() as u32 & MAX_ID).collect();
    ids.extend([0, 1, MAX_ID, 0x00aa_aaaa, 0x0055_5555]);
    for id in ids {
        let cached = SubIds::new(id).unwrap();
        for order in MIN_ORDER..=MAX_ORDER {
            let class = class_for_order(order).unwrap();
            let got = cached.for_order(order).unwrap();
            assert_eq!(got.len(), class.values);
            for (j, chunk) in class.chunks().iter().enumerate() {
                let expect = subid_of(u64::from(chunk.value_of(id)), class.p).unwrap();
                assert_eq!(got[j], expect);
                assert_eq!(subid::subid(id, order, j).unwrap(), expect);
            }
        }
    }
    assert!(class_for_order(MIN_ORDER).unwrap().max_bits > NARROW_BITS);
}

/// The live count of `id` for `order` as its definition says: one past
/// the last chunk of the ID (in the class's chunk order) that is not 0.
fn live_by_definition(id: u32, order: u32) -> u8 {
    let Ok(class) = class_for_order(order) else {
        return 0;
    };
    class
        .chunks()
        .iter()
        .rposition(|c| c.value_of(id) != 0)
        .map_or(0, |j| j as u8 + 1)
}

/// IDs at every chunk boundary of every class: one bit set at each
/// position, all bits below each position, and 1 << position - 1 + 1.
fn boundary_ids() -> Vec<u32> {
    let mut ids = vec![DUMMY_ID, 1, MAX_ID];
    for bit in 0..ID_BITS {
        ids.extend([
            1 << bit,
            (1 << bit) - 1,
            ((1 << bit) - 1) | 1,
            MAX_ID >> bit,
        ]);
    }
    ids
}

#[test]
fn live_counts_stop_at_the_last_nonzero_subid_of_every_class() {
    let mut rng = XorShift::new(0x11fe);
    let mut ids = boundary_ids();
    ids.extend((0..20_000).map(|_| rng.next() as u32 & MAX_ID));
    // Every ID of up to 13 bits: more than the few thousand mms of a busy
    // machine.
    ids.extend(0..(1 << 13));
    for id in ids {
        let s = SubIds::new(id).unwrap();
        assert_eq!(s.id(), id);
        assert_eq!(s.live()[0], 0, "order 0 has no values");
        for order in MIN_ORDER..=MAX_ORDER {
            let live = s.live()[order as usize];
            assert_eq!(
                live,
                live_by_definition(id, order),
                "id {id:#x} order {order}"
            );
            let subids = s.for_order(order).unwrap();
            // Never too short: every sub-ID past the live count is 0, so an
            // update that skips them adds exactly what a full one adds.
            assert!(subids[usize::from(live)..].iter().all(|&x| x == 0));
            // Never too long: the last live sub-ID is not 0.
            if live > 0 {
                assert_ne!(subids[usize::from(live) - 1], 0, "id {id:#x} order {order}");
            }
        }
    }
}

/// The live counts the benchmark's processes get and a busy machine's:
/// lowest-free allocation gives the first mms IDs below 64, where an
/// order-9 folio (4 values of 6 bits) has one live value; a machine with a
/// few thousand mms hands out 12-bit IDs, two live values; only IDs from
/// 2^18 up need all four.
#[test]
fn small_ids_have_fewer_live_values_than_the_class_has() {
    let live9 = |id| SubIds::new(id).unwrap().live()[9];
    assert_eq!(class_for_order(9).unwrap().values, 4);
    assert_eq!(live9(DUMMY_ID), 0);
    assert_eq!(live9(1), 1);
    assert_eq!(live9(63), 1);
    assert_eq!(live9(64), 2);
    assert_eq!(live9(4095), 2);
    assert_eq!(live9(4096), 3);
    assert_eq!(live9(1 << 18), 4);
    assert_eq!(live9(MAX_ID), 4);
    // A middle chunk of 0 stays live: the count is a prefix.
    assert_eq!(live9(1 << 12 | 1), 3);
}

#[test]
fn the_byte_tables_of_the_hot_path_are_order_subids() {
    for (o, &(off, n)) in subid::ORDER_SUBIDS.iter().enumerate() {
        assert_eq!(usize::from(subid::ORDER_SUBID_OFFSET[o]), off, "order {o}");
        assert_eq!(usize::from(subid::ORDER_VALUES[o]), n, "order {o}");
        if o >= MIN_ORDER as usize {
            assert_eq!(n, class_for_order(o as u32).unwrap().values);
            assert_eq!(Ok(off), subid::subid_offset(o as u32));
        }
    }
}

#[test]
fn dummy_id_has_all_zero_subids() {
    assert!(SubIds::new(DUMMY_ID)
        .unwrap()
        .as_slice()
        .iter()
        .all(|&s| s == 0));
}

#[test]
fn bad_lookups_return_errors_not_panics() {
    assert_eq!(class_for_order(0).err(), Some(SubIdError::OrderOutOfRange));
    assert_eq!(
        class_for_order(MAX_ORDER + 1).err(),
        Some(SubIdError::OrderOutOfRange)
    );
    assert_eq!(
        class_for_order(u32::MAX).err(),
        Some(SubIdError::OrderOutOfRange)
    );
    assert_eq!(
        subid::subid(MAX_ID + 1, 9, 0),
        Err(SubIdError::IdOutOfRange)
    );
    assert_eq!(subid::subid(1, 9, 4), Err(SubIdError::ValueOutOfRange));
    assert_eq!(subid::subid(1, 16, 0), Err(SubIdError::OrderOutOfRange));
    assert_eq!(SubIds::new(u32::MAX), Err(SubIdError::IdOutOfRange));
    let s = SubIds::new(5).unwrap();
    assert_eq!(s.for_order(0).err(), Some(SubIdError::OrderOutOfRange));
    assert_eq!(subid::subid_offset(99), Err(SubIdError::OrderOutOfRange));
}

#[test]
fn values_match_is_conservative_on_degenerate_input() {
    assert!(!values_match(0, &[0], &[0]));
    assert!(!values_match(1, &[1, 2], &[1]));
}

/// Sum of `subids` over a multiset of mappings, with the kernel's wrapping
/// arithmetic.
fn sums(mappings: &[u32], subid: impl Fn(u32, usize) -> u64, values: usize) -> Vec<u64> {
    (0..values)
        .map(|j| {
            mappings
                .iter()
                .fold(0u64, |acc, &m| acc.wrapping_add(subid(m, j)))
        })
        .collect()
}

/// Every multiset of `n <= P` mappings of `bits`-wide chunk values, for every
/// candidate owner: the test says "exclusive" exactly when all mappings are
/// the owner's. Run for every (bits, P) small enough to enumerate whose sums
/// fit in 64 bits.
#[test]
fn exhaustive_small_p_values_match_iff_all_mappings_are_the_owners() {
    fn multisets(k: u32, n: usize, start: u32, cur: &mut Vec<u32>, f: &mut impl FnMut(&[u32])) {
        if cur.len() == n {
            f(cur);
            return;
        }
        for c in start..k {
            cur.push(c);
            multisets(k, n, c, cur, f);
            cur.pop();
        }
    }
    let mut checked = 0u64;
    for bits in 1..=4u32 {
        for p in 1..=6u64 {
            if max_sum(bits, p).is_none() {
                continue;
            }
            let k = 1u32 << bits;
            for n in 1..=p as usize {
                multisets(k, n, 0, &mut Vec::new(), &mut |ms| {
                    let sum = sums(ms, |c, _| subid_of(u64::from(c), p).unwrap(), 1);
                    for owner in 0..k {
                        let s = [subid_of(u64::from(owner), p).unwrap()];
                        let exclusive = ms.iter().all(|&c| c == owner);
                        assert_eq!(
                            values_match(n as u64, &sum, &s),
                            exclusive,
                            "{ms:?} {owner}"
                        );
                        checked += 1;
                    }
                });
            }
        }
    }
    assert!(checked > 100_000, "only {checked} cases");
}

/// Random multisets over the real classes: mostly the owner plus a few
/// others differing in one or more bits, sizes up to P (capped for the
/// largest classes), with mappings of k pages at once.
#[test]
fn random_multisets_on_real_classes_never_look_exclusive_when_shared() {
    let mut rng = XorShift::new(0x5eed);
    for class in CLASSES.iter() {
        let order = class.max_order;
        let cap = class.p.min(4096);
        for round in 0..400 {
            let owner = (rng.next() as u32 & MAX_ID).max(1);
            let n = 1 + rng.next() % cap;
            let mut ms = vec![owner; n as usize];
            let intruders = match round % 4 {
                0 => 0,
                1 => 1,
                _ => 1 + (rng.next() % n.min(8)) as usize,
            };
            for _ in 0..intruders {
                let i = (rng.next() % n) as usize;
                let flip = if rng.next().is_multiple_of(2) {
                    1 << (rng.next() % u64::from(ID_BITS))
                } else {
                    (rng.next() as u32 & MAX_ID).max(1)
                };
                ms[i] = (ms[i] ^ flip) & MAX_ID;
            }
            let values = sums(&ms, |m, j| subid::subid(m, order, j).unwrap(), class.values);
            let mine = SubIds::new(owner).unwrap();
            let exclusive = ms.iter().all(|&m| m == owner);
            assert_eq!(
                values_match(n, &values, mine.for_order(order).unwrap()),
                exclusive,
                "class {} n {n}",
                class.values
            );
        }
    }
}

/// The largest possible sum: P mappings of the all-ones ID do not overflow,
/// and the owner check still holds exactly.
#[test]
fn full_folio_of_all_ones_ids_is_exact_without_overflow() {
    for class in CLASSES.iter() {
        let order = class.max_order;
        let mine = SubIds::new(MAX_ID).unwrap();
        let subids = mine.for_order(order).unwrap();
        for (j, &s) in subids.iter().enumerate() {
            let total = s.checked_mul(class.p).expect("no overflow");
            assert!(total <= class.max_sum);
            assert_eq!(class.chunks[j].max_subid, s);
        }
        let values: Vec<u64> = subids.iter().map(|s| s * class.p).collect();
        assert!(values_match(class.p, &values, subids));
        let mut other = values.clone();
        // Replace one mapping by ID MAX_ID - 1 (differs in bit 0).
        other[0] -= subids[0] - subid::subid(MAX_ID - 1, order, 0).unwrap();
        assert!(!values_match(class.p, &other, subids));
    }
}

/// Sub-ID of the original 3 x 8-bit class with P = 512 (base 513).
fn original_subid(id: u32, j: usize) -> u64 {
    subid_of(u64::from((id >> (8 * j)) & 0xff), 512).unwrap()
}

#[test]
fn original_8bit_p512_class_is_rejected_by_the_overflow_bound() {
    // Each sub-ID fits, but P * max_subid does not.
    assert!(subid_of(0xff, 512).is_some());
    assert_eq!(max_sum(8, 512), None);
    // Order 9 gets 4 values of 6 bits from us, not 3 of 8.
    let ours = class_for_order(9).unwrap();
    assert_eq!((ours.values, ours.max_bits, ours.p), (4, 6, 1024));
    assert!(class_for_order(8).unwrap().values > 3);
}

#[test]
fn original_8bit_p512_class_collides_mod_2_64_with_70_mappings() {
    let c = original_collision();
    let n = c.mappings.len() as u64;
    assert!(n < 100, "mapcount {n} is not 'obviously shared'");
    let others = c.mappings.iter().filter(|&&m| m != c.owner).count();
    assert!(others >= 60, "only {others} foreign mappings");
    let values = sums(&c.mappings, original_subid, 3);
    let owner: Vec<u64> = (0..3).map(|j| original_subid(c.owner, j)).collect();
    // The original check says "exclusive" although other mms map the folio:
    // with COW reuse, a cross-process data leak.
    assert!(values_match(n, &values, &owner));
    // Because the top value wrapped: in exact arithmetic it differs by 2^64.
    let exact: u128 = c
        .mappings
        .iter()
        .map(|&m| original_subid(m, 2) as u128)
        .sum();
    assert_eq!(exact + (1u128 << 64), n as u128 * owner[2] as u128);
}

#[test]
fn our_class_for_the_same_folio_reports_that_multiset_shared() {
    let c = original_collision();
    let n = c.mappings.len() as u64;
    for order in 6..=9 {
        let class = class_for_order(order).unwrap();
        let values = sums(
            &c.mappings,
            |m, j| subid::subid(m, order, j).unwrap(),
            class.values,
        );
        let mine = SubIds::new(c.owner).unwrap();
        assert!(
            !values_match(n, &values, mine.for_order(order).unwrap()),
            "order {order}"
        );
        // And the owner alone is recognised.
        let alone = sums(
            &vec![c.owner; n as usize],
            |m, j| subid::subid(m, order, j).unwrap(),
            class.values,
        );
        assert!(values_match(n, &alone, mine.for_order(order).unwrap()));
    }
}

#[test]
fn boot_time_table_verification_passes_and_checks_every_entry() {
    let n = subid::verify_tables().unwrap();
    let expected: usize = subid::CLASSES
        .iter()
        .filter(|c| c.is_narrow())
        .map(|c| 1usize << c.max_bits)
        .sum();
    assert_eq!(n, expected);
    assert!(n > 4096);
}
