// SPDX-License-Identifier: GPL-2.0

//! C header: [`include/linux/folio_rmap.h`](srctree/include/linux/folio_rmap.h)
//!
//! The C API of a large folio's rmap state, wrapped for the rmap code in
//! `include/linux/rmap.h`. C passes a `struct folio *`, its order, and the
//! mm's rmap ID and cached sub-IDs. This file turns them into a
//! [`FolioRmap`] over the folio's words -- the only `unsafe` here is that
//! view, through [`crate::atomic`] -- and the logic is the
//! kernel-independent [`crate::logic::folio_rmap`]. Where the words are is
//! fixed by C (`enum folio_rmap_layout` in `mm_types.h`) and checked below
//! at compile time against the classes.

use core::marker::PhantomData;
use core::ptr::NonNull;

use kernel::bindings;
use kernel::error::code::{EAGAIN, EINVAL};
use kernel::ffi::{c_int, c_long, c_uint, c_ulong};

use crate::atomic::{self, AtomicWord, I32, U64};
use crate::logic::atomic_seqcount::{AtomicSeqcount, Preempt};
use crate::logic::folio_rmap::{
    reuse_window, FolioRmap, FolioWords, Layout, MmIds, ReuseCounts, Sharing, READ_TRIES,
};
use crate::logic::rmap_id::subid::{self, MAX_VALUES, NR_ORDERS, NR_SUBIDS};

/// The placement C chose, as the core describes it.
const LAYOUT: Layout = Layout {
    page_size: bindings::folio_rmap_layout_FOLIO_RMAP_PAGE_SIZE as usize,
    seq_offset: bindings::folio_rmap_layout_FOLIO_RMAP_SEQ_OFFSET as usize,
    pair_offset: bindings::folio_rmap_layout_FOLIO_RMAP_PAIR_OFFSET as usize,
    first_value_word: bindings::folio_rmap_layout_FOLIO_RMAP_FIRST_VALUE_WORD as usize,
    track_min_order: bindings::RMAP_ID_TRACK_MIN_ORDER,
};
const MAPCOUNT_OFFSET: usize = bindings::folio_rmap_layout_FOLIO_RMAP_MAPCOUNT_OFFSET as usize;
const ENTIRE_OFFSET: usize = bindings::folio_rmap_layout_FOLIO_RMAP_ENTIRE_OFFSET as usize;
const REFCOUNT_OFFSET: usize = bindings::folio_rmap_layout_FOLIO_RMAP_REFCOUNT_OFFSET as usize;

// Every value of every class inside the smallest tracked folio of the
// class, 8-byte aligned words, and the constants C shares with us.
const _: () = {
    assert!(LAYOUT.check());
    assert!(core::mem::size_of::<bindings::page>() == LAYOUT.page_size);
    assert!(MAPCOUNT_OFFSET % 4 == 0 && ENTIRE_OFFSET % 4 == 0 && REFCOUNT_OFFSET % 4 == 0);
    assert!(MAPCOUNT_OFFSET + 4 <= 2 * LAYOUT.page_size);
    assert!(ENTIRE_OFFSET + 4 <= 2 * LAYOUT.page_size);
    assert!(REFCOUNT_OFFSET + 4 <= LAYOUT.page_size);
    assert!(bindings::FOLIO_RMAP_UNMAPPED == Sharing::Unmapped as u32);
    assert!(bindings::FOLIO_RMAP_EXCLUSIVE == Sharing::Exclusive as u32);
    assert!(bindings::FOLIO_RMAP_SHARED == Sharing::Shared as u32);
    assert!(bindings::FOLIO_RMAP_GAVE_UP == Sharing::GaveUp as u32);
    assert!(bindings::RMAP_ID_NR_SUBIDS as usize == NR_SUBIDS);
    assert!(bindings::RMAP_ID_NR_ORDERS as usize == NR_ORDERS);
};

/// A word of the folio at byte offset `off`, as the atomic `A`.
///
/// # Safety
///
/// `folio` points to a live large folio whose first `off + size_of::<A>()`
/// bytes of struct pages exist and stay allocated for `'a`; the word is
/// aligned for `A` and C only accesses it atomically (`atomic_t`,
/// `atomic64_t`) or while no one else can reach the folio.
unsafe fn word<'a, A: AtomicWord>(folio: *mut bindings::folio, off: usize) -> &'a A {
    // SAFETY: By the function's safety requirements the word at `off` is
    // inside the folio's struct pages (so is the pointer arithmetic),
    // aligned, valid for `'a` and only accessed atomically.
    unsafe { atomic::from_ptr(folio.cast::<u8>().add(off).cast::<A::Word>()) }
}

/// The words of a live tracked folio, addressed by offset from its head
/// struct page.
///
/// # Invariants
///
/// `folio` points to a live, non-hugetlb large folio of an order
/// [`LAYOUT`] tracks ([`Layout::tracks`]), which stays
/// allocated for `'a`; [`FolioRmap`] (the only user) asks for value `k`
/// only below the value count of that order's class.
struct KernelFolio<'a> {
    folio: NonNull<bindings::folio>,
    _life: PhantomData<&'a bindings::folio>,
}

impl FolioWords for KernelFolio<'_> {
    type U64 = U64;
    type I32 = I32;

    fn seqcount(&self) -> &AtomicSeqcount<U64> {
        // SAFETY: `LAYOUT.check()` proved at compile time that the
        // seqcount lies inside the smallest tracked folio; the folio is
        // live and of a tracked order (type invariant).
        unsafe { word(self.folio.as_ptr(), LAYOUT.seq_offset) }
    }

    fn mapcount(&self) -> &I32 {
        // SAFETY: `_large_mapcount` lies in page[1], as above.
        unsafe { word(self.folio.as_ptr(), MAPCOUNT_OFFSET) }
    }

    fn value(&self, k: usize) -> &U64 {
        // SAFETY: `k` is below the class's value count (type invariant),
        // and `LAYOUT.check()` proved at compile time that the last value
        // of every class lies inside the smallest folio of the class.
        unsafe { word(self.folio.as_ptr(), LAYOUT.value_offset(k)) }
    }
}

/// The rmap state of a tracked folio of `order`.
///
/// # Safety
///
/// `folio` points to a live, non-hugetlb large folio of `order` that stays
/// allocated for `'a` (the caller holds a reference, a page table lock of
/// one of its mappings, or the folio is not yet visible).
unsafe fn rmap<'a>(
    folio: *mut bindings::folio,
    order: c_uint,
) -> Option<FolioRmap<KernelFolio<'a>>> {
    // INVARIANT: orders the layout does not track are rejected here (and
    // `FolioRmap::new` rejects orders outside the class table), and the
    // caller guarantees the folio is live for `'a`.
    if !LAYOUT.tracks(order) {
        return None;
    }
    let words = KernelFolio {
        // SAFETY: A live folio is not at address 0 (this function's safety
        // requirements). Not `NonNull::new`: the kernel builds with
        // -fno-delete-null-pointer-checks, so that test would stay on
        // every update although C has just read the folio's flags.
        folio: unsafe { NonNull::new_unchecked(folio) },
        _life: PhantomData,
    };
    FolioRmap::new(order, words)
}

/// The mm's ID and its sub-ID cache, or `None` for a NULL cache.
///
/// # Safety
///
/// `subids` is NULL or points to an mm's `mm_rmap_subids`, which does not
/// change while borrowed (it is written once, before the mm is used).
unsafe fn mm_ids<'a>(id: u32, subids: *const bindings::rmap_subids) -> Option<MmIds<'a>> {
    // SAFETY: By the function's safety requirements.
    let s = unsafe { subids.as_ref() }?;
    // The arrays have the lengths of the core's (checked by these types:
    // bindgen gives the C array lengths).
    Some(MmIds {
        id,
        subids: &s.subids,
        live: &s.live,
    })
}

// LTO_INLINE: the per-update entry points (and the reuse check, its
// window and the sharing reader) are `#[inline(always)]`. Without
// CONFIG_RUST_MM_LTO that changes nothing -- C calls the exported symbol
// -- but with it this crate is LLVM bitcode in the kernel's LTO link, and
// `alwaysinline` is what lets LLVM inline them into their C callers past
// the checks that refuse otherwise: Rust's target features are not a
// subset of C's (x86: +soft-float; arm64: +strict-align) and ThinLTO
// imports nothing over -import-instr-limit=5. rustc warns that `#[inline]`
// is ignored on an export (`unused_attributes`), yet keeps the attribute
// on the LLVM function, and the LTO link inlines every call.

/// Reset a folio's rmap state (`prep_compound_head()`, folio split).
///
/// # Safety
///
/// `folio` is a large folio of `order` nobody else can reach.
#[no_mangle]
pub unsafe extern "C" fn rust_folio_rmap_reset(folio: *mut bindings::folio, order: c_uint) {
    // SAFETY: Forwarded from this function's safety requirements.
    if let Some(r) = unsafe { rmap(folio, order) } {
        r.reset();
    }
}

/// Write sections of `rust_folio_rmap_add` and `rust_folio_rmap_set_new`: their
/// C callers (`folio_add_return_large_mapcount()`,
/// `folio_set_large_mapcount()` in `include/linux/rmap.h`) disable
/// preemption around the call, so the section toggles nothing.
/// Preemption off bounds the writer counts by the number of CPUs and how
/// long readers and shared writers wait; memory safety does not depend on
/// it.
struct PreemptOffByCaller;

impl Preempt for PreemptOffByCaller {
    fn disable() {}
    fn enable() {}
}

/// The writing mm's sub-IDs. Writers need no ID: what they add is the
/// sub-IDs (the dummy mm's are all 0 and none live: its mappings are
/// counted in the mapcount only, and readers never call it exclusive).
///
/// # Safety
///
/// `subids` points to an mm's `mm_rmap_subids`, which does not change while
/// borrowed (it is written once, before the mm is used).
unsafe fn writer_ids<'a>(subids: *const bindings::rmap_subids) -> MmIds<'a> {
    // SAFETY: By the function's safety requirements `subids` is valid for
    // reads for `'a`. Not `as_ref()`: C passes `&mm->mm_rmap_subids`, never
    // NULL, and the kernel's -fno-delete-null-pointer-checks would keep
    // the test on every update.
    let s = unsafe { &*subids };
    MmIds {
        id: subid::DUMMY_ID,
        subids: &s.subids,
        live: &s.live,
    }
}

/// Account `delta` mappings of the folio by the mm whose sub-ID cache is
/// `subids`.
///
/// # Safety
///
/// `folio` is a live, non-hugetlb large folio of `order` (the caller holds
/// the page table lock of the mappings it changes); `subids` is the mm's
/// `mm_rmap_subids`. Preemption is disabled (see [`PreemptOffByCaller`]).
#[no_mangle]
// See `LTO_INLINE` above.
#[allow(unused_attributes)]
#[inline(always)]
pub unsafe extern "C" fn rust_folio_rmap_add(
    folio: *mut bindings::folio,
    order: c_uint,
    subids: *const bindings::rmap_subids,
    delta: c_int,
) -> c_int {
    // SAFETY: Forwarded from this function's safety requirements.
    let Some(r) = (unsafe { rmap(folio, order) }) else {
        // C tracks every order it passes; an untracked one changes nothing
        // here, and its mapcount is C's to keep.
        return 0;
    };
    // SAFETY: Forwarded from this function's safety requirements.
    let mm = unsafe { writer_ids(subids) };
    r.add::<PreemptOffByCaller>(&mm, delta)
}

/// Set a new folio mapped `mapcount` times by one mm.
///
/// # Safety
///
/// As [`rust_folio_rmap_add`]; the folio is not yet mapped anywhere else.
#[no_mangle]
// See `LTO_INLINE` above.
#[allow(unused_attributes)]
#[inline(always)]
pub unsafe extern "C" fn rust_folio_rmap_set_new(
    folio: *mut bindings::folio,
    order: c_uint,
    subids: *const bindings::rmap_subids,
    mapcount: c_int,
) {
    // SAFETY: Forwarded from this function's safety requirements.
    let Some(r) = (unsafe { rmap(folio, order) }) else {
        return;
    };
    // SAFETY: Forwarded from this function's safety requirements.
    let mm = unsafe { writer_ids(subids) };
    r.set_new::<PreemptOffByCaller>(&mm, mapcount);
}

/// Who maps the folio: one of `FOLIO_RMAP_*`. Untracked folios and a NULL
/// sub-ID array answer `FOLIO_RMAP_SHARED`.
///
/// # Safety
///
/// `folio` is a live large folio of `order` the caller holds a reference
/// to (or a page table lock of one of its mappings); `subids` is NULL or
/// the mm's `mm_rmap_subids`.
#[no_mangle]
// See `LTO_INLINE` above.
#[allow(unused_attributes)]
#[inline(always)]
pub unsafe extern "C" fn rust_folio_rmap_sharing(
    folio: *mut bindings::folio,
    order: c_uint,
    id: u32,
    subids: *const bindings::rmap_subids,
) -> c_int {
    // SAFETY: Forwarded from this function's safety requirements.
    let r = unsafe { rmap(folio, order) };
    // SAFETY: Forwarded from this function's safety requirements.
    let mm = unsafe { mm_ids(id, subids) };
    let answer = match (r, mm) {
        (Some(r), Some(mm)) => r.sharing(&mm),
        _ => Sharing::Shared,
    };
    answer as c_int
}

/// Does one mm, whichever, have every mapping of the folio
/// (`folio_maybe_mapped_shared()`)? One of `FOLIO_RMAP_*`; untracked folios
/// answer `FOLIO_RMAP_SHARED`.
///
/// # Safety
///
/// As [`rust_folio_rmap_sharing`].
#[no_mangle]
// See `LTO_INLINE` above.
#[allow(unused_attributes)]
#[inline(always)]
pub unsafe extern "C" fn rust_folio_rmap_sole_mapper(
    folio: *mut bindings::folio,
    order: c_uint,
) -> c_int {
    // SAFETY: Forwarded from this function's safety requirements.
    let answer = match unsafe { rmap(folio, order) } {
        Some(r) => r.sole_mapper(),
        None => Sharing::Shared,
    };
    answer as c_int
}

/// May the write fault of the mm reuse a page of this anon folio? False
/// for untracked folios.
///
/// # Safety
///
/// `folio` is a live large anon folio of `order` mapped by the faulting
/// page table entry, whose lock the caller holds; `subids` is NULL or the
/// faulting mm's `mm_rmap_subids`.
#[no_mangle]
// See `LTO_INLINE` above.
#[allow(unused_attributes)]
#[inline(always)]
pub unsafe extern "C" fn rust_folio_rmap_may_reuse(
    folio: *mut bindings::folio,
    order: c_uint,
    id: u32,
    subids: *const bindings::rmap_subids,
) -> bool {
    // SAFETY: Forwarded from this function's safety requirements.
    let (Some(r), Some(mm)) = (unsafe { rmap(folio, order) }, unsafe { mm_ids(id, subids) }) else {
        return false;
    };
    // SAFETY: `_refcount` is in page[0] and `_entire_mapcount` in page[1] of
    // every large folio, both `atomic_t`; the folio is live (see above).
    let counts = unsafe {
        ReuseCounts {
            refcount: word(folio, REFCOUNT_OFFSET),
            entire_mapcount: word(folio, ENTIRE_OFFSET),
        }
    };
    r.may_reuse(&mm, &counts)
}

/// The PTEs `[start, end)` a write fault that reused page `idx` of a folio
/// of `nr` pages at `addr`, in the vma `[vma_start, vma_end)`, may make
/// writable in the same fault, once [`rust_folio_rmap_may_reuse`] said yes
/// ([`reuse_window`]: the folio's linear span clipped to the vma and the
/// faulting PTE's page table). Empty for bad input.
#[no_mangle]
// See `LTO_INLINE` above.
#[allow(unused_attributes)]
#[inline(always)]
pub extern "C" fn rust_folio_rmap_reuse_window(
    addr: c_ulong,
    idx: c_ulong,
    nr: c_ulong,
    vma_start: c_ulong,
    vma_end: c_ulong,
    page_shift: c_uint,
    table_shift: c_uint,
) -> bindings::folio_reuse_window {
    // `c_ulong` is `usize`: 64 bits wherever CONFIG_MM_RMAP_ID builds
    // (it depends on 64BIT, checked below), so the casts are lossless.
    let w = reuse_window(
        addr as u64,
        idx as u64,
        nr as u64,
        vma_start as u64,
        vma_end as u64,
        page_shift,
        table_shift,
    );
    bindings::folio_reuse_window {
        start: w.start as c_ulong,
        end: w.end as c_ulong,
    }
}

// `c_ulong` holds a `u64` (the reuse window's casts).
const _: () = assert!(core::mem::size_of::<c_ulong>() == core::mem::size_of::<u64>());

/// A consistent snapshot of a tracked folio: its mapcount in `*mapcount`
/// and its first `nr` rmap values in `values` (0 past the class's count).
/// Returns the class's value count, -EAGAIN if writers kept changing the
/// folio, -EINVAL for an untracked folio or bad arguments.
///
/// # Safety
///
/// `folio` as for [`rust_folio_rmap_sharing`]; `mapcount` is valid for a
/// write and `values` for `nr` writes.
#[no_mangle]
pub unsafe extern "C" fn rust_folio_rmap_snapshot(
    folio: *mut bindings::folio,
    order: c_uint,
    mapcount: *mut c_long,
    values: *mut u64,
    nr: usize,
) -> c_int {
    // SAFETY: Forwarded from this function's safety requirements.
    let Some(r) = (unsafe { rmap(folio, order) }) else {
        return EINVAL.to_errno();
    };
    if mapcount.is_null() || values.is_null() {
        return EINVAL.to_errno();
    }
    let snap = (0..READ_TRIES).find_map(|_| r.snapshot());
    let Some(snap) = snap else {
        return EAGAIN.to_errno();
    };
    // SAFETY: The caller guarantees `values` is valid for `nr` writes and
    // `mapcount` for one.
    let out = unsafe { core::slice::from_raw_parts_mut(values, nr) };
    for (k, o) in out.iter_mut().enumerate() {
        *o = snap.values.get(k).copied().unwrap_or(0);
    }
    // SAFETY: See above.
    unsafe { mapcount.write(snap.mapcount as c_long) };
    // At most MAX_VALUES (6): the cast cannot truncate.
    subid::class_for_order(order).map_or(0, |c| c.values.min(MAX_VALUES)) as c_int
}

// Every export has the type of its C declaration (bindgen reads
// linux/folio_rmap.h): a header and an export that disagree fail the build.
const _: () = {
    type Folio = *mut bindings::folio;
    type SubIds = *const bindings::rmap_subids;
    type Update = unsafe extern "C" fn(Folio, c_uint, SubIds, c_int);
    type Add = unsafe extern "C" fn(Folio, c_uint, SubIds, c_int) -> c_int;
    type Reader<T> = unsafe extern "C" fn(Folio, c_uint, u32, SubIds) -> T;
    type Window = unsafe extern "C" fn(
        c_ulong,
        c_ulong,
        c_ulong,
        c_ulong,
        c_ulong,
        c_uint,
        c_uint,
    ) -> bindings::folio_reuse_window;
    type Snapshot = unsafe extern "C" fn(Folio, c_uint, *mut c_long, *mut u64, usize) -> c_int;
    let _: [unsafe extern "C" fn(Folio, c_uint); 2] =
        [bindings::rust_folio_rmap_reset, rust_folio_rmap_reset];
    let _: [Add; 2] = [bindings::rust_folio_rmap_add, rust_folio_rmap_add];
    let _: [Update; 2] = [bindings::rust_folio_rmap_set_new, rust_folio_rmap_set_new];
    let _: [Reader<c_int>; 2] = [bindings::rust_folio_rmap_sharing, rust_folio_rmap_sharing];
    let _: [unsafe extern "C" fn(Folio, c_uint) -> c_int; 2] = [
        bindings::rust_folio_rmap_sole_mapper,
        rust_folio_rmap_sole_mapper,
    ];
    let _: [Reader<bool>; 2] = [
        bindings::rust_folio_rmap_may_reuse,
        rust_folio_rmap_may_reuse,
    ];
    let _: [Window; 2] = [
        bindings::rust_folio_rmap_reuse_window,
        rust_folio_rmap_reuse_window,
    ];
    let _: [Snapshot; 2] = [bindings::rust_folio_rmap_snapshot, rust_folio_rmap_snapshot];
};

/// The core's folio rmap state on the kernel's atomics (`Atomic<u64>`,
/// `Atomic<i32>`: `crate::atomic` implements the core's atomic traits for
/// them), in the kernel: one mm's mapping told from two, and the reuse
/// test, in every build, whichever atomics the edges above use.
#[cfg(CONFIG_MM_RMAP_ID_KUNIT_TEST)]
#[kernel::macros::kunit_tests(rust_folio_rmap)]
mod tests {
    use crate::logic::atomic_seqcount::{AtomicSeqcount, NoPreempt};
    use crate::logic::folio_rmap::{FolioRmap, FolioWords, MmIds, ReuseCounts, Sharing};
    use crate::logic::rmap_id::subid::{SubIds, MAX_VALUES};
    use crate::logic::sync::{Atomic32, Atomic64};
    use kernel::sync::atomic::Atomic;

    // The kernel's atomics, whichever the edges use in this build.
    type U64 = Atomic<u64>;
    type I32 = Atomic<i32>;
    type Seqcount = AtomicSeqcount<U64>;

    struct Words {
        seq: Seqcount,
        mapcount: I32,
        values: [U64; MAX_VALUES],
    }

    impl FolioWords for Words {
        type U64 = U64;
        type I32 = I32;

        fn seqcount(&self) -> &Seqcount {
            &self.seq
        }
        fn mapcount(&self) -> &I32 {
            &self.mapcount
        }
        fn value(&self, k: usize) -> &U64 {
            &self.values[k]
        }
    }

    #[test]
    fn folio_rmap_on_kernel_atomics_tells_one_mm_from_two() {
        let words = Words {
            seq: Seqcount::default(),
            mapcount: I32::with_value(-1),
            values: core::array::from_fn(|_| U64::with_value(0)),
        };
        let (folio, parent, child) = (FolioRmap::new(9, words), SubIds::new(1), SubIds::new(2));
        // Order 9 is tracked, and IDs 1 and 2 have sub-IDs.
        assert!(folio.is_some() && parent.is_ok() && child.is_ok());
        let (Some(folio), Ok(parent), Ok(child)) = (folio, parent, child) else {
            return;
        };
        let (parent, child) = (MmIds::of(&parent), MmIds::of(&child));
        folio.reset();
        assert_eq!(folio.add::<NoPreempt>(&parent, 512), 512);
        assert_eq!(folio.sharing(&parent), Sharing::Exclusive);
        assert_eq!(folio.sole_mapper(), Sharing::Exclusive);
        let (refcount, entire) = (I32::with_value(512), I32::with_value(-1));
        let counts = ReuseCounts {
            refcount: &refcount,
            entire_mapcount: &entire,
        };
        assert!(folio.may_reuse(&parent, &counts));
        assert!(!folio.may_reuse(&child, &counts));
        // After fork both map every page: shared for both, no reuse.
        assert_eq!(folio.add::<NoPreempt>(&child, 512), 1024);
        assert_eq!(folio.sharing(&parent), Sharing::Shared);
        assert_eq!(folio.sole_mapper(), Sharing::Shared);
        // The child unmaps: the parent's alone again, unless pinned.
        assert_eq!(folio.add::<NoPreempt>(&child, -512), 512);
        assert_eq!(folio.sharing(&parent), Sharing::Exclusive);
        assert!(folio.may_reuse(&parent, &counts));
        refcount.store_relaxed(513);
        assert!(!folio.may_reuse(&parent, &counts));
    }
}
