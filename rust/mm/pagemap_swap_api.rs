// SPDX-License-Identifier: GPL-2.0

//! The C API of pagemap's entries for shared memory's unmapped pages
//! (`include/linux/pagemap_swap.h`), called by `mm/shmem.c`'s XArray walk
//! and `fs/proc/task_mmu.c`'s pagemap walk.
//!
//! C owns the walk (RCU, the XArray, the page tables) and the buffer; the
//! decisions are [`crate::pagemap_swap`]'s. The only `unsafe` here is the
//! view of C's buffer as a slice. The header's enums and the pagemap bits
//! are checked at compile time against the core.

use kernel::bindings;
use kernel::error::code::EINVAL;
use kernel::ffi::{c_long, c_uint};

use crate::pagemap_swap::{self, Entry, EntryKind, FileRange, PteState, VmaKind};

const _: () = {
    assert!(bindings::pagemap_file_kind_PAGEMAP_FILE_FOLIO == EntryKind::Folio as u32);
    assert!(bindings::pagemap_file_kind_PAGEMAP_FILE_SWAP == EntryKind::Swap as u32);
    assert!(bindings::pagemap_pte_state_PAGEMAP_PTE_NONE == PteState::None as u32);
    assert!(bindings::pagemap_pte_state_PAGEMAP_PTE_PRESENT == PteState::Present as u32);
    assert!(bindings::pagemap_pte_state_PAGEMAP_PTE_SWAP_ENTRY == PteState::SwapEntry as u32);
    assert!(bindings::pagemap_pte_state_PAGEMAP_PTE_MARKER == PteState::Marker as u32);
    assert!(bindings::pagemap_vma_kind_PAGEMAP_VMA_PRIVATE_ANON == VmaKind::PrivateAnon as u32);
    assert!(bindings::pagemap_vma_kind_PAGEMAP_VMA_SHARED_SHMEM == VmaKind::SharedShmem as u32);
    assert!(bindings::pagemap_vma_kind_PAGEMAP_VMA_PRIVATE_SHMEM == VmaKind::PrivateShmem as u32);
    assert!(bindings::pagemap_vma_kind_PAGEMAP_VMA_OTHER == VmaKind::Other as u32);
    // The entry layout of pagemap.rst (fs/proc/task_mmu.c checks the
    // header's constants against its PM_PFRAME_BITS and the kernel's
    // MAX_SWAPFILES_SHIFT).
    assert!(bindings::pagemap_swap_abi_PAGEMAP_PFRAME_BITS == pagemap_swap::PFRAME_BITS);
    assert!(bindings::pagemap_swap_abi_PAGEMAP_SWAP_TYPE_BITS == pagemap_swap::SWAP_TYPE_BITS);
    // pgoff_t and the slots' u64 are 64 bits wherever this builds.
    assert!(core::mem::size_of::<kernel::ffi::c_ulong>() == core::mem::size_of::<u64>());
};

// Every export has the type of its C declaration (bindgen reads
// linux/pagemap_swap.h): a header and an export that disagree fail the
// build.
const _: () = {
    type Range = *const bindings::pagemap_file_range;
    let _: [unsafe extern "C" fn(Range); 2] =
        [bindings::rust_pagemap_file_clear, rust_pagemap_file_clear];
    let _: [unsafe extern "C" fn(Range, bindings::pagemap_file_entry) -> c_long; 2] =
        [bindings::rust_pagemap_file_record, rust_pagemap_file_record];
    let _: [unsafe extern "C" fn(c_uint, u64, u64) -> u64; 2] =
        [bindings::rust_pagemap_report, rust_pagemap_report];
    let _: [unsafe extern "C" fn(bool, c_uint) -> bool; 2] =
        [bindings::rust_pagemap_walks_file, rust_pagemap_walks_file];
};

/// C's range as the core's, or `None` for a NULL range or buffer: its
/// slots cleared to holes if `clear` ([`FileRange::new`]), else as earlier
/// calls left them ([`FileRange::resume`]).
///
/// # Safety
///
/// `range` is NULL or points to a `struct pagemap_file_range` whose `slots`
/// is NULL or points to `nr` writable `u64`s that nothing else accesses
/// while the returned range lives.
unsafe fn file_range<'a>(
    range: *const bindings::pagemap_file_range,
    clear: bool,
) -> Option<FileRange<'a>> {
    // SAFETY: By the function's safety requirements `range` is NULL or
    // valid for reads.
    let r = unsafe { range.as_ref() }?;
    if r.slots.is_null() {
        return None;
    }
    // SAFETY: `slots` is non-NULL and, by the function's safety
    // requirements, points to `nr` writable `u64`s no one else accesses
    // for `'a`; `u64` has no invalid values.
    let slots = unsafe { core::slice::from_raw_parts_mut(r.slots, r.nr as usize) };
    Some(if clear {
        FileRange::new(r.first, slots, r.swap_types, r.show_location)
    } else {
        FileRange::resume(r.first, slots, r.swap_types, r.show_location)
    })
}

/// Start a range: every offset a hole ([`FileRange::new`]).
///
/// # Safety
///
/// As [`file_range`].
#[no_mangle]
pub unsafe extern "C" fn rust_pagemap_file_clear(range: *const bindings::pagemap_file_range) {
    // SAFETY: Forwarded from this function's safety requirements.
    let _ = unsafe { file_range(range, true) };
}

/// Fill the offsets of the range an XArray entry covers
/// ([`FileRange::record`]): how many, or `-EINVAL` for an entry the core
/// refuses (an unknown kind or an impossible order), 0 for one outside
/// the range.
///
/// # Safety
///
/// As [`file_range`].
#[no_mangle]
pub unsafe extern "C" fn rust_pagemap_file_record(
    range: *const bindings::pagemap_file_range,
    entry: bindings::pagemap_file_entry,
) -> c_long {
    let kind = match entry.kind {
        k if k == EntryKind::Folio as u32 => EntryKind::Folio,
        k if k == EntryKind::Swap as u32 => EntryKind::Swap,
        _ => return EINVAL.to_errno() as c_long,
    };
    // SAFETY: Forwarded from this function's safety requirements.
    let Some(mut r) = (unsafe { file_range(range, false) }) else {
        return EINVAL.to_errno() as c_long;
    };
    let e = Entry {
        index: entry.index,
        order: entry.order,
        kind,
        swap_type: entry.swap_type,
        swap_offset: entry.swap_offset,
    };
    match r.record(&e) {
        // At most `nr` offsets, which a `long` holds (64-bit only).
        Ok(n) => n as c_long,
        Err(pagemap_swap::RecordError::Outside) => 0,
        Err(pagemap_swap::RecordError::Order) => EINVAL.to_errno() as c_long,
    }
}

/// The pagemap entry of a PTE in state `pte` of a vma whose file was
/// walked, 6.12's entry being `current` and the file's `slot`
/// ([`pagemap_swap::report`]); an unknown state keeps `current`.
#[no_mangle]
pub extern "C" fn rust_pagemap_report(pte: c_uint, current: u64, slot: u64) -> u64 {
    let state = match pte {
        p if p == PteState::None as u32 => PteState::None,
        p if p == PteState::Present as u32 => PteState::Present,
        p if p == PteState::SwapEntry as u32 => PteState::SwapEntry,
        p if p == PteState::Marker as u32 => PteState::Marker,
        _ => return current,
    };
    pagemap_swap::report(state, current, slot)
}

/// Whether a read walks the file behind a vma of `vma_kind`
/// ([`pagemap_swap::walks_file`]); an unknown kind does not.
#[no_mangle]
pub extern "C" fn rust_pagemap_walks_file(opted_in: bool, vma_kind: c_uint) -> bool {
    let vma = match vma_kind {
        k if k == VmaKind::PrivateAnon as u32 => VmaKind::PrivateAnon,
        k if k == VmaKind::SharedShmem as u32 => VmaKind::SharedShmem,
        k if k == VmaKind::PrivateShmem as u32 => VmaKind::PrivateShmem,
        _ => VmaKind::Other,
    };
    pagemap_swap::walks_file(opted_in, vma)
}
