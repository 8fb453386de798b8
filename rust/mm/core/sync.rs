// SPDX-License-Identifier: GPL-2.0

//! The atomics of the core.
//!
//! Every atomic type, ordering and fence the core uses comes from here:
//! `core`'s, or loom's when the core is model-checked on the host
//! (`--cfg loom`). The kernel always builds the `core` ones, whose
//! `AtomicU64` and `AtomicI32` have the size and alignment of
//! `atomic64_t`'s and `atomic_t`'s counter: the edges view C's words as
//! these types, through one helper of the kernel crate (`crate::atomic`
//! in `rust/mm/atomic.rs`).

#[cfg(not(loom))]
pub use core::sync::atomic::{fence, AtomicI32, AtomicU64, Ordering};
#[cfg(loom)]
pub use loom::sync::atomic::{fence, AtomicI32, AtomicU64, Ordering};

/// Wait a moment for another CPU: a spin-loop hint, or under loom a yield
/// to its scheduler (a model that spins without yielding never ends).
#[inline]
pub fn spin_loop() {
    #[cfg(not(loom))]
    core::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}
