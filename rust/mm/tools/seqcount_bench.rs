// SPDX-License-Identifier: GPL-2.0

//! Micro benchmark of one uncontended write section updating two protected
//! words (a mapcount and one rmap value), on the host:
//!
//! - `exclusive (add-return)`: the atomic seqcount's fast path;
//! - `exclusive (cmpxchg)`: the same with load + compare-exchange;
//! - `shared`: the atomic seqcount's shared path (atomic adds);
//! - `seqcount_t`: a plain sequence counter as `write_seqcount_begin/end`
//!   (its writers must be serialised by a lock, not included here);
//! - `spinlock + seqcount_t`: the same with the lock concurrent writers of
//!   a `seqcount_t` need (a test-and-set spinlock);
//! - `atomics only`: the two atomic adds with no seqcount at all.
//!
//! Each is timed over many iterations, several runs, and reported as the
//! best run in ns per section and as a ratio to `seqcount_t`. Usage:
//! `seqcount-bench [iterations] [runs] [--markdown]`.
//!
//! (Under `--cfg loom` the seqcount uses loom's atomics, which only run
//! inside a loom model; this binary then only says so.)

#[cfg(loom)]
fn main() {
    eprintln!("seqcount-bench: built with --cfg loom; build it without to benchmark");
    std::process::exit(2);
}

#[cfg(not(loom))]
fn main() {
    bench::main();
}

#[cfg(not(loom))]
mod bench {

    use rust_mm_core::atomic_seqcount::{AtomicSeqcount, NoPreempt};
    use std::hint::black_box;
    use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
    use std::time::Instant;

    struct Words {
        seq: AtomicSeqcount,
        plain_seq: AtomicU64,
        mapcount: AtomicU64,
        value: AtomicU64,
        lock: AtomicBool,
    }

    fn exclusive(w: &Words) {
        let g = w.seq.write::<NoPreempt>();
        g.add(&w.mapcount, 1);
        g.add(&w.value, 0x1234);
    }

    fn exclusive_cmpxchg(w: &Words) {
        let mode = w.seq.begin_exclusive_cmpxchg();
        for (cell, d) in [(&w.mapcount, 1), (&w.value, 0x1234)] {
            let v = cell.load(Ordering::Relaxed);
            cell.store(v.wrapping_add(d), Ordering::Relaxed);
        }
        let _ = w.seq.end(mode);
    }

    fn shared(w: &Words) {
        let g = w.seq.write_shared::<NoPreempt>();
        g.add(&w.mapcount, 1);
        g.add(&w.value, 0x1234);
    }

    fn plain_seqcount(w: &Words) {
        // write_seqcount_begin(): sequence++ then smp_wmb(); end: smp_wmb(),
        // sequence++.
        let s = w.plain_seq.load(Ordering::Relaxed);
        w.plain_seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        for (cell, d) in [(&w.mapcount, 1), (&w.value, 0x1234)] {
            let v = cell.load(Ordering::Relaxed);
            cell.store(v.wrapping_add(d), Ordering::Relaxed);
        }
        w.plain_seq.store(s.wrapping_add(2), Ordering::Release);
    }

    fn spinlock_seqcount(w: &Words) {
        // What concurrent writers of a seqcount_t need: a lock around it (here a
        // test-and-set spinlock, one RMW to take, a store to release).
        while w.lock.swap(true, Ordering::Acquire) {
            std::hint::spin_loop();
        }
        plain_seqcount(w);
        w.lock.store(false, Ordering::Release);
    }

    fn atomics_only(w: &Words) {
        w.mapcount.fetch_add(1, Ordering::Relaxed);
        w.value.fetch_add(0x1234, Ordering::Relaxed);
    }

    /// A named benchmark case.
    type Case = (&'static str, fn(&Words));

    fn time(f: fn(&Words), iters: u64, runs: u32) -> f64 {
        let w = Words {
            seq: AtomicSeqcount::new(),
            plain_seq: AtomicU64::new(0),
            mapcount: AtomicU64::new(0),
            value: AtomicU64::new(0),
            lock: AtomicBool::new(false),
        };
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..iters {
                    f(black_box(&w));
                }
                t.elapsed().as_nanos() as f64 / iters as f64
            })
            .fold(f64::INFINITY, f64::min)
    }

    pub(crate) fn main() {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let markdown = args.iter().any(|a| a == "--markdown");
        let nums: Vec<u64> = args.iter().filter_map(|a| a.parse().ok()).collect();
        let iters = nums.first().copied().unwrap_or(20_000_000);
        let runs = nums.get(1).copied().unwrap_or(5) as u32;
        let cases: [Case; 6] = [
            ("exclusive (add-return)", exclusive),
            ("exclusive (cmpxchg)", exclusive_cmpxchg),
            ("shared", shared),
            ("seqcount_t", plain_seqcount),
            ("spinlock + seqcount_t", spinlock_seqcount),
            ("atomics only", atomics_only),
        ];
        let results: Vec<(&str, f64)> = cases
            .iter()
            .map(|(n, f)| (*n, time(*f, iters, runs)))
            .collect();
        let base = results[3].1;
        if markdown {
            println!(
                "| section (2 protected words) | ns/section (best of {runs}) | vs seqcount_t |"
            );
            println!("|---|---|---|");
        }
        for (name, ns) in &results {
            if markdown {
                println!("| {name} | {ns:.2} | {:.2}x |", ns / base);
            } else {
                println!(
                    "{name:24} {ns:8.2} ns/section  {:5.2}x seqcount_t",
                    ns / base
                );
            }
        }
    }
}
