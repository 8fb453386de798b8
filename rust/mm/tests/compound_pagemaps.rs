// SPDX-License-Identifier: GPL-2.0

//! Host tests of the vmemmap plan of ZONE_DEVICE compound pages
//! (`core/compound_pagemaps.rs`). The plan must map every vmemmap slot as
//! 6.12's `vmemmap_populate_compound_pages()` does (a port of it, slot by
//! slot, is the reference here), and what it maps must be right: a struct
//! page that shares its vmemmap page with another pfn's is a tail of the
//! same compound, at the same place, in the part
//! `memmap_init_zone_device()` writes; heads and every struct page a folio
//! keeps fields in are never shared. Checked on x86_64's geometry against
//! the seed's arithmetic (2M: 6 of 8 vmemmap pages saved, 1G: 4094 of
//! 4096; 16G / 4G / 8M per TiB), exhaustively over small geometries, and
//! with garbage that must be refused, never panic.

#![cfg(not(loom))]

mod rng;

use std::collections::BTreeMap;

use rng::XorShift;
use rust_mm_core::compound_pagemaps::{
    accept_range, accounted, can_optimize, plan_range, populate, struct_pages_to_init, Chunk,
    Geometry, Pgmap, Populate, Refused, Totals, MAX_ORDER, VMEMMAP_RESERVE_NR,
};

const X86: Geometry = Geometry::X86_64;

/// A simulated vmemmap: slot (vmemmap page index) -> the physical page
/// mapped there, and which slot each physical page was allocated for.
#[derive(Default, Debug, PartialEq, Eq)]
struct Vmemmap {
    slots: BTreeMap<u64, u64>,
    allocated_for: Vec<u64>,
}

impl Vmemmap {
    /// `vmemmap_populate_address()`/`vmemmap_pte_populate()`: a present
    /// slot keeps its page; an empty one gets `reuse` or a new page.
    fn map(&mut self, slot: u64, reuse: Option<u64>) -> u64 {
        if let Some(&p) = self.slots.get(&slot) {
            return p;
        }
        let p = reuse.unwrap_or_else(|| {
            self.allocated_for.push(slot);
            self.allocated_for.len() as u64 - 1
        });
        self.slots.insert(slot, p);
        p
    }
}

fn section_chunks(geo: &Geometry, start: u64, nr: u64) -> Vec<Chunk> {
    let mut v = Vec::new();
    let mut pfn = start;
    while pfn < start + nr {
        let section_end = ((pfn >> geo.section_shift) + 1) << geo.section_shift;
        let end = section_end.min(start + nr);
        v.push(Chunk {
            range_start: start,
            range_end: start + nr,
            pfn,
            nr: end - pfn,
        });
        pfn = end;
    }
    v
}

fn slots_of(geo: &Geometry, c: &Chunk) -> (u64, u64) {
    let per = geo.page_size() / geo.struct_page_size;
    (c.pfn / per, (c.pfn + c.nr) / per)
}

/// 6.12's population of a range, slot by slot: `__add_pages()` chunks,
/// the early-section shortcut, `__vmemmap_can_optimize()`,
/// `reuse_compound_section()` + `compound_section_tail_page()` and the
/// loop of `vmemmap_populate_compound_pages()`, written from mm/ as
/// 6.12.117 has them. `None` where 6.12 would fail (no page before a
/// reused section).
fn populate_612(
    geo: &Geometry,
    pgmap: &Pgmap,
    start: u64,
    nr: u64,
    early: &dyn Fn(u64) -> bool,
) -> Option<Vmemmap> {
    let mut vm = Vmemmap::default();
    let n = 1u64 << pgmap.order;
    let vpc = n * geo.struct_page_size / geo.page_size();
    let can = !pgmap.altmap && geo.struct_page_size.is_power_of_two() && vpc > 2;
    for c in section_chunks(geo, start, nr) {
        if c.nr < geo.section_pfns() && early(c.pfn >> geo.section_shift) {
            continue;
        }
        let (s, e) = slots_of(geo, &c);
        if !can {
            for v in s..e {
                vm.map(v, None);
            }
        } else if !(c.pfn - start).is_multiple_of(n) && n > geo.subsection_pfns() {
            let t = *vm.slots.get(&(s - 1))?;
            for v in s..e {
                vm.map(v, Some(t));
            }
        } else {
            let size = (e - s).min(vpc);
            let mut a = s;
            while a < e {
                vm.map(a, None);
                let t = vm.map(a + 1, None);
                for v in a + 2..a + size {
                    vm.map(v, Some(t));
                }
                a += size;
            }
        }
    }
    Some(vm)
}

/// The same range populated the way the patched C does it: each chunk
/// asks [`populate`] and follows the answer.
fn populate_planned(
    geo: &Geometry,
    pgmap: &Pgmap,
    start: u64,
    nr: u64,
    early: &dyn Fn(u64) -> bool,
) -> Result<Option<Vmemmap>, Refused> {
    let mut vm = Vmemmap::default();
    for c in section_chunks(geo, start, nr) {
        if c.nr < geo.section_pfns() && early(c.pfn >> geo.section_shift) {
            continue;
        }
        let (s, e) = slots_of(geo, &c);
        match populate(geo, pgmap, &c)? {
            Populate::Plain => {
                for v in s..e {
                    vm.map(v, None);
                }
            }
            Populate::ReusePrevious => {
                let Some(&t) = vm.slots.get(&(s - 1)) else {
                    return Ok(None);
                };
                for v in s..e {
                    vm.map(v, Some(t));
                }
            }
            Populate::Compounds { lead, step, fresh } => {
                if lead > 0 {
                    let Some(&t) = vm.slots.get(&(s - 1)) else {
                        return Ok(None);
                    };
                    for v in s..s + lead {
                        vm.map(v, Some(t));
                    }
                }
                let mut a = s + lead;
                // The last step may end past the chunk, as 6.12's does.
                while a < e {
                    let mut t = 0;
                    for v in a..a + fresh {
                        t = vm.map(v, None);
                    }
                    for v in a + fresh..a + step {
                        vm.map(v, Some(t));
                    }
                    a += step;
                }
            }
        }
    }
    Ok(Some(vm))
}

/// Struct pages a folio keeps fields in: the head and its first tails
/// (`struct folio` spans 4 struct pages in 6.12, our rmap values
/// included).
const FOLIO_STRUCT_PAGES: u64 = 4;

/// What the vmemmap must give: every struct page of the range is backed;
/// one whose physical page was allocated for another slot is a tail of
/// the same compound at the same place in a page, and the struct page it
/// aliases is a tail of that compound that `memmap_init_zone_device()`
/// writes; a head and a folio's first struct pages are never aliased.
fn check_sound(
    geo: &Geometry,
    pgmap: &Pgmap,
    start: u64,
    nr: u64,
    early: &dyn Fn(u64) -> bool,
    vm: &Vmemmap,
) -> Result<(), String> {
    let per = geo.page_size() / geo.struct_page_size;
    let n = 1u64 << pgmap.order;
    for pfn in start..start + nr {
        if early(pfn >> geo.section_shift) {
            continue;
        }
        let slot = pfn / per;
        let Some(&page) = vm.slots.get(&slot) else {
            return Err(format!("pfn {pfn}: slot {slot} not mapped"));
        };
        let home = vm.allocated_for[page as usize];
        if home == slot {
            continue;
        }
        let alias = home * per + pfn % per;
        let head = start + (pfn - start) / n * n;
        if pfn - head < FOLIO_STRUCT_PAGES {
            return Err(format!(
                "pfn {pfn}: a head or a folio's struct page is shared"
            ));
        }
        if alias <= head || alias >= head + n {
            return Err(format!(
                "pfn {pfn} aliases pfn {alias}, not a tail of its compound at {head}"
            ));
        }
        let init = struct_pages_to_init(geo, pgmap, early(head >> geo.section_shift));
        if alias - head >= init {
            return Err(format!("pfn {pfn} aliases pfn {alias}, never written"));
        }
    }
    Ok(())
}

/// A range the kernel can be asked for (subsection-aligned, a whole
/// number of compounds): the plan maps what 6.12 maps, except where 6.12
/// is unsound, and is sound; its totals are what it maps.
/// Returns whether the plan differs from 6.12 (where 6.12 is unsound).
fn check_range(
    geo: &Geometry,
    pgmap: &Pgmap,
    start: u64,
    nr: u64,
    early: &dyn Fn(u64) -> bool,
) -> bool {
    let reference = populate_612(geo, pgmap, start, nr, early);
    let planned = populate_planned(geo, pgmap, start, nr, early)
        .unwrap_or_else(|e| panic!("{geo:?} {pgmap:?} {start}+{nr}: refused {e:?}"));
    let differs = planned != reference;
    if differs {
        // Only where 6.12 maps a compound's head into another compound's
        // tails-only page.
        let vm = reference.as_ref().expect("6.12 populated");
        assert!(
            check_sound(geo, pgmap, start, nr, early, vm).is_err(),
            "{geo:?} {pgmap:?} {start}+{nr}: differs from a sound 6.12"
        );
    }
    let Some(vm) = planned else { return differs };
    if let Err(e) = check_sound(geo, pgmap, start, nr, early, &vm) {
        panic!("{geo:?} {pgmap:?} {start}+{nr}: {e}");
    }
    let t = plan_range(geo, pgmap, start, nr, early).expect("plan_range");
    assert_eq!(
        t.fresh,
        vm.allocated_for.len() as u64,
        "{geo:?} {pgmap:?} {start}+{nr}"
    );
    assert_eq!(t.fresh + t.reused, vm.slots.len() as u64);
    // 6.12's counter equals what is allocated for the geometries
    // device-dax makes (compounds of a subsection, or of whole sections,
    // no boot memory in the range's sections); see
    // accounting_differs_where_612_counts_per_section() for the others.
    let n = 1u64 << pgmap.order;
    let no_early =
        (start >> geo.section_shift..=(start + nr - 1) >> geo.section_shift).all(|s| !early(s));
    if no_early && (n <= geo.subsection_pfns() || n.is_multiple_of(geo.section_pfns())) {
        assert_eq!(t.accounted, t.fresh, "{geo:?} {pgmap:?} {start}+{nr}");
    }
    differs
}

#[test]
fn seed_arithmetic_2m_saves_six_of_eight_vmemmap_pages() {
    let pgmap = Pgmap {
        order: 9,
        altmap: false,
    };
    let t = plan_range(&X86, &pgmap, 1 << 18, 512, |_| false).unwrap();
    assert_eq!((t.fresh, t.reused, t.plain, t.saved()), (2, 6, 8, 6));
    assert_eq!(t.init, 128);
    // A 128M section: 64 compounds.
    let t = plan_range(&X86, &pgmap, 1 << 18, 1 << 15, |_| false).unwrap();
    assert_eq!(
        (t.fresh, t.reused, t.accounted, t.init),
        (128, 384, 128, 64 * 128)
    );
}

#[test]
fn seed_arithmetic_1g_saves_4094_of_4096_across_eight_sections() {
    let pgmap = Pgmap {
        order: 18,
        altmap: false,
    };
    let t = plan_range(&X86, &pgmap, 1 << 18, 1 << 18, |_| false).unwrap();
    assert_eq!(
        (t.fresh, t.reused, t.plain, t.saved()),
        (2, 4094, 4096, 4094)
    );
    assert_eq!((t.accounted, t.init), (2, 128));
    let chunks = section_chunks(&X86, 1 << 18, 1 << 18);
    assert_eq!(chunks.len(), 8);
    assert_eq!(
        populate(&X86, &pgmap, &chunks[0]),
        Ok(Populate::Compounds {
            lead: 0,
            step: 512,
            fresh: 2
        })
    );
    for c in &chunks[1..] {
        assert_eq!(populate(&X86, &pgmap, c), Ok(Populate::ReusePrevious));
    }
}

#[test]
fn seed_arithmetic_per_tib_16g_4g_8m() {
    let tib_pfns = 1u64 << 28;
    let page = 4096u64;
    let plain = |order| {
        plan_range(
            &X86,
            &Pgmap {
                order,
                altmap: false,
            },
            1 << 28,
            tib_pfns,
            |_| false,
        )
        .unwrap()
    };
    assert_eq!(plain(0).fresh * page, 16 << 30);
    assert_eq!(plain(9).fresh * page, 4 << 30);
    assert_eq!(plain(18).fresh * page, 8 << 20);
    assert_eq!(plain(18).plain * page, 16 << 30);
}

#[test]
fn plain_without_dedup_4k_altmap_small_orders_odd_struct_page() {
    let chunk = Chunk {
        range_start: 1 << 18,
        range_end: 1 << 19,
        pfn: 1 << 18,
        nr: 1 << 15,
    };
    for pgmap in [
        Pgmap {
            order: 0,
            altmap: false,
        },
        Pgmap {
            order: 7,
            altmap: false,
        }, // 2 vmemmap pages: nothing to save
        Pgmap {
            order: 9,
            altmap: true,
        },
        Pgmap {
            order: 18,
            altmap: true,
        },
    ] {
        assert!(!can_optimize(&X86, &pgmap), "{pgmap:?}");
        assert_eq!(populate(&X86, &pgmap, &chunk), Ok(Populate::Plain));
        assert_eq!(accounted(&X86, &pgmap, chunk.pfn, chunk.nr), 512);
        assert_eq!(struct_pages_to_init(&X86, &pgmap, false), 1 << pgmap.order);
    }
    assert!(can_optimize(
        &X86,
        &Pgmap {
            order: 8,
            altmap: false
        }
    ));
    // A struct page of 72 bytes: not a power of two.
    let odd = Geometry {
        struct_page_size: 72,
        ..X86
    };
    let pgmap = Pgmap {
        order: 9,
        altmap: false,
    };
    assert!(!can_optimize(&odd, &pgmap));
    assert_eq!(struct_pages_to_init(&odd, &pgmap, false), 512);
}

#[test]
fn early_section_reuses_boot_memmap_and_initialises_every_struct_page() {
    let pgmap = Pgmap {
        order: 9,
        altmap: false,
    };
    // Half a section whose other half is boot memory.
    let early = |s: u64| s == 8;
    let t = plan_range(&X86, &pgmap, (8 << 15) + (1 << 14), 1 << 14, early).unwrap();
    assert_eq!(
        (t.fresh, t.reused, t.accounted, t.early_chunks),
        (0, 0, 0, 1)
    );
    assert_eq!(t.init, 32 * 512);
    assert!(!check_range(
        &X86,
        &pgmap,
        (8 << 15) + (1 << 14),
        1 << 14,
        &early
    ));
}

#[test]
fn misaligned_1g_range_counts_its_two_pages_at_another_section() {
    // 1G compounds in a range that starts 1.5 GiB into memory: population
    // measures compounds from the range's start (the pages are allocated
    // with the range's first section), the counter from pfn 0 (it counts
    // them with the section at 2 GiB). Same total, other section.
    let pgmap = Pgmap {
        order: 18,
        altmap: false,
    };
    let start = 3 << 17;
    let t = plan_range(&X86, &pgmap, start, 1 << 18, |_| false).unwrap();
    assert_eq!((t.fresh, t.reused, t.accounted), (2, 4094, 2));
    let chunks = section_chunks(&X86, start, 1 << 18);
    let counted: Vec<u64> = chunks
        .iter()
        .map(|c| accounted(&X86, &pgmap, c.pfn, c.nr))
        .collect();
    assert_eq!(counted, [0, 0, 0, 0, 2, 0, 0, 0]);
    assert!(matches!(
        populate(&X86, &pgmap, &chunks[0]),
        Ok(Populate::Compounds { .. })
    ));
    assert!(!check_range(&X86, &pgmap, start, 1 << 18, &|_| false));
}

#[test]
fn range_inside_a_section_612_maps_a_head_into_the_previous_compound() {
    // Compounds of a section (order 15) in a range that starts 2M into a
    // section: the second compound's head is 2M into the next section,
    // whose chunk does not start a compound. 6.12 maps that whole chunk to
    // the first compound's tails-only page -- the second head and its
    // folio fields would be written over the first compound's tails. The
    // plan continues the first compound up to the head only.
    let pgmap = Pgmap {
        order: 15,
        altmap: false,
    };
    let start = (16 << 15) + 512;
    let nr = 2 << 15;
    let chunks = section_chunks(&X86, start, nr);
    assert_eq!(
        populate(&X86, &pgmap, &chunks[1]),
        Ok(Populate::Compounds {
            lead: 8,
            step: 504,
            fresh: 2
        })
    );
    assert!(check_range(&X86, &pgmap, start, nr, &|_| false));
    let t = plan_range(&X86, &pgmap, start, nr, |_| false).unwrap();
    assert_eq!((t.fresh, t.reused), (4, 2 * 512 - 4));
}

#[test]
fn accounting_differs_where_612_counts_per_section() {
    // Compounds of 64M (order 14) in a range that starts 2M into a
    // section: a section boundary cuts compounds, 6.12's counter takes
    // 2 * nr / compound per chunk, rounded down, and misses one page that
    // is allocated (and frees one page too few on removal: the same
    // formula). Device-dax makes no such geometry (2M or 1G only).
    let pgmap = Pgmap {
        order: 14,
        altmap: false,
    };
    let start = (16 << 15) + 512;
    let t = plan_range(&X86, &pgmap, start, 1 << 15, |_| false).unwrap();
    assert_eq!((t.fresh, t.accounted), (4, 3));
    assert!(!check_range(&X86, &pgmap, start, 1 << 15, &|_| false));
}

#[test]
fn subsection_started_range_follows_612() {
    let pgmap = Pgmap {
        order: 9,
        altmap: false,
    };
    // Starts 3 subsections into a section, ends 2 into the next.
    let start = (5 << 15) + 3 * 512;
    let nr = (1 << 15) - 3 * 512 + 2 * 512;
    assert!(!check_range(&X86, &pgmap, start, nr, &|_| false));
    let t = plan_range(&X86, &pgmap, start, nr, |_| false).unwrap();
    assert_eq!(t.fresh, 2 * nr / 512);
}

/// Every range the exhaustive tests try: struct pages of 16 to 128
/// bytes, sections of 8 to 512 pages, every subsection size and compound
/// order up to two above a section's, altmap or not, every start
/// subsection across two compounds (at least three), one to three
/// compounds long, every pattern of boot memory in its first two
/// sections: `f(geo, pgmap, start, nr, early)` for each.
fn for_each_small_range(mut f: impl FnMut(&Geometry, &Pgmap, u64, u64, &dyn Fn(u64) -> bool)) {
    for struct_page_size in [16u64, 32, 64, 128] {
        for section_shift in 3..=9u32 {
            for subsection_shift in 1..=section_shift {
                let geo = Geometry {
                    page_shift: 12,
                    struct_page_size,
                    section_shift,
                    subsection_shift,
                };
                if !geo.is_valid() {
                    continue;
                }
                for order in 0..=section_shift + 2 {
                    for altmap in [false, true] {
                        let pgmap = Pgmap { order, altmap };
                        let unit = (1u64 << order).max(geo.subsection_pfns());
                        for start_subs in 0..(2 * unit / geo.subsection_pfns()).max(3) {
                            for len_units in 1..=3u64 {
                                let start = (1 << 12) + start_subs * geo.subsection_pfns();
                                let nr = len_units * unit;
                                for early_mask in 0..4u64 {
                                    let base_section = (1u64 << 12) >> section_shift;
                                    let early = move |s: u64| {
                                        s >= base_section
                                            && s - base_section < 2
                                            && early_mask >> (s - base_section) & 1 == 1
                                    };
                                    f(&geo, &pgmap, start, nr, &early);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn exhaustive_small_geometries_match_612_and_are_sound() {
    let (mut cases, mut differ) = (0u64, 0u64);
    for_each_small_range(|geo, pgmap, start, nr, early| {
        if populate_612(geo, pgmap, start, nr, early).is_none() {
            // 6.12 fails there too (no page before a continuation); the
            // plan must not succeed.
            assert_eq!(populate_planned(geo, pgmap, start, nr, early), Ok(None));
            return;
        }
        differ += check_range(geo, pgmap, start, nr, early) as u64;
        cases += 1;
    });
    assert!(cases > 10_000, "{cases}");
    // Ranges that start inside a section, compounds of more than a
    // subsection: 6.12 unsound, the plan not (check_range asserts both).
    assert!(differ > 0 && differ < cases / 4, "{differ} of {cases}");
}

#[test]
fn x86_geometry_every_order_and_offset_matches_612() {
    for order in 0..=19u32 {
        for altmap in [false, true] {
            let pgmap = Pgmap { order, altmap };
            let n = 1u64 << order;
            let unit = n.max(512);
            for start in [1u64 << 19, (1 << 19) + 512, (1 << 19) + (1 << 14), 3 << 17] {
                let differs = check_range(&X86, &pgmap, start, 2 * unit, &|_| false);
                // Only a range that starts inside a section whose
                // compounds reach past it.
                let inside = start % (1 << 15) != 0 && n > 512 && !altmap;
                assert!(!differs || inside, "order {order} start {start}");
            }
        }
    }
}

#[test]
fn an_aligned_range_is_planned_as_upstream_populates_it_and_soundly() {
    // 7.3 needs compound heads at multiples of their size (tails store a
    // mask; device-dax maps PMDs and PUDs from folio_pfn()). Every range
    // accept_range() takes: upstream's C (7.3's population is 6.12's,
    // slot for slot: populate_612) is sound there and the plan maps the
    // same slots, no chunk has a lead, every head is aligned, and without
    // boot memory the counter is exactly what is allocated.
    let (mut accepted, mut all) = (0u64, 0u64);
    for_each_small_range(|geo, pgmap, start, nr, early| {
        all += 1;
        if accept_range(geo, pgmap, start, nr).is_err() {
            return;
        }
        let n = 1u64 << pgmap.order;
        assert_eq!(start % n, 0);
        let Some(reference) = populate_612(geo, pgmap, start, nr, early) else {
            // 6.12/7.3 find no page before a continuation (a compound
            // larger than a section whose first section is boot memory):
            // the plan must fail too.
            assert_eq!(populate_planned(geo, pgmap, start, nr, early), Ok(None));
            return;
        };
        accepted += 1;
        assert_eq!(
            check_sound(geo, pgmap, start, nr, early, &reference),
            Ok(()),
            "{geo:?} {pgmap:?} {start}+{nr}: upstream unsound on an aligned range"
        );
        assert!(!check_range(geo, pgmap, start, nr, early));
        for c in section_chunks(geo, start, nr) {
            if let Ok(Populate::Compounds { lead, .. }) = populate(geo, pgmap, &c) {
                assert_eq!(lead, 0, "{geo:?} {pgmap:?} {c:?}");
            }
        }
        let no_early =
            (start >> geo.section_shift..=(start + nr - 1) >> geo.section_shift).all(|s| !early(s));
        if no_early {
            let t = plan_range(geo, pgmap, start, nr, early).unwrap();
            assert_eq!(t.accounted, t.fresh, "{geo:?} {pgmap:?} {start}+{nr}");
        }
    });
    assert!(accepted > 5_000 && accepted < all, "{accepted} of {all}");
}

#[test]
fn every_range_upstream_populates_unsoundly_is_refused() {
    // Where upstream maps a later compound's head into an earlier
    // compound's tails-only page (a range starting inside a section,
    // compounds above a subsection), or its counter disagrees with what it
    // allocates, the range is misaligned and refused before anything is
    // populated.
    let (mut unsound, mut miscounted) = (0u64, 0u64);
    for_each_small_range(|geo, pgmap, start, nr, early| {
        let Some(reference) = populate_612(geo, pgmap, start, nr, early) else {
            return;
        };
        let bad_map = check_sound(geo, pgmap, start, nr, early, &reference).is_err();
        let no_early =
            (start >> geo.section_shift..=(start + nr - 1) >> geo.section_shift).all(|s| !early(s));
        let bad_count = no_early
            && can_optimize(geo, pgmap)
            && plan_range(geo, pgmap, start, nr, early)
                .map(|t| t.accounted != t.fresh)
                .unwrap_or(false);
        unsound += bad_map as u64;
        miscounted += bad_count as u64;
        if bad_map || bad_count {
            assert_eq!(
                accept_range(geo, pgmap, start, nr),
                Err(Refused::Misaligned),
                "{geo:?} {pgmap:?} {start}+{nr}"
            );
        }
    });
    assert!(unsound > 0 && miscounted > 0, "{unsound} {miscounted}");
}

#[test]
fn the_7_3_alias_geometry_is_refused_and_aligned_device_dax_accepted() {
    // Issue 45's geometry on x86_64: 1G compounds (order 18) in a range
    // that starts 2 MiB into a section, two compounds long. 7.3 maps the
    // second head into the first compound's tails-only page, counts 4
    // pages for 2 allocated, and its tails' masks name other heads.
    let g1 = Pgmap {
        order: 18,
        altmap: false,
    };
    let start = (8 << 15) + 512;
    let reference = populate_612(&X86, &g1, start, 2 << 18, &|_| false).unwrap();
    assert!(check_sound(&X86, &g1, start, 2 << 18, &|_| false, &reference).is_err());
    assert_eq!(
        accept_range(&X86, &g1, start, 2 << 18),
        Err(Refused::Misaligned)
    );
    // The booted test's geometries: [4G, 6G) with 2M and 1G alignment,
    // and an altmap (struct pages on the device) alike.
    let four_g = 1u64 << 20;
    for order in [9, 18] {
        for altmap in [false, true] {
            let p = Pgmap { order, altmap };
            assert_eq!(accept_range(&X86, &p, four_g, 2 << 18), Ok(()));
        }
    }
    // A 2M-aligned namespace start with 1G alignment (static pmem at
    // 4G + 2M): refused; its length alone misaligned: refused.
    assert_eq!(
        accept_range(&X86, &g1, four_g + 512, 2 << 18),
        Err(Refused::Misaligned)
    );
    assert_eq!(
        accept_range(&X86, &g1, four_g, (2 << 18) + 512),
        Err(Refused::Misaligned)
    );
    // Order 0 (no compounds): any subsection-sized range.
    let p0 = Pgmap {
        order: 0,
        altmap: false,
    };
    assert_eq!(accept_range(&X86, &p0, four_g + 1, 3), Ok(()));
}

#[test]
fn accept_range_refuses_empty_wrapping_and_bad_geometries() {
    let p = Pgmap {
        order: 9,
        altmap: false,
    };
    assert_eq!(accept_range(&X86, &p, 1 << 20, 0), Err(Refused::Chunk));
    assert_eq!(
        accept_range(&X86, &p, u64::MAX - 511, 1024),
        Err(Refused::Chunk)
    );
    assert_eq!(
        accept_range(
            &X86,
            &Pgmap {
                order: MAX_ORDER + 1,
                altmap: false
            },
            0,
            512
        ),
        Err(Refused::Order)
    );
    assert_eq!(
        accept_range(
            &Geometry {
                page_shift: 0,
                ..X86
            },
            &p,
            0,
            512
        ),
        Err(Refused::Geometry)
    );
    let mut r = XorShift::new(0xa11_9e0d);
    for _ in 0..200_000 {
        let geo = Geometry {
            page_shift: (r.next() % 70) as u32,
            struct_page_size: r.next() % 5000,
            section_shift: (r.next() % 70) as u32,
            subsection_shift: (r.next() % 70) as u32,
        };
        let pgmap = Pgmap {
            order: (r.next() % 70) as u32,
            altmap: r.next() & 1 == 1,
        };
        let (start, nr) = (r.next(), r.next());
        if accept_range(&geo, &pgmap, start, nr).is_ok() {
            let n = 1u64 << pgmap.order;
            assert!(geo.is_valid() && nr > 0 && start % n == 0 && nr % n == 0);
        }
    }
}

#[test]
fn refuses_bad_geometry_order_and_chunks_without_panicking() {
    let pgmap = Pgmap {
        order: 9,
        altmap: false,
    };
    let ok = Chunk {
        range_start: 0,
        range_end: 1 << 16,
        pfn: 1 << 15,
        nr: 512,
    };
    assert!(populate(&X86, &pgmap, &ok).is_ok());
    for bad in [
        Chunk { nr: 0, ..ok },
        Chunk {
            pfn: ok.pfn + 1,
            ..ok
        },
        Chunk { nr: 511, ..ok },
        Chunk {
            nr: (1 << 15) + 512,
            ..ok
        },
        Chunk {
            range_start: ok.pfn + 512,
            ..ok
        },
        Chunk {
            range_end: ok.pfn + 511,
            ..ok
        },
        Chunk {
            pfn: u64::MAX - 511,
            ..ok
        },
    ] {
        assert_eq!(populate(&X86, &pgmap, &bad), Err(Refused::Chunk), "{bad:?}");
    }
    // Compounds of 1024 pfns in a range of 1536: 6.12 would populate past
    // the range; refused.
    let big = Pgmap {
        order: 10,
        altmap: false,
    };
    let c = Chunk {
        range_start: ok.pfn,
        range_end: ok.pfn + 1536,
        pfn: ok.pfn,
        nr: 1536,
    };
    assert_eq!(populate(&X86, &big, &c), Err(Refused::Chunk));
    // Past a section boundary inside a compound: allowed (the step goes on
    // in the same compound), as the order-14 case of the x86 test shows.
    assert_eq!(
        populate(
            &X86,
            &Pgmap {
                order: MAX_ORDER + 1,
                altmap: false
            },
            &ok
        ),
        Err(Refused::Order)
    );
    for geo in [
        Geometry {
            page_shift: 0,
            ..X86
        },
        Geometry {
            page_shift: 64,
            ..X86
        },
        Geometry {
            struct_page_size: 0,
            ..X86
        },
        Geometry {
            struct_page_size: 4096,
            ..X86
        },
        Geometry {
            subsection_shift: 16,
            ..X86
        },
        Geometry {
            section_shift: 63,
            subsection_shift: 63,
            ..X86
        },
        Geometry {
            subsection_shift: 0,
            ..X86
        },
    ] {
        assert_eq!(
            populate(&geo, &pgmap, &ok),
            Err(Refused::Geometry),
            "{geo:?}"
        );
        assert!(!can_optimize(&geo, &pgmap));
        assert_eq!(
            plan_range(&geo, &pgmap, 0, 512, |_| false),
            Err(Refused::Geometry)
        );
    }
}

#[test]
fn random_garbage_never_panics() {
    let mut r = XorShift::new(0xc0de_4004);
    for _ in 0..200_000 {
        let geo = Geometry {
            page_shift: (r.next() % 70) as u32,
            struct_page_size: r.next() % 5000,
            section_shift: (r.next() % 70) as u32,
            subsection_shift: (r.next() % 70) as u32,
        };
        let pgmap = Pgmap {
            order: (r.next() % 70) as u32,
            altmap: r.next() & 1 == 1,
        };
        let c = Chunk {
            range_start: r.next(),
            range_end: r.next(),
            pfn: r.next(),
            nr: r.next(),
        };
        let _ = populate(&geo, &pgmap, &c);
        let _ = populate(&X86, &pgmap, &c);
        let _ = accounted(&geo, &pgmap, c.pfn, c.nr);
        let _ = struct_pages_to_init(&geo, &pgmap, r.next() & 1 == 1);
        let _ = can_optimize(&geo, &pgmap);
        let _ = plan_range(&X86, &pgmap, c.pfn, c.nr % (1 << 20), |_| false);
    }
}

#[test]
fn the_soundness_check_can_fail() {
    // Mutations of 6.12's layout the checker must reject.
    let geo = X86;
    let pgmap = Pgmap {
        order: 9,
        altmap: false,
    };
    let (start, nr) = (1u64 << 18, 1024u64);
    let good = populate_612(&geo, &pgmap, start, nr, &|_| false).unwrap();
    let shared_head = {
        // The second compound's head page mapped to the first's tails page.
        let mut vm = Vmemmap {
            slots: good.slots.clone(),
            allocated_for: good.allocated_for.clone(),
        };
        let t = vm.slots[&(start / 64 + 1)];
        vm.slots.insert(start / 64 + 8, t);
        vm
    };
    let cross_compound = {
        // The second compound's tails mapped to the first's tails page.
        let mut vm = Vmemmap {
            slots: good.slots.clone(),
            allocated_for: good.allocated_for.clone(),
        };
        let t = vm.slots[&(start / 64 + 1)];
        vm.slots.insert(start / 64 + 10, t);
        vm
    };
    let head_page_reused = {
        // Tails mapped to the head page (struct pages 0..63).
        let mut vm = Vmemmap {
            slots: good.slots.clone(),
            allocated_for: good.allocated_for.clone(),
        };
        let h = vm.slots[&(start / 64)];
        vm.slots.insert(start / 64 + 5, h);
        vm
    };
    assert_eq!(
        check_sound(&geo, &pgmap, start, nr, &|_| false, &good),
        Ok(())
    );
    for bad in [shared_head, cross_compound, head_page_reused] {
        assert!(check_sound(&geo, &pgmap, start, nr, &|_| false, &bad).is_err());
    }
}

#[test]
fn reserve_is_two_pages_and_totals_saved_never_underflows() {
    assert_eq!(VMEMMAP_RESERVE_NR, 2);
    let t = Totals {
        fresh: 10,
        plain: 4,
        ..Totals::default()
    };
    assert_eq!(t.saved(), 0);
}
