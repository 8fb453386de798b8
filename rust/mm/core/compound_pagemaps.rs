// SPDX-License-Identifier: GPL-2.0

//! The vmemmap of ZONE_DEVICE compound pages ("compound pagemaps"): which
//! vmemmap pages a device-dax range allocates, which map a page allocated
//! before, what `/proc/vmstat`'s `nr_memmap_pages` counts and how many
//! struct pages `memmap_init_compound()` writes.
//!
//! A device-dax instance with an alignment above `PAGE_SIZE` is a
//! `dev_pagemap` with `vmemmap_shift` = the compound order: its memory is
//! described by compound pages of `1 << order` struct pages. With 4K pages
//! and a 64-byte `struct page` one vmemmap page holds 64 struct pages, so
//! a 2M compound (order 9) takes 8 vmemmap pages and a 1G compound
//! (order 18) 4096. The first holds the head and tails 1..63 -- every
//! field a folio keeps in its first tails (order, mapcounts, rmap values)
//! is there -- and each of the others holds only tail struct pages whose
//! contents are the same in every tail of the compound (the head pointer,
//! the pgmap, zone and node flags). So one tails-only page can stand for
//! all the others: map the compound's third and later vmemmap pages to its
//! second, and write only the first 128 struct pages. That is
//! [`Populate::Compounds`] with `fresh` = [`VMEMMAP_RESERVE_NR`]: 2 of 8
//! vmemmap pages for 2M, 2 of 4096 for 1G.
//!
//! A compound larger than a memory section is populated one section at a
//! time (memory hotplug adds a range section by section): its first
//! section follows the plan above, every later one maps all its vmemmap
//! pages to the page behind the vmemmap slot just before it -- the same
//! compound's tails-only page ([`Populate::ReusePrevious`]).
//!
//! Nothing is deduplicated ([`Populate::Plain`], 6.12's
//! `vmemmap_populate()`) when the struct pages come from the device
//! (an altmap), when `struct page`'s size is not a power of two (a
//! vmemmap page would hold part of a struct page), or when a compound
//! spans at most [`VMEMMAP_RESERVE_NR`] vmemmap pages (nothing to save).
//!
//! This is 6.12's policy (`vmemmap_populate_compound_pages()`,
//! `reuse_compound_section()`, `section_nr_vmemmap_pages()`,
//! `compound_nr_pages()`), computed here from the geometry alone: C asks
//! for the plan of each chunk and keeps every page-table and allocation
//! operation. [`plan_range`] adds a range's chunks up, the numbers the
//! tests compare with the kernel's counters.
//!
//! Bad input never panics: a geometry or an order the arithmetic cannot
//! hold, a chunk that is not subsection-aligned or starts before its
//! range, is refused ([`Refused`]); C then fails the population, as it
//! does when an allocation fails.

// Every divisor here is a power of two (the page size, a subsection, a
// compound): divisibility is a bit test, not `is_multiple_of`, which is
// stable only since Rust 1.87, above the kernel's minimum (1.78).

/// Vmemmap pages of a deduplicated compound that are allocated: the head
/// page (head and the first tails) and the one tails-only page
/// (`VMEMMAP_RESERVE_NR`).
pub const VMEMMAP_RESERVE_NR: u64 = 2;

/// The largest compound order a plan accepts: a compound's pfn count and
/// its vmemmap size in bytes stay far inside a `u64`.
pub const MAX_ORDER: u32 = 40;

/// The kernel's constants a plan depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// `PAGE_SHIFT`.
    pub page_shift: u32,
    /// `sizeof(struct page)`.
    pub struct_page_size: u64,
    /// `PFN_SECTION_SHIFT`: log2 of the pfns of a memory section.
    pub section_shift: u32,
    /// log2 of `PAGES_PER_SUBSECTION`: hotplug's granule, in pfns.
    pub subsection_shift: u32,
}

impl Geometry {
    /// x86_64 with 4K pages: 64-byte struct pages, 128M sections, 2M
    /// subsections.
    pub const X86_64: Geometry = Geometry {
        page_shift: 12,
        struct_page_size: 64,
        section_shift: 15,
        subsection_shift: 9,
    };

    /// Whether the arithmetic of a plan holds for this geometry: pages of
    /// 4K to 1M, a struct page smaller than a page, a subsection no larger
    /// than a section, and a subsection's vmemmap a whole number of pages,
    /// at least [`VMEMMAP_RESERVE_NR`] (so every chunk has room for a
    /// compound's allocated pages). x86_64's 4K geometry has 8.
    pub fn is_valid(&self) -> bool {
        if !(12..=20).contains(&self.page_shift)
            || self.struct_page_size == 0
            || self.struct_page_size >= self.page_size()
            || self.subsection_shift > self.section_shift
            || self.section_shift > 30
        {
            return false;
        }
        let sub_bytes = self.vmemmap_bytes(self.subsection_pfns());
        sub_bytes & (self.page_size() - 1) == 0
            && sub_bytes >> self.page_shift >= VMEMMAP_RESERVE_NR
    }

    /// `PAGE_SIZE`.
    pub fn page_size(&self) -> u64 {
        1u64 << self.page_shift.min(63)
    }

    /// Bytes of vmemmap that describe `pfns` pfns.
    fn vmemmap_bytes(&self, pfns: u64) -> u64 {
        pfns.saturating_mul(self.struct_page_size)
    }

    /// Vmemmap pages that describe `pfns` pfns, rounded up
    /// (`DIV_ROUND_UP(nr_pages * sizeof(struct page), PAGE_SIZE)`).
    pub fn vmemmap_pages(&self, pfns: u64) -> u64 {
        self.vmemmap_bytes(pfns).div_ceil(self.page_size())
    }

    /// Pfns of a memory section (`PAGES_PER_SECTION`).
    pub fn section_pfns(&self) -> u64 {
        1u64 << self.section_shift.min(63)
    }

    /// Pfns of a subsection (`PAGES_PER_SUBSECTION`).
    pub fn subsection_pfns(&self) -> u64 {
        1u64 << self.subsection_shift.min(63)
    }
}

/// A `dev_pagemap` as a plan sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pgmap {
    /// `vmemmap_shift`: the order of its compound pages (0: none).
    pub order: u32,
    /// The struct pages live on the device (`struct vmem_altmap`).
    pub altmap: bool,
}

impl Pgmap {
    /// Pfns per compound (`pgmap_vmemmap_nr()`), `None` for an order a
    /// plan refuses.
    fn compound_pfns(&self) -> Option<u64> {
        (self.order <= MAX_ORDER).then(|| 1u64 << self.order)
    }
}

/// Why a plan was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The geometry fails [`Geometry::is_valid`].
    Geometry,
    /// The compound order is above [`MAX_ORDER`].
    Order,
    /// The chunk is empty, not subsection-aligned, crosses a section, is
    /// not inside its range, or its range is not a whole number of
    /// compounds where compounds are deduplicated.
    Chunk,
    /// The range does not start and end on compound boundaries
    /// ([`accept_range`]).
    Misaligned,
}

/// Whether a pgmap's compounds share vmemmap pages
/// (`__vmemmap_can_optimize()`): no altmap, a power-of-two struct page,
/// and more than [`VMEMMAP_RESERVE_NR`] vmemmap pages per compound.
pub fn can_optimize(geo: &Geometry, pgmap: &Pgmap) -> bool {
    if pgmap.altmap || !geo.is_valid() || !geo.struct_page_size.is_power_of_two() {
        return false;
    }
    match pgmap.compound_pfns() {
        Some(n) => geo.vmemmap_bytes(n) >> geo.page_shift > VMEMMAP_RESERVE_NR,
        None => false,
    }
}

/// Whether a kernel that needs naturally aligned compound heads can map
/// a pgmap range of `nr` pfns from `start`: every compound of `1 << order`
/// pfns must start at a pfn that is a multiple of its size, so the range
/// must start and end on such a boundary ([`Refused::Misaligned`]
/// otherwise); an empty or wrapping range is [`Refused::Chunk`].
///
/// 7.3 needs it twice over. Where a tail's `compound_info` is a mask
/// (`compound_info_has_mask()`: `CONFIG_HUGETLB_PAGE_OPTIMIZE_VMEMMAP`
/// and a power-of-two struct page), `compound_head()` is the tail's
/// address rounded down to the compound's size; and device-dax maps a
/// PMD or PUD from `folio_pfn()`, which `pfn_pmd()`/`pfn_pud()` round
/// down too. A misaligned head gives every tail another compound's head
/// and maps memory below the device. 7.3 accepts such ranges (a static
/// pmem namespace that is 2M- but not 1G-aligned with `align=1G`, or a
/// dynamic dax range placed at a 2M gap), and its vmemmap population then
/// also maps a later compound's head into an earlier compound's tails-only
/// page (see [`populate`]). Refusing the range before anything is
/// populated keeps the memory unmapped and says why.
///
/// With the range aligned, every chunk that does not start a compound
/// lies inside one (its whole vmemmap the tails-only page's: the plan
/// has no `lead`), and the accounting by absolute pfn ([`accounted`])
/// equals what is allocated.
pub fn accept_range(geo: &Geometry, pgmap: &Pgmap, start: u64, nr: u64) -> Result<(), Refused> {
    if !geo.is_valid() {
        return Err(Refused::Geometry);
    }
    let n = pgmap.compound_pfns().ok_or(Refused::Order)?;
    if nr == 0 || start.checked_add(nr).is_none() {
        return Err(Refused::Chunk);
    }
    if (start | nr) & (n - 1) != 0 {
        return Err(Refused::Misaligned);
    }
    Ok(())
}

/// A run of pfns memory hotplug adds at once: at most one section, within
/// one range of the pgmap (`ranges[nr_range]` while it is added).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// The first pfn of the pgmap range being added.
    pub range_start: u64,
    /// The pfn after the range's last.
    pub range_end: u64,
    /// The first pfn of the chunk.
    pub pfn: u64,
    /// Pfns in the chunk.
    pub nr: u64,
}

impl Chunk {
    fn check(&self, geo: &Geometry) -> Result<(), Refused> {
        let sub = geo.subsection_pfns();
        let section_end = (self.pfn | (geo.section_pfns() - 1)).checked_add(1);
        let end = self.pfn.checked_add(self.nr);
        match (end, section_end) {
            (Some(end), Some(section_end))
                if self.nr > 0
                    && self.pfn >= self.range_start
                    && end <= self.range_end
                    && self.pfn & (sub - 1) == 0
                    && self.nr & (sub - 1) == 0
                    && end <= section_end =>
            {
                Ok(())
            }
            _ => Err(Refused::Chunk),
        }
    }
}

/// How the vmemmap of a chunk is populated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Populate {
    /// One vmemmap page per `PAGE_SIZE / sizeof(struct page)` struct
    /// pages, none shared: the arch's `vmemmap_populate()`.
    Plain,
    /// Every vmemmap page of the chunk maps the page behind the vmemmap
    /// slot just before the chunk: the chunk continues a compound that
    /// started in an earlier section, whose tails-only page that is.
    ReusePrevious,
    /// The chunk's first `lead` vmemmap pages continue a compound from an
    /// earlier section (as [`Populate::ReusePrevious`]); from there, its
    /// vmemmap in steps of `step` pages: in each step the first `fresh`
    /// pages are allocated and the others map the last of them (the
    /// tails-only page). A chunk that ends inside a compound (a section
    /// boundary cuts it) maps the rest of that compound's last step past
    /// its end, as 6.12 does: those slots are the same compound's, and the
    /// next chunk keeps them.
    Compounds {
        /// Vmemmap pages before the first compound that starts in the
        /// chunk (0 unless the range starts inside a section and its
        /// compounds are larger than a subsection).
        lead: u64,
        /// Vmemmap pages per step: a compound's, or the chunk's if the
        /// compound is larger.
        step: u64,
        /// Pages allocated at the start of each step.
        fresh: u64,
    },
}

/// The plan of one chunk (`vmemmap_populate_compound_pages()` and the
/// choice `__populate_section_memmap()` makes before it).
pub fn populate(geo: &Geometry, pgmap: &Pgmap, chunk: &Chunk) -> Result<Populate, Refused> {
    if !geo.is_valid() {
        return Err(Refused::Geometry);
    }
    let n = pgmap.compound_pfns().ok_or(Refused::Order)?;
    chunk.check(geo)?;
    if !can_optimize(geo, pgmap) {
        return Ok(Populate::Plain);
    }
    // reuse_compound_section(): the offset is measured from the range's
    // start, as 6.12 measures it. 6.12 maps the whole chunk to the
    // previous page when the chunk does not start a compound, also when a
    // compound starts inside it (a range that starts inside a section,
    // compounds larger than a subsection): that compound's head and first
    // tails would be written into the previous compound's tails-only
    // page. Here only the part before that head continues the previous
    // compound.
    let into = (chunk.pfn - chunk.range_start) % n;
    let mut lead = 0;
    if into != 0 && n > geo.subsection_pfns() {
        let to_head = n - into;
        if to_head >= chunk.nr {
            return Ok(Populate::ReusePrevious);
        }
        // INVARIANT: `into` and `n` are multiples of a subsection (the
        // chunk is subsection-aligned, the range's start too since the
        // first chunk is), whose vmemmap is whole pages.
        lead = geo.vmemmap_bytes(to_head) >> geo.page_shift;
    }
    // INVARIANT: can_optimize() holds, so a compound spans more than
    // VMEMMAP_RESERVE_NR vmemmap pages; a chunk is at least a subsection,
    // whose vmemmap is a whole number of pages (Geometry::is_valid), and
    // when it is smaller than a compound its step is the chunk.
    // A range that is not a whole number of compounds would end in a
    // partial compound whose last step maps vmemmap past the range (6.12
    // does; device-dax never asks: its ranges are multiples of its
    // alignment). Refused.
    if (chunk.range_end - chunk.range_start) & (n - 1) != 0 {
        return Err(Refused::Chunk);
    }
    let slots = (geo.vmemmap_bytes(chunk.nr) >> geo.page_shift) - lead;
    let step = slots.min(geo.vmemmap_bytes(n) >> geo.page_shift);
    Ok(Populate::Compounds {
        lead,
        step,
        fresh: VMEMMAP_RESERVE_NR.min(step),
    })
}

/// Vmemmap pages `nr_memmap_pages` counts for a chunk
/// (`section_nr_vmemmap_pages()`): the allocated ones for a deduplicated
/// pgmap -- 2 per compound, or per compound that starts in the chunk when
/// compounds are larger than a section -- all of them otherwise (those on
/// the device included). 6.12 asks whether a compound starts at the chunk
/// by its *absolute* pfn, population by its offset in the range: for a
/// range that does not start on a compound boundary the two differ, and
/// this function keeps 6.12's count (see [`Totals::fresh`]).
pub fn accounted(geo: &Geometry, pgmap: &Pgmap, pfn: u64, nr: u64) -> u64 {
    let Some(n) = pgmap.compound_pfns() else {
        return geo.vmemmap_pages(nr);
    };
    if !can_optimize(geo, pgmap) {
        return geo.vmemmap_pages(nr);
    }
    if pgmap.order < geo.section_shift {
        return VMEMMAP_RESERVE_NR.saturating_mul(nr) / n;
    }
    if pfn & (n - 1) == 0 {
        VMEMMAP_RESERVE_NR
    } else {
        0
    }
}

/// Struct pages `memmap_init_zone_device()` writes per compound
/// (`compound_nr_pages()`): those of the allocated vmemmap pages when
/// deduplicated, all of them when not, or when the compound's head is in
/// a section with boot memory (`early`), whose memmap hotplug reuses.
pub fn struct_pages_to_init(geo: &Geometry, pgmap: &Pgmap, early: bool) -> u64 {
    let n = pgmap.compound_pfns().unwrap_or(1);
    if early || !can_optimize(geo, pgmap) {
        return n;
    }
    VMEMMAP_RESERVE_NR * (geo.page_size() / geo.struct_page_size)
}

/// What a range's population adds up to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Vmemmap pages allocated (from RAM or, [`Populate::Plain`] with an
    /// altmap, from the device).
    pub fresh: u64,
    /// Vmemmap slots mapped to a page allocated before.
    pub reused: u64,
    /// What `nr_memmap_pages` adds ([`accounted`]); equal to `fresh`
    /// unless a range starts inside a compound larger than a section.
    pub accounted: u64,
    /// Vmemmap pages without deduplication: what the range would cost in
    /// 6.12 without compound pagemaps.
    pub plain: u64,
    /// Struct pages `memmap_init_zone_device()` writes.
    pub init: u64,
    /// Sections whose chunk reuses the boot memmap (no population).
    pub early_chunks: u64,
}

impl Totals {
    /// Vmemmap pages deduplication saves.
    pub fn saved(&self) -> u64 {
        self.plain.saturating_sub(self.fresh)
    }
}

/// The population of a whole pgmap range of `nr` pfns from `start`, as
/// memory hotplug adds it (`__add_pages()`: chunk by chunk up to each
/// section boundary): `early(section)` says whether a section holds boot
/// memory (its memmap is reused for a partial chunk, and it is not
/// populated). Fails as [`populate`] does for any chunk.
pub fn plan_range(
    geo: &Geometry,
    pgmap: &Pgmap,
    start: u64,
    nr: u64,
    early: impl Fn(u64) -> bool,
) -> Result<Totals, Refused> {
    if !geo.is_valid() {
        return Err(Refused::Geometry);
    }
    let n = pgmap.compound_pfns().ok_or(Refused::Order)?;
    let end = start.checked_add(nr).ok_or(Refused::Chunk)?;
    let mut t = Totals::default();
    // Slots below this one are mapped already (a step that went past its
    // chunk's end); chunks come in increasing order.
    let mut mapped_end = 0u64;
    let per = geo.page_size() / geo.struct_page_size;
    let mut pfn = start;
    while pfn < end {
        let section = pfn >> geo.section_shift;
        let section_end = (section + 1) << geo.section_shift;
        let chunk = Chunk {
            range_start: start,
            range_end: end,
            pfn,
            nr: section_end.min(end) - pfn,
        };
        let slots = geo.vmemmap_pages(chunk.nr);
        t.plain += slots;
        // Slots [s, e) of the chunk: Chunk::check() makes them whole pages.
        let s = chunk.pfn / per;
        let e = s + slots;
        let new = |from: u64, to: u64| to.saturating_sub(from.max(mapped_end));
        if chunk.nr < geo.section_pfns() && early(section) {
            t.early_chunks += 1;
            chunk.check(geo)?;
        } else {
            match populate(geo, pgmap, &chunk)? {
                Populate::Plain => t.fresh += new(s, e),
                Populate::ReusePrevious => t.reused += new(s, e),
                Populate::Compounds { lead, step, fresh } => {
                    t.reused += new(s, s + lead);
                    let mut a = s + lead;
                    while a < e {
                        t.fresh += new(a, a + fresh);
                        t.reused += new(a + fresh, a + step);
                        a += step;
                    }
                    mapped_end = mapped_end.max(a);
                }
            }
            t.accounted += accounted(geo, pgmap, chunk.pfn, chunk.nr);
        }
        mapped_end = mapped_end.max(e);
        pfn += chunk.nr;
    }
    // memmap_init_zone_device(): every compound from the range's start.
    let mut head = start;
    while head < end {
        let early_head = early(head >> geo.section_shift);
        t.init += struct_pages_to_init(geo, pgmap, early_head).min(end - head);
        head = head.saturating_add(n);
    }
    Ok(t)
}
