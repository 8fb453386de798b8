// SPDX-License-Identifier: GPL-2.0

//! Host tests of the per-VMA lock's decisions (`core/vma_lock.rs`) over
//! Linux 7.3's `vm_refcnt` protocol:
//!
//! - every transition on named values;
//! - the decisions against a line-by-line transliteration of 7.3's C
//!   (`include/linux/refcount.h`, `include/linux/mmap_lock.h`,
//!   `mm/mmap_lock.c`), on every boundary value and a million random ones:
//!   they agree wherever 7.3 stores a value a correct caller can reach,
//!   and where they differ (a release or exclusion that cannot be
//!   balanced) the core refuses and stores nothing;
//! - an explicit-state explorer of the protocol as C runs it, with the
//!   vma cache's `SLAB_TYPESAFE_BY_RCU` reuse: readers of mm A that found
//!   the vma under RCU, A's mmap_lock writer that write-locks, detaches,
//!   unlinks and frees it at once, and a thread of mm B that gets the same
//!   object from the cache, attaches it, unmaps it and exits, freeing mm
//!   B. It checks mutual exclusion, that no reader holds a vma of another
//!   mm, a detached or a freed one, that the count is always the tree's
//!   reference plus the readers plus the flag, that no vma is touched
//!   without RCU or a reference, that no mm is woken or pinned after it is
//!   freed (9bbffee67ffd's use-after-free), and that no wake-up is lost;
//!   nine mutated rule sets show that each check can fail;
//! - the packed layout (`CONFIG_PER_VMA_LOCK_PACKED`): the cache alignment
//!   the core computes, against a brute-force placement of objects in a
//!   slab, on every geometry up to 320-byte objects and 128-byte lines, and
//!   a phase-blind rule that the brute force refutes.
//!
//! The orderings are `tests/loom.rs`'s.

#![cfg(not(loom))]

mod rng;

use rng::XorShift;
use rust_mm_core::vma_lock::{self, *};
use std::collections::{HashSet, VecDeque};

const F: u32 = EXCLUDE_READERS;

/// A step, written short.
const fn st(verdict: Verdict, refcnt: u32) -> Step {
    Step { verdict, refcnt }
}

// ---------------------------------------------------------------------
// Transitions on named values.

#[test]
fn classify_names_every_documented_value() {
    assert_eq!(classify(0), State::Detached);
    assert_eq!(classify(1), State::Attached);
    assert_eq!(classify(2), State::ReadLocked(1));
    assert_eq!(classify(LIMIT), State::ReadLocked(LIMIT - 1));
    assert_eq!(
        classify(F),
        State::Excluding {
            detaching: true,
            readers: 0
        }
    );
    assert_eq!(
        classify(F + 1),
        State::Excluding {
            detaching: false,
            readers: 0
        }
    );
    assert_eq!(
        classify(F + 4),
        State::Excluding {
            detaching: false,
            readers: 3
        }
    );
    assert_eq!(classify(1 << 31), State::Corrupt);
    assert_eq!(classify(u32::MAX), State::Corrupt);
}

#[test]
fn read_admit_takes_a_reference_on_an_attached_vma() {
    assert_eq!(read_admit(1), st(Verdict::Ok, 2));
    assert_eq!(read_admit(5), st(Verdict::Ok, 6));
}

#[test]
fn read_admit_of_a_detached_or_free_vma_is_a_retry_and_stores_nothing() {
    assert_eq!(read_admit(DETACHED), st(Verdict::Detached, DETACHED));
}

#[test]
fn read_admit_at_the_limit_is_refused_and_never_reaches_the_flag() {
    assert_eq!(read_admit(LIMIT - 1), st(Verdict::Ok, LIMIT));
    assert_eq!(read_admit(LIMIT), st(Verdict::Refused, LIMIT));
}

#[test]
fn read_admit_while_readers_are_excluded_is_refused() {
    for r in [F, F + 1, F + 2, F + LIMIT] {
        assert_eq!(read_admit(r), st(Verdict::Refused, r));
    }
}

#[test]
fn read_validate_checks_the_mm_before_the_write_lock() {
    assert_eq!(read_validate(true, 3, 4), Verdict::Ok);
    assert_eq!(read_validate(true, 4, 4), Verdict::WriteLocked);
    // A reused vma's sequence is another mm's: the mm decides first, even
    // where the sequences happen to match.
    assert_eq!(read_validate(false, 4, 4), Verdict::ForeignMm);
    assert_eq!(read_validate(false, 3, 4), Verdict::ForeignMm);
}

#[test]
fn read_release_drops_one_reference() {
    assert_eq!(read_release(2), st(Verdict::Ok, 1));
    assert_eq!(read_release(LIMIT), st(Verdict::Ok, LIMIT - 1));
}

#[test]
fn read_release_of_the_last_reader_wakes_the_excluding_thread() {
    // A writer excluding from an attached vma waits for F + 1.
    assert_eq!(read_release(F + 2), st(Verdict::Wake, F + 1));
    // A detacher waits for F; 7.3 also wakes it at F + 1 (spuriously).
    assert_eq!(read_release(F + 1), st(Verdict::Wake, F));
    assert_eq!(read_release(F + 3), st(Verdict::Ok, F + 2));
}

#[test]
fn read_release_of_the_last_reference_completes_a_detach_in_progress() {
    assert_eq!(read_release(1), st(Verdict::Detached, DETACHED));
}

#[test]
fn read_release_without_a_reader_is_unbalanced_and_stores_nothing() {
    for r in [DETACHED, F, 1 << 31, u32::MAX] {
        assert_eq!(read_release(r), st(Verdict::Unbalanced, r));
    }
}

#[test]
fn exclude_begin_sets_the_flag_over_the_count() {
    assert_eq!(exclude_begin(1), st(Verdict::Ok, F + 1));
    assert_eq!(exclude_begin(3), st(Verdict::Ok, F + 3));
    assert_eq!(exclude_begin(LIMIT), st(Verdict::Ok, F + LIMIT));
    assert!(F + LIMIT <= i32::MAX as u32);
}

#[test]
fn exclude_begin_of_a_detached_vma_has_nothing_to_wait_for() {
    assert_eq!(exclude_begin(DETACHED), st(Verdict::Detached, DETACHED));
}

#[test]
fn exclude_begin_twice_is_unbalanced() {
    for r in [F, F + 1, F + 5, 1 << 31] {
        assert_eq!(exclude_begin(r).verdict, Verdict::Unbalanced);
        assert_eq!(exclude_begin(r).refcnt, r);
    }
}

#[test]
fn exclusion_is_reached_at_the_flag_plus_the_attachment_or_alone() {
    assert!(exclusion_reached(F + 1, false));
    assert!(!exclusion_reached(F + 2, false));
    assert!(!exclusion_reached(F, false));
    assert!(exclusion_reached(F, true));
    assert!(!exclusion_reached(F + 1, true));
}

#[test]
fn exclude_end_clears_the_flag_and_reports_a_detached_vma() {
    assert_eq!(exclude_end(F + 1), st(Verdict::Ok, 1));
    // An interrupted killable writer leaves the readers still counted.
    assert_eq!(exclude_end(F + 3), st(Verdict::Ok, 3));
    assert_eq!(exclude_end(F), st(Verdict::Detached, DETACHED));
    for r in [0, 1, LIMIT, 1 << 31] {
        assert_eq!(exclude_end(r), st(Verdict::Unbalanced, r));
    }
}

#[test]
fn detach_drops_the_trees_reference_and_waits_only_for_readers() {
    assert_eq!(detach(1), st(Verdict::Detached, DETACHED));
    assert_eq!(detach(3), st(Verdict::MustWait, 2));
    for r in [DETACHED, F, F + 1, 1 << 31] {
        assert_eq!(detach(r), st(Verdict::Unbalanced, r));
    }
}

#[test]
fn attach_takes_a_detached_vma_to_one() {
    assert_eq!(attach(DETACHED), st(Verdict::Ok, 1));
    for r in [1, 2, F, u32::MAX] {
        assert_eq!(attach(r), st(Verdict::Unbalanced, r));
    }
}

#[test]
fn a_write_lock_lasts_until_the_mms_sequence_moves_on() {
    let mm = 8;
    assert!(is_write_locked(mm, mm));
    assert!(!is_write_locked(mm, end_write_all(mm)));
    assert!(!is_write_locked(SEQ_UNLOCKED, mm));
    assert_eq!(end_write_all(u32::MAX), 0);
}

// ---------------------------------------------------------------------
// 7.3's C, transliterated (int arithmetic as the kernel compiles it:
// -fno-strict-overflow, so wrapping).

mod c73 {
    use super::{F, LIMIT};

    /// `__refcount_add_not_zero_limited_acquire(1, r, &old, LIMIT)` for one
    /// value: Some(new) on success, else None; and `old`.
    pub fn inc_not_zero_limited(old: i32) -> Option<i32> {
        if old == 0 {
            return None;
        }
        if 1 > (LIMIT as i32).wrapping_sub(old) {
            return None;
        }
        Some(old.wrapping_add(1))
    }

    /// `vma_start_read()`'s failure value: -EAGAIN iff the old count was 0.
    pub fn admit_fail_is_eagain(old: i32) -> bool {
        old == 0
    }

    /// `__vma_are_readers_excluded()`.
    pub fn readers_excluded(refcnt: i32) -> bool {
        (refcnt & F as i32) != 0 && refcnt <= (F + 1) as i32
    }

    /// `vma_refcount_put()`: the value stored and whether it wakes.
    pub fn refcount_put(old: i32) -> (i32, bool) {
        // __refcount_dec_and_test(): fetch_sub, true iff old == 1.
        let newcnt = if old == 1 { 0 } else { old.wrapping_sub(1) };
        (old.wrapping_sub(1), newcnt != 0 && readers_excluded(newcnt))
    }

    /// `refcount_add_not_zero(F, r)`: Some(new), or None (detached).
    pub fn add_not_zero_flag(old: i32) -> Option<i32> {
        if old == 0 {
            None
        } else {
            Some(old.wrapping_add(F as i32))
        }
    }

    /// `refcount_sub_and_test(F, r)`: the value stored, and "detached".
    pub fn sub_flag(old: i32) -> (i32, bool) {
        let new = old.wrapping_sub(F as i32);
        (new, old == F as i32)
    }

    /// `vma_mark_detached()`'s `__vma_refcount_put_return()`: the value
    /// stored, and whether readers must be excluded (it returned non-zero).
    pub fn detach_put(old: i32) -> (i32, bool) {
        let new = old.wrapping_sub(1);
        (new, new != 0)
    }

    /// `rcuwait_wait_event()`'s condition in `__vma_start_exclude_readers()`.
    pub fn reached(refcnt: i32, detaching: bool) -> bool {
        refcnt as u32 == (if detaching { 0 } else { 1 }) | F
    }
}

/// Every value where a decision changes, and its neighbours.
fn boundary_values() -> Vec<u32> {
    let mut v = Vec::new();
    for base in [
        0,
        1,
        2,
        LIMIT,
        F,
        F + 1,
        F + 2,
        F + LIMIT,
        1 << 31,
        u32::MAX,
    ] {
        for d in 0..3u32 {
            v.push(base.wrapping_add(d));
            v.push(base.wrapping_sub(d));
        }
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// The boundary values, then a million random ones (half of them below
/// bit 31, where every correct value lives).
fn values() -> impl Iterator<Item = u32> {
    let mut rng = XorShift::new(0x7a3);
    boundary_values()
        .into_iter()
        .chain((0..1_000_000).map(move |i| {
            let x = rng.next() as u32;
            if i % 2 == 0 {
                x & i32::MAX as u32
            } else {
                x
            }
        }))
}

/// Whether `r` is a value a correct sequence of calls can reach (the
/// table of the module's doc).
fn reachable(r: u32) -> bool {
    r <= F + LIMIT
}

#[test]
fn read_admit_matches_7_3_on_every_value() {
    for r in values() {
        let s = read_admit(r);
        if r >= 1 << 31 {
            // A saturated refcount_t: 7.3 increments it and warns
            // (REFCOUNT_ADD_NOT_ZERO_OVF); the core refuses, storing nothing.
            assert_eq!(s, st(Verdict::Refused, r), "{r:#x}");
            continue;
        }
        match c73::inc_not_zero_limited(r as i32) {
            Some(new) => assert_eq!(s, st(Verdict::Ok, new as u32), "{r:#x}"),
            None => {
                assert_eq!(s.refcnt, r, "{r:#x}: a refusal stores nothing");
                let want = if c73::admit_fail_is_eagain(r as i32) {
                    Verdict::Detached
                } else {
                    Verdict::Refused
                };
                assert_eq!(s.verdict, want, "{r:#x}");
            }
        }
    }
}

#[test]
fn read_release_matches_7_3_wherever_a_reader_can_be_counted() {
    for r in values() {
        let s = read_release(r);
        if s.verdict == Verdict::Unbalanced {
            assert_eq!(s.refcnt, r);
            // Only values where no reader is counted.
            assert!(r == 0 || r == F || r >= 1 << 31, "{r:#x}");
            continue;
        }
        let (new, wake) = c73::refcount_put(r as i32);
        assert_eq!(s.refcnt, new as u32, "{r:#x}");
        assert_eq!(s.verdict == Verdict::Wake, wake, "{r:#x}");
        assert_eq!(s.verdict == Verdict::Detached, new == 0, "{r:#x}");
    }
}

#[test]
fn readers_excluded_matches_7_3_below_bit_31() {
    for r in values().filter(|r| *r < 1 << 31) {
        assert_eq!(
            readers_excluded(r),
            c73::readers_excluded(r as i32),
            "{r:#x}"
        );
    }
}

#[test]
fn exclusion_matches_7_3_on_every_value_a_writer_can_meet() {
    for r in values() {
        let s = exclude_begin(r);
        match s.verdict {
            Verdict::Unbalanced => {
                assert!(r > LIMIT, "{r:#x}");
                assert_eq!(s.refcnt, r);
            }
            Verdict::Detached => {
                assert_eq!(c73::add_not_zero_flag(r as i32), None, "{r:#x}");
                assert_eq!(s.refcnt, r);
            }
            Verdict::Ok => {
                assert_eq!(
                    c73::add_not_zero_flag(r as i32),
                    Some(s.refcnt as i32),
                    "{r:#x}"
                );
                assert!(
                    s.refcnt < 1 << 31,
                    "{r:#x}: the flag never carries into bit 31"
                );
            }
            v => panic!("{r:#x}: {v:?}"),
        }
        for detaching in [false, true] {
            assert_eq!(
                exclusion_reached(r, detaching),
                c73::reached(r as i32, detaching)
            );
        }
        let e = exclude_end(r);
        if e.verdict == Verdict::Unbalanced {
            assert!(r & F == 0 || r >= 1 << 31, "{r:#x}");
            assert_eq!(e.refcnt, r);
        } else {
            let (new, detached) = c73::sub_flag(r as i32);
            assert_eq!(e.refcnt, new as u32, "{r:#x}");
            assert_eq!(e.verdict == Verdict::Detached, detached, "{r:#x}");
        }
    }
}

#[test]
fn detach_and_attach_match_7_3_on_every_attached_value() {
    for r in values() {
        let s = detach(r);
        if (1..=LIMIT).contains(&r) {
            let (new, wait) = c73::detach_put(r as i32);
            assert_eq!(s.refcnt, new as u32, "{r:#x}");
            assert_eq!(s.verdict == Verdict::MustWait, wait, "{r:#x}");
            assert_eq!(s.verdict == Verdict::Detached, !wait, "{r:#x}");
        } else {
            // 7.3 warns (vma_assert_attached(), or a count no writer can
            // meet) and decrements anyway; the core stores nothing.
            assert_eq!(s, st(Verdict::Unbalanced, r), "{r:#x}");
        }
        let a = attach(r);
        if r == 0 {
            assert_eq!(a, st(Verdict::Ok, 1));
        } else {
            assert_eq!(a, st(Verdict::Unbalanced, r), "{r:#x}");
        }
    }
}

#[test]
fn no_decision_leaves_the_reachable_values_or_stores_on_a_refusal() {
    for r in values() {
        let steps = [
            read_admit(r),
            read_release(r),
            exclude_begin(r),
            exclude_end(r),
            detach(r),
            attach(r),
        ];
        for s in steps {
            let refused = matches!(s.verdict, Verdict::Refused | Verdict::Unbalanced)
                || (s.verdict == Verdict::Detached && s.refcnt == r);
            if refused {
                assert_eq!(s.refcnt, r, "{r:#x}: {s:?}");
            }
            if reachable(r) {
                assert!(reachable(s.refcnt), "{r:#x} -> {s:?}");
            }
        }
        // The read side moves by one, the exclusion by the flag.
        let a = read_admit(r);
        assert!(a.refcnt == r || a.refcnt == r + 1);
        let b = exclude_begin(r);
        assert!(b.refcnt == r || b.refcnt == r + F);
    }
}

// ---------------------------------------------------------------------
// The protocol explorer, with the vma cache's reuse.

/// The rules the explorer runs: the core's, or a mutation of them.
#[derive(Clone, Copy)]
struct Rules {
    read_admit: fn(u32) -> Step,
    read_validate: fn(bool, u32, u32) -> Verdict,
    read_release: fn(u32) -> Step,
    exclude_end: fn(u32) -> Step,
    detach: fn(u32) -> Step,
    /// Whether the foreign-mm path pins the other mm across its release
    /// (9bbffee67ffd).
    pin_foreign: bool,
    /// Whether lock_vma_under_rcu() checks the address after locking.
    address_check: bool,
    /// `vm_refcnt` as `vma_init()` leaves it on a reused object.
    init_refcnt: u32,
}

const CORE: Rules = Rules {
    read_admit,
    read_validate,
    read_release,
    exclude_end,
    detach,
    pin_foreign: true,
    address_check: true,
    init_refcnt: DETACHED,
};

const A: usize = 0;
const B: usize = 1;
/// The address A's readers look up; the vma sits there in A.
const HERE: u8 = 1;
/// Another address (A's reuse of the object elsewhere, or B's).
const ELSEWHERE: u8 = 2;

/// Operations of a thread that holds its mm's mmap_lock for write between
/// `MmapLock` and `MmapUnlock`, run in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Op {
    /// `mmap_write_lock()`: the mm's sequence moves on.
    MmapLock,
    /// `vma_start_write()` (uninterruptible).
    StartWrite,
    /// `vma_start_write_killable()` in `dup_mmap()`: a fatal signal may end
    /// its wait (-EINTR), after which the thread goes on to `MmapUnlock`.
    StartWriteKillable,
    /// `vma_mark_detached()`.
    Detach,
    /// The maple tree store that removes the vma.
    Unlink,
    /// `mmap_write_unlock()` (`vma_end_write_all()`).
    MmapUnlock,
    /// `vm_area_free()`: `kmem_cache_free()` at once (typesafe by RCU:
    /// the memory stays a vma, and may be handed out again at once).
    Free,
    /// `vm_area_alloc()` gets this object back from the cache (waits until
    /// it is free): `vma_init()` memsets it and sets `vm_mm`.
    Alloc(u8),
    /// `vma_mark_attached()` and the tree store (the vma is write-locked).
    Attach,
    /// The thread's mm exits: its last `mmdrop()` unless pinned.
    Exit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Wpc {
    /// About to run op `i`.
    Op(u8),
    /// In `rcuwait_wait_event()` for op `i`: registered, checking.
    Check(u8),
    /// Asleep until woken.
    Sleep(u8),
    /// `__vma_exclude_readers_for_detach()` after op `i`'s decrement.
    DetachExclude(u8),
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Rpc {
    /// `rcu_read_lock()` and the walk of A's tree.
    Walk,
    /// `vma_start_read()`'s pre-check.
    Precheck,
    /// The admit (an acquire try_cmpxchg loop: one step).
    Admit,
    /// The mm check and the sequence re-check.
    Validate,
    /// The foreign path: copy `vm_mm`, `rcu_read_unlock()`, `mmgrab()`.
    ForeignGrab,
    /// A release (`vma_refcount_put()`: copy `vm_mm`, then the CAS).
    Release(Why),
    /// `rcuwait_wake_up(&mm->vma_writer_wait)` through the copied mm.
    Wake(Why, u8),
    /// The foreign path's `mmdrop()` of the other mm.
    Drop,
    /// `rcu_read_unlock()` after a successful admit, then the address check.
    AddrCheck,
    /// Holding the read lock (the fault, or /proc's walk that may sleep).
    Locked,
    /// `mmap_read_lock()` (a reader that falls back, or
    /// `vma_start_read_locked()`'s callers: uffd, /proc's fallback).
    MmapRead,
    /// Under `mmap_read_lock()`: look up and `vma_start_read_locked()`.
    AdmitLocked,
    Done,
}

/// Why a reader releases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Why {
    /// The re-check found it write-locked (still under RCU).
    Undo,
    /// The foreign path (the other mm pinned or, mutated, not).
    Foreign,
    /// The address check failed.
    Address,
    /// `vma_end_read()` after its work.
    Unlock,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Reader {
    pc: Rpc,
    in_rcu: bool,
    /// Counted in `vm_refcnt`.
    holds: bool,
    /// The mm the foreign path copied.
    other: u8,
    /// Whether this reader starts under mmap_read_lock.
    locked_kind: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Vma {
    refcnt: u32,
    seq: u32,
    /// `vm_mm`.
    mm: u8,
    /// `vm_start`, as a tag.
    addr: u8,
    /// Whose tree holds it (None: none).
    tree: Option<u8>,
    free: bool,
    /// The tree's reference is counted.
    attached: bool,
    /// The exclusion flag is counted.
    excluding: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Mm {
    seq: u32,
    /// mmap_lock held for write.
    wlocked: bool,
    /// mmap_lock readers.
    rlocked: u8,
    /// `mm_count` (the mm's own reference plus `mmgrab()`s).
    count: u8,
    freed: bool,
    /// `vma_writer_wait` has a task.
    waiter: bool,
    woken: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct World {
    v: Vma,
    mm: [Mm; 2],
    /// Writers: A's and B's threads.
    w: [Wpc; 2],
    /// Whether a writer's current wait is a detach's.
    detaching: [bool; 2],
    /// Whether a killable writer was interrupted (the model's signal).
    killed: [bool; 2],
    readers: Vec<Reader>,
}

struct Scenario<'a> {
    ops: [&'a [Op]; 2],
    /// Readers of A: false = lock_vma_under_rcu(), true = under mmap_lock.
    readers: &'a [bool],
}

#[derive(Default, Debug)]
struct Stats {
    states: usize,
    terminal: usize,
}

fn explore(rules: Rules, sc: &Scenario) -> Result<Stats, String> {
    let mm0 = Mm {
        seq: 0,
        wlocked: false,
        rlocked: 0,
        count: 1,
        freed: false,
        waiter: false,
        woken: false,
    };
    let init = World {
        v: Vma {
            refcnt: 1,
            seq: SEQ_UNLOCKED,
            mm: A as u8,
            addr: HERE,
            tree: Some(A as u8),
            free: false,
            attached: true,
            excluding: false,
        },
        mm: [mm0.clone(), mm0],
        w: [Wpc::Op(0), Wpc::Op(0)],
        detaching: [false; 2],
        killed: [false; 2],
        readers: sc
            .readers
            .iter()
            .map(|&k| Reader {
                pc: if k { Rpc::MmapRead } else { Rpc::Walk },
                in_rcu: false,
                holds: false,
                other: 0,
                locked_kind: k,
            })
            .collect(),
    };
    let mut seen = HashSet::new();
    let mut todo = VecDeque::new();
    let mut stats = Stats::default();
    seen.insert(init.clone());
    todo.push_back(init);
    while let Some(s) = todo.pop_front() {
        stats.states += 1;
        check_invariants(&s, sc)?;
        let mut next = Vec::new();
        for t in [A, B] {
            step_writer(rules, &s, sc, t, &mut next)?;
        }
        for i in 0..s.readers.len() {
            step_reader(rules, &s, i, &mut next)?;
        }
        if next.is_empty() {
            let done =
                s.w.iter().all(|w| *w == Wpc::Done) && s.readers.iter().all(|r| r.pc == Rpc::Done);
            if !done {
                return Err(format!("stuck (a lost wake-up?): {s:?}"));
            }
            if s.v.excluding || s.v.refcnt & F != 0 {
                return Err(format!("the flag is left set: {s:?}"));
            }
            stats.terminal += 1;
        }
        for n in next {
            if seen.insert(n.clone()) {
                todo.push_back(n);
            }
        }
    }
    Ok(stats)
}

/// Whether thread `t` holds `v` write-locked and may modify it.
fn write_holder(s: &World, t: usize) -> bool {
    s.mm[t].wlocked && s.v.mm as usize == t && is_write_locked(s.v.seq, s.mm[t].seq)
}

fn check_invariants(s: &World, _sc: &Scenario) -> Result<(), String> {
    let holders = s.readers.iter().filter(|r| r.holds).count() as u32;
    let want = s.v.attached as u32 + holders + if s.v.excluding { F } else { 0 };
    if s.v.refcnt != want {
        return Err(format!(
            "vm_refcnt {:#x} is not the tree's reference + {holders} readers + the flag: {s:?}",
            s.v.refcnt
        ));
    }
    for r in &s.readers {
        if r.pc != Rpc::Locked {
            continue;
        }
        if s.v.free {
            return Err(format!("a reader holds a freed vma: {s:?}"));
        }
        if s.v.mm as usize != A {
            return Err(format!("a reader of A holds a vma of another mm: {s:?}"));
        }
        if !s.v.attached {
            return Err(format!("a reader holds a detached vma: {s:?}"));
        }
        if s.v.addr != HERE {
            return Err(format!("a reader holds the vma of another address: {s:?}"));
        }
        if write_holder(s, A) {
            return Err(format!("a reader holds the vma the writer modifies: {s:?}"));
        }
    }
    Ok(())
}

fn touch(s: &World, r: &Reader, what: &str) -> Result<(), String> {
    if !r.in_rcu && !r.holds {
        Err(format!(
            "{what}: the vma is touched without RCU or a reference: {s:?}"
        ))
    } else {
        Ok(())
    }
}

fn store(n: &mut World, st: Step) {
    n.v.refcnt = st.refcnt;
}

fn step_writer(
    rules: Rules,
    s: &World,
    sc: &Scenario,
    t: usize,
    next: &mut Vec<World>,
) -> Result<(), String> {
    let ops = sc.ops[t];
    let mut n = s.clone();
    match s.w[t] {
        Wpc::Done => return Ok(()),
        Wpc::Op(i) if i as usize == ops.len() => n.w[t] = Wpc::Done,
        Wpc::Op(i) => {
            let here = n.v.mm as usize == t && !n.v.free;
            n.w[t] = Wpc::Op(i + 1);
            match ops[i as usize] {
                Op::MmapLock => {
                    if s.mm[t].wlocked || s.mm[t].rlocked != 0 {
                        return Ok(()); // blocks
                    }
                    n.mm[t].wlocked = true;
                    n.mm[t].seq = end_write_all(s.mm[t].seq);
                }
                Op::MmapUnlock => {
                    n.mm[t].wlocked = false;
                    n.mm[t].seq = end_write_all(s.mm[t].seq);
                }
                Op::StartWrite | Op::StartWriteKillable => {
                    if !here || !s.mm[t].wlocked {
                        return Err(format!("start_write of a vma not ours: {s:?}"));
                    }
                    if !is_write_locked(s.v.seq, s.mm[t].seq) {
                        let st = exclude_begin(s.v.refcnt);
                        match st.verdict {
                            Verdict::Detached => n.v.seq = s.mm[t].seq,
                            Verdict::Ok => {
                                store(&mut n, st);
                                n.v.excluding = true;
                                n.detaching[t] = false;
                                n.mm[t].waiter = true;
                                n.w[t] = Wpc::Check(i);
                            }
                            v => return Err(format!("exclude_begin said {v:?}: {s:?}")),
                        }
                    }
                }
                Op::Detach => {
                    if !write_holder(s, t) {
                        return Err(format!("detach without the write lock: {s:?}"));
                    }
                    let st = (rules.detach)(s.v.refcnt);
                    n.v.attached = false;
                    match st.verdict {
                        Verdict::Detached => store(&mut n, st),
                        Verdict::MustWait => {
                            store(&mut n, st);
                            n.w[t] = Wpc::DetachExclude(i);
                        }
                        Verdict::Ok => {
                            // A mutated detach that leaves readers behind.
                            store(&mut n, st);
                        }
                        v => return Err(format!("detach said {v:?}: {s:?}")),
                    }
                }
                Op::Unlink => n.v.tree = None,
                Op::Free => {
                    if s.v.refcnt != DETACHED {
                        return Err(format!("vm_area_free() of a counted vma: {s:?}"));
                    }
                    n.v.free = true;
                }
                Op::Alloc(addr) => {
                    if !s.v.free {
                        return Ok(()); // waits for the cache to hand it out
                    }
                    if s.v.refcnt != DETACHED {
                        return Err(format!("vma_init()'s memset over a live count: {s:?}"));
                    }
                    n.v = Vma {
                        refcnt: rules.init_refcnt,
                        seq: SEQ_UNLOCKED,
                        mm: t as u8,
                        addr,
                        tree: None,
                        free: false,
                        attached: rules.init_refcnt != 0,
                        excluding: false,
                    };
                }
                Op::Attach => {
                    if !write_holder(s, t) {
                        return Err(format!("attach without the write lock: {s:?}"));
                    }
                    let st = attach(s.v.refcnt);
                    if st.verdict != Verdict::Ok {
                        return Err(format!("attach said {:?}: {s:?}", st.verdict));
                    }
                    store(&mut n, st);
                    n.v.attached = true;
                    n.v.tree = Some(t as u8);
                }
                Op::Exit => mmdrop(&mut n, t),
            }
        }
        Wpc::DetachExclude(i) => {
            let b = exclude_begin(s.v.refcnt);
            match b.verdict {
                // The readers left in between: nothing to wait for.
                Verdict::Detached => n.w[t] = Wpc::Op(i + 1),
                Verdict::Ok => {
                    store(&mut n, b);
                    n.v.excluding = true;
                    n.detaching[t] = true;
                    n.mm[t].waiter = true;
                    n.w[t] = Wpc::Check(i);
                }
                v => return Err(format!("exclude_begin said {v:?}: {s:?}")),
            }
        }
        Wpc::Check(i) => {
            let killable = ops[i as usize] == Op::StartWriteKillable;
            if exclusion_reached(s.v.refcnt, s.detaching[t]) {
                n.mm[t].waiter = false;
                n.mm[t].woken = false;
                if !s.detaching[t] {
                    n.v.seq = s.mm[t].seq; // WRITE_ONCE(vm_lock_seq)
                }
                let st = (rules.exclude_end)(s.v.refcnt);
                let want = if s.detaching[t] {
                    Verdict::Detached
                } else {
                    Verdict::Ok
                };
                if st.verdict != want {
                    return Err(format!("exclude_end said {:?}: {s:?}", st.verdict));
                }
                store(&mut n, st);
                n.v.excluding = n.v.refcnt & F != 0;
                n.w[t] = Wpc::Op(i + 1);
            } else if s.mm[t].woken {
                n.mm[t].woken = false;
            } else {
                n.w[t] = Wpc::Sleep(i);
            }
            if killable && !s.killed[t] && !exclusion_reached(s.v.refcnt, s.detaching[t]) {
                // A fatal signal instead: end the exclusion, -EINTR.
                let mut k = s.clone();
                k.killed[t] = true;
                abort_write(rules, &mut k, t, ops, i)?;
                next.push(k);
            }
        }
        Wpc::Sleep(i) => {
            let killable = ops[i as usize] == Op::StartWriteKillable;
            if killable && !s.killed[t] {
                let mut k = s.clone();
                k.killed[t] = true;
                abort_write(rules, &mut k, t, ops, i)?;
                next.push(k);
            }
            if !s.mm[t].woken {
                return Ok(());
            }
            n.mm[t].woken = false;
            n.w[t] = Wpc::Check(i);
        }
    }
    next.push(n);
    Ok(())
}

/// A killable writer's interrupted wait: `__vma_end_exclude_readers()`,
/// no store to `vm_lock_seq`, then on to the next `MmapUnlock`.
fn abort_write(rules: Rules, k: &mut World, t: usize, ops: &[Op], i: u8) -> Result<(), String> {
    let seq = k.v.seq;
    let st = (rules.exclude_end)(k.v.refcnt);
    if st.verdict != Verdict::Ok {
        return Err(format!(
            "the aborted exclusion said {:?}: {k:?}",
            st.verdict
        ));
    }
    store(k, st);
    k.v.excluding = k.v.refcnt & F != 0;
    k.mm[t].waiter = false;
    k.mm[t].woken = false;
    if k.v.seq != seq || is_write_locked(k.v.seq, k.mm[t].seq) {
        return Err(format!(
            "an aborted write lock left the vma write-locked: {k:?}"
        ));
    }
    let unlock = ops[i as usize..]
        .iter()
        .position(|o| *o == Op::MmapUnlock)
        .map(|p| p + i as usize)
        .ok_or("a killable write without an unlock")?;
    k.w[t] = Wpc::Op(unlock as u8);
    Ok(())
}

fn mmdrop(n: &mut World, m: usize) {
    n.mm[m].count -= 1;
    if n.mm[m].count == 0 {
        n.mm[m].freed = true;
    }
}

fn leave_rcu(n: &mut World, i: usize) {
    n.readers[i].in_rcu = false;
}

fn step_reader(rules: Rules, s: &World, i: usize, next: &mut Vec<World>) -> Result<(), String> {
    let r = &s.readers[i];
    let mut n = s.clone();
    match r.pc {
        Rpc::Done => return Ok(()),
        Rpc::Walk => {
            n.readers[i].in_rcu = true;
            n.readers[i].pc = if s.v.tree == Some(A as u8) && s.v.addr == HERE {
                Rpc::Precheck
            } else {
                // Not found: rcu_read_unlock(), VMA_LOCK_ABORT.
                n.readers[i].in_rcu = false;
                Rpc::Done
            };
        }
        Rpc::Precheck => {
            touch(s, r, "the pre-check")?;
            if is_write_locked(s.v.seq, s.mm[A].seq) {
                leave_rcu(&mut n, i);
                n.readers[i].pc = Rpc::MmapRead;
            } else {
                n.readers[i].pc = Rpc::Admit;
            }
        }
        Rpc::Admit => {
            touch(s, r, "the admit")?;
            let st = (rules.read_admit)(s.v.refcnt);
            match st.verdict {
                Verdict::Ok => {
                    store(&mut n, st);
                    n.readers[i].holds = true;
                    n.readers[i].pc = Rpc::Validate;
                }
                Verdict::Detached => {
                    // -EAGAIN: VMA_LOCK_MISS, walk again (RCU dropped and
                    // taken again by the walk).
                    leave_rcu(&mut n, i);
                    n.readers[i].pc = Rpc::Walk;
                }
                Verdict::Refused => {
                    leave_rcu(&mut n, i);
                    n.readers[i].pc = Rpc::MmapRead;
                }
                v => return Err(format!("read_admit said {v:?}: {s:?}")),
            }
        }
        Rpc::Validate => {
            touch(s, r, "the validation")?;
            let same = s.v.mm as usize == A;
            n.readers[i].pc = match (rules.read_validate)(same, s.v.seq, s.mm[A].seq) {
                Verdict::Ok => Rpc::AddrCheck,
                Verdict::WriteLocked => Rpc::Release(Why::Undo),
                Verdict::ForeignMm => {
                    if rules.pin_foreign {
                        n.readers[i].other = s.v.mm;
                        leave_rcu(&mut n, i);
                        Rpc::ForeignGrab
                    } else {
                        // Before 9bbffee67ffd: vma_end_read() under RCU.
                        Rpc::Release(Why::Foreign)
                    }
                }
                v => return Err(format!("read_validate said {v:?}: {s:?}")),
            };
        }
        Rpc::ForeignGrab => {
            let m = r.other as usize;
            if s.mm[m].freed {
                return Err(format!("mmgrab() of a freed mm: {s:?}"));
            }
            n.mm[m].count += 1;
            n.readers[i].pc = Rpc::Release(Why::Foreign);
        }
        Rpc::Release(why) => {
            touch(s, r, "vma_refcount_put()")?;
            let copy = s.v.mm; // vm_mm, copied before the decrement
            let st = (rules.read_release)(s.v.refcnt);
            if st.verdict == Verdict::Unbalanced {
                return Err(format!("read_release refused a reader's release: {s:?}"));
            }
            store(&mut n, st);
            n.readers[i].holds = false;
            n.readers[i].pc = if st.verdict == Verdict::Wake {
                Rpc::Wake(why, copy)
            } else {
                after_release(&mut n, i, why, rules)
            };
        }
        Rpc::Wake(why, m) => {
            // rcuwait_wake_up(&mm->vma_writer_wait): reads the mm.
            if s.mm[m as usize].freed {
                return Err(format!("rcuwait_wake_up() through a freed mm: {s:?}"));
            }
            if s.mm[m as usize].waiter {
                n.mm[m as usize].woken = true;
            }
            n.readers[i].pc = after_release(&mut n, i, why, rules);
        }
        Rpc::Drop => {
            mmdrop(&mut n, r.other as usize);
            n.readers[i].pc = Rpc::Done;
        }
        Rpc::AddrCheck => {
            // rcu_read_unlock(), then the range check on the locked vma.
            leave_rcu(&mut n, i);
            n.readers[i].pc = if rules.address_check && s.v.addr != HERE {
                Rpc::Release(Why::Address)
            } else {
                Rpc::Locked
            };
        }
        Rpc::Locked => n.readers[i].pc = Rpc::Release(Why::Unlock),
        Rpc::MmapRead => {
            if s.mm[A].wlocked {
                return Ok(()); // blocks
            }
            n.mm[A].rlocked += 1;
            n.readers[i].pc = Rpc::AdmitLocked;
        }
        Rpc::AdmitLocked => {
            n.mm[A].rlocked -= 1;
            n.readers[i].pc = Rpc::Done;
            // Under mmap_read_lock no writer runs: the vma found is A's,
            // attached, and stays so until the read lock is dropped.
            if s.v.tree == Some(A as u8) && s.v.addr == HERE && r.locked_kind {
                let st = (rules.read_admit)(s.v.refcnt);
                if st.verdict == Verdict::Ok {
                    store(&mut n, st);
                    n.readers[i].holds = true;
                    n.readers[i].pc = Rpc::Locked;
                } else if st.verdict != Verdict::Refused {
                    return Err(format!(
                        "vma_start_read_locked() said {:?}: {s:?}",
                        st.verdict
                    ));
                }
            }
        }
    }
    next.push(n);
    Ok(())
}

fn after_release(n: &mut World, i: usize, why: Why, rules: Rules) -> Rpc {
    match why {
        Why::Undo => {
            leave_rcu(n, i);
            Rpc::MmapRead
        }
        Why::Foreign if rules.pin_foreign => Rpc::Drop,
        Why::Foreign => {
            leave_rcu(n, i);
            Rpc::Done
        }
        Why::Address | Why::Unlock => Rpc::Done,
    }
}

/// A's munmap of the vma: write-lock, detach, unlink, unlock, free.
const A_MUNMAP: &[Op] = &[
    Op::MmapLock,
    Op::StartWrite,
    Op::Detach,
    Op::Unlink,
    Op::MmapUnlock,
    Op::Free,
];
/// B maps a vma (the object A freed) at the same address -- addresses are
/// per mm, so only `vm_mm` tells it from A's -- unmaps it and exits.
const B_REUSE: &[Op] = &[
    Op::Alloc(HERE),
    Op::MmapLock,
    Op::StartWrite,
    Op::Attach,
    Op::MmapUnlock,
    Op::MmapLock,
    Op::StartWrite,
    Op::Detach,
    Op::Unlink,
    Op::MmapUnlock,
    Op::Free,
    Op::Exit,
];
/// A unmaps the vma and maps the object again at another address of A.
const A_REUSE_ELSEWHERE: &[Op] = &[
    Op::MmapLock,
    Op::StartWrite,
    Op::Detach,
    Op::Unlink,
    Op::Free,
    Op::Alloc(ELSEWHERE),
    Op::StartWrite,
    Op::Attach,
    Op::MmapUnlock,
];
/// `dup_mmap()`'s killable write lock, twice in two sections.
const A_KILLABLE: &[Op] = &[
    Op::MmapLock,
    Op::StartWriteKillable,
    Op::MmapUnlock,
    Op::MmapLock,
    Op::StartWrite,
    Op::MmapUnlock,
];
const NOTHING: &[Op] = &[];

const REUSE_BY_B: Scenario = Scenario {
    ops: [A_MUNMAP, B_REUSE],
    readers: &[false, false],
};
const REUSE_BY_B_THREE_READERS: Scenario = Scenario {
    ops: [A_MUNMAP, B_REUSE],
    readers: &[false, false, false],
};
const REUSE_BY_B_WITH_A_LOCKED_READER: Scenario = Scenario {
    ops: [A_MUNMAP, B_REUSE],
    readers: &[false, true],
};
const REUSE_IN_A: Scenario = Scenario {
    ops: [A_REUSE_ELSEWHERE, NOTHING],
    readers: &[false, false],
};
const KILLABLE: Scenario = Scenario {
    ops: [A_KILLABLE, NOTHING],
    readers: &[false, false],
};

fn report(name: &str, st: &Stats) {
    if std::env::var_os("VMA_LOCK_MODEL_STATS").is_some() {
        eprintln!("{name}: {} states, {} terminal", st.states, st.terminal);
    }
}

#[test]
fn protocol_stale_readers_against_free_and_reuse_by_another_mm_are_safe() {
    let st = explore(CORE, &REUSE_BY_B).unwrap();
    report("reuse by B", &st);
    assert!(st.states > 5000, "{st:?}");
}

#[test]
fn protocol_three_stale_readers_against_free_and_reuse_by_another_mm_are_safe() {
    let st = explore(CORE, &REUSE_BY_B_THREE_READERS).unwrap();
    report("reuse by B, 3 readers", &st);
    assert!(st.states > 100_000, "{st:?}");
}

#[test]
fn protocol_a_reader_under_mmap_lock_and_one_under_rcu_against_reuse_are_safe() {
    let st = explore(CORE, &REUSE_BY_B_WITH_A_LOCKED_READER).unwrap();
    report("reuse by B, a locked reader", &st);
    assert!(st.states > 1000, "{st:?}");
}

#[test]
fn protocol_stale_readers_against_reuse_at_another_address_are_safe() {
    let st = explore(CORE, &REUSE_IN_A).unwrap();
    report("reuse in A", &st);
    assert!(st.states > 1000, "{st:?}");
}

#[test]
fn protocol_a_killed_writer_leaves_no_flag_and_no_write_lock() {
    let st = explore(CORE, &KILLABLE).unwrap();
    report("killable", &st);
    assert!(st.states > 1000, "{st:?}");
}

// Mutations: each check of the explorer fails on a rule set that breaks it.

/// The first violation a mutated rule set meets: its message, without the
/// state it was found in.
fn explore_err(rules: Rules, sc: &Scenario) -> String {
    match explore(rules, sc) {
        Ok(st) => panic!("the mutation passed ({st:?})"),
        Err(e) => {
            let what = e.split(": World {").next().unwrap_or(&e).to_string();
            if std::env::var_os("VMA_LOCK_MODEL_STATS").is_some() {
                eprintln!("caught: {what}");
            }
            what
        }
    }
}

#[test]
fn mutation_no_vm_mm_check_locks_a_vma_of_another_mm() {
    fn no_mm_check(_same: bool, seq: u32, mm_seq: u32) -> Verdict {
        read_validate(true, seq, mm_seq)
    }
    let m = Rules {
        read_validate: no_mm_check,
        ..CORE
    };
    let e = explore_err(m, &REUSE_BY_B);
    assert!(e.contains("holds a vma of another mm"), "{e}");
}

#[test]
fn mutation_foreign_release_without_mmgrab_wakes_a_freed_mm() {
    // 9bbffee67ffd reverted.
    let m = Rules {
        pin_foreign: false,
        ..CORE
    };
    let e = explore_err(m, &REUSE_BY_B);
    assert!(e.contains("through a freed mm"), "{e}");
}

#[test]
fn mutation_detach_that_does_not_wait_for_readers_corrupts_the_reused_vma() {
    fn detach_no_wait(r: u32) -> Step {
        match detach(r) {
            Step {
                verdict: Verdict::MustWait,
                refcnt,
            } => Step {
                verdict: Verdict::Ok,
                refcnt,
            },
            s => s,
        }
    }
    let m = Rules {
        detach: detach_no_wait,
        ..CORE
    };
    let e = explore_err(m, &REUSE_BY_B);
    assert!(
        e.contains("of a counted vma") || e.contains("live count"),
        "{e}"
    );
}

#[test]
fn mutation_admit_from_zero_locks_a_detached_vma() {
    fn admit_from_zero(r: u32) -> Step {
        if r == 0 {
            Step {
                verdict: Verdict::Ok,
                refcnt: 1,
            }
        } else {
            read_admit(r)
        }
    }
    let m = Rules {
        read_admit: admit_from_zero,
        ..CORE
    };
    let e = explore_err(m, &REUSE_BY_B);
    assert!(
        e.contains("of a counted vma") || e.contains("holds a detached vma"),
        "{e}"
    );
}

#[test]
fn mutation_release_waking_one_too_late_loses_the_writer() {
    fn wake_late(r: u32) -> Step {
        let s = read_release(r);
        if s.verdict == Verdict::Wake && s.refcnt != F {
            Step {
                verdict: Verdict::Ok,
                refcnt: s.refcnt,
            }
        } else {
            s
        }
    }
    let m = Rules {
        read_release: wake_late,
        ..CORE
    };
    let e = explore_err(m, &REUSE_BY_B);
    assert!(e.contains("stuck"), "{e}");
}

#[test]
fn mutation_release_refusing_at_one_refuses_a_transient_reader_leaving_a_detach() {
    fn refuse_at_one(r: u32) -> Step {
        if r == 1 {
            Step {
                verdict: Verdict::Unbalanced,
                refcnt: r,
            }
        } else {
            read_release(r)
        }
    }
    let m = Rules {
        read_release: refuse_at_one,
        ..CORE
    };
    let e = explore_err(m, &REUSE_BY_B);
    assert!(e.contains("refused a reader's release"), "{e}");
}

#[test]
fn mutation_aborted_exclusion_that_keeps_the_flag_shuts_readers_out_forever() {
    fn end_keeps_flag(r: u32) -> Step {
        let s = exclude_end(r);
        if s.verdict == Verdict::Ok && r != F + 1 {
            // Only the aborted (early) end is broken.
            Step {
                verdict: Verdict::Ok,
                refcnt: r,
            }
        } else {
            s
        }
    }
    let m = Rules {
        exclude_end: end_keeps_flag,
        ..CORE
    };
    let e = explore_err(m, &KILLABLE);
    assert!(
        e.contains("exclude_begin said Unbalanced") || e.contains("flag is left set"),
        "{e}"
    );
}

#[test]
fn mutation_no_sequence_recheck_lets_a_reader_in_under_the_writer() {
    fn no_recheck(same: bool, _seq: u32, _mm_seq: u32) -> Verdict {
        read_validate(same, 0, 1)
    }
    let m = Rules {
        read_validate: no_recheck,
        ..CORE
    };
    let e = explore_err(m, &REUSE_BY_B);
    assert!(e.contains("holds the vma the writer modifies"), "{e}");
}

#[test]
fn mutation_vma_init_that_counts_the_tree_reference_breaks_the_attach() {
    let m = Rules {
        init_refcnt: 1,
        ..CORE
    };
    let e = explore_err(m, &REUSE_BY_B);
    assert!(
        e.contains("attach said Unbalanced") || e.contains("another mm"),
        "{e}"
    );
}

#[test]
fn mutation_no_address_check_locks_the_vma_reused_elsewhere() {
    let m = Rules {
        address_check: false,
        ..CORE
    };
    let e = explore_err(m, &REUSE_IN_A);
    assert!(e.contains("another address"), "{e}");
}

// ---- The packed layout: the lock's line among the cache's objects.

/// Brute force: objects `stride` apart from a line-aligned slab start;
/// whether some object's lock line (`vma_lock::LOCK_BYTES` at `lock_off`)
/// holds a byte of another object, or splits the lock.
fn some_line_shared(size: usize, lock_off: usize, line: usize, align: usize) -> bool {
    let stride = size.next_multiple_of(align);
    // Enough objects for every phase to occur away from the slab's ends.
    let n = 4 * line / 8 + 4;
    (1..n - 1).any(|k| {
        let at = k * stride + lock_off;
        let first = at - at % line;
        if at % line + vma_lock::LOCK_BYTES > line {
            return true;
        }
        (0..n).any(|j| j != k && first < j * stride + size && j * stride < first + line)
    })
}

#[test]
fn packed_align_gives_the_vmas_of_our_configurations_their_own_lock_line() {
    // x86_64, the bench config: 160 bytes, the lock at 112: phases 0 and 32.
    assert_eq!(vma_lock::packed_align(160, 112, 64, 8), Some(8));
    assert_eq!(vma_lock::stride(160, 8), 160);
    // x86_64 defconfig (NUMA: vm_policy): 168 bytes, the lock at 120.
    // Eight bytes apart every phase occurs and the line at phases 8 and 16
    // reaches into the next vma; 16 gives 176 (7.3: 192).
    assert!(!vma_lock::lock_line_inside(168, 120, 64, 8));
    assert_eq!(vma_lock::packed_align(168, 120, 64, 8), Some(16));
    assert_eq!(vma_lock::stride(168, 16), 176);
    // arm64's bench config (no pfnmap tracking): 152 bytes.
    assert_eq!(vma_lock::packed_align(152, 112, 64, 8), Some(16));
    assert_eq!(vma_lock::stride(152, 16), 160);
    // An arch whose slab minimum is 16 (arm64 with tag-based KASAN).
    assert_eq!(vma_lock::packed_align(160, 112, 64, 16), Some(16));
}

#[test]
fn packed_align_is_the_smallest_alignment_the_brute_force_accepts() {
    let mut checked = 0;
    for line in [32usize, 64, 128] {
        for size in (8..=320).step_by(8) {
            for lock_off in (0..=size - vma_lock::LOCK_BYTES).step_by(8) {
                let mut align = vma_lock::MIN_ALIGN;
                while align <= line {
                    let brute = !some_line_shared(size, lock_off, line, align);
                    assert_eq!(
                        vma_lock::lock_line_inside(size, lock_off, line, align),
                        brute,
                        "size {size}, lock at {lock_off}, line {line}, align {align}"
                    );
                    checked += 1;
                    align *= 2;
                }
                let want = (0..=line.trailing_zeros())
                    .map(|b| 1usize << b)
                    .filter(|&a| a >= vma_lock::MIN_ALIGN)
                    .find(|&a| !some_line_shared(size, lock_off, line, a));
                assert_eq!(vma_lock::packed_align(size, lock_off, line, 8), want);
                assert!(
                    want.is_some(),
                    "line alignment always works: {size} {lock_off} {line}"
                );
            }
        }
    }
    assert_eq!(checked, 9840, "geometries checked");
}

#[test]
fn a_phase_blind_rule_is_refuted_by_the_brute_force() {
    // The control: a rule that checks only objects starting on a line (as
    // if vmas were line-aligned) accepts 168-byte vmas 8 apart, where the
    // brute force finds a lock line holding the next vma's first bytes.
    let phase_blind = |size: usize, lock_off: usize, line: usize| {
        let first = lock_off - lock_off % line;
        first + line <= size.next_multiple_of(8)
    };
    assert!(phase_blind(168, 120, 64));
    assert!(some_line_shared(168, 120, 64, 8));
}

#[test]
fn bad_geometry_has_no_alignment() {
    assert_eq!(vma_lock::packed_align(160, 112, 48, 8), None); // line not 2^n
    assert_eq!(vma_lock::packed_align(160, 112, 64, 4), None); // below the minimum
    assert_eq!(vma_lock::packed_align(160, 112, 64, 24), None); // not 2^n
    assert_eq!(vma_lock::packed_align(160, 156, 64, 8), None); // lock past the end
    assert_eq!(vma_lock::packed_align(160, 100, 64, 8), None); // lock not 8-aligned
    assert_eq!(vma_lock::packed_align(0, 0, 64, 8), None);
    assert_eq!(vma_lock::packed_align(usize::MAX, 0, 64, 8), None);
    assert!(!vma_lock::lock_line_inside(160, 112, 64, 128)); // align above a line
}
