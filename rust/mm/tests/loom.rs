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
// The per-VMA lock (core/vma_lock.rs) over Linux 7.3's vm_refcnt, with the
// orderings 7.3's C uses: a reader's admit is an acquire try_cmpxchg, its
// release a release one; attach is a release store; an exclusion begins
// with a relaxed try_cmpxchg, the excluding thread's wait reads the count
// with acquire, and the exclusion ends with a release RMW. mmap_write_lock()
// moves the mm's sequence on before the writer's stores, and
// mmap_write_unlock() with release; the reader's re-check reads it with
// acquire. The vma's `vm_mm` and its contents are loom UnsafeCells: loom
// fails the model if a writer's store and a reader's load can race, in any
// interleaving or weak-memory outcome. Waiting is a yield loop here (the
// wake-up itself is the explorer's, tests/vma_lock.rs).

mod vma {
    use loom::cell::UnsafeCell;
    use loom::sync::atomic::{fence, AtomicU32, AtomicUsize, Ordering};
    use rust_mm_core::vma_lock::{self, Verdict};

    /// The orderings, so mutations can weaken one.
    #[derive(Clone, Copy)]
    pub struct Orders {
        pub admit: Ordering,
        pub release: Ordering,
        pub attach: Ordering,
    }

    pub const C: Orders = Orders {
        admit: Ordering::Acquire,
        release: Ordering::Release,
        attach: Ordering::Release,
    };

    pub const A: u32 = 1;
    pub const B: u32 = 2;

    /// An mm: its `mm_lock_seq`, and for mm B the pieces of 9bbffee67ffd:
    /// `mm_count` and the memory of its `mm_struct` (`vma_writer_wait`),
    /// poisoned when the last reference goes.
    pub struct Mm {
        pub seq: AtomicU32,
        pub count: AtomicUsize,
        pub body: UnsafeCell<u32>,
    }

    impl Mm {
        pub fn new() -> Self {
            Mm {
                seq: AtomicU32::new(0),
                count: AtomicUsize::new(1),
                body: UnsafeCell::new(0),
            }
        }

        /// `mmap_write_lock()`: the sequence moves on (odd), then the
        /// seqcount's smp_wmb().
        pub fn write_lock(&self) -> u32 {
            let seq = self.seq.load(Ordering::Relaxed) + 1;
            self.seq.store(seq, Ordering::Relaxed);
            fence(Ordering::Release);
            seq
        }

        /// `mmap_write_unlock()`: `vma_end_write_all()` with release.
        pub fn write_unlock(&self) {
            let seq = self.seq.load(Ordering::Relaxed);
            self.seq.store(seq + 1, Ordering::Release);
        }

        /// `mmdrop()`: the last reference poisons the mm_struct.
        pub fn drop_ref(&self) {
            if self.count.fetch_sub(1, Ordering::AcqRel) == 1 {
                // SAFETY: loom checks it against every other access.
                self.body.with_mut(|p| unsafe { *p = 0xdead });
            }
        }

        /// `rcuwait_wake_up(&mm->vma_writer_wait)`: reads the mm.
        pub fn wake(&self) {
            // SAFETY: loom checks it against the poisoning store.
            let v = self.body.with(|p| unsafe { *p });
            assert_ne!(v, 0xdead, "rcuwait_wake_up() through a freed mm");
        }
    }

    pub struct Vma {
        pub refcnt: AtomicU32,
        pub seq: AtomicU32,
        pub mm: UnsafeCell<u32>,
        pub data: UnsafeCell<u32>,
    }

    impl Vma {
        /// Attached in A, unlocked.
        pub fn new() -> Self {
            Vma {
                refcnt: AtomicU32::new(1),
                seq: AtomicU32::new(vma_lock::SEQ_UNLOCKED),
                mm: UnsafeCell::new(A),
                data: UnsafeCell::new(A),
            }
        }

        /// One decision fed to a try_cmpxchg loop; the verdict and whether
        /// it stored.
        fn update(&self, decide: fn(u32) -> vma_lock::Step, ok: Ordering) -> Verdict {
            let mut old = self.refcnt.load(Ordering::Relaxed);
            loop {
                let s = decide(old);
                if s.refcnt == old {
                    return s.verdict;
                }
                match self
                    .refcnt
                    .compare_exchange(old, s.refcnt, ok, Ordering::Relaxed)
                {
                    Ok(_) => return s.verdict,
                    Err(cur) => old = cur,
                }
            }
        }

        /// `vma_refcount_put()`: the mm is copied before the release.
        pub fn release(&self, o: Orders, mms: &[&Mm; 2]) {
            // SAFETY: the caller holds a reference: loom checks the load
            // against every store to vm_mm.
            let mm = self.mm.with(|p| unsafe { *p });
            let v = self.update(vma_lock::read_release, o.release);
            assert_ne!(v, Verdict::Unbalanced);
            if v == Verdict::Wake {
                let m = mms[(mm - 1) as usize];
                m.wake();
            }
        }

        /// A reader of mm A (`lock_vma_under_rcu()` on a pointer found
        /// before the vma was freed): true if it got the lock, after which
        /// it read the vma's contents (which must be A's).
        pub fn read(&self, o: Orders, mms: &[&Mm; 2], pin: bool) -> bool {
            let mm_a = mms[0];
            if vma_lock::is_write_locked(
                self.seq.load(Ordering::Relaxed),
                mm_a.seq.load(Ordering::Relaxed),
            ) {
                return false;
            }
            if self.update(vma_lock::read_admit, o.admit) != Verdict::Ok {
                return false;
            }
            // SAFETY: after the admit; loom checks it against vma_init().
            let vm_mm = self.mm.with(|p| unsafe { *p });
            let mm_seq = mm_a.seq.load(Ordering::Acquire);
            match vma_lock::read_validate(vm_mm == A, self.seq.load(Ordering::Relaxed), mm_seq) {
                Verdict::Ok => {
                    // SAFETY: under the read lock; loom checks it.
                    let d = self.data.with(|p| unsafe { *p });
                    assert_eq!(d, A, "a reader of A read another mm's vma");
                    self.release(o, mms);
                    true
                }
                Verdict::ForeignMm => {
                    let other = mms[(vm_mm - 1) as usize];
                    if pin {
                        other.count.fetch_add(1, Ordering::Relaxed); // mmgrab()
                    }
                    self.release(o, mms);
                    if pin {
                        other.drop_ref();
                    }
                    false
                }
                _ => {
                    self.release(o, mms);
                    false
                }
            }
        }

        /// An exclusion of readers by the mmap_lock writer, waiting by
        /// yielding; `write_seq` is stored (a write lock) unless detaching.
        ///
        /// 7.3's `refcount_add_not_zero()` is relaxed: a detacher that
        /// finds 0 (the last transient reader left) relies on the control
        /// dependency to order its later stores (the free, the reuse's
        /// `vma_init()`) after that reader's release. loom does not model
        /// control dependencies, so this load and the failed exchange are
        /// acquire here.
        fn exclude(&self, detaching: bool, write_seq: Option<u32>) {
            let mut old = self.refcnt.load(Ordering::Acquire);
            loop {
                let s = vma_lock::exclude_begin(old);
                match s.verdict {
                    Verdict::Detached => {
                        if let Some(seq) = write_seq {
                            self.seq.store(seq, Ordering::Relaxed);
                        }
                        return;
                    }
                    Verdict::Ok => {}
                    v => panic!("exclude_begin said {v:?}"),
                }
                match self.refcnt.compare_exchange(
                    old,
                    s.refcnt,
                    Ordering::Relaxed,
                    Ordering::Acquire,
                ) {
                    Ok(_) => break,
                    Err(cur) => old = cur,
                }
            }
            while !vma_lock::exclusion_reached(self.refcnt.load(Ordering::Acquire), detaching) {
                loom::thread::yield_now();
            }
            if let Some(seq) = write_seq {
                self.seq.store(seq, Ordering::Relaxed);
            }
            let v = self.update(vma_lock::exclude_end, Ordering::AcqRel);
            assert_eq!(v == Verdict::Detached, detaching);
        }

        /// `vma_start_write()` of an attached vma by A's writer.
        pub fn exclude_for_test(&self, seq: u32) {
            self.exclude(false, Some(seq));
        }

        /// mm `m`'s munmap of the vma: write-lock, detach (waiting for
        /// transient readers), unlock.
        pub fn munmap(&self, m: &Mm) {
            let seq = m.write_lock();
            if !vma_lock::is_write_locked(self.seq.load(Ordering::Relaxed), seq) {
                self.exclude(false, Some(seq));
            }
            // __refcount_dec_and_test(): release, and acquire when it
            // reaches 0 (the last transient reader's release is then seen).
            if self.update(vma_lock::detach, Ordering::AcqRel) == Verdict::MustWait {
                self.exclude(true, None);
            }
            m.write_unlock();
        }

        /// The cache hands the object to mm B: `vma_init()`, then B's write
        /// lock and `vma_mark_attached()`.
        pub fn reuse_in_b(&self, b: &Mm, o: Orders) {
            // mmap() takes the lock first, then vm_area_alloc(): the
            // seqcount's barrier orders nothing of what follows.
            let seq = b.write_lock();
            // SAFETY: the vma is detached and free: no reader holds it;
            // loom checks both stores against every reader's loads.
            self.mm.with_mut(|p| unsafe { *p = B });
            self.data.with_mut(|p| unsafe { *p = B });
            self.seq.store(vma_lock::SEQ_UNLOCKED, Ordering::Relaxed);
            self.seq.store(seq, Ordering::Relaxed); // exclude_begin(0): detached
            let s = vma_lock::attach(self.refcnt.load(Ordering::Relaxed));
            assert_eq!(s.verdict, Verdict::Ok);
            self.refcnt.store(s.refcnt, o.attach);
            b.write_unlock();
        }
    }
}

/// A stale reader of A against A's munmap of the vma, the cache's reuse of
/// it in mm B, B's munmap and B's exit (the last mmdrop() poisons B).
fn vma_reuse_model(o: vma::Orders, pin: bool, preemptions: usize) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemptions);
    builder.check(move || {
        let v = Arc::new(vma::Vma::new());
        let a = Arc::new(vma::Mm::new());
        let b = Arc::new(vma::Mm::new());
        let reader = {
            let (v, a, b) = (v.clone(), a.clone(), b.clone());
            thread::spawn(move || {
                v.read(o, &[&a, &b], pin);
            })
        };
        v.munmap(&a);
        v.reuse_in_b(&b, o);
        v.munmap(&b);
        b.drop_ref(); // B exits
        reader.join().unwrap();
        assert_eq!(
            v.refcnt.load(Ordering::Relaxed),
            rust_mm_core::vma_lock::DETACHED,
            "a reference leaked"
        );
    });
}

/// Two readers of A against A's write lock, modification and unlock.
fn vma_writer_model(o: vma::Orders) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(move || {
        let v = Arc::new(vma::Vma::new());
        let a = Arc::new(vma::Mm::new());
        let b = Arc::new(vma::Mm::new());
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (v, a, b) = (v.clone(), a.clone(), b.clone());
                thread::spawn(move || {
                    v.read(o, &[&a, &b], true);
                })
            })
            .collect();
        let seq = a.write_lock();
        v.exclude_for_test(seq);
        // The writer modifies the vma under its write lock: A's contents
        // stay A's, but loom checks the store against every reader's load.
        // SAFETY: loom checks it.
        v.data.with_mut(|p| unsafe { *p = vma::A });
        a.write_unlock();
        for r in readers {
            r.join().unwrap();
        }
        assert_eq!(
            v.refcnt.load(Ordering::Relaxed),
            1,
            "a reader's reference leaked"
        );
    });
}

#[test]
fn loom_vma_lock_stale_reader_against_free_and_reuse_by_another_mm() {
    vma_reuse_model(vma::C, true, 2);
}

#[test]
fn loom_vma_lock_two_readers_and_the_writer() {
    vma_writer_model(vma::C);
}

#[test]
#[should_panic(expected = "Causality violation")]
fn loom_vma_lock_mutation_relaxed_attach_lets_a_stale_reader_read_the_old_vm_mm() {
    vma_reuse_model(
        vma::Orders {
            attach: Ordering::Relaxed,
            ..vma::C
        },
        true,
        2,
    );
}

#[test]
#[should_panic(expected = "Causality violation")]
fn loom_vma_lock_mutation_relaxed_admit_races_with_vma_init() {
    vma_reuse_model(
        vma::Orders {
            admit: Ordering::Relaxed,
            ..vma::C
        },
        true,
        2,
    );
}

#[test]
#[should_panic(expected = "Causality violation")]
fn loom_vma_lock_mutation_relaxed_release_races_with_the_writer() {
    vma_writer_model(vma::Orders {
        release: Ordering::Relaxed,
        ..vma::C
    });
}

#[test]
#[should_panic(expected = "Causality violation")]
fn loom_vma_lock_mutation_foreign_release_without_mmgrab_wakes_a_freed_mm() {
    // 9bbffee67ffd reverted: the wake reads mm B after B's exit freed it
    // (the wake's read of B's mm_struct races with the poisoning store of
    // B's last mmdrop(); the same model with the pin passes above).
    vma_reuse_model(vma::C, false, 2);
}
