// SPDX-License-Identifier: GPL-2.0

//! C header: [`include/linux/rmap_id.h`](srctree/include/linux/rmap_id.h)
//!
//! The C API of rmap IDs and sub-IDs. The `unsafe` here is what the FFI
//! edge needs: turning the allocator handle C holds back into a reference,
//! and writing results through C pointers.
//! The logic lives in the safe modules [`crate::logic::rmap_id::idspace`]
//! and [`crate::logic::rmap_id::subid`].

use core::pin::Pin;
use core::ptr;

use kernel::bindings;
use kernel::error::code::{EINVAL, ENOENT, ENOMEM, ENOSPC};
use kernel::ffi::{c_int, c_uint};
use kernel::new_spinlock_irq;
use kernel::prelude::*;
use kernel::sync::SpinLockIrq;
use pin_init::init_zeroed;

use crate::logic::rmap_id::idspace::{self, AllocError, FreeError, IdSpace, Leaf, SpaceLock};
use crate::logic::rmap_id::subid::{self, SubIdError, SubIds};

// The C header and the Rust tables must agree; checked when vmlinux builds.
const _: () = {
    assert!(bindings::RMAP_ID_BITS == subid::ID_BITS);
    assert!(bindings::RMAP_ID_MAX == subid::MAX_ID);
    assert!(bindings::RMAP_ID_DUMMY == subid::DUMMY_ID);
    assert!(bindings::RMAP_ID_MIN_ORDER == subid::MIN_ORDER);
    assert!(bindings::RMAP_ID_MAX_ORDER == subid::MAX_ORDER);
    assert!(bindings::RMAP_ID_MAX_VALUES as usize == subid::MAX_VALUES);
    assert!(bindings::RMAP_ID_NR_SUBIDS as usize == subid::NR_SUBIDS);
};

// Every export has the type of its C declaration (bindgen reads
// linux/rmap_id.h): a header and an export that disagree fail the build.
const _: () = {
    type Handle = *mut bindings::rmap_id_allocator;
    let _: [unsafe extern "C" fn(u32) -> Handle; 2] = [
        bindings::rust_rmap_id_allocator_create,
        rust_rmap_id_allocator_create,
    ];
    let _: [unsafe extern "C" fn(Handle); 2] = [
        bindings::rust_rmap_id_allocator_destroy,
        rust_rmap_id_allocator_destroy,
    ];
    let _: [unsafe extern "C" fn(Handle) -> c_int; 2] =
        [bindings::rust_rmap_id_alloc, rust_rmap_id_alloc];
    let _: [unsafe extern "C" fn(Handle, u32) -> c_int; 2] =
        [bindings::rust_rmap_id_free, rust_rmap_id_free];
    let _: [unsafe extern "C" fn(Handle) -> u32; 2] = [
        bindings::rust_rmap_id_allocator_live,
        rust_rmap_id_allocator_live,
    ];
    let _: [unsafe extern "C" fn(Handle) -> usize; 2] = [
        bindings::rust_rmap_id_allocator_footprint,
        rust_rmap_id_allocator_footprint,
    ];
    let _: [unsafe extern "C" fn(u32, *mut bindings::rmap_subids) -> c_int; 2] =
        [bindings::rust_rmap_id_subids_fill, rust_rmap_id_subids_fill];
    let _: [unsafe extern "C" fn() -> c_int; 2] = [
        bindings::rust_rmap_id_verify_tables,
        rust_rmap_id_verify_tables,
    ];
    let _: [unsafe extern "C" fn(c_uint) -> c_int; 2] = [
        bindings::rust_rmap_id_subid_offset,
        rust_rmap_id_subid_offset,
    ];
    let _: [unsafe extern "C" fn(u32, c_uint, c_uint, *mut u64) -> c_int; 2] =
        [bindings::rust_rmap_id_subid, rust_rmap_id_subid];
    let _: [unsafe extern "C" fn(c_uint, *mut bindings::rmap_subid_class) -> c_int; 2] =
        [bindings::rust_rmap_id_subid_class, rust_rmap_id_subid_class];
};

// SAFETY: A `Leaf` is an array of integers, for which all-zero bytes is a
// valid (and the empty) value.
unsafe impl Zeroable for Leaf {}

/// An rmap-ID allocator: an [`IdSpace`] behind a spinlock taken with
/// interrupts disabled ([`SpinLockIrq`]: the free path runs from
/// `__mmdrop()`, which may be reached with interrupts disabled or from
/// softirq context). C holds it as `struct rmap_id_allocator *`.
#[pin_data]
pub struct Allocator {
    #[pin]
    space: SpinLockIrq<IdSpace<KBox<Leaf>>>,
}

impl Allocator {
    /// An allocator for IDs `1..=max_id`.
    fn new(max_id: u32) -> impl PinInit<Self> {
        pin_init!(Allocator {
            space <- new_spinlock_irq!(IdSpace::new(max_id), "rmap_id"),
        })
    }
}

impl SpaceLock for Allocator {
    type Leaf = KBox<Leaf>;

    fn with<R>(&self, f: impl FnOnce(&mut IdSpace<KBox<Leaf>>) -> R) -> R {
        let mut guard = self.space.lock();
        f(&mut guard)
    }

    fn new_leaf(&self) -> Option<KBox<Leaf>> {
        KBox::init(init_zeroed(), GFP_KERNEL).ok()
    }
}

/// Turn the C handle back into a reference; `None` for NULL.
///
/// # Safety
///
/// `a` is NULL or was returned by [`rust_rmap_id_allocator_create`] and
/// not yet passed to [`rust_rmap_id_allocator_destroy`].
unsafe fn allocator<'a>(a: *mut bindings::rmap_id_allocator) -> Option<&'a Allocator> {
    // SAFETY: By the function's safety requirements, a non-NULL `a` points
    // to a live, pinned `Allocator` (C's `struct rmap_id_allocator` is
    // opaque: only this file creates one) that is only used through shared
    // references.
    unsafe { a.cast::<Allocator>().as_ref() }
}

/// Create an allocator handing out IDs `1..=max_id` (`max_id` clamped to
/// `1..=RMAP_ID_MAX`). Returns NULL if memory is short. May sleep.
#[no_mangle]
pub extern "C" fn rust_rmap_id_allocator_create(max_id: u32) -> *mut bindings::rmap_id_allocator {
    match KBox::pin_init(Allocator::new(max_id), GFP_KERNEL) {
        // SAFETY: The allocator is never moved out of its box: C only holds
        // the pointer, and `rust_rmap_id_allocator_destroy` rebuilds the box
        // to drop it in place.
        Ok(b) => KBox::into_raw(unsafe { Pin::into_inner_unchecked(b) }).cast(),
        Err(_) => ptr::null_mut(),
    }
}

/// Destroy an allocator and free all its memory. NULL is ignored.
///
/// # Safety
///
/// `a` is NULL or came from [`rust_rmap_id_allocator_create`], is not used
/// concurrently, and is not used again.
#[no_mangle]
pub unsafe extern "C" fn rust_rmap_id_allocator_destroy(a: *mut bindings::rmap_id_allocator) {
    if !a.is_null() {
        // SAFETY: By the safety requirements, `a` came from `KBox::into_raw`
        // in `rust_rmap_id_allocator_create` and ownership returns here.
        drop(unsafe { KBox::from_raw(a.cast::<Allocator>()) });
    }
}

/// Allocate the lowest free ID. Returns it (`>= 1`), `-ENOSPC` when all IDs
/// are live, `-ENOMEM` when a bitmap leaf cannot be allocated, `-EINVAL` for
/// a NULL allocator. May sleep (it may allocate a 4 KiB leaf).
///
/// # Safety
///
/// `a` is NULL or a live allocator (see [`rust_rmap_id_allocator_create`]).
#[no_mangle]
pub unsafe extern "C" fn rust_rmap_id_alloc(a: *mut bindings::rmap_id_allocator) -> c_int {
    // SAFETY: Forwarded from this function's safety requirements.
    let Some(a) = (unsafe { allocator(a) }) else {
        return EINVAL.to_errno();
    };
    match idspace::alloc(a) {
        // IDs are below 2^24, so they fit in a C int.
        Ok(id) => id as c_int,
        Err(AllocError::NoSpace) => ENOSPC.to_errno(),
        Err(AllocError::NoMemory) => ENOMEM.to_errno(),
    }
}

/// Free `id`. Returns 0, or refuses with a warning and no change: `-EINVAL`
/// for the dummy ID, an ID above the allocator's maximum or a NULL allocator;
/// `-ENOENT` for an ID that is not live (double free). Never sleeps; may be
/// called with interrupts disabled.
///
/// # Safety
///
/// `a` is NULL or a live allocator (see [`rust_rmap_id_allocator_create`]).
#[no_mangle]
pub unsafe extern "C" fn rust_rmap_id_free(a: *mut bindings::rmap_id_allocator, id: u32) -> c_int {
    // SAFETY: Forwarded from this function's safety requirements.
    let Some(a) = (unsafe { allocator(a) }) else {
        return EINVAL.to_errno();
    };
    match idspace::free(a, id) {
        Ok(()) => 0,
        Err(e) => {
            let (what, err) = match e {
                FreeError::Dummy => ("the dummy ID", EINVAL),
                FreeError::OutOfRange => ("an ID out of range", EINVAL),
                FreeError::NotAllocated => ("an ID that is not live", ENOENT),
            };
            pr_warn!("refusing to free rmap ID {}: {}\n", id, what);
            err.to_errno()
        }
    }
}

/// Number of live IDs (0 for NULL).
///
/// # Safety
///
/// `a` is NULL or a live allocator (see [`rust_rmap_id_allocator_create`]).
#[no_mangle]
pub unsafe extern "C" fn rust_rmap_id_allocator_live(a: *mut bindings::rmap_id_allocator) -> u32 {
    // SAFETY: Forwarded from this function's safety requirements.
    unsafe { allocator(a) }.map_or(0, |a| a.with(|s| s.live()))
}

/// Bytes used by the allocator: its bitmap top level plus its leaves (0 for
/// NULL).
///
/// # Safety
///
/// `a` is NULL or a live allocator (see [`rust_rmap_id_allocator_create`]).
#[no_mangle]
pub unsafe extern "C" fn rust_rmap_id_allocator_footprint(
    a: *mut bindings::rmap_id_allocator,
) -> usize {
    // SAFETY: Forwarded from this function's safety requirements.
    unsafe { allocator(a) }.map_or(0, |a| a.with(|s| s.footprint()))
}

fn subid_errno(_: SubIdError) -> c_int {
    EINVAL.to_errno()
}

/// Fill an mm's sub-ID cache for `id`: every sub-ID, class after class, and
/// per folio order the live count (how many of the class's sub-IDs an
/// update adds, up to the last that is not 0). Returns 0, or `-EINVAL`
/// (nothing written) for a NULL cache or an ID above `RMAP_ID_MAX`.
///
/// # Safety
///
/// `cache` is NULL or valid for a write of one `struct rmap_subids`.
#[no_mangle]
pub unsafe extern "C" fn rust_rmap_id_subids_fill(
    id: u32,
    cache: *mut bindings::rmap_subids,
) -> c_int {
    if cache.is_null() {
        return EINVAL.to_errno();
    }
    let s = match SubIds::new(id) {
        Ok(s) => s,
        Err(e) => return subid_errno(e),
    };
    // The array lengths are the core's: these are the types bindgen gives
    // `struct rmap_subids`, checked by the assignment.
    let out = bindings::rmap_subids {
        subids: *s.as_array(),
        live: *s.live(),
    };
    // SAFETY: The caller guarantees `cache` is valid for a write; it is not
    // NULL (checked above).
    unsafe { cache.write(out) };
    0
}

/// Boot-time verification of the sub-ID tables (`CONFIG_DEBUG_MM_RMAP_ID`):
/// every compile-time table entry and class property re-derived. Returns
/// the number of entries checked, or `-EINVAL` after logging what is wrong.
#[no_mangle]
pub extern "C" fn rust_rmap_id_verify_tables() -> c_int {
    match subid::verify_tables() {
        // Fewer than 2^31 entries: the tables hold a few thousand.
        Ok(n) => c_int::try_from(n).unwrap_or(c_int::MAX),
        Err(e) => {
            pr_err!(
                "sub-ID table verification failed: class {} entry {:?}\n",
                e.class,
                e.entry
            );
            EINVAL.to_errno()
        }
    }
}

/// Index of the first sub-ID of folios of `order` within the per-mm cache,
/// or `-EINVAL` for an order outside `RMAP_ID_MIN_ORDER..=RMAP_ID_MAX_ORDER`.
#[no_mangle]
pub extern "C" fn rust_rmap_id_subid_offset(order: c_uint) -> c_int {
    match subid::subid_offset(order) {
        Ok(off) => off as c_int,
        Err(e) => subid_errno(e),
    }
}

/// Store sub-ID `value` of `id` for folios of `order` in `*out`. Returns 0,
/// or `-EINVAL` (nothing stored) for an out-of-range order, ID or value.
///
/// # Safety
///
/// `out` is valid for a write of one `u64`.
#[no_mangle]
pub unsafe extern "C" fn rust_rmap_id_subid(
    id: u32,
    order: c_uint,
    value: c_uint,
    out: *mut u64,
) -> c_int {
    if out.is_null() {
        return EINVAL.to_errno();
    }
    match subid::subid(id, order, value as usize) {
        Ok(s) => {
            // SAFETY: The caller guarantees `out` is valid for a write.
            unsafe { out.write(s) };
            0
        }
        Err(e) => subid_errno(e),
    }
}

/// Describe the class serving folios of `order` in `*class`. Returns 0 or
/// `-EINVAL` (nothing stored).
///
/// # Safety
///
/// `class` is valid for a write of one `struct rmap_subid_class`.
#[no_mangle]
pub unsafe extern "C" fn rust_rmap_id_subid_class(
    order: c_uint,
    class: *mut bindings::rmap_subid_class,
) -> c_int {
    if class.is_null() {
        return EINVAL.to_errno();
    }
    let c = match subid::class_for_order(order) {
        Ok(c) => c,
        Err(e) => return subid_errno(e),
    };
    let mut out = bindings::rmap_subid_class {
        values: c.values as u32,
        min_order: c.min_order,
        max_order: c.max_order,
        p: c.p,
        max_sum: c.max_sum,
        ..Default::default()
    };
    for (j, chunk) in c.chunks().iter().enumerate() {
        out.shift[j] = chunk.shift;
        out.bits[j] = chunk.bits;
        out.max_subid[j] = chunk.max_subid;
    }
    // SAFETY: The caller guarantees `class` is valid for a write.
    unsafe { class.write(out) };
    0
}
