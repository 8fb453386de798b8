// SPDX-License-Identifier: GPL-2.0

//! The per-VMA lock as one 64-bit word in the vma: its state machine.
//!
//! 6.12 gives every vma a `struct vma_lock` (an `rw_semaphore` in a slab
//! cache of its own, 40 bytes) although readers never sleep on it -- they
//! try, and fall back to `mmap_lock` -- and at most one writer ever wants
//! it, because writers hold `mmap_lock` for write. This module is the
//! whole state machine of a lock that fits in one `atomic64_t` embedded in
//! `vm_area_struct`: pure functions from the word's value (and the mm's
//! sequence) to a [`Step`], the verdict and the value to store. C owns the
//! atomics (load, `try_cmpxchg` loop), RCU, waiting and waking.
//!
//! # Examples
//!
//! A reader, then a writer that must wait for it, as C drives the word
//! (each [`Step`] is stored with a compare-and-exchange there):
//!
//! ```
//! use rust_mm_core::vma_lock::{self, Verdict};
//!
//! let mm_seq = 7; // the mm's `mm_lock_seq` while its writer holds mmap_lock
//! let word = vma_lock::init(false);
//!
//! // A page fault reads the vma under RCU: one reader.
//! let s = vma_lock::read_trylock(word, mm_seq);
//! assert_eq!(s.verdict, Verdict::Ok);
//! let word = s.word;
//! assert_eq!(vma_lock::readers(word), 1);
//!
//! // The writer locks: from now on every reader is refused, and the
//! // writer waits for the one inside.
//! let s = vma_lock::write_lock(word, mm_seq);
//! assert_eq!(s.verdict, Verdict::MustWait);
//! let word = s.word;
//! assert_eq!(vma_lock::read_trylock(word, mm_seq).verdict, Verdict::WriteLocked);
//!
//! // The last reader leaves and wakes the writer, which then holds the lock.
//! let s = vma_lock::read_unlock(word);
//! assert_eq!(s.verdict, Verdict::WakeWriter);
//! assert!(vma_lock::readers_drained(s.word));
//! let word = vma_lock::write_wait_done(s.word).word;
//! assert!(vma_lock::is_write_locked(word, mm_seq));
//! ```
//!
//! # The word
//!
//! | bits | field | meaning |
//! |---|---|---|
//! | `0 .. 30` | readers | holders of the read lock, at most [`MAX_READERS`] |
//! | `30` | waiting | a writer waits for the readers to drain |
//! | `31` | detached | the vma is not in the mm's tree (`vma_mark_detached()`) |
//! | `32 .. 64` | seq | 6.12's `vm_lock_seq` |
//!
//! 6.12's rule is kept: a vma is write-locked iff its `seq` equals the mm's
//! `mm_lock_seq`, from `vma_start_write()` until `mmap_write_unlock()`
//! moves the mm's sequence on (`vma_end_write_all()`); unlocking is not a
//! store to the vma. The writer stores the mm's sequence and, when readers
//! are inside, the waiting flag in the same atomic update, so from that
//! moment every new reader is refused: a writer waits only for the readers
//! that were inside before it, and cannot starve. A reader that would make
//! the count overflow is refused too (it takes `mmap_lock`); the count
//! never wraps into the flags.

/// Number of bits of the reader count.
pub const READER_BITS: u32 = 30;
/// The most readers the word counts; one more is refused.
pub const MAX_READERS: u64 = (1 << READER_BITS) - 1;
/// Bit set while a writer waits for the readers to drain.
pub const WAITING: u64 = 1 << READER_BITS;
/// Bit set while the vma is detached from its mm's tree.
pub const DETACHED: u64 = 1 << (READER_BITS + 1);
/// Shift of the sequence field.
pub const SEQ_SHIFT: u32 = 32;
/// The sequence a new or duplicated vma starts with (6.12: `UINT_MAX`).
pub const SEQ_UNLOCKED: u32 = u32::MAX;

const _: () = {
    assert!(MAX_READERS & (WAITING | DETACHED) == 0);
    assert!(WAITING & DETACHED == 0);
    assert!((MAX_READERS | WAITING | DETACHED) >> SEQ_SHIFT == 0);
    assert!(SEQ_SHIFT + u32::BITS == u64::BITS);
};

/// What a transition decided. C switches on it (`enum vma_lock_verdict`
/// in `include/linux/vma_lock.h`, checked against this at compile time).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Done: store [`Step::word`].
    Ok = 0,
    /// Read refused: the vma is write-locked (its seq is the mm's).
    WriteLocked = 1,
    /// Read refused: a writer waits for the readers to drain.
    WriterWaiting = 2,
    /// Read refused: the reader count is at [`MAX_READERS`].
    ReadersFull = 3,
    /// Read refused: the vma was detached from its mm.
    Detached = 4,
    /// Write lock taken, readers inside: store the word (seq and the
    /// waiting flag), then wait until [`readers_drained`].
    MustWait = 5,
    /// Read unlocked and it was the last reader a writer waits for: store
    /// the word, then wake the writer.
    WakeWriter = 6,
    /// The operation does not fit the state (an unlock without a lock, a
    /// wait that is not pending): the word is returned unchanged and C
    /// warns. Never reached by a correct caller.
    Unbalanced = 7,
}

/// A transition's result.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// What happened (see [`Verdict`]).
    pub verdict: Verdict,
    /// The word to store (the old one when nothing is to be stored).
    pub word: u64,
}

const fn step(verdict: Verdict, word: u64) -> Step {
    Step { verdict, word }
}

/// The word made of its fields; `readers` is masked to its field.
pub const fn pack(readers: u64, waiting: bool, detached: bool, seq: u32) -> u64 {
    (readers & MAX_READERS)
        | if waiting { WAITING } else { 0 }
        | if detached { DETACHED } else { 0 }
        | ((seq as u64) << SEQ_SHIFT)
}

/// The reader count of `word`.
pub const fn readers(word: u64) -> u64 {
    word & MAX_READERS
}

/// Whether a writer waits for readers in `word`.
pub const fn waiting(word: u64) -> bool {
    word & WAITING != 0
}

/// Whether `word` is a detached vma's.
pub const fn detached(word: u64) -> bool {
    word & DETACHED != 0
}

/// The sequence of `word` (6.12's `vm_lock_seq`).
pub const fn seq(word: u64) -> u32 {
    (word >> SEQ_SHIFT) as u32
}

/// `word` with its sequence replaced by `seq`.
const fn with_seq(word: u64, seq: u32) -> u64 {
    (word & !((u32::MAX as u64) << SEQ_SHIFT)) | ((seq as u64) << SEQ_SHIFT)
}

/// The word of a new vma (`vma_init()`): no reader, not waiting, the
/// sequence no mm has while write-locking (6.12: `UINT_MAX`); `detached`
/// as the caller says.
pub const fn init(detached: bool) -> u64 {
    pack(0, false, detached, SEQ_UNLOCKED)
}

/// The word of a copy of a vma whose word is `orig` (`vm_area_dup()`): a
/// new, unlocked lock; the copy is detached iff the original was, as
/// 6.12's `memcpy()` of `detached` leaves it.
pub const fn dup(orig: u64) -> u64 {
    init(detached(orig))
}

/// Whether the vma is write-locked in the mm whose sequence is `mm_seq`
/// (6.12's `vm_lock_seq == mm->mm_lock_seq`).
pub const fn is_write_locked(word: u64, mm_seq: u32) -> bool {
    seq(word) == mm_seq
}

/// Whether the vma is locked at all, for reading or writing
/// (`vma_assert_locked()`).
pub const fn is_locked(word: u64, mm_seq: u32) -> bool {
    readers(word) != 0 || is_write_locked(word, mm_seq)
}

/// Read-trylock (`vma_start_read()`), given the mm's sequence read before.
///
/// Refused while the vma is write-locked, while a writer waits, when the
/// count is full and when the vma is detached; the caller then takes
/// `mmap_lock` (or, for a detached vma, looks the address up again). As in
/// 6.12 the caller re-reads the mm's sequence after a successful trylock
/// and drops the lock if the vma became write-locked in between: a writer
/// that locked it after the caller read `mm_seq` stored a sequence this
/// check cannot know.
pub const fn read_trylock(word: u64, mm_seq: u32) -> Step {
    // The fault path's case first, as one test of both flags and the count
    // (the verdicts below say which refusal it is, in the same order).
    if word & (WAITING | DETACHED) == 0
        && readers(word) < MAX_READERS
        && !is_write_locked(word, mm_seq)
    {
        // INVARIANT: readers < MAX_READERS, so the sum stays in its field.
        return step(Verdict::Ok, word + 1);
    }
    if is_write_locked(word, mm_seq) {
        step(Verdict::WriteLocked, word)
    } else if waiting(word) {
        step(Verdict::WriterWaiting, word)
    } else if detached(word) {
        step(Verdict::Detached, word)
    } else {
        // Neither flag and not write-locked, yet the fast path refused:
        // the count is full. Refuse; never wrap into the flags.
        step(Verdict::ReadersFull, word)
    }
}

/// Read-unlock (`vma_end_read()`).
///
/// [`Verdict::WakeWriter`] when this was the last reader and a writer
/// waits: the caller stores the word, then wakes the writer through the
/// word's address alone (`wake_up_var()`), never through the vma or the
/// mm. The waiting flag stays set; the writer clears it
/// ([`write_wait_done`]).
pub const fn read_unlock(word: u64) -> Step {
    if readers(word) == 0 {
        step(Verdict::Unbalanced, word)
    } else {
        // INVARIANT: readers >= 1, so taking one away borrows nothing from
        // the flags or the sequence (wrapping_sub: the check the compiler
        // cannot prove away would be a panic path on every unlock).
        let word = word.wrapping_sub(1);
        if readers(word) == 0 && waiting(word) {
            step(Verdict::WakeWriter, word)
        } else {
            step(Verdict::Ok, word)
        }
    }
}

/// Write-lock by the `mmap_lock` writer whose mm has sequence `mm_seq`
/// (`vma_start_write()`).
///
/// Already write-locked: nothing to store. Otherwise the sequence becomes
/// the mm's -- from this store on, every new reader is refused -- and if
/// readers are inside, the waiting flag is set and the writer must wait
/// until [`readers_drained`], then call [`write_wait_done`].
pub const fn write_lock(word: u64, mm_seq: u32) -> Step {
    if is_write_locked(word, mm_seq) {
        step(Verdict::Ok, word)
    } else if waiting(word) {
        // Only one writer (the mmap_lock holder) exists, and it clears the
        // flag before it returns.
        step(Verdict::Unbalanced, word)
    } else if readers(word) != 0 {
        step(Verdict::MustWait, with_seq(word, mm_seq) | WAITING)
    } else {
        step(Verdict::Ok, with_seq(word, mm_seq))
    }
}

/// Whether the readers a waiting writer waits for are gone (the condition
/// of the writer's wait).
pub const fn readers_drained(word: u64) -> bool {
    readers(word) == 0
}

/// The writer's wait ended (`readers_drained`): clear the waiting flag.
///
/// A reader refused by the sequence may still step in and out of the count
/// until the writer's mmap_lock section ends (6.12's readers do the same
/// with the rwsem, and re-check the sequence), so only the flag is
/// touched.
pub const fn write_wait_done(word: u64) -> Step {
    if !waiting(word) {
        step(Verdict::Unbalanced, word)
    } else {
        step(Verdict::Ok, word & !WAITING)
    }
}

/// Detach (`vma_mark_detached(vma, true)`), by the write-lock holder.
///
/// The flag is set even if the state is unexpected, so readers are
/// refused whatever happened; [`Verdict::Unbalanced`] then tells C to warn.
pub const fn mark_detached(word: u64, mm_seq: u32) -> Step {
    let v = if is_write_locked(word, mm_seq) {
        Verdict::Ok
    } else {
        Verdict::Unbalanced
    };
    step(v, word | DETACHED)
}

/// Attach (`vma_mark_detached(vma, false)`): clear the flag. As in 6.12
/// this needs no write lock: it undoes a detach within the same mmap_lock
/// write section (`reattach_vmas()`), where the vma is still write-locked
/// and readers are refused by the sequence.
pub const fn mark_attached(word: u64) -> Step {
    step(Verdict::Ok, word & !DETACHED)
}

/// Whether nobody holds or waits for the lock: what a vma must be when it
/// is freed.
pub const fn idle(word: u64) -> bool {
    readers(word) == 0 && !waiting(word)
}

/// The mm's sequence after `vma_end_write_all()`: every vma the mmap_lock
/// writer locked becomes unlocked at once, without a store to any vma.
/// (In the kernel `mm_lock_seq` is a seqcount and C moves it on; this is
/// its effect on [`is_write_locked`], for the model tests.)
pub const fn end_write_all(mm_seq: u32) -> u32 {
    mm_seq.wrapping_add(1)
}
