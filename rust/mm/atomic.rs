// SPDX-License-Identifier: GPL-2.0

//! Atomic views of words that C owns.
//!
//! Some words rust/mm reads and updates belong to C: a folio's
//! `_large_mapcount` and `_refcount` (`atomic_t`), its seqcount and rmap
//! values (`atomic64_t`). C accesses them only atomically (`atomic_*()`,
//! `atomic64_*()`), or while nobody else can reach them. This module is
//! the one place that turns a pointer to such a word into a reference the
//! core can work with, and names the atomic types the edges pass to it
//! ([`U64`], [`I32`], [`Seqcount`]).
//!
//! The core is written against the traits [`Atomic64`] and [`Atomic32`];
//! this file implements them for the kernel crate's [`Atomic<u64>`] and
//! [`Atomic<i32>`], one kernel operation per method, with the ordering
//! the method names: the kernel's own `atomic64_*()`/`atomic_*()` (LKMM
//! semantics, KCSAN instrumentation) and `smp_wmb()`/`smp_rmb()`.
//! [`Atomic::from_ptr()`] makes the argument that a Rust reference may
//! alias a word C accesses atomically.
//!
//! Which atomics the edges use depends on how rust/mm is linked:
//!
//! - without `CONFIG_RUST_MM_LTO`, the kernel's: every entry point is
//!   then an out-of-line call into Rust, and each atomic operation a call
//!   of its C helper (inlined with `CONFIG_RUST_INLINE_HELPERS`);
//! - with it, `core`'s, as on the host. `kernel::sync::atomic`'s
//!   operations are C helpers (`rust/helpers/atomic.c`) whose bodies are
//!   inline asm, and LLVM does not import a function with inline asm from
//!   a module that keeps locals in `llvm.compiler.used` (`helpers.o` does:
//!   its modinfo and static-call keys) into another ThinLTO module: every
//!   operation stays a call, six per rmap update, in the C callers that
//!   this link inlines rust/mm into (`scripts/test/lto-check.py` names
//!   them). `core`'s atomics compile to the same instructions as C's
//!   (`docs/seqcount.md` argues the orderings) and inline.
//!
//! What stays hand-written: for `core`'s atomics, the cast that views C's
//! word as one (its argument below); for either, the view of C's `struct
//! atomic_seqcount` as the core's seqcount, which is `repr(transparent)`
//! over its word (the kernel crate cannot know that type).

use kernel::sync::atomic::{ordering, Atomic};
use kernel::sync::barrier::{smp_mb, Read, Write};

#[cfg(CONFIG_MM_RMAP_ID)]
use crate::logic::atomic_seqcount::AtomicSeqcount;
use crate::logic::sync::{Atomic32, Atomic64};
#[cfg(CONFIG_RUST_MM_LTO)]
use crate::logic::sync::{AtomicI32, AtomicU64};

/// The atomic type of C's 64-bit words (`atomic64_t`'s counter) as the
/// edges pass them to the core: the kernel's.
#[cfg(not(CONFIG_RUST_MM_LTO))]
pub type U64 = Atomic<u64>;

/// The atomic type of C's 32-bit counters (`atomic_t`'s counter) as the
/// edges pass them to the core: the kernel's.
#[cfg(not(CONFIG_RUST_MM_LTO))]
pub type I32 = Atomic<i32>;

/// The atomic type of C's 64-bit words (`atomic64_t`'s counter) as the
/// edges pass them to the core: `core`'s, which LTO inlines.
#[cfg(CONFIG_RUST_MM_LTO)]
pub type U64 = AtomicU64;

/// The atomic type of C's 32-bit counters (`atomic_t`'s counter) as the
/// edges pass them to the core: `core`'s, which LTO inlines.
#[cfg(CONFIG_RUST_MM_LTO)]
pub type I32 = AtomicI32;

/// C's `struct atomic_seqcount` as the core's seqcount over [`U64`].
#[cfg(CONFIG_MM_RMAP_ID)]
pub type Seqcount = AtomicSeqcount<U64>;

impl Atomic64 for Atomic<u64> {
    #[inline(always)]
    fn with_value(v: u64) -> Self {
        Atomic::new(v)
    }
    #[inline(always)]
    fn load_relaxed(&self) -> u64 {
        self.load(ordering::Relaxed)
    }
    #[inline(always)]
    fn load_acquire(&self) -> u64 {
        self.load(ordering::Acquire)
    }
    #[inline(always)]
    fn store_relaxed(&self, v: u64) {
        self.store(v, ordering::Relaxed)
    }
    #[inline(always)]
    fn fetch_add_relaxed(&self, v: u64) -> u64 {
        self.fetch_add(v, ordering::Relaxed)
    }
    #[inline(always)]
    fn fetch_add_acquire(&self, v: u64) -> u64 {
        self.fetch_add(v, ordering::Acquire)
    }
    #[inline(always)]
    fn fetch_sub_release(&self, v: u64) -> u64 {
        self.fetch_sub(v, ordering::Release)
    }
    #[inline(always)]
    fn cmpxchg_acquire(&self, old: u64, new: u64) -> bool {
        self.cmpxchg(old, new, ordering::Acquire).is_ok()
    }
    #[inline(always)]
    fn store_fence() {
        smp_mb(Write)
    }
    #[inline(always)]
    fn load_fence() {
        smp_mb(Read)
    }
}

impl Atomic32 for Atomic<i32> {
    #[inline(always)]
    fn with_value(v: i32) -> Self {
        Atomic::new(v)
    }
    #[inline(always)]
    fn load_relaxed(&self) -> i32 {
        self.load(ordering::Relaxed)
    }
    #[inline(always)]
    fn store_relaxed(&self, v: i32) {
        self.store(v, ordering::Relaxed)
    }
    #[inline(always)]
    fn fetch_add_relaxed(&self, v: i32) -> i32 {
        self.fetch_add(v, ordering::Relaxed)
    }
}

/// A type through which Rust may view a C word of type
/// [`AtomicWord::Word`] that C accesses atomically.
pub trait AtomicWord: Sync {
    /// The C word: `atomic64_t`'s or `atomic_t`'s counter.
    type Word;

    /// The C word at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is aligned and points to an initialised word that stays
    /// allocated for `'a`, and while the reference lives every other
    /// access to the word is atomic (or there is none).
    unsafe fn from_ptr<'a>(ptr: *mut Self::Word) -> &'a Self;
}

impl AtomicWord for Atomic<u64> {
    type Word = u64;

    #[inline(always)]
    unsafe fn from_ptr<'a>(ptr: *mut u64) -> &'a Self {
        // SAFETY: `Atomic::from_ptr()` needs what this function's safety
        // requirements give: an aligned, valid word for `'a` on which every
        // other access is atomic.
        unsafe { Atomic::from_ptr(ptr) }
    }
}

impl AtomicWord for Atomic<i32> {
    type Word = i32;

    #[inline(always)]
    unsafe fn from_ptr<'a>(ptr: *mut i32) -> &'a Self {
        // SAFETY: As for `Atomic<u64>`.
        unsafe { Atomic::from_ptr(ptr) }
    }
}

#[cfg(CONFIG_RUST_MM_LTO)]
impl AtomicWord for AtomicU64 {
    type Word = u64;

    #[inline(always)]
    unsafe fn from_ptr<'a>(ptr: *mut u64) -> &'a Self {
        // SAFETY: `AtomicU64` has the size and alignment of `u64` (checked
        // below), holds any bit pattern and is only accessed atomically;
        // the word is valid and aligned for `'a` and accessed only
        // atomically meanwhile (this function's safety requirements).
        // Rust's atomics of this size compile to the same single-copy-atomic
        // accesses as C's, so the word is accessed atomically on both sides.
        unsafe { &*ptr.cast::<Self>() }
    }
}

#[cfg(CONFIG_RUST_MM_LTO)]
impl AtomicWord for AtomicI32 {
    type Word = i32;

    #[inline(always)]
    unsafe fn from_ptr<'a>(ptr: *mut i32) -> &'a Self {
        // SAFETY: As for `AtomicU64`, with `i32`.
        unsafe { &*ptr.cast::<Self>() }
    }
}

#[cfg(CONFIG_MM_RMAP_ID)]
impl AtomicWord for Seqcount {
    type Word = u64;

    #[inline(always)]
    unsafe fn from_ptr<'a>(ptr: *mut u64) -> &'a Self {
        // SAFETY: As for `U64`, whose `from_ptr()` has these requirements.
        let word: &'a U64 = unsafe { U64::from_ptr(ptr) };
        // SAFETY: `AtomicSeqcount<U64>` is `repr(transparent)` over its one
        // field, a `U64` (sizes checked below), so the reference may be
        // reinterpreted; any word is a seqcount (its methods refuse what
        // they cannot end).
        unsafe { &*core::ptr::from_ref(word).cast::<Self>() }
    }
}

const _: () = {
    use core::mem::{align_of, size_of};
    assert!(size_of::<U64>() == size_of::<u64>() && align_of::<U64>() == align_of::<u64>());
    assert!(size_of::<I32>() == size_of::<i32>() && align_of::<I32>() == align_of::<i32>());
    #[cfg(CONFIG_MM_RMAP_ID)]
    assert!(
        size_of::<Seqcount>() == size_of::<u64>() && align_of::<Seqcount>() == align_of::<u64>()
    );
};

/// The C word at `ptr`, as the atomic `A`.
///
/// # Safety
///
/// As for [`AtomicWord::from_ptr`].
#[inline(always)]
pub unsafe fn from_ptr<'a, A: AtomicWord>(ptr: *mut A::Word) -> &'a A {
    // SAFETY: This function's safety requirements are `A::from_ptr`'s.
    unsafe { A::from_ptr(ptr) }
}

/// The core's atomic algorithms on the kernel's atomics: the trait
/// implementations above against what the core expects of them (old
/// values returned, wrapping, a failed cmpxchg changing nothing), then the
/// seqcount over them, in the kernel (the folio rmap state over them:
/// `rust_folio_rmap` in `folio_rmap.rs`). In every build, whichever atomics
/// its edges use.
#[cfg(CONFIG_MM_RMAP_ID_KUNIT_TEST)]
#[kernel::macros::kunit_tests(rust_mm_atomic)]
mod tests {
    use crate::logic::atomic_seqcount::{AtomicSeqcount, Fields, Mode, NoPreempt, NotInside};
    use crate::logic::sync::{Atomic32, Atomic64};
    use kernel::sync::atomic::Atomic;

    // The kernel's atomics, whichever the edges use in this build.
    type U64 = Atomic<u64>;
    type I32 = Atomic<i32>;
    type Seqcount = AtomicSeqcount<U64>;

    #[test]
    fn kernel_atomics_return_old_values_and_wrap() {
        let w = U64::with_value(u64::MAX);
        assert_eq!(w.fetch_add_relaxed(2), u64::MAX);
        assert_eq!(w.load_relaxed(), 1);
        assert_eq!(w.fetch_sub_release(3), 1);
        assert_eq!(w.load_acquire(), u64::MAX - 1);
        assert_eq!(w.fetch_add_acquire(1), u64::MAX - 1);
        w.store_relaxed(7);
        assert_eq!(w.load_relaxed(), 7);
        let c = I32::with_value(i32::MAX);
        assert_eq!(c.fetch_add_relaxed(1), i32::MAX);
        assert_eq!(c.load_relaxed(), i32::MIN);
        c.store_relaxed(-1);
        assert_eq!(c.load_relaxed(), -1);
    }

    #[test]
    fn kernel_cmpxchg_changes_only_the_expected_value() {
        let w = U64::with_value(5);
        assert!(!w.cmpxchg_acquire(4, 9));
        assert_eq!(w.load_relaxed(), 5);
        assert!(w.cmpxchg_acquire(5, 9));
        assert_eq!(w.load_relaxed(), 9);
        // The fences exist and return (their ordering is the LKMM's).
        U64::store_fence();
        U64::load_fence();
    }

    #[test]
    fn seqcount_on_kernel_atomics_is_exclusive_alone_shared_beside_a_writer() {
        let seq = Seqcount::default();
        let start = seq.raw_read();
        assert_eq!(start, Some(0));
        {
            let w = seq.write::<NoPreempt>();
            assert_eq!(w.mode(), Mode::Exclusive);
            // A reader that must not wait gives up while a writer is inside.
            assert_eq!(seq.raw_read(), None);
        }
        {
            let s = seq.write_shared::<NoPreempt>();
            let w = seq.write::<NoPreempt>();
            assert_eq!(w.mode(), Mode::Shared);
            drop(w);
            drop(s);
        }
        // Three sections entered, none inside: the sequence moved by 3 and
        // a reader that began before them retries.
        let end = seq.raw_word();
        assert_eq!(
            Fields::of(end),
            Fields {
                shared: 0,
                exclusive: 0,
                seq: 3
            }
        );
        assert!(seq.read_retry(0));
        assert!(!seq.read_retry(end));
        // Ending a section nobody entered is refused, the word restored.
        assert_eq!(seq.end(Mode::Shared), Err(NotInside));
        assert_eq!(seq.end(Mode::Exclusive), Err(NotInside));
        assert_eq!(seq.raw_word(), end);
    }
}
