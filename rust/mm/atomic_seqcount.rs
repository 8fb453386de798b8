// SPDX-License-Identifier: GPL-2.0

//! C header: [`include/linux/atomic_seqcount.h`](srctree/include/linux/atomic_seqcount.h)
//!
//! The atomic seqcount's C API. The word lives in memory owned by C (a
//! `struct atomic_seqcount`, e.g. inside `struct folio`); these functions
//! view it as an [`AtomicSeqcount`] (through [`crate::atomic`]), whose
//! protocol is [`crate::logic::atomic_seqcount`]'s. A write section
//! disables preemption from begin to end, as the RAII guards do in Rust.
//!
//! Fast-path cost (uncontended, exclusive): begin is one atomic RMW
//! (`lock xadd` on x86_64; on arm64 an `ldaxr`/`stxr` loop, because the
//! kernel's Rust target does not enable LSE, where C's atomics are patched
//! to `ldadd` at boot) plus `preempt_disable()`; end is one atomic RMW plus
//! `preempt_enable()`. Each is one out-of-line call from C.

use kernel::bindings;
use kernel::error::code::EINVAL;
use kernel::ffi::c_int;

use crate::atomic;
use crate::logic::atomic_seqcount::{Mode, Preempt, MAX_WRITERS};

// One writer per CPU at most (sections disable preemption, do not nest on
// one seqcount and are not used in interrupt context): the writer fields
// cannot overflow if they can count NR_CPUS.
const _: () = assert!(bindings::CONFIG_NR_CPUS as u64 <= MAX_WRITERS);

// `struct atomic_seqcount` is one `atomic64_t`: a `u64` word, which
// `crate::atomic` views as the Rust type.
const _: () = {
    assert!(core::mem::size_of::<bindings::atomic_seqcount>() == 8);
    assert!(core::mem::align_of::<bindings::atomic_seqcount>() == 8);
    assert!(bindings::ATOMIC_SEQCOUNT_SHARED == 0);
    assert!(bindings::ATOMIC_SEQCOUNT_EXCLUSIVE == 1);
};

// Every export has the type of its C declaration (bindgen reads
// linux/atomic_seqcount.h): a header and an export that disagree fail the
// build.
const _: () = {
    type Begin = unsafe extern "C" fn(*mut bindings::atomic_seqcount) -> c_int;
    type End = unsafe extern "C" fn(*mut bindings::atomic_seqcount, c_int) -> c_int;
    type ReadBegin = unsafe extern "C" fn(*const bindings::atomic_seqcount) -> u64;
    type ReadRetry = unsafe extern "C" fn(*const bindings::atomic_seqcount, u64) -> bool;
    type RawRead = unsafe extern "C" fn(*const bindings::atomic_seqcount, *mut u64) -> bool;
    let _: [Begin; 2] = [
        bindings::rust_atomic_seqcount_write_begin_shared,
        rust_atomic_seqcount_write_begin_shared,
    ];
    let _: [Begin; 2] = [
        bindings::rust_atomic_seqcount_write_begin,
        rust_atomic_seqcount_write_begin,
    ];
    let _: [Begin; 2] = [
        bindings::rust_atomic_seqcount_write_begin_cmpxchg,
        rust_atomic_seqcount_write_begin_cmpxchg,
    ];
    let _: [End; 2] = [
        bindings::rust_atomic_seqcount_write_end,
        rust_atomic_seqcount_write_end,
    ];
    let _: [ReadBegin; 2] = [
        bindings::rust_atomic_seqcount_read_begin,
        rust_atomic_seqcount_read_begin,
    ];
    let _: [ReadRetry; 2] = [
        bindings::rust_atomic_seqcount_read_retry,
        rust_atomic_seqcount_read_retry,
    ];
    let _: [RawRead; 2] = [
        bindings::rust_atomic_seqcount_raw_read,
        rust_atomic_seqcount_raw_read,
    ];
};

/// The kernel's preemption control.
pub struct KernelPreempt;

impl Preempt for KernelPreempt {
    fn disable() {
        // SAFETY: `preempt_disable()` has no preconditions; it nests.
        unsafe { bindings::preempt_disable() }
    }

    fn enable() {
        // SAFETY: `preempt_enable()` has no memory-safety preconditions; an
        // unbalanced call is a logic error the kernel reports (with
        // CONFIG_DEBUG_PREEMPT). In this crate it only pairs `disable()`:
        // in `WriteGuard::drop` and in `rust_atomic_seqcount_write_end` after
        // a successful end.
        unsafe { bindings::preempt_enable() }
    }
}

/// View the C word as a seqcount.
///
/// # Safety
///
/// `s` points to a live, initialised `struct atomic_seqcount` that C accesses
/// only atomically, for the duration of `'a`.
unsafe fn seqcount<'a>(s: *const bindings::atomic_seqcount) -> &'a atomic::Seqcount {
    // SAFETY: `struct atomic_seqcount` is one `atomic64_t`, whose counter is
    // the `u64` word at its start (layout checked above); it is live and
    // accessed only atomically for `'a` (this function's safety
    // requirements).
    unsafe { atomic::from_ptr(s.cast_mut().cast::<u64>()) }
}

fn mode_to_c(mode: Mode) -> c_int {
    match mode {
        Mode::Shared => bindings::ATOMIC_SEQCOUNT_SHARED as c_int,
        Mode::Exclusive => bindings::ATOMIC_SEQCOUNT_EXCLUSIVE as c_int,
    }
}

/// Enter a shared write section. Returns `ATOMIC_SEQCOUNT_SHARED`.
///
/// # Safety
///
/// `s` points to a live `struct atomic_seqcount`.
#[no_mangle]
pub unsafe extern "C" fn rust_atomic_seqcount_write_begin_shared(
    s: *mut bindings::atomic_seqcount,
) -> c_int {
    KernelPreempt::disable();
    // SAFETY: Forwarded from this function's safety requirements.
    unsafe { seqcount(s) }.begin_shared();
    mode_to_c(Mode::Shared)
}

/// Enter a write section, exclusive if no other writer is inside (one
/// atomic add-return). Returns the mode to pass to the end.
///
/// # Safety
///
/// `s` points to a live `struct atomic_seqcount`.
#[no_mangle]
pub unsafe extern "C" fn rust_atomic_seqcount_write_begin(
    s: *mut bindings::atomic_seqcount,
) -> c_int {
    KernelPreempt::disable();
    // SAFETY: Forwarded from this function's safety requirements.
    mode_to_c(unsafe { seqcount(s) }.begin_exclusive())
}

/// As [`rust_atomic_seqcount_write_begin`], with load + cmpxchg instead of
/// add-return (kept for comparison).
///
/// # Safety
///
/// `s` points to a live `struct atomic_seqcount`.
#[no_mangle]
pub unsafe extern "C" fn rust_atomic_seqcount_write_begin_cmpxchg(
    s: *mut bindings::atomic_seqcount,
) -> c_int {
    KernelPreempt::disable();
    // SAFETY: Forwarded from this function's safety requirements.
    mode_to_c(unsafe { seqcount(s) }.begin_exclusive_cmpxchg())
}

/// Leave a write section entered in `mode`. Returns 0, or `-EINVAL` with
/// nothing changed (preemption left as it is) if no section of that mode
/// was open or `mode` is not a mode.
///
/// # Safety
///
/// `s` points to a live `struct atomic_seqcount`.
#[no_mangle]
pub unsafe extern "C" fn rust_atomic_seqcount_write_end(
    s: *mut bindings::atomic_seqcount,
    mode: c_int,
) -> c_int {
    let mode = match mode as u32 {
        bindings::ATOMIC_SEQCOUNT_SHARED => Mode::Shared,
        bindings::ATOMIC_SEQCOUNT_EXCLUSIVE => Mode::Exclusive,
        _ => return EINVAL.to_errno(),
    };
    // SAFETY: Forwarded from this function's safety requirements.
    match unsafe { seqcount(s) }.end(mode) {
        Ok(()) => {
            KernelPreempt::enable();
            0
        }
        Err(_) => EINVAL.to_errno(),
    }
}

/// Wait until no writer is inside; returns the value for the retry check.
///
/// # Safety
///
/// `s` points to a live `struct atomic_seqcount`.
#[no_mangle]
pub unsafe extern "C" fn rust_atomic_seqcount_read_begin(
    s: *const bindings::atomic_seqcount,
) -> u64 {
    // SAFETY: Forwarded from this function's safety requirements.
    unsafe { seqcount(s) }.read_begin()
}

/// Whether data read since `start` may be inconsistent.
///
/// # Safety
///
/// `s` points to a live `struct atomic_seqcount`.
#[no_mangle]
pub unsafe extern "C" fn rust_atomic_seqcount_read_retry(
    s: *const bindings::atomic_seqcount,
    start: u64,
) -> bool {
    // SAFETY: Forwarded from this function's safety requirements.
    unsafe { seqcount(s) }.read_retry(start)
}

/// Store the word in `*start` and return true if no writer is inside;
/// return false (a caller may give up, e.g. answer "maybe shared")
/// otherwise.
///
/// # Safety
///
/// `s` points to a live `struct atomic_seqcount`; `start` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn rust_atomic_seqcount_raw_read(
    s: *const bindings::atomic_seqcount,
    start: *mut u64,
) -> bool {
    // SAFETY: Forwarded from this function's safety requirements.
    match unsafe { seqcount(s) }.raw_read() {
        Some(v) if !start.is_null() => {
            // SAFETY: The caller guarantees `start` is valid for a write.
            unsafe { start.write(v) };
            true
        }
        _ => false,
    }
}
