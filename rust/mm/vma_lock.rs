// SPDX-License-Identifier: GPL-2.0

//! C header: [`include/linux/vma_lock.h`](srctree/include/linux/vma_lock.h)
//!
//! The C API of the per-VMA lock's decisions, called by
//! `include/linux/mmap_lock.h` and `mm/mmap_lock.c`.
//!
//! C reads `vm_refcnt` (and `vm_lock_seq`, the mm's sequence), asks for a
//! decision and stores the answer with a `try_cmpxchg` loop; it owns the
//! orderings, RCU, the rcuwait in the mm, the `mmgrab()` of a foreign mm
//! and lockdep. The decisions are [`crate::logic::vma_lock`]'s pure
//! functions over values, so this edge has no `unsafe`: it passes values
//! through (a [`Step`] leaves as C's `struct vma_lock_step`). The flag,
//! the limit, the verdicts and every export's type are checked at compile
//! time against the header and 7.3's `mm_types.h`. The per-transition
//! exports are `#[inline(always)]`: with `CONFIG_RUST_MM_LTO` the LTO link
//! inlines each into its C callers (`LTO_INLINE` in `folio_rmap.rs`), and
//! `scripts/test/lto-check.py --system vma-lock` proves it from the vmlinux.

use kernel::bindings;

use crate::logic::vma_lock::{self, Step, Verdict};

const _: () = {
    assert!(bindings::VM_REFCNT_EXCLUDE_READERS_BIT == vma_lock::EXCLUDE_READERS_BIT);
    assert!(bindings::VM_REFCNT_EXCLUDE_READERS_FLAG == vma_lock::EXCLUDE_READERS);
    assert!(bindings::VM_REFCNT_LIMIT == vma_lock::LIMIT);
    assert!(bindings::vma_lock_verdict_VMA_LOCK_OK == Verdict::Ok as u32);
    assert!(bindings::vma_lock_verdict_VMA_LOCK_DETACHED == Verdict::Detached as u32);
    assert!(bindings::vma_lock_verdict_VMA_LOCK_REFUSED == Verdict::Refused as u32);
    assert!(bindings::vma_lock_verdict_VMA_LOCK_WRITE_LOCKED == Verdict::WriteLocked as u32);
    assert!(bindings::vma_lock_verdict_VMA_LOCK_FOREIGN_MM == Verdict::ForeignMm as u32);
    assert!(bindings::vma_lock_verdict_VMA_LOCK_WAKE == Verdict::Wake as u32);
    assert!(bindings::vma_lock_verdict_VMA_LOCK_MUST_WAIT == Verdict::MustWait as u32);
    assert!(bindings::vma_lock_verdict_VMA_LOCK_UNBALANCED == Verdict::Unbalanced as u32);
    // vm_refcnt is a refcount_t (an atomic_t, its counter an int): the
    // casts between it and the core's u32 are bit-preserving.
    assert!(core::mem::size_of::<bindings::refcount_t>() == core::mem::size_of::<u32>());
};

// Every export has the type of its C declaration (bindgen reads
// linux/vma_lock.h): a header and an export that disagree fail the build.
const _: () = {
    type CStep = bindings::vma_lock_step;
    let _: [unsafe extern "C" fn(u32) -> CStep; 2] =
        [bindings::rust_vma_lock_read_admit, rust_vma_lock_read_admit];
    let _: [unsafe extern "C" fn(bool, u32, u32) -> u32; 2] = [
        bindings::rust_vma_lock_read_validate,
        rust_vma_lock_read_validate,
    ];
    let _: [unsafe extern "C" fn(u32) -> CStep; 2] = [
        bindings::rust_vma_lock_read_release,
        rust_vma_lock_read_release,
    ];
    let _: [unsafe extern "C" fn(u32) -> CStep; 2] = [
        bindings::rust_vma_lock_exclude_begin,
        rust_vma_lock_exclude_begin,
    ];
    let _: [unsafe extern "C" fn(u32, bool) -> bool; 2] = [
        bindings::rust_vma_lock_exclusion_reached,
        rust_vma_lock_exclusion_reached,
    ];
    let _: [unsafe extern "C" fn(u32) -> CStep; 2] = [
        bindings::rust_vma_lock_exclude_end,
        rust_vma_lock_exclude_end,
    ];
    let _: [unsafe extern "C" fn(u32) -> CStep; 2] =
        [bindings::rust_vma_lock_detach, rust_vma_lock_detach];
    let _: [unsafe extern "C" fn(u32) -> CStep; 2] =
        [bindings::rust_vma_lock_attach, rust_vma_lock_attach];
    let _: [unsafe extern "C" fn(u32, u32) -> bool; 2] = [
        bindings::rust_vma_lock_is_write_locked,
        rust_vma_lock_is_write_locked,
    ];
};

/// A core step as C's `struct vma_lock_step`.
const fn c_step(s: Step) -> bindings::vma_lock_step {
    bindings::vma_lock_step {
        verdict: s.verdict as u32,
        refcnt: s.refcnt,
    }
}

/// A reader's admit ([`vma_lock::read_admit`]).
#[no_mangle]
// See `LTO_INLINE` in folio_rmap.rs.
#[allow(unused_attributes)]
#[inline(always)]
pub extern "C" fn rust_vma_lock_read_admit(refcnt: u32) -> bindings::vma_lock_step {
    c_step(vma_lock::read_admit(refcnt))
}

/// A reader's checks after its admit ([`vma_lock::read_validate`]).
#[no_mangle]
// See `LTO_INLINE` in folio_rmap.rs.
#[allow(unused_attributes)]
#[inline(always)]
pub extern "C" fn rust_vma_lock_read_validate(same_mm: bool, vm_lock_seq: u32, mm_seq: u32) -> u32 {
    vma_lock::read_validate(same_mm, vm_lock_seq, mm_seq) as u32
}

/// A reader's release ([`vma_lock::read_release`]).
#[no_mangle]
// See `LTO_INLINE` in folio_rmap.rs.
#[allow(unused_attributes)]
#[inline(always)]
pub extern "C" fn rust_vma_lock_read_release(refcnt: u32) -> bindings::vma_lock_step {
    c_step(vma_lock::read_release(refcnt))
}

/// The start of an exclusion of readers ([`vma_lock::exclude_begin`]).
#[no_mangle]
// See `LTO_INLINE` in folio_rmap.rs.
#[allow(unused_attributes)]
#[inline(always)]
pub extern "C" fn rust_vma_lock_exclude_begin(refcnt: u32) -> bindings::vma_lock_step {
    c_step(vma_lock::exclude_begin(refcnt))
}

/// The excluding thread's wait condition ([`vma_lock::exclusion_reached`]).
#[no_mangle]
// See `LTO_INLINE` in folio_rmap.rs.
#[allow(unused_attributes)]
#[inline(always)]
pub extern "C" fn rust_vma_lock_exclusion_reached(refcnt: u32, detaching: bool) -> bool {
    vma_lock::exclusion_reached(refcnt, detaching)
}

/// The end of an exclusion ([`vma_lock::exclude_end`]).
#[no_mangle]
// See `LTO_INLINE` in folio_rmap.rs.
#[allow(unused_attributes)]
#[inline(always)]
pub extern "C" fn rust_vma_lock_exclude_end(refcnt: u32) -> bindings::vma_lock_step {
    c_step(vma_lock::exclude_end(refcnt))
}

/// `vma_mark_detached()`'s decrement ([`vma_lock::detach`]).
#[no_mangle]
// See `LTO_INLINE` in folio_rmap.rs.
#[allow(unused_attributes)]
#[inline(always)]
pub extern "C" fn rust_vma_lock_detach(refcnt: u32) -> bindings::vma_lock_step {
    c_step(vma_lock::detach(refcnt))
}

/// `vma_mark_attached()` ([`vma_lock::attach`]).
#[no_mangle]
// See `LTO_INLINE` in folio_rmap.rs.
#[allow(unused_attributes)]
#[inline(always)]
pub extern "C" fn rust_vma_lock_attach(refcnt: u32) -> bindings::vma_lock_step {
    c_step(vma_lock::attach(refcnt))
}

/// `__is_vma_write_locked()` and the reader's pre-check
/// ([`vma_lock::is_write_locked`]).
#[no_mangle]
// See `LTO_INLINE` in folio_rmap.rs.
#[allow(unused_attributes)]
#[inline(always)]
pub extern "C" fn rust_vma_lock_is_write_locked(vm_lock_seq: u32, mm_seq: u32) -> bool {
    vma_lock::is_write_locked(vm_lock_seq, mm_seq)
}

/// The decisions on the kernel's constants, through the C API (the host
/// tests, `rust/mm/tests/vma_lock.rs` of the rust-mm repository, cover
/// every value and the protocol).
/// The packed layout (`CONFIG_PER_VMA_LOCK_PACKED`): `vm_lock_seq` and
/// `vm_refcnt` side by side, nothing aligned to a cache line, and the vma
/// cache aligned to the smallest alignment for which the line holding
/// them holds no byte of another vma wherever the slab puts one
/// ([`vma_lock::packed_align`]), computed here from the vma bindgen sees:
/// a layout without such an alignment fails the build.
#[cfg(CONFIG_PER_VMA_LOCK_PACKED)]
pub mod packed {
    use super::{bindings, vma_lock};
    use core::mem::{offset_of, size_of};

    const SIZE: usize = size_of::<bindings::vm_area_struct>();
    const LOCK_OFF: usize = offset_of!(bindings::vm_area_struct, vm_lock_seq);
    const LINE: usize = bindings::L1_CACHE_BYTES as usize;
    const MIN_ALIGN: usize = if bindings::ARCH_SLAB_MINALIGN > vma_lock::MIN_ALIGN {
        bindings::ARCH_SLAB_MINALIGN
    } else {
        vma_lock::MIN_ALIGN
    };
    /// The vma cache's alignment.
    const ALIGN: usize = match vma_lock::packed_align(SIZE, LOCK_OFF, LINE, MIN_ALIGN) {
        Some(a) => a,
        None => panic!("no alignment keeps the packed vma lock's line to its vma"),
    };

    const _: () = {
        assert!(offset_of!(bindings::vm_area_struct, vm_refcnt) == LOCK_OFF + 4);
        assert!(size_of::<bindings::refcount_t>() + 4 == vma_lock::LOCK_BYTES);
    };

    // The vma of rust-mm's benchmark kernels (x86_64 without NUMA, anon vma
    // names, userfaultfd or lockdep): 160 bytes apart, 25 per 4 KiB page,
    // where 7.3's cache-aligned layout needs 192 (21 per page).
    #[cfg(all(
        CONFIG_X86_64,
        not(CONFIG_NUMA),
        not(CONFIG_ANON_VMA_NAME),
        not(CONFIG_USERFAULTFD),
        not(CONFIG_DEBUG_LOCK_ALLOC),
        not(CONFIG_RANDSTRUCT)
    ))]
    const _: () = assert!(vma_lock::stride(SIZE, ALIGN) <= 160);

    /// The vma cache's alignment with the lock packed (`mm/vma_init.c`
    /// creates the cache with it): a constant of the build.
    #[no_mangle]
    pub extern "C" fn rust_vma_lock_cache_align() -> usize {
        ALIGN
    }

    const _: () = {
        let _: [unsafe extern "C" fn() -> usize; 2] = [
            bindings::rust_vma_lock_cache_align,
            rust_vma_lock_cache_align,
        ];
    };
}

#[cfg(CONFIG_PER_VMA_LOCK_RUST_KUNIT_TEST)]
#[kernel::macros::kunit_tests(rust_vma_lock)]
mod tests {
    use super::*;

    const F: u32 = bindings::VM_REFCNT_EXCLUDE_READERS_FLAG;
    const LIMIT: u32 = bindings::VM_REFCNT_LIMIT;
    const OK: u32 = bindings::vma_lock_verdict_VMA_LOCK_OK;

    fn step(verdict: u32, refcnt: u32) -> (u32, u32) {
        (verdict, refcnt)
    }

    fn got(s: bindings::vma_lock_step) -> (u32, u32) {
        (s.verdict, s.refcnt)
    }

    #[test]
    fn a_reader_is_admitted_until_the_limit_and_refused_while_excluded() {
        assert_eq!(got(rust_vma_lock_read_admit(1)), step(OK, 2));
        assert_eq!(
            got(rust_vma_lock_read_admit(0)),
            step(bindings::vma_lock_verdict_VMA_LOCK_DETACHED, 0)
        );
        assert_eq!(
            got(rust_vma_lock_read_admit(LIMIT)),
            step(bindings::vma_lock_verdict_VMA_LOCK_REFUSED, LIMIT)
        );
        assert_eq!(
            got(rust_vma_lock_read_admit(F + 2)),
            step(bindings::vma_lock_verdict_VMA_LOCK_REFUSED, F + 2)
        );
    }

    #[test]
    fn a_foreign_vma_is_seen_before_the_write_lock() {
        assert_eq!(
            rust_vma_lock_read_validate(false, 5, 5),
            bindings::vma_lock_verdict_VMA_LOCK_FOREIGN_MM
        );
        assert_eq!(
            rust_vma_lock_read_validate(true, 5, 5),
            bindings::vma_lock_verdict_VMA_LOCK_WRITE_LOCKED
        );
        assert_eq!(rust_vma_lock_read_validate(true, 4, 5), OK);
    }

    #[test]
    fn the_last_reader_wakes_the_writer_and_an_unbalanced_release_stores_nothing() {
        assert_eq!(
            got(rust_vma_lock_read_release(F + 2)),
            step(bindings::vma_lock_verdict_VMA_LOCK_WAKE, F + 1)
        );
        assert_eq!(got(rust_vma_lock_read_release(3)), step(OK, 2));
        assert_eq!(
            got(rust_vma_lock_read_release(0)),
            step(bindings::vma_lock_verdict_VMA_LOCK_UNBALANCED, 0)
        );
    }

    #[test]
    fn an_exclusion_and_a_detach_drain_to_their_targets() {
        assert_eq!(got(rust_vma_lock_exclude_begin(3)), step(OK, F + 3));
        assert!(!rust_vma_lock_exclusion_reached(F + 3, false));
        assert!(rust_vma_lock_exclusion_reached(F + 1, false));
        assert!(!rust_vma_lock_exclusion_reached(F + 1, true));
        assert!(rust_vma_lock_exclusion_reached(F, true));
        assert_eq!(got(rust_vma_lock_exclude_end(F + 1)), step(OK, 1));
        assert_eq!(
            got(rust_vma_lock_detach(3)),
            step(bindings::vma_lock_verdict_VMA_LOCK_MUST_WAIT, 2)
        );
        assert_eq!(
            got(rust_vma_lock_exclude_end(F)),
            step(bindings::vma_lock_verdict_VMA_LOCK_DETACHED, 0)
        );
        assert_eq!(got(rust_vma_lock_attach(0)), step(OK, 1));
        assert!(rust_vma_lock_is_write_locked(7, 7));
    }
}
