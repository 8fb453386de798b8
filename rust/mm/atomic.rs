// SPDX-License-Identifier: GPL-2.0

//! Atomic views of words that C owns.
//!
//! Some words rust/mm reads and updates belong to C: a folio's
//! `_large_mapcount` and `_refcount` (`atomic_t`), its seqcount and rmap
//! values (`atomic64_t`), the entries of a page table. C accesses them
//! only atomically (`atomic_*()`, `READ_ONCE()`/`WRITE_ONCE()`, the MMU's
//! access and dirty updates), or while nobody else can reach them. This
//! module is the one place that turns a pointer to such a word into a
//! reference to the atomic type the core works with ([`crate::logic::sync`]),
//! so the argument for doing so is made once, here, and a kernel that has
//! `kernel::sync::atomic::Atomic::from_ptr()` changes only this file.

#[cfg(CONFIG_MM_RMAP_ID)]
use crate::logic::atomic_seqcount::AtomicSeqcount;
use crate::logic::sync::{AtomicI32, AtomicU64};

/// The atomic type of C's 64-bit words (`atomic64_t`'s counter) as the
/// edges pass them to the core ([`crate::logic::sync::Atomic64`]).
pub type U64 = AtomicU64;

/// The atomic type of C's 32-bit counters (`atomic_t`'s counter) as the
/// edges pass them to the core ([`crate::logic::sync::Atomic32`]).
pub type I32 = AtomicI32;

/// C's `struct atomic_seqcount` as the core's seqcount over [`U64`].
#[cfg(CONFIG_MM_RMAP_ID)]
pub type Seqcount = AtomicSeqcount<U64>;

/// A Rust atomic type that can view a C word of type [`AtomicWord::Word`].
///
/// # Safety
///
/// `Self` has the size and alignment of `Word`, every bit pattern of a
/// `Word` is a valid `Self`, and `Self` accesses its memory only with
/// atomic operations (its state is an `UnsafeCell`), so that it may alias
/// a word that C accesses atomically.
pub unsafe trait AtomicWord: Sync {
    /// The C word: `atomic64_t`'s or `atomic_t`'s counter, a page table
    /// entry.
    type Word;
}

// SAFETY: `AtomicU64` has the size and alignment of `u64` (checked below),
// holds any bit pattern and is only accessed atomically.
unsafe impl AtomicWord for AtomicU64 {
    type Word = u64;
}

// SAFETY: As for `AtomicU64`, with `i32`.
unsafe impl AtomicWord for AtomicI32 {
    type Word = i32;
}

#[cfg(CONFIG_MM_RMAP_ID)]
// SAFETY: `AtomicSeqcount` is `repr(transparent)` over an `AtomicU64`
// (sizes checked below), which is an `AtomicWord` of `u64`; any word is
// a seqcount (its methods refuse what they cannot end).
unsafe impl AtomicWord for Seqcount {
    type Word = u64;
}

const _: () = {
    use core::mem::{align_of, size_of};
    assert!(size_of::<AtomicU64>() == size_of::<u64>());
    assert!(align_of::<AtomicU64>() == align_of::<u64>());
    assert!(size_of::<AtomicI32>() == size_of::<i32>());
    assert!(align_of::<AtomicI32>() == align_of::<i32>());
    #[cfg(CONFIG_MM_RMAP_ID)]
    assert!(
        size_of::<Seqcount>() == size_of::<u64>() && align_of::<Seqcount>() == align_of::<u64>()
    );
};

/// The C word at `ptr`, as the atomic `A`.
///
/// # Safety
///
/// `ptr` is aligned and points to an initialised word that stays allocated
/// for `'a`, and while the reference lives every other access to the word
/// is atomic (or there is none).
#[inline(always)]
pub unsafe fn from_ptr<'a, A: AtomicWord>(ptr: *mut A::Word) -> &'a A {
    // SAFETY: `A` has the layout of `A::Word`, accepts any value of it and
    // accesses it only atomically (`AtomicWord`); the word is valid and
    // aligned for `'a` and accessed only atomically meanwhile (this
    // function's safety requirements). Rust's atomics of these sizes
    // compile to the same single-copy-atomic accesses as C's, so the word
    // is accessed atomically on both sides.
    unsafe { &*ptr.cast::<A>() }
}

/// The `len` consecutive C words at `ptr`, as a slice of the atomic `A`.
///
/// # Safety
///
/// As for [`from_ptr`], for each of the `len` words.
#[inline(always)]
pub unsafe fn slice_from_ptr<'a, A: AtomicWord>(ptr: *mut A::Word, len: usize) -> &'a [A] {
    // SAFETY: As in `from_ptr`, for each of the `len` words, which this
    // function's safety requirements make one valid array.
    unsafe { core::slice::from_raw_parts(ptr.cast::<A>(), len) }
}
