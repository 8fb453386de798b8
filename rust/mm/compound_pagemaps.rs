// SPDX-License-Identifier: GPL-2.0

//! C header: [`include/linux/compound_pagemaps.h`](srctree/include/linux/compound_pagemaps.h)
//!
//! The C API of the vmemmap plan of ZONE_DEVICE compound pages, called by
//! `mm/sparse-vmemmap.c` when it populates and accounts a device range's
//! memmap and by `mm/mm_init.c` when it initialises its compound pages.
//!
//! C owns the page tables, the allocations and the struct pages; the
//! decisions are [`crate::logic::compound_pagemaps`]'s. The only `unsafe`
//! here reads C's small input structs and writes the plan. The header's
//! enum and every export's type are checked at compile time.

use kernel::bindings;
use kernel::error::code::EINVAL;
use kernel::ffi::{c_int, c_ulong};

use crate::logic::compound_pagemaps::{self, Chunk, Geometry, Pgmap, Populate};

const _: () = {
    assert!(bindings::vmemmap_populate_kind_VMEMMAP_POPULATE_PLAIN == 0);
    assert!(bindings::vmemmap_populate_kind_VMEMMAP_POPULATE_REUSE_PREVIOUS == 1);
    assert!(bindings::vmemmap_populate_kind_VMEMMAP_POPULATE_COMPOUNDS == 2);
    // pfns and vmemmap page counts are C's unsigned long: 64 bits
    // wherever this builds (the option depends on X86_64).
    assert!(core::mem::size_of::<c_ulong>() == core::mem::size_of::<u64>());
};

// Every export has the type of its C declaration (bindgen reads
// linux/compound_pagemaps.h): a header and an export that disagree fail
// the build.
const _: () = {
    type Geo = *const bindings::vmemmap_geometry;
    type Map = *const bindings::vmemmap_pgmap;
    type Ch = *const bindings::vmemmap_chunk;
    type Plan = *mut bindings::vmemmap_plan;
    type Tot = *mut bindings::vmemmap_totals;
    let _: [unsafe extern "C" fn(Geo, Map, Ch, Plan) -> c_int; 2] = [
        bindings::rust_compound_pagemaps_plan,
        rust_compound_pagemaps_plan,
    ];
    let _: [unsafe extern "C" fn(Geo, Map, c_ulong, c_ulong) -> c_ulong; 2] = [
        bindings::rust_compound_pagemaps_accounted,
        rust_compound_pagemaps_accounted,
    ];
    let _: [unsafe extern "C" fn(Geo, Map, bool) -> c_ulong; 2] = [
        bindings::rust_compound_pagemaps_init_pages,
        rust_compound_pagemaps_init_pages,
    ];
    let _: [unsafe extern "C" fn(Geo, Map) -> bool; 2] = [
        bindings::rust_compound_pagemaps_can_optimize,
        rust_compound_pagemaps_can_optimize,
    ];
    let _: [unsafe extern "C" fn(Geo, Map, c_ulong, c_ulong, Tot) -> c_int; 2] = [
        bindings::rust_compound_pagemaps_plan_range,
        rust_compound_pagemaps_plan_range,
    ];
    let _: [unsafe extern "C" fn(Geo, Map, c_ulong, c_ulong) -> c_int; 2] = [
        bindings::rust_compound_pagemaps_accept_range,
        rust_compound_pagemaps_accept_range,
    ];
};

/// A C `unsigned long` as the core's `u64` (the same width: checked above).
fn to_u64(x: c_ulong) -> u64 {
    x as u64
}

/// The core's `u64` as a C `unsigned long` (the same width: checked above).
fn to_ulong(x: u64) -> c_ulong {
    x as c_ulong
}

/// The geometry and pgmap C describes, or `None` for a NULL pointer.
///
/// # Safety
///
/// `geo` and `pgmap` are NULL or point to initialised structs that
/// nothing writes during the call.
unsafe fn read_inputs(
    geo: *const bindings::vmemmap_geometry,
    pgmap: *const bindings::vmemmap_pgmap,
) -> Option<(Geometry, Pgmap)> {
    // SAFETY: By the function's safety requirements both are NULL or
    // valid for reads.
    let (g, p) = unsafe { (geo.as_ref()?, pgmap.as_ref()?) };
    Some((
        Geometry {
            page_shift: g.page_shift,
            struct_page_size: u64::from(g.struct_page_size),
            section_shift: g.section_shift,
            subsection_shift: g.subsection_shift,
        },
        Pgmap {
            order: p.order,
            altmap: p.altmap,
        },
    ))
}

/// Plan the population of one chunk's vmemmap ([`compound_pagemaps::populate`])
/// into `*plan`: 0, or `-EINVAL` for a NULL pointer or a chunk, order or
/// geometry the plan refuses (`*plan` is then untouched).
///
/// # Safety
///
/// `geo`, `pgmap` and `chunk` are NULL or point to initialised structs
/// nothing writes during the call; `plan` is NULL or points to a
/// `struct vmemmap_plan` the caller owns.
#[no_mangle]
pub unsafe extern "C" fn rust_compound_pagemaps_plan(
    geo: *const bindings::vmemmap_geometry,
    pgmap: *const bindings::vmemmap_pgmap,
    chunk: *const bindings::vmemmap_chunk,
    plan: *mut bindings::vmemmap_plan,
) -> c_int {
    // SAFETY: Forwarded from this function's safety requirements.
    let Some((g, p)) = (unsafe { read_inputs(geo, pgmap) }) else {
        return EINVAL.to_errno();
    };
    // SAFETY: By the function's safety requirements `chunk` is NULL or
    // valid for reads and `plan` NULL or valid for writes, and nothing
    // else accesses `*plan` during the call.
    let (Some(c), Some(out)) = (unsafe { chunk.as_ref() }, unsafe { plan.as_mut() }) else {
        return EINVAL.to_errno();
    };
    let chunk = Chunk {
        range_start: to_u64(c.range_start),
        range_end: to_u64(c.range_end),
        pfn: to_u64(c.pfn),
        nr: to_u64(c.nr),
    };
    let Ok(decided) = compound_pagemaps::populate(&g, &p, &chunk) else {
        return EINVAL.to_errno();
    };
    *out = match decided {
        Populate::Plain => bindings::vmemmap_plan {
            kind: bindings::vmemmap_populate_kind_VMEMMAP_POPULATE_PLAIN,
            lead: 0,
            step: 0,
            fresh: 0,
        },
        Populate::ReusePrevious => bindings::vmemmap_plan {
            kind: bindings::vmemmap_populate_kind_VMEMMAP_POPULATE_REUSE_PREVIOUS,
            lead: 0,
            step: 0,
            fresh: 0,
        },
        Populate::Compounds { lead, step, fresh } => bindings::vmemmap_plan {
            kind: bindings::vmemmap_populate_kind_VMEMMAP_POPULATE_COMPOUNDS,
            lead: to_ulong(lead),
            step: to_ulong(step),
            fresh: to_ulong(fresh),
        },
    };
    0
}

/// Vmemmap pages `nr_memmap_pages` counts for `nr` pfns from `pfn`
/// ([`compound_pagemaps::accounted`]); 0 for a NULL pointer.
///
/// # Safety
///
/// `geo` and `pgmap` are NULL or point to initialised structs nothing
/// writes during the call.
#[no_mangle]
pub unsafe extern "C" fn rust_compound_pagemaps_accounted(
    geo: *const bindings::vmemmap_geometry,
    pgmap: *const bindings::vmemmap_pgmap,
    pfn: c_ulong,
    nr: c_ulong,
) -> c_ulong {
    // SAFETY: Forwarded from this function's safety requirements.
    match unsafe { read_inputs(geo, pgmap) } {
        Some((g, p)) => to_ulong(compound_pagemaps::accounted(
            &g,
            &p,
            to_u64(pfn),
            to_u64(nr),
        )),
        None => 0,
    }
}

/// Struct pages to initialise per compound
/// ([`compound_pagemaps::struct_pages_to_init`]); 1 for a NULL pointer.
///
/// # Safety
///
/// `geo` and `pgmap` are NULL or point to initialised structs nothing
/// writes during the call.
#[no_mangle]
pub unsafe extern "C" fn rust_compound_pagemaps_init_pages(
    geo: *const bindings::vmemmap_geometry,
    pgmap: *const bindings::vmemmap_pgmap,
    early: bool,
) -> c_ulong {
    // SAFETY: Forwarded from this function's safety requirements.
    match unsafe { read_inputs(geo, pgmap) } {
        Some((g, p)) => to_ulong(compound_pagemaps::struct_pages_to_init(&g, &p, early)),
        None => 1,
    }
}

/// Whether a pgmap's compounds share vmemmap pages
/// ([`compound_pagemaps::can_optimize`]); false for a NULL pointer.
///
/// # Safety
///
/// `geo` and `pgmap` are NULL or point to initialised structs nothing
/// writes during the call.
#[no_mangle]
pub unsafe extern "C" fn rust_compound_pagemaps_can_optimize(
    geo: *const bindings::vmemmap_geometry,
    pgmap: *const bindings::vmemmap_pgmap,
) -> bool {
    // SAFETY: Forwarded from this function's safety requirements.
    match unsafe { read_inputs(geo, pgmap) } {
        Some((g, p)) => compound_pagemaps::can_optimize(&g, &p),
        None => false,
    }
}

/// The totals of a whole range of `nr` pfns from `start` with no boot
/// memory in its sections ([`compound_pagemaps::plan_range`]) into
/// `*totals`: 0, or `-EINVAL` (`*totals` untouched).
///
/// # Safety
///
/// `geo` and `pgmap` are NULL or point to initialised structs nothing
/// writes during the call; `totals` is NULL or points to a
/// `struct vmemmap_totals` the caller owns.
#[no_mangle]
pub unsafe extern "C" fn rust_compound_pagemaps_plan_range(
    geo: *const bindings::vmemmap_geometry,
    pgmap: *const bindings::vmemmap_pgmap,
    start: c_ulong,
    nr: c_ulong,
    totals: *mut bindings::vmemmap_totals,
) -> c_int {
    // SAFETY: Forwarded from this function's safety requirements.
    let Some((g, p)) = (unsafe { read_inputs(geo, pgmap) }) else {
        return EINVAL.to_errno();
    };
    // SAFETY: By the function's safety requirements `totals` is NULL or
    // valid for writes, and nothing else accesses it during the call.
    let Some(out) = (unsafe { totals.as_mut() }) else {
        return EINVAL.to_errno();
    };
    let Ok(t) = compound_pagemaps::plan_range(&g, &p, to_u64(start), to_u64(nr), |_| false) else {
        return EINVAL.to_errno();
    };
    *out = bindings::vmemmap_totals {
        fresh: to_ulong(t.fresh),
        reused: to_ulong(t.reused),
        accounted: to_ulong(t.accounted),
        plain: to_ulong(t.plain),
        init: to_ulong(t.init),
    };
    0
}

/// Whether a kernel that needs naturally aligned compound heads can map
/// the pgmap range of `nr` pfns from `start`
/// ([`compound_pagemaps::accept_range`]): 0, or `-EINVAL` for a range that
/// does not start and end on compound boundaries, an empty or wrapping
/// one, a geometry or order the plan refuses, or a NULL pointer.
///
/// # Safety
///
/// `geo` and `pgmap` are NULL or point to initialised structs nothing
/// writes during the call.
#[no_mangle]
pub unsafe extern "C" fn rust_compound_pagemaps_accept_range(
    geo: *const bindings::vmemmap_geometry,
    pgmap: *const bindings::vmemmap_pgmap,
    start: c_ulong,
    nr: c_ulong,
) -> c_int {
    // SAFETY: Forwarded from this function's safety requirements.
    let Some((g, p)) = (unsafe { read_inputs(geo, pgmap) }) else {
        return EINVAL.to_errno();
    };
    match compound_pagemaps::accept_range(&g, &p, to_u64(start), to_u64(nr)) {
        Ok(()) => 0,
        Err(_) => EINVAL.to_errno(),
    }
}
