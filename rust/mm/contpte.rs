// SPDX-License-Identifier: GPL-2.0

//! C header: [`arch/arm64/include/asm/contpte.h`](srctree/arch/arm64/include/asm/contpte.h)
//!
//! The C API of the contpte decisions, called by `arch/arm64/mm/contpte.c`.
//!
//! Rust reads a block where it lies: C passes the address of the block's
//! first entry and `live_entries()` reads each entry once, in order, with a
//! relaxed atomic load, which is what `__ptep_get()`'s `READ_ONCE()` is on
//! arm64 (one single-copy-atomic `ldr`), as the decision asks for it
//! ([`contpte::Block`]); a decision that stops early (7.3's gathers) reads
//! no further. Copying the block into an array first cost fork
//! 4 % in instructions (`contpte_ptep_get()` runs once per block in every
//! PTE batch). Every PTE write stays in C; the one array C passes is the
//! values its break-before-make cleared ([`rust_contpte_convert`]). The
//! decisions are [`crate::logic::contpte`]. The only `unsafe` is the view
//! of a block. The PTE layout is the kernel's, checked at compile time
//! against the core's below: a granule or a bit the core does not describe
//! fails the build.

use kernel::bindings;

use crate::logic::contpte::{self, bits, AccessPlan, Layout, PaLayout, Pte, MAX_CONT_PTES};
use core::sync::atomic::{AtomicU64, Ordering};

#[cfg(not(CONFIG_ARM64_PA_BITS_52))]
const PA: PaLayout = PaLayout::Pa48;
#[cfg(CONFIG_ARM64_PA_BITS_52)]
const PA: PaLayout = PaLayout::Pa52K64;

/// The kernel's layout (`CONFIG_ARM64_LPA2`, whose address layout depends
/// on TCR.DS at run time, is excluded in Kconfig).
const LAYOUT: Layout = Layout {
    page_shift: bindings::CONTPTE_PAGE_SHIFT,
    cont_shift: bindings::CONTPTE_CONT_PTE_SHIFT - bindings::CONTPTE_PAGE_SHIFT,
    pa: PA,
};
/// `CONT_PTES`.
const N: usize = LAYOUT.n();

const _: () = {
    // C's unsigned long is usize here; the `as` conversions between it and
    // the core's u64 are lossless.
    assert!(usize::BITS == u64::BITS);
    assert!(LAYOUT.check());
    assert!(N == bindings::CONTPTE_CONT_PTES as usize);
    assert!(N <= MAX_CONT_PTES);
    assert!(LAYOUT.page_size() == bindings::PAGE_SIZE as u64);
    assert!(bindings::CONTPTE_PTE_VALID == bits::VALID);
    assert!(bindings::CONTPTE_PTE_TYPE_PAGE == bits::TYPE_PAGE);
    assert!(bindings::CONTPTE_PTE_USER == bits::USER);
    assert!(bindings::CONTPTE_PTE_RDONLY == bits::RDONLY);
    assert!(bindings::CONTPTE_PTE_SHARED == bits::SHARED);
    assert!(bindings::CONTPTE_PTE_AF == bits::AF);
    assert!(bindings::CONTPTE_PTE_NG == bits::NG);
    assert!(bindings::CONTPTE_PTE_WRITE == bits::WRITE);
    assert!(bindings::CONTPTE_PTE_CONT == bits::CONT);
    assert!(bindings::CONTPTE_PTE_PXN == bits::PXN);
    assert!(bindings::CONTPTE_PTE_UXN == bits::UXN);
    assert!(bindings::CONTPTE_PTE_DIRTY == bits::DIRTY);
    assert!(bindings::CONTPTE_PTE_SPECIAL == bits::SPECIAL);
    assert!(
        bindings::CONTPTE_PTE_ADDR_LOW
            == ((1u64 << (50 - LAYOUT.page_shift)) - 1) << LAYOUT.page_shift
    );
    assert!(bindings::contpte_access_plan_CONTPTE_ACCESS_NOOP == AccessPlan::NoOp as u32);
    assert!(bindings::contpte_access_plan_CONTPTE_ACCESS_BLOCK == AccessPlan::WholeBlock as u32);
    assert!(bindings::contpte_access_plan_CONTPTE_ACCESS_UNFOLD == AccessPlan::UnfoldTarget as u32);
};

// Every export has the type of its C declaration (bindgen reads
// asm/contpte.h): a header and an export that disagree fail the build.
const _: () = {
    type TryFold = unsafe extern "C" fn(bool, usize, u64, usize, usize, *const u64) -> bool;
    type Convert = unsafe extern "C" fn(u64, *const u64) -> u64;
    type Lockless = unsafe extern "C" fn(u64, u32, *const u64, *mut u64) -> bool;
    type Runs = unsafe extern "C" fn(usize, u32, usize) -> bindings::contpte_runs;
    type Ends = unsafe extern "C" fn(usize, u32) -> u32;
    type Span = unsafe extern "C" fn(usize, usize, u32, bool, bool) -> bindings::contpte_span;
    type Plan = unsafe extern "C" fn(*const u64, u64, u64) -> u32;
    let _: [TryFold; 2] = [bindings::rust_contpte_try_fold, rust_contpte_try_fold];
    type Gather = unsafe extern "C" fn(*const u64, u64) -> u64;
    let _: [Convert; 2] = [bindings::rust_contpte_convert, rust_contpte_convert];
    let _: [Gather; 2] = [bindings::rust_contpte_gather, rust_contpte_gather];
    let _: [Lockless; 2] = [
        bindings::rust_contpte_gather_lockless,
        rust_contpte_gather_lockless,
    ];
    let _: [Runs; 2] = [
        bindings::rust_contpte_set_ptes_runs,
        rust_contpte_set_ptes_runs,
    ];
    let _: [Ends; 2] = [
        bindings::rust_contpte_partial_ends,
        rust_contpte_partial_ends,
    ];
    let _: [Span; 2] = [
        bindings::rust_contpte_align_addr_ptep,
        rust_contpte_align_addr_ptep,
    ];
    let _: [Plan; 2] = [bindings::rust_contpte_access_plan, rust_contpte_access_plan];
};

/// The block C read, as a slice.
///
/// # Safety
///
/// `block` points to `CONT_PTES` initialised values that stay valid and
/// unmodified for `'a`.
unsafe fn block<'a>(block: *const u64) -> &'a [u64] {
    // SAFETY: By the function's safety requirements.
    unsafe { core::slice::from_raw_parts(block, N) }
}

/// The entries of a block of a live page table, each read once, in order,
/// with a relaxed [`AtomicU64::load`]: one single-copy-atomic `ldr`, what
/// `__ptep_get()`'s `READ_ONCE()` is on arm64.
///
/// `core`'s atomics, not `kernel::sync::atomic`'s: a load of the kernel's
/// `Atomic<u64>` is a call of its C helper unless
/// `CONFIG_RUST_INLINE_HELPERS`, up to `CONT_PTES` calls per
/// `contpte_ptep_get()`, where C reads with one `ldr` each (a copy of the
/// block cost 6.12's fork 4 %). Both are single-copy-atomic relaxed loads.
///
/// # Safety
///
/// `block` points to `CONT_PTES` aligned 64-bit entries that stay mapped
/// for `'a` and that others change only with single-copy-atomic accesses
/// (`WRITE_ONCE()`, xchg/cmpxchg, the hardware's access and dirty updates).
unsafe fn live_entries<'a>(block: *const u64) -> impl Iterator<Item = u64> + 'a {
    // SAFETY: `AtomicU64` has the size, alignment (8 on arm64) and bit
    // validity of `u64`; the `N` entries are aligned, valid for `'a` and
    // accessed by others only atomically, so viewing them as atomics races
    // with no plain access (the function's safety requirements).
    let live: &'a [AtomicU64] =
        unsafe { core::slice::from_raw_parts(block.cast::<AtomicU64>(), N) };
    live.iter().map(|e| e.load(LIVE_LOAD))
}

/// The ordering of a live entry's load: `READ_ONCE()`'s. With
/// `CONFIG_LTO` arm64 makes `READ_ONCE()` an acquire load (`ldapr`, or
/// `ldar`; `asm/rwonce.h`) so that the link-time optimiser cannot turn an
/// address dependency on the value into a control dependency;
/// `contpte_ptep_get_lockless()`'s value is one gup-fast follows to the
/// folio. Rust's acquire load is `ldar`.
#[cfg(CONFIG_LTO)]
const LIVE_LOAD: Ordering = Ordering::Acquire;
/// The ordering of a live entry's load: `READ_ONCE()`'s, a plain load
/// without `CONFIG_LTO`.
#[cfg(not(CONFIG_LTO))]
const LIVE_LOAD: Ordering = Ordering::Relaxed;

/// `__contpte_try_fold()`'s decision: whether to fold `addr`'s block with
/// `pte_mkcont(pte)`. The live block at `blk` is read only if the mm and
/// the folio qualify, as contpte.c reads it.
///
/// # Safety
///
/// `blk` points to `CONT_PTES` aligned 64-bit entries, the block of a page
/// table C holds the PTL of, that others change only with single-copy-atomic
/// accesses.
#[no_mangle]
// See `LTO_INLINE` in folio_rmap.rs.
#[allow(unused_attributes)]
#[inline(always)]
pub unsafe extern "C" fn rust_contpte_try_fold(
    mm_is_user: bool,
    addr: usize,
    pte: u64,
    page_idx: usize,
    folio_nr: usize,
    blk: *const u64,
) -> bool {
    // SAFETY: Forwarded from this function's safety requirements.
    let entries = unsafe { live_entries(blk) };
    LAYOUT
        .try_fold(
            mm_is_user,
            addr as u64,
            Pte(pte),
            page_idx as u64,
            folio_nr as u64,
            entries,
        )
        .is_some()
}

/// `contpte_convert()`'s first entry to write, from the value to convert
/// to and the entries the break cleared.
///
/// # Safety
///
/// `cleared` points to `CONT_PTES` values.
#[no_mangle]
// See `LTO_INLINE` in folio_rmap.rs.
#[allow(unused_attributes)]
#[inline(always)]
pub unsafe extern "C" fn rust_contpte_convert(pte: u64, cleared: *const u64) -> u64 {
    // SAFETY: Forwarded from this function's safety requirements.
    LAYOUT.convert(Pte(pte), unsafe { block(cleared) }).0
}

/// `contpte_ptep_get()`: `orig` with the access and dirty state of the
/// live block at `blk` (each entry read once).
///
/// # Safety
///
/// `blk` points to `CONT_PTES` aligned 64-bit entries, the block of a page
/// table C holds the PTL of, that others change only with single-copy-atomic
/// accesses.
#[no_mangle]
// See `LTO_INLINE` in folio_rmap.rs.
#[allow(unused_attributes)]
#[inline(always)]
pub unsafe extern "C" fn rust_contpte_gather(blk: *const u64, orig: u64) -> u64 {
    // SAFETY: Forwarded from this function's safety requirements.
    contpte::gather(Pte(orig), unsafe { live_entries(blk) }).0
}

/// `contpte_ptep_get_lockless()`'s check of the live block at `blk`, each
/// entry read once with a relaxed atomic load: true with the value in
/// `*out`, or false if C must read again.
///
/// # Safety
///
/// `blk` points to `CONT_PTES` aligned 64-bit entries (a block of a page
/// table that stays mapped for the call: C runs under RCU or with IRQs
/// off, as `ptep_get_lockless()` callers do) that others change only with
/// single-copy-atomic accesses; `out` is valid for a write.
#[no_mangle]
// See `LTO_INLINE` in folio_rmap.rs.
#[allow(unused_attributes)]
#[inline(always)]
pub unsafe extern "C" fn rust_contpte_gather_lockless(
    orig: u64,
    idx: u32,
    blk: *const u64,
    out: *mut u64,
) -> bool {
    // SAFETY: Forwarded from this function's safety requirements.
    let entries = unsafe { live_entries(blk) };
    match LAYOUT.gather_lockless(Pte(orig), idx as usize, entries) {
        Some(p) => {
            // SAFETY: `out` is valid for a write (safety requirements).
            unsafe { out.write(p.0) };
            true
        }
        None => false,
    }
}

/// `contpte_set_ptes()`'s plan for `nr` entries from `addr` mapping PFNs
/// from `pfn` on: the runs C writes.
#[no_mangle]
// See `LTO_INLINE` in folio_rmap.rs.
#[allow(unused_attributes)]
#[inline(always)]
pub extern "C" fn rust_contpte_set_ptes_runs(
    addr: usize,
    nr: u32,
    pfn: usize,
) -> bindings::contpte_runs {
    let r = LAYOUT.set_ptes_runs(addr as u64, nr, pfn as u64);
    bindings::contpte_runs {
        head: r.head,
        blocks: r.blocks,
        tail: r.tail,
        cont: r.cont,
    }
}

/// `contpte_try_unfold_partial()`'s ends: `CONTPTE_PARTIAL_FIRST` and/or
/// `CONTPTE_PARTIAL_LAST`.
#[no_mangle]
// See `LTO_INLINE` in folio_rmap.rs.
#[allow(unused_attributes)]
#[inline(always)]
pub extern "C" fn rust_contpte_partial_ends(ptep_idx: usize, nr: u32) -> u32 {
    let e = LAYOUT.partial_ends(ptep_idx as u64, nr);
    let mut r = 0;
    if e.first {
        r |= bindings::CONTPTE_PARTIAL_FIRST;
    }
    if e.last {
        r |= bindings::CONTPTE_PARTIAL_LAST;
    }
    r
}

/// `contpte_align_addr_ptep()`'s range (clear young/dirty, test and
/// clear young, clear and flush young).
#[no_mangle]
// See `LTO_INLINE` in folio_rmap.rs.
#[allow(unused_attributes)]
#[inline(always)]
pub extern "C" fn rust_contpte_align_addr_ptep(
    addr: usize,
    ptep_idx: usize,
    nr: u32,
    first_cont: bool,
    last_cont: bool,
) -> bindings::contpte_span {
    let s = LAYOUT.align_addr_ptep(addr as u64, ptep_idx as u64, nr, first_cont, last_cont);
    bindings::contpte_span {
        start: s.start as usize,
        back: s.back as usize,
        nr: s.nr,
    }
}

/// `contpte_ptep_set_access_flags()`'s plan (`enum contpte_access_plan`),
/// from the raw entries of the live block at `blk`.
///
/// # Safety
///
/// `blk` points to `CONT_PTES` aligned 64-bit entries, the block of a page
/// table C holds the PTL of, that others change only with single-copy-atomic
/// accesses.
#[no_mangle]
// See `LTO_INLINE` in folio_rmap.rs.
#[allow(unused_attributes)]
#[inline(always)]
pub unsafe extern "C" fn rust_contpte_access_plan(blk: *const u64, target: u64, entry: u64) -> u32 {
    // SAFETY: Forwarded from this function's safety requirements.
    let entries = unsafe { live_entries(blk) };
    contpte::access_flags_plan(entries, Pte(target), Pte(entry)) as u32
}

/// The structured random vectors of the differential KUnit suite.
#[cfg(CONFIG_ARM64_CONTPTE_RUST_KUNIT_TEST)]
pub mod test_vectors {
    use super::*;
    use crate::logic::contpte_vectors::{digest, BlockGen};

    // The exports have the types of their C declarations.
    const _: () = {
        type Digest = unsafe extern "C" fn() -> u64;
        type Case = unsafe extern "C" fn(*mut u64, *mut u64, *mut bindings::contpte_test_case);
        let _: [Digest; 2] = [bindings::rust_contpte_test_digest, rust_contpte_test_digest];
        let _: [Case; 2] = [bindings::rust_contpte_test_case, rust_contpte_test_case];
    };

    /// The digest of the first vectors on this kernel's layout (the host
    /// tests pin the same number).
    #[no_mangle]
    pub extern "C" fn rust_contpte_test_digest() -> u64 {
        digest(&LAYOUT)
    }

    /// The next case of the generator whose state is `*state`: fills the
    /// `CONT_PTES` entries at `blk` and `*case`.
    ///
    /// # Safety
    ///
    /// `state` and `case` are valid for reads and writes, `blk` for writes
    /// of `CONT_PTES` values, and nothing else accesses them meanwhile.
    #[no_mangle]
    pub unsafe extern "C" fn rust_contpte_test_case(
        state: *mut u64,
        blk: *mut u64,
        case: *mut bindings::contpte_test_case,
    ) {
        // SAFETY: By the function's safety requirements.
        let (state, blk, out) = unsafe {
            (
                &mut *state,
                core::slice::from_raw_parts_mut(blk, N),
                &mut *case,
            )
        };
        let mut g = BlockGen::new(*state);
        let c = g.case(&LAYOUT, blk);
        *state = g.state();
        *out = bindings::contpte_test_case {
            pte: c.pte.0,
            idx: c.idx as u32,
            addr: c.addr as usize,
            page_idx: c.page_idx as usize,
            folio_nr: c.folio_nr as usize,
            entry: c.entry.0,
            mm_is_user: c.mm_is_user,
        };
    }
}
