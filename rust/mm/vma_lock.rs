// SPDX-License-Identifier: GPL-2.0

//! C header: [`include/linux/vma_lock.h`](srctree/include/linux/vma_lock.h)
//!
//! The C API of the per-VMA lock word, called by `include/linux/mm.h`,
//! `mm/memory.c` and `kernel/fork.c`.
//!
//! C loads the word, asks for a transition and stores the answer with a
//! `try_cmpxchg` loop; it owns the orderings, RCU, waiting and waking.
//! The transitions are [`crate::logic::vma_lock`]'s pure functions over the
//! word's value, so this edge has no `unsafe`: it passes values through
//! (a [`Step`] leaves as C's `struct vma_lock_step`).
//! The word's layout, the verdicts and `struct vma_lock_step` are the
//! header's, checked at compile time against the core below.

use kernel::bindings;

use crate::logic::vma_lock::{self, Step, Verdict};

const _: () = {
    assert!(bindings::VMA_LOCK_READER_BITS == vma_lock::READER_BITS);
    assert!(bindings::VMA_LOCK_MAX_READERS as u64 == vma_lock::MAX_READERS);
    assert!(bindings::VMA_LOCK_WAITING as u64 == vma_lock::WAITING);
    assert!(bindings::VMA_LOCK_DETACHED as u64 == vma_lock::DETACHED);
    assert!(bindings::VMA_LOCK_SEQ_SHIFT == vma_lock::SEQ_SHIFT);
    assert!(bindings::vma_lock_verdict_VMA_LOCK_OK == Verdict::Ok as u32);
    assert!(bindings::vma_lock_verdict_VMA_LOCK_WRITE_LOCKED == Verdict::WriteLocked as u32);
    assert!(bindings::vma_lock_verdict_VMA_LOCK_WRITER_WAITING == Verdict::WriterWaiting as u32);
    assert!(bindings::vma_lock_verdict_VMA_LOCK_READERS_FULL == Verdict::ReadersFull as u32);
    assert!(bindings::vma_lock_verdict_VMA_LOCK_DETACHED_VMA == Verdict::Detached as u32);
    assert!(bindings::vma_lock_verdict_VMA_LOCK_MUST_WAIT == Verdict::MustWait as u32);
    assert!(bindings::vma_lock_verdict_VMA_LOCK_WAKE_WRITER == Verdict::WakeWriter as u32);
    assert!(bindings::vma_lock_verdict_VMA_LOCK_UNBALANCED == Verdict::Unbalanced as u32);
    // vm_area_struct's word is an atomic64_t (its counter an s64): the
    // casts between it and the core's u64 are bit-preserving.
    assert!(core::mem::size_of::<bindings::atomic64_t>() == core::mem::size_of::<u64>());
};

// Every export has the type of its C declaration (bindgen reads
// linux/vma_lock.h): a header and an export that disagree fail the build.
const _: () = {
    type CStep = bindings::vma_lock_step;
    let _: [unsafe extern "C" fn(u64, u32) -> CStep; 2] = [
        bindings::rust_vma_lock_read_trylock,
        rust_vma_lock_read_trylock,
    ];
    let _: [unsafe extern "C" fn(u64) -> CStep; 2] = [
        bindings::rust_vma_lock_read_unlock,
        rust_vma_lock_read_unlock,
    ];
    let _: [unsafe extern "C" fn(u64, u32) -> CStep; 2] =
        [bindings::rust_vma_lock_write_lock, rust_vma_lock_write_lock];
    let _: [unsafe extern "C" fn(u64) -> bool; 2] = [
        bindings::rust_vma_lock_readers_drained,
        rust_vma_lock_readers_drained,
    ];
    let _: [unsafe extern "C" fn(u64) -> CStep; 2] = [
        bindings::rust_vma_lock_write_wait_done,
        rust_vma_lock_write_wait_done,
    ];
    let _: [unsafe extern "C" fn(u64, u32) -> CStep; 2] = [
        bindings::rust_vma_lock_mark_detached,
        rust_vma_lock_mark_detached,
    ];
    let _: [unsafe extern "C" fn(u64) -> CStep; 2] = [
        bindings::rust_vma_lock_mark_attached,
        rust_vma_lock_mark_attached,
    ];
    let _: [unsafe extern "C" fn(bool) -> u64; 2] =
        [bindings::rust_vma_lock_init, rust_vma_lock_init];
    let _: [unsafe extern "C" fn(u64) -> u64; 2] = [bindings::rust_vma_lock_dup, rust_vma_lock_dup];
    let _: [unsafe extern "C" fn(u64, u32) -> bool; 2] = [
        bindings::rust_vma_lock_is_write_locked,
        rust_vma_lock_is_write_locked,
    ];
    let _: [unsafe extern "C" fn(u64, u32) -> bool; 2] =
        [bindings::rust_vma_lock_is_locked, rust_vma_lock_is_locked];
    let _: [unsafe extern "C" fn(u64) -> bool; 2] =
        [bindings::rust_vma_lock_idle, rust_vma_lock_idle];
};

/// A core step as C's `struct vma_lock_step`.
const fn c_step(s: Step) -> bindings::vma_lock_step {
    bindings::vma_lock_step {
        verdict: s.verdict as u32,
        word: s.word,
    }
}

/// `vma_start_read()`'s trylock ([`vma_lock::read_trylock`]).
#[no_mangle]
pub extern "C" fn rust_vma_lock_read_trylock(word: u64, mm_seq: u32) -> bindings::vma_lock_step {
    c_step(vma_lock::read_trylock(word, mm_seq))
}

/// `vma_end_read()`'s unlock ([`vma_lock::read_unlock`]).
#[no_mangle]
pub extern "C" fn rust_vma_lock_read_unlock(word: u64) -> bindings::vma_lock_step {
    c_step(vma_lock::read_unlock(word))
}

/// `vma_start_write()`'s lock ([`vma_lock::write_lock`]).
#[no_mangle]
pub extern "C" fn rust_vma_lock_write_lock(word: u64, mm_seq: u32) -> bindings::vma_lock_step {
    c_step(vma_lock::write_lock(word, mm_seq))
}

/// The writer's wait condition ([`vma_lock::readers_drained`]).
#[no_mangle]
pub extern "C" fn rust_vma_lock_readers_drained(word: u64) -> bool {
    vma_lock::readers_drained(word)
}

/// The end of the writer's wait ([`vma_lock::write_wait_done`]).
#[no_mangle]
pub extern "C" fn rust_vma_lock_write_wait_done(word: u64) -> bindings::vma_lock_step {
    c_step(vma_lock::write_wait_done(word))
}

/// `vma_mark_detached(vma, true)` ([`vma_lock::mark_detached`]).
#[no_mangle]
pub extern "C" fn rust_vma_lock_mark_detached(word: u64, mm_seq: u32) -> bindings::vma_lock_step {
    c_step(vma_lock::mark_detached(word, mm_seq))
}

/// `vma_mark_detached(vma, false)` ([`vma_lock::mark_attached`]).
#[no_mangle]
pub extern "C" fn rust_vma_lock_mark_attached(word: u64) -> bindings::vma_lock_step {
    c_step(vma_lock::mark_attached(word))
}

/// The word of a new vma ([`vma_lock::init`]).
#[no_mangle]
pub extern "C" fn rust_vma_lock_init(detached: bool) -> u64 {
    vma_lock::init(detached)
}

/// The word of a copied vma ([`vma_lock::dup`]).
#[no_mangle]
pub extern "C" fn rust_vma_lock_dup(orig: u64) -> u64 {
    vma_lock::dup(orig)
}

/// `__is_vma_write_locked()` ([`vma_lock::is_write_locked`]).
#[no_mangle]
pub extern "C" fn rust_vma_lock_is_write_locked(word: u64, mm_seq: u32) -> bool {
    vma_lock::is_write_locked(word, mm_seq)
}

/// `vma_assert_locked()`'s test ([`vma_lock::is_locked`]).
#[no_mangle]
pub extern "C" fn rust_vma_lock_is_locked(word: u64, mm_seq: u32) -> bool {
    vma_lock::is_locked(word, mm_seq)
}

/// Whether the lock is free to be freed ([`vma_lock::idle`]).
#[no_mangle]
pub extern "C" fn rust_vma_lock_idle(word: u64) -> bool {
    vma_lock::idle(word)
}
