// SPDX-License-Identifier: GPL-2.0

//! Host tests of the per-VMA lock word (`core/vma_lock.rs`): every
//! transition on named states, the transitions on every combination of
//! the small fields and on random words, and an explicit-state explorer
//! of the protocol as C runs it (`mm/memory.c`, `include/linux/mm.h`):
//! `lock_vma_under_rcu()` readers against one `mmap_lock` writer that
//! write-locks, detaches and frees the vma, with RCU and `wait_var_event()`
//! modelled step by step. The explorer checks mutual exclusion, that the
//! vma is never touched after it is freed, that no wake-up is lost, and
//! that once a writer waits no reader gets in -- and four mutated rule sets
//! show each check can fail. The atomics themselves are `tests/loom.rs`'s.

#![cfg(not(loom))]

mod rng;

use rng::XorShift;
use rust_mm_core::vma_lock::*;
use std::collections::{HashSet, VecDeque};

const S: u32 = 6; // an mm sequence

#[test]
fn fields_pack_and_unpack() {
    let w = pack(5, true, false, 0xdead_beef);
    assert_eq!(readers(w), 5);
    assert!(waiting(w));
    assert!(!detached(w));
    assert_eq!(seq(w), 0xdead_beef);
    let w = pack(MAX_READERS, false, true, 0);
    assert_eq!(readers(w), MAX_READERS);
    assert!(!waiting(w) && detached(w));
    assert_eq!(init(false), pack(0, false, false, u32::MAX));
}

#[test]
fn read_trylock_takes_a_reader_on_an_unlocked_vma() {
    let s = read_trylock(init(false), S);
    assert_eq!(s.verdict, Verdict::Ok);
    assert_eq!(s.word, pack(1, false, false, SEQ_UNLOCKED));
}

#[test]
fn read_trylock_is_refused_on_a_write_locked_vma() {
    let w = pack(0, false, false, S);
    assert_eq!(
        read_trylock(w, S),
        Step {
            verdict: Verdict::WriteLocked,
            word: w
        }
    );
}

#[test]
fn read_trylock_is_refused_while_a_writer_waits_even_with_a_stale_mm_seq() {
    // The reader read the mm's sequence before the writer began: only the
    // waiting flag stops it.
    let w = pack(2, true, false, S);
    assert_eq!(read_trylock(w, S - 1).verdict, Verdict::WriterWaiting);
}

#[test]
fn read_trylock_is_refused_on_a_detached_vma() {
    assert_eq!(read_trylock(init(true), S).verdict, Verdict::Detached);
}

#[test]
fn read_trylock_at_max_readers_is_refused_and_never_wraps() {
    let w = pack(MAX_READERS, false, false, 1);
    let s = read_trylock(w, S);
    assert_eq!(
        s,
        Step {
            verdict: Verdict::ReadersFull,
            word: w
        }
    );
    let s = read_trylock(pack(MAX_READERS - 1, false, false, 1), S);
    assert_eq!(s.verdict, Verdict::Ok);
    assert_eq!(readers(s.word), MAX_READERS);
    assert!(!waiting(s.word) && !detached(s.word));
}

#[test]
fn read_unlock_of_the_last_reader_wakes_a_waiting_writer() {
    let s = read_unlock(pack(1, true, false, S));
    assert_eq!(
        s,
        Step {
            verdict: Verdict::WakeWriter,
            word: pack(0, true, false, S)
        }
    );
    let s = read_unlock(pack(2, true, false, S));
    assert_eq!(
        s,
        Step {
            verdict: Verdict::Ok,
            word: pack(1, true, false, S)
        }
    );
    let s = read_unlock(pack(1, false, false, S));
    assert_eq!(
        s,
        Step {
            verdict: Verdict::Ok,
            word: pack(0, false, false, S)
        }
    );
}

#[test]
fn read_unlock_without_a_reader_is_unbalanced_and_changes_nothing() {
    let w = pack(0, true, true, S);
    assert_eq!(
        read_unlock(w),
        Step {
            verdict: Verdict::Unbalanced,
            word: w
        }
    );
}

#[test]
fn write_lock_without_readers_stores_the_mm_seq() {
    let s = write_lock(init(false), S);
    assert_eq!(
        s,
        Step {
            verdict: Verdict::Ok,
            word: pack(0, false, false, S)
        }
    );
    assert!(is_write_locked(s.word, S));
    assert!(!is_write_locked(s.word, end_write_all(S)));
}

#[test]
fn write_lock_with_readers_sets_waiting_and_the_seq_in_one_store() {
    let s = write_lock(pack(3, false, false, 1), S);
    assert_eq!(
        s,
        Step {
            verdict: Verdict::MustWait,
            word: pack(3, true, false, S)
        }
    );
}

#[test]
fn write_lock_of_a_write_locked_vma_is_a_no_op() {
    let w = pack(1, false, false, S); // a transient reader refused by the re-check
    assert_eq!(
        write_lock(w, S),
        Step {
            verdict: Verdict::Ok,
            word: w
        }
    );
}

#[test]
fn writer_wait_ends_when_readers_drain_and_clears_the_flag() {
    assert!(!readers_drained(pack(1, true, false, S)));
    assert!(readers_drained(pack(0, true, false, S)));
    let s = write_wait_done(pack(0, true, false, S));
    assert_eq!(
        s,
        Step {
            verdict: Verdict::Ok,
            word: pack(0, false, false, S)
        }
    );
    let w = pack(0, false, false, S);
    assert_eq!(write_wait_done(w).verdict, Verdict::Unbalanced);
}

#[test]
fn detach_needs_the_write_lock_but_always_sets_the_flag_and_attach_clears_it() {
    let s = mark_detached(pack(0, false, false, S), S);
    assert_eq!(
        s,
        Step {
            verdict: Verdict::Ok,
            word: pack(0, false, true, S)
        }
    );
    let s = mark_detached(pack(0, false, false, 1), S);
    assert_eq!(s.verdict, Verdict::Unbalanced);
    assert!(detached(s.word));
    let s = mark_attached(pack(0, false, true, S));
    assert_eq!(
        s,
        Step {
            verdict: Verdict::Ok,
            word: pack(0, false, false, S)
        }
    );
    assert!(idle(s.word));
    assert!(!idle(pack(1, false, false, S)) && !idle(pack(0, true, false, S)));
}

#[test]
fn dup_gives_a_fresh_unlocked_lock_keeping_detached() {
    assert_eq!(dup(pack(7, true, false, S)), init(false));
    assert_eq!(dup(pack(0, false, true, S)), init(true));
}

#[test]
fn is_locked_is_readers_or_write_lock() {
    assert!(!is_locked(init(false), S));
    assert!(is_locked(pack(1, false, false, 1), S));
    assert!(is_locked(pack(0, false, false, S), S));
}

/// Every transition keeps the fields it does not own, and the reader
/// count in range, on every combination of small fields and boundary
/// counts and on random words.
#[test]
fn transitions_touch_only_their_fields_on_every_small_state_and_random_words() {
    let mut words = Vec::new();
    for r in [0, 1, 2, MAX_READERS - 1, MAX_READERS] {
        for wt in [false, true] {
            for d in [false, true] {
                for s in [0, 1, S - 1, S, u32::MAX] {
                    words.push(pack(r, wt, d, s));
                }
            }
        }
    }
    let mut rng = XorShift::new(19);
    for _ in 0..200_000 {
        words.push(rng.next());
    }
    for &w in &words {
        for mm in [S, seq(w), seq(w).wrapping_add(1)] {
            let t = read_trylock(w, mm);
            if t.verdict == Verdict::Ok {
                assert_eq!(t.word, w + 1);
                assert!(readers(w) < MAX_READERS && !waiting(w) && !detached(w));
                assert!(!is_write_locked(w, mm));
                assert_eq!(read_unlock(t.word).word, w);
            } else {
                assert_eq!(t.word, w);
                // The refusal named is the first that applies, in this order.
                let first = if is_write_locked(w, mm) {
                    Verdict::WriteLocked
                } else if waiting(w) {
                    Verdict::WriterWaiting
                } else if detached(w) {
                    Verdict::Detached
                } else {
                    Verdict::ReadersFull
                };
                assert_eq!(t.verdict, first, "word {w:#x} mm_seq {mm:#x}");
            }
            let l = write_lock(w, mm);
            assert_eq!(readers(l.word), readers(w));
            assert_eq!(detached(l.word), detached(w));
            if l.verdict != Verdict::Unbalanced {
                assert!(is_write_locked(l.word, mm));
                if l.verdict == Verdict::MustWait {
                    assert!(waiting(l.word) && readers(w) != 0);
                } else if !is_write_locked(w, mm) {
                    assert!(!waiting(l.word) && readers(w) == 0);
                }
            }
            assert_eq!(readers(mark_detached(w, mm).word), readers(w));
            assert!(detached(mark_detached(w, mm).word));
        }
        let u = read_unlock(w);
        if readers(w) == 0 {
            assert_eq!(u.verdict, Verdict::Unbalanced);
        } else {
            assert_eq!(u.word, w - 1);
            assert_eq!(
                u.verdict == Verdict::WakeWriter,
                readers(w) == 1 && waiting(w)
            );
        }
        assert!(readers(read_trylock(w, S).word) <= MAX_READERS);
    }
}

// ---------------------------------------------------------------------
// The protocol explorer.

/// The rules the explorer runs: the core's, or a mutation of them.
#[derive(Clone, Copy)]
struct Rules {
    read_trylock: fn(u64, u32) -> Step,
    read_unlock: fn(u64) -> Step,
    write_lock: fn(u64, u32) -> Step,
    /// Whether the reader re-checks the mm's sequence after its trylock.
    recheck: bool,
    /// Whether the re-check also refuses a detached vma (6.12's
    /// `vma->detached` test after `vma_start_read()`).
    detach_check: bool,
}

const CORE: Rules = Rules {
    read_trylock,
    read_unlock,
    write_lock,
    recheck: true,
    detach_check: true,
};

/// Writer operations, run in order by the one mmap_lock writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Op {
    /// `mmap_write_lock()`: the mm's sequence moves on (odd: writing).
    MmapLock,
    /// `vma_start_write()`, with its wait when readers are inside.
    StartWrite,
    /// `vma_mark_detached(vma, true)`.
    Detach,
    /// `mmap_write_unlock()` (`vma_end_write_all()`).
    MmapUnlock,
    /// `vm_area_free()`: `call_rcu()` -- the vma is freed after every RCU
    /// reader that was inside at this point has left.
    Free,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Wpc {
    /// About to run op `i`.
    Op(u8),
    /// In `wait_var_event()`: registered, about to check the condition.
    Check(u8),
    /// Asleep until woken.
    Sleep(u8),
    /// Waiting for the RCU grace period of op `i`.
    Grace(u8),
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Rpc {
    /// `rcu_read_lock()` and the maple-tree walk.
    Lookup,
    /// Reads `mm->mm_lock_seq`.
    ReadSeq,
    /// The trylock (one successful cmpxchg or a refusal).
    Trylock,
    /// Re-reads the mm's sequence.
    Recheck,
    /// Undoes its read lock after a failed re-check (still under RCU).
    UndoUnlock,
    /// Wakes after the undo's unlock (`WakeWriter`).
    UndoWake,
    /// `rcu_read_unlock()`; holding the read lock.
    Locked,
    /// The fault, then `vma_end_read()`'s unlock.
    Unlock,
    /// `smp_mb(); wake_up_var()`: the word's address only.
    Wake,
    Done,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Reader {
    pc: Rpc,
    mm_seq: u32,
    in_rcu: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    word: u64,
    mm_seq: u32,
    freed: bool,
    /// In the tree (readers' walks find it).
    linked: bool,
    w: Wpc,
    registered: bool,
    woken: bool,
    /// Readers the grace period waits for (bit i: reader i).
    grace: u32,
    readers: Vec<Reader>,
}

#[derive(Default, Debug)]
struct Stats {
    states: usize,
    terminal: usize,
}

fn writer_exclusive(s: &State, ops: &[Op]) -> bool {
    // Between a completed StartWrite and MmapUnlock.
    let i = match s.w {
        Wpc::Op(i) => i as usize,
        _ => return false,
    };
    let locked = ops[..i].iter().rposition(|o| *o == Op::StartWrite);
    let unlocked = ops[..i].iter().rposition(|o| *o == Op::MmapUnlock);
    matches!((locked, unlocked), (Some(l), u) if u.is_none_or(|u| u < l))
}

/// Explores every interleaving; returns the statistics or the first
/// violated property.
fn explore(rules: Rules, ops: &[Op], nr_readers: usize) -> Result<Stats, String> {
    let init_state = State {
        word: init(false),
        mm_seq: 0,
        freed: false,
        linked: true,
        w: Wpc::Op(0),
        registered: false,
        woken: false,
        grace: 0,
        readers: vec![
            Reader {
                pc: Rpc::Lookup,
                mm_seq: 0,
                in_rcu: false,
            };
            nr_readers
        ],
    };
    let mut seen = HashSet::new();
    let mut todo = VecDeque::new();
    let mut stats = Stats::default();
    seen.insert(init_state.clone());
    todo.push_back(init_state);
    while let Some(s) = todo.pop_front() {
        stats.states += 1;
        // The invariants of every reachable state.
        let holding = s
            .readers
            .iter()
            .filter(|r| {
                matches!(
                    r.pc,
                    Rpc::Recheck | Rpc::UndoUnlock | Rpc::Locked | Rpc::Unlock
                )
            })
            .count() as u64;
        if readers(s.word) != holding {
            return Err(format!(
                "count {} != holders {holding}: {s:?}",
                readers(s.word)
            ));
        }
        if writer_exclusive(&s, ops)
            && s.readers
                .iter()
                .any(|r| matches!(r.pc, Rpc::Locked | Rpc::Unlock))
        {
            return Err(format!("a reader holds the vma the writer modifies: {s:?}"));
        }
        let mut next = Vec::new();
        step_writer(rules, &s, ops, &mut next)?;
        for i in 0..s.readers.len() {
            step_reader(rules, &s, i, &mut next)?;
        }
        if next.is_empty() {
            let all_done = s.w == Wpc::Done && s.readers.iter().all(|r| r.pc == Rpc::Done);
            if !all_done {
                return Err(format!("stuck (a lost wake-up?): {s:?}"));
            }
            if readers(s.word) != 0 || waiting(s.word) {
                return Err(format!("final word {:#x}", s.word));
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

fn step_writer(rules: Rules, s: &State, ops: &[Op], next: &mut Vec<State>) -> Result<(), String> {
    let mut n = s.clone();
    match s.w {
        Wpc::Done => return Ok(()),
        Wpc::Op(i) if i as usize == ops.len() => n.w = Wpc::Done,
        Wpc::Op(i) => match ops[i as usize] {
            Op::MmapLock | Op::MmapUnlock => {
                n.mm_seq = end_write_all(s.mm_seq);
                n.w = Wpc::Op(i + 1);
            }
            Op::StartWrite => {
                let st = (rules.write_lock)(s.word, s.mm_seq);
                n.word = st.word;
                n.w = match st.verdict {
                    Verdict::Ok => Wpc::Op(i + 1),
                    Verdict::MustWait => {
                        n.registered = true;
                        Wpc::Check(i)
                    }
                    v => return Err(format!("write_lock said {v:?}: {s:?}")),
                };
            }
            Op::Detach => {
                let st = mark_detached(s.word, s.mm_seq);
                if st.verdict != Verdict::Ok {
                    return Err(format!("detach without the write lock: {s:?}"));
                }
                n.word = st.word;
                n.linked = false;
                n.w = Wpc::Op(i + 1);
            }
            Op::Free => {
                n.grace = s
                    .readers
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.in_rcu)
                    .fold(0, |m, (k, _)| m | 1 << k);
                n.w = Wpc::Grace(i);
            }
        },
        Wpc::Check(i) => {
            if readers_drained(s.word) {
                n.registered = false;
                n.woken = false;
                let st = write_wait_done(s.word);
                if st.verdict != Verdict::Ok {
                    return Err(format!("write_wait_done said {:?}: {s:?}", st.verdict));
                }
                n.word = st.word;
                n.w = Wpc::Op(i + 1);
            } else if s.woken {
                n.woken = false;
            } else {
                n.w = Wpc::Sleep(i);
            }
        }
        Wpc::Sleep(i) => {
            if !s.woken {
                return Ok(());
            }
            n.woken = false;
            n.w = Wpc::Check(i);
        }
        Wpc::Grace(i) => {
            if s.grace != 0 {
                return Ok(());
            }
            n.freed = true;
            n.w = Wpc::Op(i + 1);
        }
    }
    next.push(n);
    Ok(())
}

fn touch(s: &State, what: &str) -> Result<(), String> {
    if s.freed {
        Err(format!("{what} after the vma was freed: {s:?}"))
    } else {
        Ok(())
    }
}

fn leave_rcu(n: &mut State, i: usize) {
    n.readers[i].in_rcu = false;
    n.grace &= !(1 << i);
}

fn step_reader(rules: Rules, s: &State, i: usize, next: &mut Vec<State>) -> Result<(), String> {
    let r = &s.readers[i];
    let mut n = s.clone();
    match r.pc {
        Rpc::Done => return Ok(()),
        Rpc::Lookup => {
            if s.linked {
                n.readers[i].in_rcu = true;
                n.readers[i].pc = Rpc::ReadSeq;
            } else {
                n.readers[i].pc = Rpc::Done; // not found: a miss
            }
        }
        Rpc::ReadSeq => {
            touch(s, "the walk's vma")?;
            n.readers[i].mm_seq = s.mm_seq;
            n.readers[i].pc = Rpc::Trylock;
        }
        Rpc::Trylock => {
            touch(s, "the trylock")?;
            let st = (rules.read_trylock)(s.word, r.mm_seq);
            if st.verdict == Verdict::Ok {
                if waiting(s.word) {
                    return Err(format!("a reader got in while the writer waits: {s:?}"));
                }
                n.word = st.word;
                n.readers[i].pc = if rules.recheck {
                    Rpc::Recheck
                } else {
                    Rpc::Locked
                };
            } else {
                leave_rcu(&mut n, i);
                n.readers[i].pc = Rpc::Done;
            }
        }
        Rpc::Recheck => {
            // lock_vma_under_rcu(): the sequence, then (as 6.12) whether
            // the vma was detached -- a reader with a stale sequence can get
            // in after a whole write section detached the vma.
            n.readers[i].pc =
                if is_write_locked(s.word, s.mm_seq) || (rules.detach_check && detached(s.word)) {
                    Rpc::UndoUnlock
                } else {
                    Rpc::Locked
                };
        }
        Rpc::UndoUnlock | Rpc::Unlock => {
            touch(s, "vma_end_read()")?;
            let st = (rules.read_unlock)(s.word);
            if st.verdict == Verdict::Unbalanced {
                return Err(format!("unbalanced unlock: {s:?}"));
            }
            n.word = st.word;
            let wake = st.verdict == Verdict::WakeWriter;
            n.readers[i].pc = match (r.pc, wake) {
                (Rpc::UndoUnlock, true) => Rpc::UndoWake,
                (Rpc::UndoUnlock, false) => {
                    leave_rcu(&mut n, i);
                    Rpc::Done
                }
                (_, true) => Rpc::Wake,
                (_, false) => Rpc::Done,
            };
        }
        Rpc::Locked => {
            leave_rcu(&mut n, i);
            n.readers[i].pc = Rpc::Unlock;
        }
        Rpc::UndoWake | Rpc::Wake => {
            // wake_up_var(&vma->vm_lock): a hash of the address into a
            // static table; the vma is not read (no touch()).
            if s.registered {
                n.woken = true;
            }
            if r.pc == Rpc::UndoWake {
                leave_rcu(&mut n, i);
            }
            n.readers[i].pc = Rpc::Done;
        }
    }
    next.push(n);
    Ok(())
}

const FREE_IT: &[Op] = &[
    Op::MmapLock,
    Op::StartWrite,
    Op::Detach,
    Op::MmapUnlock,
    Op::Free,
];
const TWICE: &[Op] = &[
    Op::MmapLock,
    Op::StartWrite,
    Op::MmapUnlock,
    Op::MmapLock,
    Op::StartWrite,
    Op::StartWrite,
    Op::MmapUnlock,
];

fn report(name: &str, st: &Stats) {
    if std::env::var_os("VMA_LOCK_MODEL_STATS").is_some() {
        eprintln!("{name}: {} states, {} terminal", st.states, st.terminal);
    }
}

#[test]
fn protocol_two_readers_and_a_writer_that_frees_the_vma_is_safe() {
    let st = explore(CORE, FREE_IT, 2).unwrap();
    report("free, 2 readers", &st);
    assert!(st.states > 1000);
}

#[test]
fn protocol_three_readers_and_a_writer_that_frees_the_vma_is_safe() {
    let st = explore(CORE, FREE_IT, 3).unwrap();
    report("free, 3 readers", &st);
    assert!(st.states > 10_000);
}

#[test]
fn protocol_two_write_sections_relock_the_vma_safely() {
    let st = explore(CORE, TWICE, 2).unwrap();
    report("two sections, 2 readers", &st);
    assert!(st.states > 1000);
}

// Mutations: each check of the explorer fails on a rule set that breaks it.

fn trylock_ignoring_waiting(word: u64, mm_seq: u32) -> Step {
    read_trylock(word & !WAITING, mm_seq).map_word(word)
}

trait MapWord {
    fn map_word(self, old: u64) -> Step;
}

impl MapWord for Step {
    /// Re-applies the step's effect (reader count) to `old`.
    fn map_word(self, old: u64) -> Step {
        match self.verdict {
            Verdict::Ok => Step {
                verdict: Verdict::Ok,
                word: old + 1,
            },
            v => Step {
                verdict: v,
                word: old,
            },
        }
    }
}

fn unlock_never_waking(word: u64) -> Step {
    let s = read_unlock(word);
    match s.verdict {
        Verdict::WakeWriter => Step {
            verdict: Verdict::Ok,
            word: s.word,
        },
        _ => s,
    }
}

#[test]
fn mutation_trylock_ignoring_the_waiting_flag_lets_a_reader_starve_the_writer() {
    let m = Rules {
        read_trylock: trylock_ignoring_waiting,
        ..CORE
    };
    let e = explore(m, FREE_IT, 2).unwrap_err();
    assert!(e.contains("while the writer waits"), "{e}");
}

#[test]
fn mutation_unlock_that_never_wakes_loses_the_writer() {
    let m = Rules {
        read_unlock: unlock_never_waking,
        ..CORE
    };
    let e = explore(m, FREE_IT, 2).unwrap_err();
    assert!(e.contains("stuck"), "{e}");
}

#[test]
fn mutation_reader_without_the_recheck_breaks_mutual_exclusion() {
    let m = Rules {
        recheck: false,
        ..CORE
    };
    let e = explore(m, FREE_IT, 2).unwrap_err();
    assert!(e.contains("holds the vma the writer modifies"), "{e}");
}

#[test]
fn mutation_recheck_without_the_detached_test_uses_a_freed_vma() {
    let m = Rules {
        detach_check: false,
        ..CORE
    };
    let e = explore(m, FREE_IT, 2).unwrap_err();
    assert!(e.contains("after the vma was freed"), "{e}");
}

#[test]
fn mutation_write_lock_that_does_not_wait_breaks_mutual_exclusion() {
    fn no_wait(word: u64, mm_seq: u32) -> Step {
        let s = write_lock(word, mm_seq);
        Step {
            verdict: Verdict::Ok,
            word: s.word & !WAITING,
        }
    }
    let m = Rules {
        write_lock: no_wait,
        ..CORE
    };
    let e = explore(m, FREE_IT, 2).unwrap_err();
    assert!(
        e.contains("holds the vma the writer modifies") || e.contains("freed"),
        "{e}"
    );
}
