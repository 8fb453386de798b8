// SPDX-License-Identifier: GPL-2.0

//! The atomic seqcount: a sequence counter for data that many CPUs update
//! at once.
//!
//! It brackets updates of a large folio's mapcount and rmap values. Unlike
//! `seqcount_t`, writers need no external lock: any number of *shared*
//! writers may be inside at once, each updating the protected words with
//! atomic read-modify-writes. When nobody else writes, a writer can instead
//! be *exclusive* and update them with plain loads and stores. Readers wait
//! until no writer is inside, read, and retry if the word changed.
//!
//! # The word
//!
//! One 64-bit word, three fields (low to high):
//!
//! | bits | field | meaning |
//! |---|---|---|
//! | `0 .. WRITER_BITS` | shared | writers inside in shared mode |
//! | `WRITER_BITS .. 2 * WRITER_BITS` | exclusive | exclusive attempts inside |
//! | `2 * WRITER_BITS .. 64` | sequence | incremented by every writer on entry |
//!
//! Each field counts at most one section per CPU: sections run with
//! preemption disabled, do not nest on one seqcount and are not used from
//! interrupt context. So a field never exceeds `NR_CPUS`, and
//! [`MAX_WRITERS`] `>= NR_CPUS` is a compile-time check in the kernel: the
//! counts cannot overflow into the next field.
//!
//! # Protocol
//!
//! - shared enter: `fetch_add(SEQ + SHARED)`; if an exclusive writer is
//!   inside, wait until it leaves. Leave: `fetch_sub(SHARED)`.
//! - exclusive enter (add-return): `fetch_add(SEQ + EXCL)`; exclusive iff
//!   the old value had no writer of either kind. Otherwise convert to a
//!   shared writer (`fetch_add(SHARED - EXCL)`) and wait as above. Leave:
//!   `fetch_sub(EXCL)`. Uncontended: one RMW to enter, one to leave.
//! - exclusive enter (cmpxchg, for comparison): load, then
//!   `compare_exchange(old, old + SEQ + EXCL)` if no writer is inside.
//! - read: wait until both writer fields are 0, read, then retry if the
//!   word differs (any writer that entered since changed the sequence).
//!
//! A shared writer waits only for exclusive writers that were inside
//! before it registered: once its count is in the word, every new
//! exclusive attempt sees it and converts to shared. So shared writers
//! wait for at most one exclusive section and cannot starve.
//!
//! Each atomic access below says which ordering it needs and what it
//! pairs with.

use core::marker::PhantomData;

use super::sync::{spin_loop, Atomic64, AtomicU64};

/// Width of each writer-count field.
pub const WRITER_BITS: u32 = 14;

/// The most writers a field can count; `NR_CPUS` must not exceed it.
pub const MAX_WRITERS: u64 = (1 << WRITER_BITS) - 1;

/// Width of the sequence field: a reader is fooled only if exactly
/// `2^SEQ_BITS` writers enter while it reads.
pub const SEQ_BITS: u32 = 64 - 2 * WRITER_BITS;

const SHARED_ONE: u64 = 1;
const SHARED_MASK: u64 = MAX_WRITERS;
const EXCL_ONE: u64 = 1 << WRITER_BITS;
const EXCL_MASK: u64 = MAX_WRITERS << WRITER_BITS;
const SEQ_ONE: u64 = 1 << (2 * WRITER_BITS);
const WRITERS_MASK: u64 = SHARED_MASK | EXCL_MASK;

const _: () = assert!(
    SEQ_BITS >= 32,
    "the sequence must not wrap faster than seqcount_t"
);
const _: () = assert!(SHARED_MASK & EXCL_MASK == 0 && WRITERS_MASK == SEQ_ONE - 1);

/// The fields of a seqcount word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fields {
    /// Shared writers inside.
    pub shared: u64,
    /// Exclusive attempts inside.
    pub exclusive: u64,
    /// Sequence number.
    pub seq: u64,
}

impl Fields {
    /// Split a word into its fields.
    pub const fn of(word: u64) -> Self {
        Fields {
            shared: word & SHARED_MASK,
            exclusive: (word & EXCL_MASK) >> WRITER_BITS,
            seq: word >> (2 * WRITER_BITS),
        }
    }
}

/// Disabling preemption around write sections; the kernel implements it
/// with `preempt_disable()`/`preempt_enable()`, the host with nothing.
pub trait Preempt {
    /// Disable preemption (nests).
    fn disable();
    /// Re-enable preemption.
    fn enable();
}

/// No preemption control (host tests, benchmarks).
pub struct NoPreempt;

impl Preempt for NoPreempt {
    fn disable() {}
    fn enable() {}
}

/// How a writer entered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One of possibly many writers; updates with atomic RMWs.
    Shared,
    /// The only writer; updates with plain loads and stores.
    Exclusive,
}

impl Mode {
    /// The one and the mask of this mode's writer count in the word.
    const fn field(self) -> (u64, u64) {
        match self {
            Mode::Shared => (SHARED_ONE, SHARED_MASK),
            Mode::Exclusive => (EXCL_ONE, EXCL_MASK),
        }
    }
}

/// Misuse detected when a write section ends: its field was already 0. The
/// word was restored; nothing else changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotInside;

/// An atomic seqcount over one 64-bit word of type `A`: `core`'s (or
/// loom's) [`AtomicU64`] on the host, the kernel's atomic in the kernel
/// ([`super::sync`]).
///
/// # Examples
///
/// A writer updates two words together; a reader sees both or retries.
///
/// ```
/// use rust_mm_core::atomic_seqcount::{AtomicSeqcount, Mode, NoPreempt};
/// use rust_mm_core::sync::{AtomicU64, Ordering};
///
/// let seq = AtomicSeqcount::new();
/// let (a, b) = (AtomicU64::new(0), AtomicU64::new(0));
///
/// {
///     // Nobody else writes: the section is exclusive, and its updates
///     // are plain loads and stores.
///     let w = seq.write::<NoPreempt>();
///     assert_eq!(w.mode(), Mode::Exclusive);
///     w.add(&a, 1);
///     w.add(&b, 2);
/// } // The section ends here.
///
/// let (x, y) = loop {
///     let start = seq.read_begin();
///     let (x, y) = (a.load(Ordering::Relaxed), b.load(Ordering::Relaxed));
///     if !seq.read_retry(start) {
///         break (x, y);
///     }
/// };
/// assert_eq!((x, y), (1, 2));
///
/// // A reader that must not wait gives up while a writer is inside.
/// let w = seq.write_shared::<NoPreempt>();
/// assert_eq!(seq.raw_read(), None);
/// drop(w);
/// assert!(seq.raw_read().is_some());
/// ```
#[repr(transparent)]
pub struct AtomicSeqcount<A: Atomic64 = AtomicU64> {
    word: A,
}

impl<A: Atomic64> Default for AtomicSeqcount<A> {
    fn default() -> Self {
        AtomicSeqcount {
            word: A::with_value(0),
        }
    }
}

impl AtomicSeqcount {
    /// A seqcount with no writers and sequence 0, over `core`'s (or loom's)
    /// atomic.
    pub fn new() -> Self {
        Self::with_word(0)
    }

    /// A seqcount whose word starts at `word` (tests of the word
    /// arithmetic; C initialises the word itself).
    pub fn with_word(word: u64) -> Self {
        AtomicSeqcount {
            word: AtomicU64::with_value(word),
        }
    }
}

impl<A: Atomic64> AtomicSeqcount<A> {
    /// Reset to "no writer, sequence 0". Only for a seqcount nobody else
    /// can reach (its folio is being prepared or is frozen).
    pub fn reset_unused(&self) {
        self.word.store_relaxed(0);
    }

    /// The current word (for tests and diagnostics).
    pub fn raw_word(&self) -> u64 {
        self.word.load_relaxed()
    }

    /// Enter as a shared writer (low-level; prefer [`Self::write_shared`]).
    /// Must be paired with [`Self::end`] with [`Mode::Shared`].
    pub fn begin_shared(&self) {
        let old = self.word.fetch_add_acquire(SEQ_ONE + SHARED_ONE);
        if old & EXCL_MASK != 0 {
            self.wait_no_exclusive();
        }
        // Order the sequence increment before the data updates that follow
        // (smp_wmb() in the C seqcount); pairs with the reader's fence.
        A::store_fence();
    }

    /// Enter, exclusively if no other writer is inside (one RMW), as a
    /// shared writer otherwise. Returns how it entered. Must be paired with
    /// [`Self::end`] with that mode.
    pub fn begin_exclusive(&self) -> Mode {
        let old = self.word.fetch_add_acquire(SEQ_ONE + EXCL_ONE);
        let mode = if old & WRITERS_MASK == 0 {
            Mode::Exclusive
        } else {
            // Someone else is inside: become a shared writer. Our exclusive
            // count made others wait; remove it in the same RMW.
            let now = self
                .word
                .fetch_add_acquire(SHARED_ONE.wrapping_sub(EXCL_ONE))
                .wrapping_add(SHARED_ONE.wrapping_sub(EXCL_ONE));
            if now & EXCL_MASK != 0 {
                self.wait_no_exclusive();
            }
            Mode::Shared
        };
        A::store_fence();
        mode
    }

    /// Like [`Self::begin_exclusive`] but with compare-and-exchange: a load
    /// and one CAS when uncontended (the variant without add-return).
    pub fn begin_exclusive_cmpxchg(&self) -> Mode {
        let old = self.word.load_relaxed();
        if old & WRITERS_MASK == 0
            && self
                .word
                .cmpxchg_acquire(old, old.wrapping_add(SEQ_ONE + EXCL_ONE))
        {
            A::store_fence();
            return Mode::Exclusive;
        }
        self.begin_shared();
        Mode::Shared
    }

    fn wait_no_exclusive(&self) {
        // Acquire: see the exclusive writer's plain stores before our RMWs
        // on the same data.
        while self.word.load_acquire() & EXCL_MASK != 0 {
            spin_loop();
        }
    }

    /// Leave a write section entered in `mode`. One RMW. If that mode's
    /// count was already 0 (ending twice, or ending what was never begun)
    /// the word is restored and [`NotInside`] returned.
    pub fn end(&self, mode: Mode) -> Result<(), NotInside> {
        let (one, mask) = mode.field();
        // Release: our data updates before the count drops; readers and
        // later writers acquire it.
        let old = self.word.fetch_sub_release(one);
        if old & mask == 0 {
            self.word.fetch_add_relaxed(one);
            return Err(NotInside);
        }
        Ok(())
    }

    /// Enter a shared write section; it ends when the guard is dropped.
    pub fn write_shared<P: Preempt>(&self) -> WriteGuard<'_, P, A> {
        P::disable();
        self.begin_shared();
        WriteGuard::new(self, Mode::Shared)
    }

    /// Enter a write section, exclusive if no other writer is inside; it
    /// ends when the guard is dropped.
    pub fn write<P: Preempt>(&self) -> WriteGuard<'_, P, A> {
        P::disable();
        let mode = self.begin_exclusive();
        WriteGuard::new(self, mode)
    }

    /// Wait until no writer is inside and return the word to pass to
    /// [`Self::read_retry`].
    pub fn read_begin(&self) -> u64 {
        loop {
            if let Some(start) = self.raw_read() {
                return start;
            }
            spin_loop();
        }
    }

    /// The word if no writer is inside, `None` otherwise: lets a caller give
    /// up ("maybe shared") instead of waiting.
    pub fn raw_read(&self) -> Option<u64> {
        // Acquire: pairs with the writers' release in `end`, so data
        // written before the last writer left is visible.
        let start = self.word.load_acquire();
        (start & WRITERS_MASK == 0).then_some(start)
    }

    /// Whether the data read since [`Self::read_begin`] returned `start`
    /// may be inconsistent (then read again).
    pub fn read_retry(&self, start: u64) -> bool {
        // Order the data loads before the re-read of the word (smp_rmb()).
        A::load_fence();
        self.word.load_relaxed() != start
    }
}

/// An open write section. Dropping it ends the section (and re-enables
/// preemption); it cannot be ended twice.
#[must_use = "the write section ends when the guard is dropped"]
pub struct WriteGuard<'a, P: Preempt, A: Atomic64 = AtomicU64> {
    seq: &'a AtomicSeqcount<A>,
    mode: Mode,
    _preempt: PhantomData<(P, *const ())>,
}

impl<'a, P: Preempt, A: Atomic64> WriteGuard<'a, P, A> {
    fn new(seq: &'a AtomicSeqcount<A>, mode: Mode) -> Self {
        WriteGuard {
            seq,
            mode,
            _preempt: PhantomData,
        }
    }

    /// How this section was entered.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Add `delta` (wrapping) to a protected word: a plain load and store
    /// when exclusive, an atomic add when shared.
    #[inline]
    pub fn add(&self, cell: &A, delta: u64) {
        match self.mode {
            Mode::Exclusive => {
                let v = cell.load_relaxed();
                cell.store_relaxed(v.wrapping_add(delta));
            }
            Mode::Shared => {
                cell.fetch_add_relaxed(delta);
            }
        }
    }

    /// Subtract `delta` (wrapping) from a protected word.
    #[inline]
    pub fn sub(&self, cell: &A, delta: u64) {
        self.add(cell, delta.wrapping_neg());
    }
}

impl<P: Preempt, A: Atomic64> Drop for WriteGuard<'_, P, A> {
    fn drop(&mut self) {
        // The guard is the only way to end its section, so its count is at
        // least one: no need for `end`'s misuse check on this hot path.
        // Release as in `end`.
        let (one, _) = self.mode.field();
        self.seq.word.fetch_sub_release(one);
        P::enable();
    }
}
