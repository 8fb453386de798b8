// SPDX-License-Identifier: GPL-2.0

//! A folio's rmap words laid out by the test instead of a kernel, and an
//! mm with its sub-IDs (shared by the folio and sole-mapper tests; each
//! test crate uses part of it).

#![allow(dead_code)]

use rust_mm_core::atomic_seqcount::{AtomicSeqcount, NoPreempt};
use rust_mm_core::folio_rmap::{FolioRmap, FolioWords, MmIds, ReuseCounts};
use rust_mm_core::rmap_id::subid::{SubIds, MAX_VALUES};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;

/// The rmap fields of a folio, laid out by the test instead of a kernel.
pub struct FakeFolio {
    pub order: u32,
    pub seq: AtomicSeqcount,
    pub mapcount: AtomicI32,
    pub values: [AtomicU64; MAX_VALUES],
    pub refcount: AtomicI32,
    pub entire: AtomicI32,
}

impl FakeFolio {
    pub fn new(order: u32) -> Self {
        let f = FakeFolio {
            order,
            seq: AtomicSeqcount::new(),
            mapcount: AtomicI32::new(12345),
            values: Default::default(),
            refcount: AtomicI32::new(0),
            entire: AtomicI32::new(-1),
        };
        // Garbage that `reset` must clear, as a recycled struct page has.
        for v in &f.values {
            v.store(0xdead_beef, Ordering::Relaxed);
        }
        f.rmap().reset();
        f
    }

    pub fn rmap(&self) -> FolioRmap<&Self> {
        FolioRmap::new(self.order, self).expect("tracked order")
    }

    pub fn counts(&self) -> ReuseCounts<'_> {
        ReuseCounts {
            refcount: &self.refcount,
            entire_mapcount: &self.entire,
        }
    }
}

impl FolioWords for &FakeFolio {
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

/// An mm: its ID and cached sub-IDs.
pub struct Mm {
    pub id: u32,
    pub subids: SubIds,
}

impl Mm {
    pub fn new(id: u32) -> Self {
        Mm {
            id,
            subids: SubIds::new(id).unwrap(),
        }
    }

    pub fn ids(&self) -> MmIds<'_> {
        MmIds::of(&self.subids)
    }
}

/// Two threads map and unmap pages of `f` for mm `a` (exclusive and shared
/// write sections interleave) while `read` runs on this thread, until the
/// writers have done at least 200000 map/unmap pairs between them, however
/// the threads get scheduled, and `read` ran at least once. The writers
/// leave `a`'s mappings as they found them.
pub fn race_writers(f: &Arc<FakeFolio>, a: &Arc<Mm>, mut read: impl FnMut()) {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let go = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|t| {
            let (f, a, stop, done, go) =
                (f.clone(), a.clone(), stop.clone(), done.clone(), go.clone());
            std::thread::spawn(move || {
                while !go.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let k = 1 + ((n + t) % 7) as i32;
                    f.rmap().add::<NoPreempt>(&a.ids(), k);
                    f.rmap().add::<NoPreempt>(&a.ids(), -k);
                    n += 1;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let mut reads = 0u64;
    go.store(true, Ordering::Release);
    while reads == 0 || done.load(Ordering::Relaxed) < 200_000 {
        read();
        reads += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for h in writers {
        h.join().unwrap();
    }
}
