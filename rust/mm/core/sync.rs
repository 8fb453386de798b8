// SPDX-License-Identifier: GPL-2.0

//! The atomics of the core.
//!
//! The core's atomic algorithms (the atomic seqcount, the folio rmap
//! state) are written against two traits, [`Atomic64`] and [`Atomic32`]:
//! the operations they perform, each with the ordering it needs, and the
//! two fences the seqcount pairs with them. Who implements them decides
//! whose atomics run:
//!
//! - on the host, `core`'s atomics, or loom's when the core is
//!   model-checked (`--cfg loom`): [`AtomicU64`] and [`AtomicI32`] here,
//!   the default type of every generic parameter of the core;
//! - in the kernel, the edges implement them for the kernel crate's
//!   `kernel::sync::atomic::Atomic<u64>` and `Atomic<i32>` where the base
//!   has it (Linux 7.x: `rust/mm/atomic.rs`), so the kernel's own
//!   `atomic64_*()`/`atomic_*()` and `smp_wmb()`/`smp_rmb()` run, with
//!   their KCSAN instrumentation; on a base without it, for `core`'s.
//!
//! Each method is named after its ordering, so the trait is a list of
//! exactly what the core asks of an atomic and nothing more. The host
//! implementations use the C11 orderings of the names, the kernel's the
//! LKMM ones; where they differ (the fences) the method says why either
//! is enough for its one use.

#[cfg(not(loom))]
pub use core::sync::atomic::{fence, AtomicI32, AtomicU64, Ordering};
#[cfg(loom)]
pub use loom::sync::atomic::{fence, AtomicI32, AtomicU64, Ordering};

/// The operations the core performs on a 64-bit atomic word.
pub trait Atomic64: Sync {
    /// A word holding `v` (tests; C initialises the kernel's words).
    fn with_value(v: u64) -> Self;
    /// The value, unordered (`atomic64_read()`).
    fn load_relaxed(&self) -> u64;
    /// The value, ordered before every later access (`atomic64_read_acquire()`).
    fn load_acquire(&self) -> u64;
    /// Set the value, unordered (`atomic64_set()`).
    fn store_relaxed(&self, v: u64);
    /// Add `v` (wrapping), unordered; returns the old value.
    fn fetch_add_relaxed(&self, v: u64) -> u64;
    /// Add `v` (wrapping), ordered before every later access; returns the
    /// old value.
    fn fetch_add_acquire(&self, v: u64) -> u64;
    /// Subtract `v` (wrapping), ordered after every earlier access;
    /// returns the old value.
    fn fetch_sub_release(&self, v: u64) -> u64;
    /// Replace `old` by `new` if the word holds `old`, ordered before
    /// every later access when it does; whether it did.
    fn cmpxchg_acquire(&self, old: u64, new: u64) -> bool;
    /// Order the stores (and read-modify-writes) before it before the
    /// stores after it: a seqcount writer's entry before its data updates.
    /// The kernel: `smp_wmb()`, as `write_seqcount_begin()` has it; the
    /// host: a release fence, C11's form of the same seqlock writer.
    fn store_fence();
    /// Order the loads before it before the loads after it: a seqcount
    /// reader's data loads before its re-read of the word. The kernel:
    /// `smp_rmb()`, as `read_seqcount_retry()` has it; the host: an
    /// acquire fence.
    fn load_fence();
}

/// The operations the core performs on a 32-bit atomic counter.
pub trait Atomic32: Sync {
    /// A counter holding `v` (tests).
    fn with_value(v: i32) -> Self;
    /// The value, unordered (`atomic_read()`).
    fn load_relaxed(&self) -> i32;
    /// Set the value, unordered (`atomic_set()`).
    fn store_relaxed(&self, v: i32);
    /// Add `v` (wrapping), unordered; returns the old value.
    fn fetch_add_relaxed(&self, v: i32) -> i32;
}

impl Atomic64 for AtomicU64 {
    #[inline(always)]
    fn with_value(v: u64) -> Self {
        AtomicU64::new(v)
    }
    #[inline(always)]
    fn load_relaxed(&self) -> u64 {
        self.load(Ordering::Relaxed)
    }
    #[inline(always)]
    fn load_acquire(&self) -> u64 {
        self.load(Ordering::Acquire)
    }
    #[inline(always)]
    fn store_relaxed(&self, v: u64) {
        self.store(v, Ordering::Relaxed)
    }
    #[inline(always)]
    fn fetch_add_relaxed(&self, v: u64) -> u64 {
        self.fetch_add(v, Ordering::Relaxed)
    }
    #[inline(always)]
    fn fetch_add_acquire(&self, v: u64) -> u64 {
        self.fetch_add(v, Ordering::Acquire)
    }
    #[inline(always)]
    fn fetch_sub_release(&self, v: u64) -> u64 {
        self.fetch_sub(v, Ordering::Release)
    }
    #[inline(always)]
    fn cmpxchg_acquire(&self, old: u64, new: u64) -> bool {
        self.compare_exchange(old, new, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }
    #[inline(always)]
    fn store_fence() {
        fence(Ordering::Release)
    }
    #[inline(always)]
    fn load_fence() {
        fence(Ordering::Acquire)
    }
}

impl Atomic32 for AtomicI32 {
    #[inline(always)]
    fn with_value(v: i32) -> Self {
        AtomicI32::new(v)
    }
    #[inline(always)]
    fn load_relaxed(&self) -> i32 {
        self.load(Ordering::Relaxed)
    }
    #[inline(always)]
    fn store_relaxed(&self, v: i32) {
        self.store(v, Ordering::Relaxed)
    }
    #[inline(always)]
    fn fetch_add_relaxed(&self, v: i32) -> i32 {
        self.fetch_add(v, Ordering::Relaxed)
    }
}

/// Wait a moment for another CPU: a spin-loop hint, or under loom a yield
/// to its scheduler (a model that spins without yielding never ends).
#[inline]
pub fn spin_loop() {
    #[cfg(not(loom))]
    core::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}
