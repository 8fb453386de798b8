// SPDX-License-Identifier: GPL-2.0

//! The per-VMA lock of Linux 7.3 (`vm_refcnt` and `vm_lock_seq`): every
//! decision of its protocol as a pure function.
//!
//! Since 6.15 a vma carries its lock in two fields: `vm_refcnt`, a
//! `refcount_t` that counts the vma's attachment to its mm's tree and its
//! read lockers, and `vm_lock_seq`, the `mm_lock_seq` of the mmap_lock
//! write section that write-locked it. The vma cache is
//! `SLAB_TYPESAFE_BY_RCU`, so a reader that found a vma under RCU may
//! hold a pointer to an object that was freed and reused -- detached, or
//! attached again in another mm or at another address -- and every rule
//! below is written for that reader.
//!
//! This module decides every transition of that protocol from the values
//! C read: whether a reader may take the lock, what a release stores and
//! whether it wakes the writer, what a writer's or detacher's exclusion of
//! readers stores and when it is complete, attach and detach. C keeps the
//! atomics (each decision feeds a `try_cmpxchg` loop), RCU, the `rcuwait`
//! in the mm, the `mmgrab()` that keeps a foreign mm alive, and lockdep.
//!
//! # Examples
//!
//! A reader, then a writer that excludes it, as C drives `vm_refcnt`
//! (each [`Step`] is stored with a compare-and-exchange there):
//!
//! ```
//! use rust_mm_core::vma_lock::{self, Verdict};
//!
//! let mm_seq = 6; // the mm's sequence while no writer holds mmap_lock
//! let r = vma_lock::attach(vma_lock::DETACHED).refcnt; // in the tree: 1
//!
//! // A page fault: pre-check, admit, validate.
//! assert!(!vma_lock::is_write_locked(vma_lock::SEQ_UNLOCKED, mm_seq));
//! let s = vma_lock::read_admit(r);
//! assert_eq!(s.verdict, Verdict::Ok);
//! let r = s.refcnt; // 2: attached, one reader
//! assert_eq!(vma_lock::read_validate(true, vma_lock::SEQ_UNLOCKED, mm_seq), Verdict::Ok);
//!
//! // mmap_write_lock() moves the mm's sequence on; the writer excludes
//! // readers and waits for the one inside.
//! let mm_seq = mm_seq + 1;
//! let s = vma_lock::exclude_begin(r);
//! assert_eq!(s.verdict, Verdict::Ok);
//! let r = s.refcnt;
//! assert!(!vma_lock::exclusion_reached(r, false));
//! assert_eq!(vma_lock::read_admit(r).verdict, Verdict::Refused); // no one gets in
//!
//! // The reader leaves and wakes the writer, whose exclusion is complete.
//! let s = vma_lock::read_release(r);
//! assert_eq!(s.verdict, Verdict::Wake);
//! assert!(vma_lock::exclusion_reached(s.refcnt, false));
//! // It stores vm_lock_seq (write-locked until mmap_write_unlock()) and
//! // ends the exclusion: attached, unlocked count, write-locked by seq.
//! let vm_lock_seq = mm_seq;
//! let s = vma_lock::exclude_end(s.refcnt);
//! assert_eq!((s.verdict, s.refcnt), (Verdict::Ok, 1));
//! // The next reader's pre-check refuses without touching the count.
//! assert!(vma_lock::is_write_locked(vm_lock_seq, mm_seq));
//! ```
//!
//! # The values of `vm_refcnt`
//!
//! As `include/linux/mm_types.h` documents them ([`State`] names them):
//!
//! | `vm_refcnt` | state |
//! |---|---|
//! | 0 | detached: readers cannot increment it |
//! | 1 | attached; unlocked or write-locked (`vm_lock_seq` says which) |
//! | 2 ..= [`LIMIT`] | attached, `r - 1` readers (some on their way out) |
//! | [`EXCLUDE_READERS`] | a detacher's exclusion is complete: becomes 0 |
//! | [`EXCLUDE_READERS`] + 1 | a writer's exclusion is complete, or a detacher awaits one reader |
//! | above | a writer or detacher waits for the readers left |
//!
//! A reader on its way out found the vma write-locked after its admit.
//!
//! Bit 31 is never set by a correct caller ([`State::Corrupt`]): C's
//! `refcount_t` would call such a value saturated. Every function here
//! refuses to move a value into or out of that range.

/// Bit of `vm_refcnt` set while a writer or detacher excludes readers
/// (`VM_REFCNT_EXCLUDE_READERS_BIT`).
pub const EXCLUDE_READERS_BIT: u32 = 30;
/// The flag itself (`VM_REFCNT_EXCLUDE_READERS_FLAG`).
pub const EXCLUDE_READERS: u32 = 1 << EXCLUDE_READERS_BIT;
/// The highest value a reader may raise `vm_refcnt` to (`VM_REFCNT_LIMIT`):
/// a reader that finds the count there, or the flag set, is refused.
pub const LIMIT: u32 = EXCLUDE_READERS - 1;
/// `vm_refcnt` of a detached vma: a new one, one a writer detached, and
/// every free object of the slab cache.
pub const DETACHED: u32 = 0;
/// `vm_lock_seq` of a new or duplicated vma (`vma_lock_init()`: `UINT_MAX`).
pub const SEQ_UNLOCKED: u32 = u32::MAX;

const _: () = {
    assert!(LIMIT < EXCLUDE_READERS);
    // The flag plus the highest count readers can reach (the attachment
    // included) stays below bit 31: refcount_t's saturation range is
    // never reached.
    assert!((EXCLUDE_READERS as u64) + (LIMIT as u64) <= i32::MAX as u64);
};

/// What a transition decided. C switches on it (`enum vma_lock_verdict`
/// in `include/linux/vma_lock.h`, checked against this at compile time).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Done: store [`Step::refcnt`] (a read lock taken, an exclusion begun
    /// or ended, a vma attached).
    Ok = 0,
    /// The vma is detached: a reader's admit found 0 (the caller looks the
    /// address up again, `-EAGAIN`), an exclusion found nothing to exclude,
    /// or a detach, a reader's release or the end of a detacher's
    /// exclusion left 0.
    Detached = 1,
    /// A reader is refused and takes `mmap_lock`: the count is at
    /// [`LIMIT`] or readers are excluded.
    Refused = 2,
    /// A reader's re-check found the vma write-locked: release and refuse.
    WriteLocked = 3,
    /// A reader's validation found the vma attached to another mm (it was
    /// freed and reused): pin that mm, release, unpin, and refuse.
    ForeignMm = 4,
    /// A release left only the excluding writer's or detacher's share:
    /// store, then wake it (through the mm the caller copied before).
    Wake = 5,
    /// A detach left readers that were on their way out: store, then
    /// exclude readers until the count drains to the flag alone.
    MustWait = 6,
    /// The operation does not fit the value (a release without a reader,
    /// an exclusion already running, an attach of an attached vma): nothing
    /// is stored and C warns. Never reached by a correct caller.
    Unbalanced = 7,
}

/// A transition's result.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// What happened (see [`Verdict`]).
    pub verdict: Verdict,
    /// The value of `vm_refcnt` to store (the old one when nothing is to
    /// be stored).
    pub refcnt: u32,
}

const fn step(verdict: Verdict, refcnt: u32) -> Step {
    Step { verdict, refcnt }
}

/// The values of `vm_refcnt`, named (the module's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// 0: not in a tree.
    Detached,
    /// 1: attached, no reader; write-locked or not by `vm_lock_seq`.
    Attached,
    /// Attached with this many readers (at most [`LIMIT`] - 1).
    ReadLocked(u32),
    /// An exclusion runs: the writer (`detaching == false`) or detacher
    /// waits for `readers` more readers to leave (0: it is complete).
    Excluding {
        /// Whether the vma is being detached (its attachment is gone).
        detaching: bool,
        /// Readers still counted.
        readers: u32,
    },
    /// Bit 31 set: no correct sequence of calls reaches it.
    Corrupt,
}

/// The state `refcnt` encodes.
///
/// With the flag set, an odd share above the flag cannot tell an attached
/// vma's writer with `n` readers from a detacher with `n + 1`; this names
/// it as the writer's, as 7.3's comment does (the two agree on everything
/// a decision needs: see [`read_release`]).
pub const fn classify(refcnt: u32) -> State {
    if refcnt >= 1 << 31 {
        State::Corrupt
    } else if refcnt & EXCLUDE_READERS != 0 {
        let rest = refcnt & !EXCLUDE_READERS;
        if rest == 0 {
            State::Excluding {
                detaching: true,
                readers: 0,
            }
        } else {
            State::Excluding {
                detaching: false,
                readers: rest - 1,
            }
        }
    } else {
        match refcnt {
            0 => State::Detached,
            1 => State::Attached,
            n => State::ReadLocked(n - 1),
        }
    }
}

/// Whether the vma is in a tree (`vma_is_attached()`).
pub const fn is_attached(refcnt: u32) -> bool {
    refcnt != DETACHED
}

/// Whether the vma is write-locked in the mm whose sequence is `mm_seq`
/// (`__is_vma_write_locked()`; also the reader's pre-check and re-check).
///
/// Sequences are compared for equality and may wrap: a reader that meets
/// an old sequence again takes `mmap_lock` needlessly, never the reverse.
pub const fn is_write_locked(vm_lock_seq: u32, mm_seq: u32) -> bool {
    vm_lock_seq == mm_seq
}

/// Whether a count, after a reader left, shows only the excluding thread's
/// share: the releaser must wake it (`__vma_are_readers_excluded()`).
pub const fn readers_excluded(refcnt: u32) -> bool {
    refcnt & EXCLUDE_READERS != 0 && refcnt <= EXCLUDE_READERS + 1
}

/// A reader's admit (`vma_start_read()`,
/// `vma_start_read_locked_nested()`): the new value for the acquire
/// `try_cmpxchg`, or the refusal.
///
/// 0 is a detached vma -- a free slab object, or one not attached yet --
/// and stays 0 ([`Verdict::Detached`]). A count at [`LIMIT`] or with the
/// exclusion flag set refuses ([`Verdict::Refused`]); the count never
/// reaches the flag.
pub const fn read_admit(refcnt: u32) -> Step {
    if refcnt == DETACHED {
        step(Verdict::Detached, refcnt)
    } else if refcnt >= LIMIT {
        step(Verdict::Refused, refcnt)
    } else {
        // INVARIANT: 1 <= refcnt < LIMIT, so the sum is at most LIMIT.
        step(Verdict::Ok, refcnt + 1)
    }
}

/// A reader's checks after its admit, in 7.3's order: the vma's mm first
/// (`same_mm`: `vma->vm_mm == mm`), then the write lock against the mm's
/// sequence read with acquire.
///
/// The mm comes first because a reused vma's `vm_lock_seq` is another
/// mm's: comparing it with ours says nothing, and the release of a
/// foreign vma must pin its mm ([`Verdict::ForeignMm`]) -- the order that
/// 9bbffee67ffd ("mm: fix a UAF when vma->mm is freed after
/// vma->vm_refcnt got dropped") put in place. A reader that is refused
/// here has raised the count and must release it.
pub const fn read_validate(same_mm: bool, vm_lock_seq: u32, mm_seq: u32) -> Verdict {
    if !same_mm {
        Verdict::ForeignMm
    } else if is_write_locked(vm_lock_seq, mm_seq) {
        Verdict::WriteLocked
    } else {
        Verdict::Ok
    }
}

/// A reader's release (`vma_refcount_put()`): the new value for the
/// release `try_cmpxchg`, and whether to wake the excluding thread.
///
/// [`Verdict::Wake`] when the count left is the excluding thread's share
/// alone (7.3's rule, spurious wake-ups included).
/// [`Verdict::Detached`] when the release took the last reference: a
/// transient reader leaving between a detach's decrement and its
/// exclusion (which then finds 0 and has nothing to wait for).
///
/// Values that hold no reader are refused before anything is stored
/// ([`Verdict::Unbalanced`]): 0 (7.3's `refcount_t` would saturate and
/// warn), the flag alone (a detacher with no reader left) and bit 31. Two
/// unbalanced releases look like balanced ones and are stored as 7.3
/// stores them: at 1, where only the write lock -- which a releasing
/// reader cannot read once its reference is gone -- tells an attached vma
/// (unbalanced: it detaches the vma behind its tree's back) from a detach
/// in progress; and at the flag + 1, where a writer's complete exclusion
/// looks like a detacher's last reader. Any other extra release, with a
/// reader still counted, is indistinguishable from a correct one.
pub const fn read_release(refcnt: u32) -> Step {
    // The common case first, so that the compiled release (inlined into
    // every fault handler's vma_end_read()) is a range check and a
    // decrement: a reader leaves a vma that stays attached, with no
    // excluding thread (2..FLAG: `Ok`, one less). The branches below give
    // the same answer for these values.
    if refcnt.wrapping_sub(2) < EXCLUDE_READERS - 2 {
        // INVARIANT: refcnt >= 2 here, so the difference does not wrap
        // (wrapping_sub: no overflow check the compiler cannot see past).
        return step(Verdict::Ok, refcnt.wrapping_sub(1));
    }
    if refcnt == DETACHED || refcnt == EXCLUDE_READERS || refcnt >= 1 << 31 {
        step(Verdict::Unbalanced, refcnt)
    } else {
        // INVARIANT: refcnt >= 1 here, so the difference does not wrap
        // (wrapping_sub: LLVM does not always carry `refcnt != 0` from
        // the test above, and an overflow check would be a panic path).
        let new = refcnt.wrapping_sub(1);
        if new == DETACHED {
            step(Verdict::Detached, new)
        } else if readers_excluded(new) {
            step(Verdict::Wake, new)
        } else {
            step(Verdict::Ok, new)
        }
    }
}

/// The start of a writer's or detacher's exclusion of readers
/// (`__vma_start_exclude_readers()`), by the `mmap_lock` writer: the new
/// value for the `try_cmpxchg`, after which C waits until
/// [`exclusion_reached`].
///
/// A detached vma (0) has no reader to exclude and stays 0
/// ([`Verdict::Detached`]). A count with the flag already set is refused:
/// only one writer exists per mm and it ends its exclusion before it
/// returns.
pub const fn exclude_begin(refcnt: u32) -> Step {
    if refcnt == DETACHED {
        step(Verdict::Detached, refcnt)
    } else if refcnt > LIMIT {
        step(Verdict::Unbalanced, refcnt)
    } else {
        // INVARIANT: 1 <= refcnt <= LIMIT < flag: the sum sets the flag
        // and stays below bit 31.
        step(Verdict::Ok, refcnt + EXCLUDE_READERS)
    }
}

/// The excluding thread's wait condition: every reader has left, so the
/// count is the flag plus the attachment (a writer) or the flag alone (a
/// detacher).
pub const fn exclusion_reached(refcnt: u32, detaching: bool) -> bool {
    refcnt == EXCLUDE_READERS + if detaching { 0 } else { 1 }
}

/// The end of an exclusion (`__vma_end_exclude_readers()`), also when a
/// killable writer's wait is interrupted: the new value for the
/// `try_cmpxchg`. [`Verdict::Detached`] when it leaves 0 (a detacher's
/// end); [`Verdict::Ok`] otherwise (the vma stays attached, with any
/// reader that is still on its way out).
pub const fn exclude_end(refcnt: u32) -> Step {
    if refcnt & EXCLUDE_READERS == 0 || refcnt >= 1 << 31 {
        step(Verdict::Unbalanced, refcnt)
    } else {
        let new = refcnt - EXCLUDE_READERS;
        if new == DETACHED {
            step(Verdict::Detached, new)
        } else {
            step(Verdict::Ok, new)
        }
    }
}

/// The detach of a write-locked vma (`vma_mark_detached()`): drop the
/// tree's reference. [`Verdict::Detached`] when it leaves 0; with readers
/// counted (on their way out: they will find the vma write-locked)
/// [`Verdict::MustWait`]: store, then exclude readers with `detaching`,
/// because the vma may be freed -- and reused at once -- right after.
pub const fn detach(refcnt: u32) -> Step {
    if refcnt == DETACHED || refcnt > LIMIT {
        step(Verdict::Unbalanced, refcnt)
    } else if refcnt == 1 {
        step(Verdict::Detached, DETACHED)
    } else {
        step(Verdict::MustWait, refcnt - 1)
    }
}

/// The attach of a write-locked, detached vma (`vma_mark_attached()`):
/// 1, stored with release so that a reader whose admit (acquire) sees it
/// also sees the vma's new `vm_mm`, `vm_start` and `vm_end`.
pub const fn attach(refcnt: u32) -> Step {
    if refcnt != DETACHED {
        step(Verdict::Unbalanced, refcnt)
    } else {
        step(Verdict::Ok, 1)
    }
}

/// The mm's sequence after `vma_end_write_all()`: every vma the mmap_lock
/// writer locked becomes unlocked at once, without a store to any vma. (In
/// the kernel `mm_lock_seq` is a seqcount and C moves it on; this is its
/// effect on [`is_write_locked`], for the model tests.)
pub const fn end_write_all(mm_seq: u32) -> u32 {
    mm_seq.wrapping_add(1)
}

/// The bytes of the packed lock: `vm_lock_seq` and `vm_refcnt`, side by
/// side (`CONFIG_PER_VMA_LOCK_PACKED`).
pub const LOCK_BYTES: usize = 8;

/// The smallest alignment any slab cache gets (the kernel's
/// `ARCH_SLAB_MINALIGN` is at least this).
pub const MIN_ALIGN: usize = 8;

/// Whether the cache line holding a packed vma's lock holds no byte of
/// another vma, wherever the vma cache can put one.
///
/// A cache aligned to `align` places its objects `stride = size` rounded
/// up to `align` apart from a line-aligned slab start, so an object starts
/// at a multiple of `stride`'s lowest set bit (at most `line`) into a
/// cache line: its phase. For every phase, the `line`-byte line holding
/// the lock (`LOCK_BYTES` at offset `lock_off`) must hold the lock whole
/// and lie between the end of the previous object and the start of the
/// next. Bad geometry (`line` or `align` not a power of two, `align`
/// outside `MIN_ALIGN..=line`, the lock not 8-aligned or not inside the
/// object) answers `false`.
pub const fn lock_line_inside(size: usize, lock_off: usize, line: usize, align: usize) -> bool {
    if !line.is_power_of_two() || line < LOCK_BYTES || !align.is_power_of_two() {
        return false;
    }
    if align < MIN_ALIGN || align > line || !lock_off.is_multiple_of(LOCK_BYTES) {
        return false;
    }
    if size == 0 || size > isize::MAX as usize / 4 || lock_off + LOCK_BYTES > size {
        return false;
    }
    let stride = size.next_multiple_of(align);
    let low = stride & stride.wrapping_neg();
    let step = if low < line { low } else { line };
    let mut phase = 0;
    while phase < line {
        let at = phase + lock_off;
        // Where the lock's line starts, counted from the object's start.
        let start = (at - at % line) as isize - phase as isize;
        let lock_whole = at % line + LOCK_BYTES <= line;
        let after_previous = start >= size as isize - stride as isize;
        let before_next = start + line as isize <= stride as isize;
        if !(lock_whole && after_previous && before_next) {
            return false;
        }
        phase += step;
    }
    true
}

/// The smallest alignment of at least `min_align` (a power of two, at
/// least [`MIN_ALIGN`]) for which [`lock_line_inside`] holds, or `None`
/// for bad geometry. At `align == line` every object starts a line, so a
/// lock inside the object always has its line to itself among vmas: any
/// valid geometry has an answer.
pub const fn packed_align(
    size: usize,
    lock_off: usize,
    line: usize,
    min_align: usize,
) -> Option<usize> {
    if !min_align.is_power_of_two() || min_align < MIN_ALIGN {
        return None;
    }
    let mut align = min_align;
    while align <= line {
        if lock_line_inside(size, lock_off, line, align) {
            return Some(align);
        }
        align *= 2;
    }
    None
}

/// The distance between two vmas of a cache aligned to `align`: `size`
/// rounded up to `align` (what `/proc/slabinfo` calls the object size).
pub const fn stride(size: usize, align: usize) -> usize {
    size.next_multiple_of(align)
}
