// SPDX-License-Identifier: GPL-2.0

//! Model checks of the atomic seqcount with loom: every interleaving (and
//! every weak-memory outcome loom models) of small scenarios. Run with
//! `RUSTFLAGS="--cfg loom" cargo test --release --test loom` (`make test`
//! does). Two protected words are updated together (b == 2 * a); the reader
//! must never accept a pair that breaks that; no update may be lost; and
//! every thread must finish (loom reports a deadlock otherwise).

#![cfg(loom)]

use loom::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;
use rust_mm_core::atomic_seqcount::{AtomicSeqcount, Mode, NoPreempt};
use rust_mm_core::folio_rmap::{FolioRmap, FolioWords, MmIds, Sharing};
use rust_mm_core::rmap_id::subid::SubIds;

struct Data {
    seq: AtomicSeqcount,
    a: AtomicU64,
    b: AtomicU64,
}

impl Data {
    fn new() -> Arc<Self> {
        Arc::new(Data {
            seq: AtomicSeqcount::new(),
            a: AtomicU64::new(0),
            b: AtomicU64::new(0),
        })
    }
}

#[derive(Clone, Copy)]
enum Writer {
    Shared,
    Exclusive,
    Cmpxchg,
}

fn write(d: &Data, how: Writer) -> Mode {
    match how {
        Writer::Shared => {
            let g = d.seq.write_shared::<NoPreempt>();
            g.add(&d.a, 1);
            g.add(&d.b, 2);
            g.mode()
        }
        Writer::Exclusive => {
            let g = d.seq.write::<NoPreempt>();
            g.add(&d.a, 1);
            g.add(&d.b, 2);
            g.mode()
        }
        Writer::Cmpxchg => {
            let mode = d.seq.begin_exclusive_cmpxchg();
            for (cell, delta) in [(&d.a, 1), (&d.b, 2)] {
                match mode {
                    Mode::Exclusive => {
                        let v = cell.load(Ordering::Relaxed);
                        cell.store(v + delta, Ordering::Relaxed);
                    }
                    Mode::Shared => {
                        cell.fetch_add(delta, Ordering::Relaxed);
                    }
                }
            }
            d.seq.end(mode).unwrap();
            mode
        }
    }
}

/// One read attempt: `Some((a, b))` if the seqcount vouches for the pair.
fn read_once(d: &Data) -> Option<(u64, u64)> {
    let start = d.seq.raw_read()?;
    let a = d.a.load(Ordering::Relaxed);
    let b = d.b.load(Ordering::Relaxed);
    (!d.seq.read_retry(start)).then_some((a, b))
}

fn run(writers: [Writer; 2]) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.max_branches = 100_000;
    builder.check(move || {
        let d = Data::new();
        let handles: Vec<_> = writers
            .iter()
            .map(|&how| {
                let d = d.clone();
                thread::spawn(move || write(&d, how))
            })
            .collect();
        // The reader: two attempts with the give-up variant, then one that
        // waits (read_begin) like folio_mapped_shared's retry loop.
        for _ in 0..2 {
            if let Some((a, b)) = read_once(&d) {
                assert_eq!(b, 2 * a, "reader accepted a torn pair");
            }
        }
        let start = d.seq.read_begin();
        let (a, b) = (d.a.load(Ordering::Relaxed), d.b.load(Ordering::Relaxed));
        if !d.seq.read_retry(start) {
            assert_eq!(b, 2 * a, "reader accepted a torn pair");
        }
        let modes: Vec<Mode> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(d.a.load(Ordering::Relaxed), 2, "lost update");
        assert_eq!(d.b.load(Ordering::Relaxed), 4, "lost update");
        // At most one writer was exclusive while both were inside: if both
        // were exclusive they did not overlap, which the values prove.
        let _ = modes;
        assert!(d.seq.raw_read().is_some(), "a writer count leaked");
    });
}

#[test]
fn loom_two_shared_writers_and_a_reader() {
    run([Writer::Shared, Writer::Shared]);
}

#[test]
fn loom_shared_and_exclusive_writer_and_a_reader() {
    run([Writer::Shared, Writer::Exclusive]);
}

#[test]
fn loom_two_exclusive_writers_and_a_reader() {
    run([Writer::Exclusive, Writer::Exclusive]);
}

#[test]
fn loom_cmpxchg_and_exclusive_writer_and_a_reader() {
    run([Writer::Cmpxchg, Writer::Exclusive]);
}

#[test]
fn loom_cmpxchg_and_shared_writer_and_a_reader() {
    run([Writer::Cmpxchg, Writer::Shared]);
}

/// A large folio's rmap state as loom atomics.
struct Folio {
    seq: AtomicSeqcount,
    mapcount: AtomicI32,
    values: [AtomicU64; 4],
}

impl FolioWords for &Folio {
    type U64 = AtomicU64;
    type I32 = AtomicI32;
    fn seqcount(&self) -> &AtomicSeqcount {
        &self.seq
    }
    fn mapcount(&self) -> &AtomicI32 {
        &self.mapcount
    }
    fn value(&self, k: usize) -> &AtomicU64 {
        &self.values[k]
    }
}

impl Folio {
    fn rmap(&self) -> FolioRmap<&Self> {
        FolioRmap::new(9, self).unwrap()
    }
}

fn mm_subids(id: u32) -> SubIds {
    SubIds::new(id).unwrap()
}

/// mm B maps one page of an order-9 folio for the whole run; a writer
/// thread maps and unmaps one page for mm A. A reader asking for A must
/// never hear "exclusive" (B always maps a page), and after the writer is
/// done B's page is the only mapping left (no lost update).
#[test]
fn loom_folio_reader_never_calls_a_shared_folio_exclusive() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.max_branches = 100_000;
    builder.check(|| {
        let f = Arc::new(Folio {
            seq: AtomicSeqcount::new(),
            mapcount: AtomicI32::new(-1),
            values: Default::default(),
        });
        let (a, b) = (mm_subids(0x0000_0101), mm_subids(0x00ff_0001));
        let ida = MmIds::of(&a);
        let idb = MmIds::of(&b);
        f.rmap().add::<NoPreempt>(&idb, 1);
        let t = {
            let f = f.clone();
            thread::spawn(move || {
                let a = mm_subids(0x0000_0101);
                let ida = MmIds::of(&a);
                f.rmap().add::<NoPreempt>(&ida, 1);
                f.rmap().add::<NoPreempt>(&ida, -1);
            })
        };
        let s = f.rmap().sharing(&ida);
        assert_ne!(s, Sharing::Exclusive, "foreign mapping called exclusive");
        t.join().unwrap();
        assert_eq!(f.rmap().sharing(&idb), Sharing::Exclusive);
        assert_eq!(f.mapcount.load(Ordering::Relaxed), 0, "lost update");
    });
}

// ---------------------------------------------------------------------
// The per-VMA lock word (core/vma_lock.rs) with the orderings C uses:
// a reader's trylock is an acquire cmpxchg and its unlock a release one;
// the writer's mmap_write_lock() moves the mm's sequence on before its
// (fully ordered) write-lock cmpxchg, and its wait reads the word with
// acquire. The vma's fields are a loom UnsafeCell: loom fails the model
// if the writer's store and a reader's load can race, whatever the
// interleaving or the weak-memory outcome. Waiting is a yield loop here
// (the wake-up itself is the explorer's, tests/vma_lock.rs).

mod vma {
    use loom::cell::UnsafeCell;
    use loom::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
    use rust_mm_core::vma_lock::{self, Verdict};

    /// The orderings, so mutations can weaken one.
    #[derive(Clone, Copy)]
    pub struct Orders {
        pub trylock: Ordering,
        pub unlock: Ordering,
    }

    pub const C: Orders = Orders {
        trylock: Ordering::Acquire,
        unlock: Ordering::Release,
    };

    pub struct Vma {
        pub mm_seq: AtomicU32,
        pub word: AtomicU64,
        pub data: UnsafeCell<u64>,
    }

    impl Vma {
        pub fn new() -> Self {
            Vma {
                mm_seq: AtomicU32::new(0),
                word: AtomicU64::new(vma_lock::init(false)),
                data: UnsafeCell::new(0),
            }
        }

        /// `vma_start_read()` plus lock_vma_under_rcu()'s re-check.
        pub fn read_lock(&self, o: Orders) -> bool {
            let mm_seq = self.mm_seq.load(Ordering::Acquire);
            let mut old = self.word.load(Ordering::Relaxed);
            loop {
                let s = vma_lock::read_trylock(old, mm_seq);
                if s.verdict != Verdict::Ok {
                    return false;
                }
                match self
                    .word
                    .compare_exchange(old, s.word, o.trylock, Ordering::Relaxed)
                {
                    Ok(_) => break,
                    Err(cur) => old = cur,
                }
            }
            // raw_read_seqcount(): acquire, pairing with the release of
            // vma_end_write_all(); a reader that sees a finished write
            // section also sees what it did (the detach) in the word it
            // reads after it.
            let mm_seq = self.mm_seq.load(Ordering::Acquire);
            let w = self.word.load(Ordering::Relaxed);
            if vma_lock::is_write_locked(w, mm_seq) || vma_lock::detached(w) {
                self.read_unlock(o);
                return false;
            }
            true
        }

        /// `vma_end_read()`; true if it must wake the writer.
        pub fn read_unlock(&self, o: Orders) -> bool {
            let mut old = self.word.load(Ordering::Relaxed);
            loop {
                let s = vma_lock::read_unlock(old);
                assert_ne!(s.verdict, Verdict::Unbalanced);
                match self
                    .word
                    .compare_exchange(old, s.word, o.unlock, Ordering::Relaxed)
                {
                    Ok(_) => return s.verdict == Verdict::WakeWriter,
                    Err(cur) => old = cur,
                }
            }
        }

        /// `vma_mark_detached(vma, true)` by the write-lock holder.
        pub fn detach(&self) {
            let seq = self.mm_seq.load(Ordering::Relaxed);
            let mut old = self.word.load(Ordering::Relaxed);
            loop {
                let s = vma_lock::mark_detached(old, seq);
                assert_eq!(s.verdict, Verdict::Ok);
                match self
                    .word
                    .compare_exchange(old, s.word, Ordering::SeqCst, Ordering::Relaxed)
                {
                    Ok(_) => return,
                    Err(cur) => old = cur,
                }
            }
        }

        /// `mmap_write_unlock()`: `vma_end_write_all()` moves the sequence
        /// on with release.
        pub fn mmap_write_unlock(&self) {
            let seq = self.mm_seq.load(Ordering::Relaxed);
            self.mm_seq.store(seq + 1, Ordering::Release);
        }

        /// mmap_write_lock() and `vma_start_write()`, waiting by yielding.
        pub fn write_lock(&self) {
            let seq = self.mm_seq.load(Ordering::Relaxed) + 1;
            self.mm_seq.store(seq, Ordering::Relaxed);
            fence(Ordering::Release); // the seqcount's smp_wmb()
            let mut old = self.word.load(Ordering::Relaxed);
            let wait = loop {
                let s = vma_lock::write_lock(old, seq);
                match self
                    .word
                    .compare_exchange(old, s.word, Ordering::SeqCst, Ordering::Relaxed)
                {
                    Ok(_) => break s.verdict == Verdict::MustWait,
                    Err(cur) => old = cur,
                }
            };
            if wait {
                while !vma_lock::readers_drained(self.word.load(Ordering::Acquire)) {
                    loom::thread::yield_now();
                }
                let mut old = self.word.load(Ordering::Relaxed);
                loop {
                    let s = vma_lock::write_wait_done(old);
                    assert_eq!(s.verdict, Verdict::Ok);
                    match self.word.compare_exchange(
                        old,
                        s.word,
                        Ordering::SeqCst,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => break,
                        Err(cur) => old = cur,
                    }
                }
            }
        }
    }
}

/// Starts `n` readers: each tries the read lock and, if it gets it, reads
/// the vma's fields (`check` sees the value) and unlocks.
fn spawn_readers(
    v: &Arc<vma::Vma>,
    n: usize,
    o: vma::Orders,
    check: fn(u64),
) -> Vec<thread::JoinHandle<()>> {
    (0..n)
        .map(|_| {
            let v = v.clone();
            thread::spawn(move || {
                if v.read_lock(o) {
                    // SAFETY: loom checks this access against the writer's
                    // stores; the model fails if they can race.
                    check(v.data.with(|p| unsafe { *p }));
                    v.read_unlock(o);
                }
            })
        })
        .collect()
}

fn vma_model(readers: usize, o: vma::Orders) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(move || {
        let v = Arc::new(vma::Vma::new());
        let handles = spawn_readers(&v, readers, o, |d| {
            assert!(d == 0 || d == 2, "reader saw a half-made change");
        });
        v.write_lock();
        // The writer modifies the vma under its write lock.
        // SAFETY: loom checks it against the readers' loads.
        v.data.with_mut(|p| unsafe { *p = 1 });
        v.data.with_mut(|p| unsafe { *p = 2 });
        for h in handles {
            h.join().unwrap();
        }
        let w = v.word.load(Ordering::Relaxed);
        assert_eq!(
            rust_mm_core::vma_lock::readers(w),
            0,
            "a reader count leaked"
        );
        assert!(
            !rust_mm_core::vma_lock::waiting(w),
            "the waiting flag leaked"
        );
    });
}

// A reader racing detach, and the vma "freed" right after the writer
// finishes: the writer write-locks, detaches, ends its mmap_lock section
// and stores a poison value into the vma as kfree would reuse it (no RCU
// wait: this checks the lock word alone keeps late readers out). A reader
// that gets the lock must see a live vma, without a race.
fn vma_detach_model(readers: usize, preemptions: usize) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemptions);
    builder.check(move || {
        let v = Arc::new(vma::Vma::new());
        let handles = spawn_readers(&v, readers, vma::C, |d| {
            assert_ne!(d, 3, "a reader got the lock of a freed vma");
        });
        v.write_lock();
        v.detach();
        v.mmap_write_unlock();
        // SAFETY: loom checks it against the readers' loads.
        v.data.with_mut(|p| unsafe { *p = 3 });
        for h in handles {
            h.join().unwrap();
        }
    });
}

#[test]
fn loom_vma_lock_reader_racing_detach_and_free() {
    vma_detach_model(1, 3);
}

#[test]
fn loom_vma_lock_two_readers_racing_detach_and_free() {
    vma_detach_model(2, 2);
}

#[test]
fn loom_vma_lock_one_reader_and_the_writer() {
    vma_model(1, vma::C);
}

#[test]
fn loom_vma_lock_two_readers_and_the_writer() {
    vma_model(2, vma::C);
}

#[test]
#[should_panic(expected = "Causality violation")]
fn loom_vma_lock_mutation_relaxed_unlock_races_with_the_writer() {
    vma_model(
        1,
        vma::Orders {
            unlock: Ordering::Relaxed,
            ..vma::C
        },
    );
}

#[test]
#[should_panic(expected = "Causality violation")]
fn loom_vma_lock_mutation_relaxed_trylock_misses_the_write_lock_in_the_recheck() {
    vma_model(
        1,
        vma::Orders {
            trylock: Ordering::Relaxed,
            ..vma::C
        },
    );
}
