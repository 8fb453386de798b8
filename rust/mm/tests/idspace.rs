// SPDX-License-Identifier: GPL-2.0

//! Host tests of the rmap-ID allocator: order of IDs, reuse, double and
//! foreign frees, exhaustion (of a small space and of the full 2^24 - 1),
//! memory footprint, leaf allocation failure, a random model check against
//! a set, and concurrent use through a lock.

use rust_mm_core::rmap_id::idspace::{
    self, AllocError, Attempt, FreeError, IdSpace, Leaf, SpaceLock, LEAF_BITS, NR_LEAVES,
};
use rust_mm_core::rmap_id::subid::MAX_ID;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

mod rng;
use rng::XorShift;

/// The host implementation of the lock protocol: a mutex and boxed leaves,
/// with leaf allocation that can be made to fail.
struct Locked {
    space: Mutex<IdSpace<Box<Leaf>>>,
    fail_leaves: AtomicBool,
    leaves_made: AtomicUsize,
}

impl Locked {
    fn new(max_id: u32) -> Self {
        Locked {
            space: Mutex::new(IdSpace::new(max_id)),
            fail_leaves: AtomicBool::new(false),
            leaves_made: AtomicUsize::new(0),
        }
    }
}

impl SpaceLock for Locked {
    type Leaf = Box<Leaf>;
    fn with<R>(&self, f: impl FnOnce(&mut IdSpace<Box<Leaf>>) -> R) -> R {
        f(&mut self.space.lock().unwrap())
    }
    fn new_leaf(&self) -> Option<Box<Leaf>> {
        if self.fail_leaves.load(Ordering::Relaxed) {
            return None;
        }
        self.leaves_made.fetch_add(1, Ordering::Relaxed);
        Some(Box::default())
    }
}

#[test]
fn ids_start_at_1_and_0_is_reserved_for_the_dummy() {
    let a = Locked::new(MAX_ID);
    assert_eq!(idspace::alloc(&a), Ok(1));
    assert_eq!(idspace::alloc(&a), Ok(2));
    assert_eq!(idspace::alloc(&a), Ok(3));
    assert_eq!(idspace::free(&a, 0), Err(FreeError::Dummy));
    assert!(!a.with(|s| s.is_live(0)));
}

#[test]
fn freed_ids_are_reused_lowest_first() {
    let a = Locked::new(MAX_ID);
    let ids: Vec<u32> = (0..200).map(|_| idspace::alloc(&a).unwrap()).collect();
    assert_eq!(ids, (1..=200).collect::<Vec<_>>());
    idspace::free(&a, 150).unwrap();
    idspace::free(&a, 7).unwrap();
    assert_eq!(idspace::alloc(&a), Ok(7));
    assert_eq!(idspace::alloc(&a), Ok(150));
    assert_eq!(idspace::alloc(&a), Ok(201));
}

#[test]
fn double_free_and_foreign_ids_are_refused_without_changing_state() {
    let a = Locked::new(1000);
    let id = idspace::alloc(&a).unwrap();
    let other = idspace::alloc(&a).unwrap();
    idspace::free(&a, id).unwrap();
    assert_eq!(idspace::free(&a, id), Err(FreeError::NotAllocated));
    assert_eq!(idspace::free(&a, 500), Err(FreeError::NotAllocated));
    assert_eq!(idspace::free(&a, 1001), Err(FreeError::OutOfRange));
    assert_eq!(idspace::free(&a, u32::MAX), Err(FreeError::OutOfRange));
    // A never-populated leaf of the full space.
    let b = Locked::new(MAX_ID);
    assert_eq!(idspace::free(&b, MAX_ID), Err(FreeError::NotAllocated));
    assert_eq!(a.with(|s| s.live()), 1);
    assert!(a.with(|s| s.is_live(other)));
    assert_eq!(idspace::alloc(&a), Ok(id));
}

#[test]
fn small_space_exhausts_with_nospace_then_recovers_after_a_free() {
    let max = 3 * LEAF_BITS as u32 + 17; // four leaves, the last partial
    let a = Locked::new(max);
    for want in 1..=max {
        assert_eq!(idspace::alloc(&a), Ok(want));
    }
    assert_eq!(idspace::alloc(&a), Err(AllocError::NoSpace));
    assert_eq!(a.with(|s| s.live()), max);
    assert_eq!(a.with(|s| s.leaves()), 4);
    idspace::free(&a, 40_000).unwrap();
    assert_eq!(idspace::alloc(&a), Ok(40_000));
    assert_eq!(idspace::alloc(&a), Err(AllocError::NoSpace));
}

#[test]
fn full_24_bit_space_hands_out_every_id_once_then_nospace() {
    let a = Locked::new(MAX_ID);
    let mut seen = vec![false; MAX_ID as usize + 1];
    for _ in 0..MAX_ID {
        let id = idspace::alloc(&a).unwrap() as usize;
        assert!(!seen[id], "{id} handed out twice");
        seen[id] = true;
    }
    assert!(!seen[0]);
    assert_eq!(idspace::alloc(&a), Err(AllocError::NoSpace));
    assert_eq!(a.with(|s| s.leaves()), NR_LEAVES);
    assert_eq!(a.leaves_made.load(Ordering::Relaxed), NR_LEAVES);
    idspace::free(&a, MAX_ID).unwrap();
    assert_eq!(idspace::alloc(&a), Ok(MAX_ID));
}

#[test]
fn memory_is_released_when_ids_die() {
    let a = Locked::new(MAX_ID);
    let base = a.with(|s| s.footprint());
    assert!(base < 8 * 1024, "empty allocator uses {base} bytes");
    let n = 5 * LEAF_BITS as u32;
    for _ in 0..n {
        idspace::alloc(&a).unwrap();
    }
    assert_eq!(a.with(|s| s.leaves()), 6);
    for id in 1..=n {
        idspace::free(&a, id).unwrap();
    }
    // Leaf 0 stays; every other leaf went back.
    assert_eq!(a.with(|s| s.leaves()), 1);
    assert_eq!(a.with(|s| s.footprint()), base + 4096);
    assert_eq!(a.with(|s| s.live()), 0);
}

#[test]
fn failed_leaf_allocation_is_nomemory_and_changes_nothing() {
    let a = Locked::new(MAX_ID);
    a.fail_leaves.store(true, Ordering::Relaxed);
    assert_eq!(idspace::alloc(&a), Err(AllocError::NoMemory));
    assert_eq!(a.with(|s| (s.live(), s.leaves())), (0, 0));
    a.fail_leaves.store(false, Ordering::Relaxed);
    assert_eq!(idspace::alloc(&a), Ok(1));
}

#[test]
fn install_into_a_taken_or_missing_slot_gives_the_leaf_back() {
    let mut s: IdSpace<Box<Leaf>> = IdSpace::new(10);
    assert_eq!(s.try_alloc(), Attempt::NeedLeaf(0));
    assert!(s.install_leaf(0, Box::default()).is_none());
    assert!(s.install_leaf(0, Box::default()).is_some());
    assert!(s.install_leaf(1, Box::default()).is_some(), "beyond max_id");
    assert_eq!(s.try_alloc(), Attempt::Id(1));
}

/// Random alloc/free sequences checked against a BTreeSet model: the
/// allocator always returns the smallest free ID and refuses exactly the
/// frees the model refuses.
#[test]
fn random_ops_match_a_lowest_free_model() {
    let max = 2 * LEAF_BITS as u32 + 100;
    let a = Locked::new(max);
    let mut live = BTreeSet::new();
    // The model's free IDs below the watermark `next`.
    let mut holes = BTreeSet::new();
    let mut next = 1u32;
    let mut rng = XorShift::new(42);
    for step in 0..200_000u32 {
        let r = rng.next();
        if !r.is_multiple_of(3) || live.is_empty() {
            let expect = holes.first().copied().or((next <= max).then_some(next));
            match idspace::alloc(&a) {
                Ok(id) => {
                    assert_eq!(Some(id), expect, "step {step}");
                    live.insert(id);
                    if !holes.remove(&id) {
                        next += 1;
                    }
                }
                Err(e) => {
                    assert_eq!(e, AllocError::NoSpace);
                    assert_eq!(expect, None);
                }
            }
        } else {
            let id = if r.is_multiple_of(7) {
                (rng.next() % u64::from(max + 2)) as u32
            } else {
                *live
                    .iter()
                    .nth((rng.next() % live.len() as u64) as usize)
                    .unwrap()
            };
            let res = idspace::free(&a, id);
            if live.remove(&id) {
                holes.insert(id);
                assert_eq!(res, Ok(()));
            } else {
                assert!(res.is_err(), "freed {id} that was not live");
            }
        }
        // Bursts of frees so leaves get released and reinstalled.
        if step % 50_000 == 49_999 {
            for id in std::mem::take(&mut live) {
                idspace::free(&a, id).unwrap();
            }
            holes.clear();
            next = 1;
            assert_eq!(a.with(|s| s.leaves()), 1);
        }
    }
    assert_eq!(a.with(|s| s.live()) as usize, live.len());
}

#[test]
fn concurrent_alloc_and_free_never_hand_out_a_live_id_twice() {
    let a = Arc::new(Locked::new(MAX_ID));
    let live = Arc::new(Mutex::new(BTreeSet::new()));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (a, live) = (Arc::clone(&a), Arc::clone(&live));
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                let mut rng = XorShift::new(t + 1);
                for _ in 0..20_000 {
                    if rng.next().is_multiple_of(3) && !mine.is_empty() {
                        let id = mine.swap_remove((rng.next() % mine.len() as u64) as usize);
                        assert!(live.lock().unwrap().remove(&id));
                        idspace::free(&*a, id).unwrap();
                    } else {
                        let id = idspace::alloc(&*a).unwrap();
                        assert!(live.lock().unwrap().insert(id), "{id} is live twice");
                        mine.push(id);
                    }
                }
                mine
            })
        })
        .collect();
    let total: usize = threads.into_iter().map(|t| t.join().unwrap().len()).sum();
    assert_eq!(a.with(|s| s.live()) as usize, total);
}
