// SPDX-License-Identifier: GPL-2.0

//! Host tests of the atomic seqcount: the word arithmetic (fields, writer
//! counts up to the maximum, sequence wrap), misuse detection, and a
//! threaded stress run of writers in both modes against checking readers.
//! The exhaustive interleaving check is `tests/loom.rs` (`--cfg loom`).

#![cfg(not(loom))]

use rust_mm_core::atomic_seqcount::{
    AtomicSeqcount, Fields, Mode, NoPreempt, NotInside, MAX_WRITERS, SEQ_BITS, WRITER_BITS,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

const SEQ_SHIFT: u32 = 2 * WRITER_BITS;

#[test]
fn word_layout_leaves_room_for_nr_cpus_and_a_long_sequence() {
    // Checked when this test builds; x86_64 MAXSMP is 8192 CPUs and arm64's
    // largest NR_CPUS is 4096.
    const {
        assert!(2 * WRITER_BITS + SEQ_BITS == 64);
        assert!(MAX_WRITERS >= 8192);
        assert!(SEQ_BITS >= 32);
    }
    let word = (5 << (2 * WRITER_BITS)) | (3 << WRITER_BITS) | 2;
    assert_eq!(
        Fields::of(word),
        Fields {
            shared: 2,
            exclusive: 3,
            seq: 5
        }
    );
}

#[test]
fn shared_enter_counts_a_writer_and_bumps_the_sequence() {
    let s = AtomicSeqcount::new();
    s.begin_shared();
    assert_eq!(
        Fields::of(s.raw_word()),
        Fields {
            shared: 1,
            exclusive: 0,
            seq: 1
        }
    );
    assert_eq!(s.raw_read(), None);
    s.end(Mode::Shared).unwrap();
    assert_eq!(
        Fields::of(s.raw_word()),
        Fields {
            shared: 0,
            exclusive: 0,
            seq: 1
        }
    );
    assert_eq!(s.raw_read(), Some(1 << SEQ_SHIFT));
}

#[test]
fn uncontended_writer_is_exclusive_and_contended_one_is_shared() {
    let s = AtomicSeqcount::new();
    assert_eq!(s.begin_exclusive(), Mode::Exclusive);
    assert_eq!(
        Fields::of(s.raw_word()),
        Fields {
            shared: 0,
            exclusive: 1,
            seq: 1
        }
    );
    s.end(Mode::Exclusive).unwrap();
    s.begin_shared();
    // Another writer is inside: the exclusive attempt falls back to shared
    // and leaves no exclusive count behind.
    assert_eq!(s.begin_exclusive(), Mode::Shared);
    assert_eq!(
        Fields::of(s.raw_word()),
        Fields {
            shared: 2,
            exclusive: 0,
            seq: 3
        }
    );
    assert_eq!(s.begin_exclusive_cmpxchg(), Mode::Shared);
    s.end(Mode::Shared).unwrap();
    s.end(Mode::Shared).unwrap();
    s.end(Mode::Shared).unwrap();
    assert_eq!(s.begin_exclusive_cmpxchg(), Mode::Exclusive);
    s.end(Mode::Exclusive).unwrap();
    assert_eq!(
        Fields::of(s.raw_word()),
        Fields {
            shared: 0,
            exclusive: 0,
            seq: 5
        }
    );
}

#[test]
fn writer_count_reaches_max_writers_without_touching_other_fields() {
    let s = AtomicSeqcount::new();
    for _ in 0..MAX_WRITERS {
        s.begin_shared();
    }
    let f = Fields::of(s.raw_word());
    assert_eq!(
        (f.shared, f.exclusive, f.seq),
        (MAX_WRITERS, 0, MAX_WRITERS)
    );
    for _ in 0..MAX_WRITERS {
        s.end(Mode::Shared).unwrap();
    }
    assert_eq!(Fields::of(s.raw_word()).shared, 0);
    assert!(s.raw_read().is_some());
}

#[test]
fn sequence_wraps_without_disturbing_the_writer_fields() {
    let top = ((1u64 << SEQ_BITS) - 1) << SEQ_SHIFT;
    let s = AtomicSeqcount::with_word(top);
    s.begin_shared();
    assert_eq!(
        Fields::of(s.raw_word()),
        Fields {
            shared: 1,
            exclusive: 0,
            seq: 0
        }
    );
    s.end(Mode::Shared).unwrap();
    assert_eq!(s.raw_read(), Some(0));
    // The limit of any seqcount: a reader that started at `top` and saw
    // exactly 2^SEQ_BITS writers would not notice. One fewer is noticed.
    let start = s.read_begin();
    assert!(!s.read_retry(start));
    s.begin_shared();
    s.end(Mode::Shared).unwrap();
    assert!(s.read_retry(start));
}

#[test]
fn ending_a_section_that_is_not_open_is_refused_and_changes_nothing() {
    let s = AtomicSeqcount::with_word(7 << SEQ_SHIFT);
    assert_eq!(s.end(Mode::Shared), Err(NotInside));
    assert_eq!(s.end(Mode::Exclusive), Err(NotInside));
    assert_eq!(s.raw_word(), 7 << SEQ_SHIFT);
    s.begin_shared();
    s.end(Mode::Shared).unwrap();
    assert_eq!(s.end(Mode::Shared), Err(NotInside), "second end");
    assert_eq!(
        Fields::of(s.raw_word()),
        Fields {
            shared: 0,
            exclusive: 0,
            seq: 8
        }
    );
}

#[test]
fn guards_end_their_section_on_drop() {
    let s = AtomicSeqcount::new();
    let v = AtomicU64::new(0);
    {
        let g = s.write::<NoPreempt>();
        assert_eq!(g.mode(), Mode::Exclusive);
        g.add(&v, 5);
        assert_eq!(Fields::of(s.raw_word()).exclusive, 1);
    }
    assert!(s.raw_read().is_some());
    {
        let h = s.write_shared::<NoPreempt>();
        h.sub(&v, 2);
        assert_eq!(Fields::of(s.raw_word()).shared, 1);
    }
    assert_eq!(v.load(Ordering::Relaxed), 3);
    assert_eq!(
        Fields::of(s.raw_word()),
        Fields {
            shared: 0,
            exclusive: 0,
            seq: 2
        }
    );
}

#[test]
fn reader_retries_when_a_writer_entered_during_the_read() {
    let s = AtomicSeqcount::new();
    let start = s.read_begin();
    let g = s.write::<NoPreempt>();
    drop(g);
    assert!(s.read_retry(start));
    let again = s.read_begin();
    assert!(!s.read_retry(again));
}

/// Writers in every mode update two words together (b == 2 * a, and each
/// section adds 1 to a); readers assert they never accept a pair that
/// breaks the invariant; at the end no update is lost.
#[test]
fn threads_in_all_modes_never_expose_a_torn_pair_or_lose_an_update() {
    struct Shared {
        seq: AtomicSeqcount,
        a: AtomicU64,
        b: AtomicU64,
        stop: AtomicBool,
    }
    let sh = Arc::new(Shared {
        seq: AtomicSeqcount::new(),
        a: AtomicU64::new(0),
        b: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    });
    const PER_WRITER: u64 = 100_000;
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let sh = Arc::clone(&sh);
            std::thread::spawn(move || {
                let mut modes = [0u64; 2];
                for i in 0..PER_WRITER {
                    let mode = match (w + i) % 3 {
                        0 => {
                            let g = sh.seq.write_shared::<NoPreempt>();
                            g.add(&sh.a, 1);
                            g.add(&sh.b, 2);
                            g.mode()
                        }
                        1 => {
                            let g = sh.seq.write::<NoPreempt>();
                            g.add(&sh.a, 1);
                            g.add(&sh.b, 2);
                            g.mode()
                        }
                        _ => {
                            let mode = sh.seq.begin_exclusive_cmpxchg();
                            let g = Raw(&sh.seq, mode);
                            let v = sh.a.load(Ordering::Relaxed);
                            match mode {
                                Mode::Exclusive => sh.a.store(v + 1, Ordering::Relaxed),
                                Mode::Shared => {
                                    sh.a.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                            sh.b.fetch_add(2, Ordering::Relaxed);
                            drop(g);
                            mode
                        }
                    };
                    modes[usize::from(mode == Mode::Exclusive)] += 1;
                }
                modes
            })
        })
        .collect();
    struct Raw<'a>(&'a AtomicSeqcount, Mode);
    impl Drop for Raw<'_> {
        fn drop(&mut self) {
            self.0.end(self.1).unwrap();
        }
    }
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let sh = Arc::clone(&sh);
            std::thread::spawn(move || {
                let (mut accepted, mut retried) = (0u64, 0u64);
                // Until the writers are done, and at least one read was
                // accepted: under load a reader may retry through every
                // write section, and a read of the quiet pair after the
                // writers stopped must then be accepted (no reader may
                // be refused for ever).
                while !sh.stop.load(Ordering::Relaxed) || accepted == 0 {
                    let start = sh.seq.read_begin();
                    let a = sh.a.load(Ordering::Relaxed);
                    let b = sh.b.load(Ordering::Relaxed);
                    if sh.seq.read_retry(start) {
                        retried += 1;
                        continue;
                    }
                    assert_eq!(b, 2 * a, "reader accepted a torn pair");
                    accepted += 1;
                }
                (accepted, retried)
            })
        })
        .collect();
    let mut modes = [0u64; 2];
    for w in writers {
        let m = w.join().unwrap();
        modes[0] += m[0];
        modes[1] += m[1];
    }
    sh.stop.store(true, Ordering::Relaxed);
    for r in readers {
        let (accepted, _) = r.join().unwrap();
        assert!(accepted > 0);
    }
    assert_eq!(sh.a.load(Ordering::Relaxed), 3 * PER_WRITER, "lost update");
    assert_eq!(sh.b.load(Ordering::Relaxed), 6 * PER_WRITER);
    assert!(modes[1] > 0, "no section was ever exclusive");
    assert!(sh.seq.raw_read().is_some());
}
