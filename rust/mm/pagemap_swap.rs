// SPDX-License-Identifier: GPL-2.0

//! C header: [`include/linux/pagemap_swap.h`](srctree/include/linux/pagemap_swap.h)
//!
//! The C API of pagemap's entries for shared memory's unmapped pages,
//! called by `mm/shmem.c`'s XArray walk and `fs/proc/task_mmu.c`'s pagemap
//! walk.
//!
//! C owns the walk (RCU, the XArray, the page tables) and the buffers; the
//! decisions are [`crate::logic::pagemap_swap`]'s, one call per page-table
//! range. The only `unsafe` here is the view of C's buffers as slices. The
//! header's enums and the pagemap bits are checked at compile time
//! against the core.

use kernel::bindings;
use kernel::error::code::EINVAL;
use kernel::ffi::{c_long, c_uint, c_ulong};

use crate::logic::pagemap_swap::{self, Found, Run, VmaKind};

const _: () = {
    assert!(bindings::pagemap_vma_kind_PAGEMAP_VMA_PRIVATE_ANON == VmaKind::PrivateAnon as u32);
    assert!(bindings::pagemap_vma_kind_PAGEMAP_VMA_SHARED_SHMEM == VmaKind::SharedShmem as u32);
    assert!(bindings::pagemap_vma_kind_PAGEMAP_VMA_PRIVATE_SHMEM == VmaKind::PrivateShmem as u32);
    assert!(bindings::pagemap_vma_kind_PAGEMAP_VMA_OTHER == VmaKind::Other as u32);
    // The entry layout of pagemap.rst (fs/proc/task_mmu.c checks the
    // header's constants against its PM_PFRAME_BITS and the kernel's
    // MAX_SWAPFILES_SHIFT).
    assert!(bindings::pagemap_swap_abi_PAGEMAP_PFRAME_BITS == pagemap_swap::PFRAME_BITS);
    assert!(bindings::pagemap_swap_abi_PAGEMAP_SWAP_TYPE_BITS == pagemap_swap::SWAP_TYPE_BITS);
    // How shmem stores a swap entry in its XArray (mm/shmem.c checks the
    // header's constant against the kernel's SWP_TYPE_SHIFT).
    assert!(bindings::pagemap_swap_abi_PAGEMAP_SWP_TYPE_SHIFT == pagemap_swap::SWP_TYPE_SHIFT);
    // PAGEMAP_SCAN's categories (include/uapi/linux/fs.h).
    assert!(bindings::PAGE_IS_FILE as u64 == pagemap_swap::SCAN_FILE);
    assert!(bindings::PAGE_IS_SWAPPED as u64 == pagemap_swap::SCAN_SWAPPED);
    // pgoff_t and the slots' u64 are 64 bits wherever this builds.
    assert!(core::mem::size_of::<kernel::ffi::c_ulong>() == core::mem::size_of::<u64>());
};

// Every export has the type of its C declaration (bindgen reads
// linux/pagemap_swap.h): a header and an export that disagree fail the
// build.
const _: () = {
    type Range = *const bindings::pagemap_file_range;
    type Entries = *const bindings::pagemap_file_entry;
    let _: [unsafe extern "C" fn(Range, Entries, c_ulong) -> c_long; 2] = [
        bindings::rust_pagemap_swap_file_merge,
        rust_pagemap_swap_file_merge,
    ];
    let _: [unsafe extern "C" fn() -> u64; 2] = [
        bindings::rust_pagemap_swap_pte_decided,
        rust_pagemap_swap_pte_decided,
    ];
    let _: [unsafe extern "C" fn(bool, c_uint) -> bool; 2] = [
        bindings::rust_pagemap_swap_walks_file,
        rust_pagemap_swap_walks_file,
    ];
    let _: [unsafe extern "C" fn(*mut u64, c_ulong); 2] = [
        bindings::rust_pagemap_swap_scan_categories,
        rust_pagemap_swap_scan_categories,
    ];
};

/// A view of `n` C objects at `ptr` as a slice (empty for NULL or 0).
///
/// # Safety
///
/// `ptr` is NULL or points to `n` initialised `T`s that nothing writes
/// while the slice lives.
unsafe fn c_slice<'a, T>(ptr: *const T, n: c_ulong) -> &'a [T] {
    if ptr.is_null() || n == 0 {
        return &[];
    }
    // SAFETY: `ptr` is non-NULL and, by the function's safety
    // requirements, points to `n` initialised `T`s nothing writes for `'a`.
    unsafe { core::slice::from_raw_parts(ptr, n) }
}

/// Give a run of PTEs their final pagemap entries from the `n` entries one
/// walk of the file's XArray found over the run, as the XArray holds them
/// ([`Run::merge_all`]): how many offsets the entries covered, or
/// `-EINVAL` for a NULL range or entry buffer, or an entry the core
/// refuses (not a folio or value entry, an impossible order; the others
/// are merged all the same).
///
/// # Safety
///
/// `range` is NULL or points to a `struct pagemap_file_range` whose `pmes`
/// is NULL or points to `nr` writable `u64`s that nothing else accesses
/// during the call; `entries` is NULL or points to `n` entries.
#[no_mangle]
pub unsafe extern "C" fn rust_pagemap_swap_file_merge(
    range: *const bindings::pagemap_file_range,
    entries: *const bindings::pagemap_file_entry,
    n: c_ulong,
) -> c_long {
    // SAFETY: By the function's safety requirements `range` is NULL or
    // valid for reads.
    let Some(r) = (unsafe { range.as_ref() }) else {
        return EINVAL.to_errno() as c_long;
    };
    if r.pmes.is_null() || (n != 0 && entries.is_null()) {
        return EINVAL.to_errno() as c_long;
    }
    // SAFETY: `pmes` is non-NULL and, by the function's safety
    // requirements, points to `nr` writable `u64`s no one else accesses
    // during the call; `u64` has no invalid values.
    let pmes = unsafe { core::slice::from_raw_parts_mut(r.pmes, r.nr) };
    // SAFETY: Forwarded from this function's safety requirements.
    let found = unsafe { c_slice(entries, n) };
    let mut run = Run::new(r.first, pmes, r.swap_types, r.show_location);
    let merged = run.merge_all(found.iter().map(|e| Found {
        index: e.index,
        order: e.order,
        xa_entry: e.entry,
        nr: e.nr,
    }));
    match merged {
        Ok(covered) => c_long::try_from(covered).unwrap_or(c_long::MAX),
        Err(_) => EINVAL.to_errno() as c_long,
    }
}

/// The pagemap entry bits that say a PTE decides its entry
/// ([`pagemap_swap::PTE_DECIDED`]): C walks the XArray only over offsets
/// whose 6.12 entry has none of them.
#[no_mangle]
pub extern "C" fn rust_pagemap_swap_pte_decided() -> u64 {
    pagemap_swap::PTE_DECIDED
}

/// Whether a read walks the file behind a vma of `vma_kind`
/// ([`pagemap_swap::walks_file`]); an unknown kind does not.
#[no_mangle]
pub extern "C" fn rust_pagemap_swap_walks_file(opted_in: bool, vma_kind: c_uint) -> bool {
    let vma = match vma_kind {
        k if k == VmaKind::PrivateAnon as u32 => VmaKind::PrivateAnon,
        k if k == VmaKind::SharedShmem as u32 => VmaKind::SharedShmem,
        k if k == VmaKind::PrivateShmem as u32 => VmaKind::PrivateShmem,
        _ => VmaKind::Other,
    };
    pagemap_swap::walks_file(opted_in, vma)
}

/// Turn the `nr` pagemap entries at `pmes` -- an opted-in read's entries
/// of one page-table range of a shared shmem vma whose PTEs were taken as
/// none ([`rust_pagemap_swap_file_merge`] over zeroed entries) -- into the
/// `PAGEMAP_SCAN` categories a scan adds to its `pte_none` pages, in place
/// ([`pagemap_swap::scan_categories`]). NULL or 0 entries: nothing.
///
/// # Safety
///
/// `pmes` is NULL or points to `nr` writable `u64`s that nothing else
/// accesses during the call.
#[no_mangle]
pub unsafe extern "C" fn rust_pagemap_swap_scan_categories(pmes: *mut u64, nr: c_ulong) {
    if pmes.is_null() || nr == 0 {
        return;
    }
    // SAFETY: `pmes` is non-NULL and, by the function's safety
    // requirements, points to `nr` writable `u64`s no one else accesses
    // during the call; `u64` has no invalid values.
    let pmes = unsafe { core::slice::from_raw_parts_mut(pmes, nr) };
    pagemap_swap::scan_categories_in_place(pmes);
}
