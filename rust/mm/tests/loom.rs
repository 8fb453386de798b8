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
use rust_mm_core::folio::{FolioRmap, FolioWords, MmIds, Sharing};
use rust_mm_core::seqcount::{AtomicSeqcount, Mode, NoPreempt};
use rust_mm_core::subid::{SubIds, NR_SUBIDS};

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

fn mm_subids(id: u32) -> [u64; NR_SUBIDS] {
    SubIds::new(id).unwrap().as_slice().try_into().unwrap()
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
        let ida = MmIds {
            id: 0x0000_0101,
            subids: &a,
        };
        let idb = MmIds {
            id: 0x00ff_0001,
            subids: &b,
        };
        f.rmap().add::<NoPreempt>(&idb, 1);
        let t = {
            let f = f.clone();
            thread::spawn(move || {
                let a = mm_subids(0x0000_0101);
                let ida = MmIds {
                    id: 0x0000_0101,
                    subids: &a,
                };
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
